"""The review UI's read model: what each of its pages shows, read by one call in one snapshot.

Each method of :class:`ReviewPages` is the use case behind one page. It opens one read transaction,
assembles the page from the service's read use cases inside it (they join the open transaction, so
every figure on a page, the header's count of proposals waiting included, comes from the same state
of the database) and returns a frozen record. Nothing is written, with one exception that is not
new: the persona page of a persona never seen stores its neutral default (as ``persona_get`` does),
outside any snapshot, then reads it.

Recall is the other exception to "one snapshot": the query may be embedded (an HTTP call when an
embedding endpoint is configured), and no network call is made inside a read transaction, so the
recall runs first with its own transactions and the page's remaining figures (which events shown
raw have a proposal waiting, the header's count) are read after it in one snapshot.

The records carry the service's own models; turning them into HTML (highlighting, timelines, the
display zone) is the adapter's part.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

from yiji.domain.forgetting import Presentation
from yiji.domain.recall import Recalled
from yiji.models.common import Scope
from yiji.models.conversations import ConversationPage, ConversationQuery, SessionPage, SessionQuery
from yiji.models.events import EventRecord
from yiji.models.lifecycle import CurrentEmotionState, DeleteRequest, DeleteResult, EmotionResult
from yiji.models.memories import MemoryPage, MemoryQuery, MemoryRecord, RelationRecord
from yiji.models.personas import PersonaRecord
from yiji.models.recall import RecallQuery
from yiji.models.reports import MemoryEvidence, ReviewContext, ReviewQueue
from yiji.store import personas as persona_store
from yiji.timeutil import Clock

if TYPE_CHECKING:
    from yiji.db import Database

__all__ = [
    "ConversationView",
    "DeletionView",
    "MemoriesView",
    "MemoryView",
    "PageReads",
    "PersonaView",
    "RecallView",
    "ReviewPages",
    "ReviewView",
    "SessionsView",
]


class PageReads(Protocol):
    """The read use cases the pages are assembled from (:class:`yiji.service.MemoryService` has them)."""

    def scope(self, persona: str | None = None, project: str | None = None) -> Scope: ...

    def review_waiting(self, persona: str | None = None, project: str | None = None) -> int: ...

    def memory_page(self, query: MemoryQuery) -> MemoryPage: ...

    def memory_read(
        self,
        memory_id: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        offset: int = ...,
        limit: int = ...,
    ) -> MemoryEvidence: ...

    def memory_lineage(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]: ...

    def fact_history(
        self, subject: str, fact_key: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]: ...

    def memory_get_many(
        self, memory_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> dict[str, MemoryRecord]: ...

    def memory_get(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> MemoryRecord: ...

    def present_memory(self, record: MemoryRecord, now: datetime) -> Presentation: ...

    def memory_delete(self, request: DeleteRequest) -> DeleteResult: ...

    def event_show(
        self, event_id: str, persona: str | None = None, project: str | None = None
    ) -> EventRecord: ...

    def memory_recall(self, q: RecallQuery) -> Recalled: ...

    def events_with_proposals(
        self, event_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> set[str]: ...

    def session_page(self, query: SessionQuery) -> SessionPage: ...

    def conversation_page(self, query: ConversationQuery) -> ConversationPage: ...

    def persona_get(self, persona: str | None = None) -> PersonaRecord: ...

    def persona_history(self, persona: str | None = None) -> list[PersonaRecord]: ...

    def current_emotion(self, persona: str | None = None, project: str | None = None) -> EmotionResult: ...

    def review_queue(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        limit: int = ...,
        after: str | None = ...,
    ) -> ReviewQueue: ...

    def extraction_counts(self, persona: str | None = None, project: str | None = None) -> dict[str, int]: ...

    def review_context(
        self, memory_id: str, *, persona: str | None = None, project: str | None = None, turns: int = ...
    ) -> ReviewContext: ...


class _Scoped(Protocol):
    """A query naming its scope."""

    @property
    def persona(self) -> str | None: ...

    @property
    def project(self) -> str | None: ...


Q = TypeVar("Q", bound=_Scoped)
P = TypeVar("P")
V = TypeVar("V")


@dataclass(frozen=True)
class MemoriesView:
    """The memories page: one page of the scope's memories."""

    waiting: int
    listing: MemoryPage


@dataclass(frozen=True)
class MemoryView:
    """One memory's page: the memory with its evidence as ``memory_read`` gives it (``read``), the
    memories a relation names (``related``), the correction lineage, the fact key's history and how the
    memory is shown ``now``."""

    waiting: int
    read: MemoryEvidence
    related: dict[str, MemoryRecord]
    lineage: list[MemoryRecord]
    facts: list[MemoryRecord]
    presentation: Presentation
    now: datetime


@dataclass(frozen=True)
class DeletionView:
    """The dry run of a memory's deletion, with the memories and events it would remove."""

    waiting: int
    plan: DeleteResult
    doomed: list[MemoryRecord]
    events: list[EventRecord]


@dataclass(frozen=True)
class RecallView:
    """A recall, with the events it shows raw from which a proposal waits for review."""

    waiting: int
    result: Recalled
    proposed: set[str]


@dataclass(frozen=True)
class SessionsView:
    waiting: int
    sessions: SessionPage


@dataclass(frozen=True)
class ConversationView:
    waiting: int
    conversation: ConversationPage


@dataclass(frozen=True)
class PersonaView:
    """The persona's versions, newest first, and the current emotion with the memory it was felt in."""

    waiting: int
    versions: list[PersonaRecord]
    emotion: CurrentEmotionState | None
    felt_in: MemoryRecord | None


@dataclass(frozen=True)
class ReviewView:
    """The review queue's head (the oldest proposal after ``after``, if any, with what a reviewer reads
    beside it: its source event, where the quote sits and the neighbouring turns of the session), how
    many wait and how many conversation events extraction has not read yet."""

    waiting: int
    to_extract: int
    proposal: ReviewContext | None


class ReviewPages:
    """The pages' use cases over ``db`` (whose snapshot each opens), ``clock`` and the read use cases
    ``reads`` they are assembled from."""

    def __init__(self, db: Database, clock: Clock, reads: PageReads) -> None:
        self._db = db
        self._clock = clock
        self._reads = reads

    def waiting(self, persona: str | None, project: str | None) -> int:
        """How many proposals of a scope wait for review (a page's header on its own)."""
        return self._reads.review_waiting(persona, project)

    def memories(self, query: MemoryQuery) -> MemoriesView:
        return self._listed(self._reads.memory_page, query, MemoriesView)

    def memory(
        self, memory_id: str, persona: str | None, project: str | None, *, offset: int, limit: int
    ) -> MemoryView:
        reads = self._reads
        now = self._clock.now()
        with self._db.read():
            read = reads.memory_read(memory_id, persona=persona, project=project, offset=offset, limit=limit)
            lineage = reads.memory_lineage(memory_id, persona, project)
            record: MemoryRecord = read["memory"]
            facts = (
                reads.fact_history(record.subject, record.fact_key, persona, project)
                if record.subject and record.fact_key
                else []
            )
            relations: list[RelationRecord] = read["relations"]
            ends = {e for r in relations for e in (r.from_id, r.to_id)} - {record.id}
            related = reads.memory_get_many(sorted(ends), persona, project) if ends else {}
            waiting = reads.review_waiting(persona, project)
        return MemoryView(
            waiting=waiting,
            read=read,
            related=related,
            lineage=lineage,
            facts=facts,
            presentation=reads.present_memory(record, now),
            now=now,
        )

    def deletion(self, memory_id: str, persona: str | None, project: str | None) -> DeletionView:
        reads = self._reads
        with self._db.read():
            request = DeleteRequest(memory_id=memory_id, dry_run=True, persona=persona, project=project)
            plan = reads.memory_delete(request)
            doomed = [reads.memory_get(i, persona, project) for i in plan.memory_ids]
            events = [reads.event_show(i, persona, project) for i in plan.event_ids]
            return DeletionView(reads.review_waiting(persona, project), plan, doomed, events)

    def recall(self, query: RecallQuery) -> RecallView:
        result = self._reads.memory_recall(query)  # embeds the query first: outside any snapshot
        shown_raw = [i.event.id for i in result.items if i.event is not None]
        with self._db.read():
            proposed = (
                self._reads.events_with_proposals(shown_raw, query.persona, query.project)
                if shown_raw
                else set()
            )
            return RecallView(self._reads.review_waiting(query.persona, query.project), result, proposed)

    def sessions(self, query: SessionQuery) -> SessionsView:
        return self._listed(self._reads.session_page, query, SessionsView)

    def conversation(self, query: ConversationQuery) -> ConversationView:
        return self._listed(self._reads.conversation_page, query, ConversationView)

    def _listed(self, read: Callable[[Q], P], query: Q, view: Callable[[int, P], V]) -> V:
        """A page that is one read of ``query`` and the header's count of the query's scope, in one
        snapshot."""
        with self._db.read():
            page = read(query)
            return view(self._reads.review_waiting(query.persona, query.project), page)

    def persona(self, persona: str | None, project: str | None) -> PersonaView:
        view = self._persona(persona, project)
        if view is None:  # a persona never seen: its neutral default is stored first (a write), then read
            self._reads.persona_get(persona)
            view = self._persona(persona, project)
            assert view is not None
        return view

    def _persona(self, persona: str | None, project: str | None) -> PersonaView | None:
        """The persona page, or None when the persona has no version yet (nothing read further)."""
        reads = self._reads
        persona_id = reads.scope(persona, None).persona
        with self._db.read() as conn:
            if persona_store.get_latest(conn, persona_id) is None:
                return None
            versions = reads.persona_history(persona)
            feeling = reads.current_emotion(persona, project)
            felt = [feeling.emotion.memory_id] if feeling.emotion else []
            source = reads.memory_get_many(felt, persona, project) if felt else {}
            waiting = reads.review_waiting(persona, project)
        return PersonaView(
            waiting=waiting,
            versions=list(reversed(versions)),
            emotion=feeling.emotion,
            felt_in=next(iter(source.values()), None),
        )

    def review(
        self, persona: str | None, project: str | None, *, after: str | None, turns: int
    ) -> ReviewView:
        """Raises :class:`yiji.errors.NotFound` when ``after`` names no memory of the scope."""
        reads = self._reads
        with self._db.read():
            queue = reads.review_queue(persona=persona, project=project, limit=1, after=after)
            to_extract = reads.extraction_counts(persona, project)["to_extract"]
            head = queue["proposals"][0] if queue["proposals"] else None
            shown = (
                reads.review_context(head.id, persona=persona, project=project, turns=turns)
                if head is not None
                else None
            )
        return ReviewView(waiting=queue["waiting"], to_extract=to_extract, proposal=shown)
