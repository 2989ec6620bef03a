"""Derived-memory use cases: manual derivation, the shared batch writer, listing, and ``memory_read``.

Every memory passes :mod:`yiji.domain.validation` against its source event, inside the same transaction
as its insert. Single-valued facts get their validity intervals from :mod:`yiji.domain.intervals` at
insertion time only, so closed intervals are never reopened later.

Listing applies ordinary forgetting as *presentation* (:meth:`Memories.present_memory`, thresholds from
``config.forgetting``): old episodes, observations and emotions surface a gist or labeled topic cues and a
coarser time label. Nothing is deleted or rewritten by forgetting; ``memory_read`` always returns the exact
original text, quote and timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from yiji.db import Connection
from yiji.domain import forgetting, intervals
from yiji.errors import InvalidInput, NotFound
from yiji.models.common import Scope
from yiji.models.events import EventRecord
from yiji.models.memories import (
    KINDS,
    DeriveRequest,
    DeriveResult,
    ListedMemory,
    MemoryIn,
    MemoryPage,
    MemoryQuery,
    MemoryRecord,
    Rejection,
    ReviewState,
)
from yiji.service.base import Deps, new_id
from yiji.service.indexing import LexicalIndex
from yiji.store import events as event_store
from yiji.store import memories as store
from yiji.timeutil import to_db

if TYPE_CHECKING:  # the memory rules load where a memory is checked: recall starts without them
    from yiji.domain.validation import MemoryCandidate, SourceEvent, Violation
    from yiji.models.reports import MemoryEvidence

__all__ = ["Memories", "candidate_from"]

READ_PAGE = 4000


def candidate_from(item: MemoryIn) -> MemoryCandidate:
    from yiji.domain.validation import MemoryCandidate

    return MemoryCandidate.of(item)


def source_of(event: EventRecord) -> SourceEvent:
    from yiji.domain.validation import SourceEvent

    return SourceEvent(role=event.role, category=event.category, text=event.text)


def _span(m: MemoryRecord) -> intervals.FactSpan:
    return intervals.FactSpan(
        id=m.id,
        valid_at=m.valid_at,
        created_at=m.created_at,
        invalid_at=m.invalid_at,
        revoked=m.revoked_at is not None,
    )


class Memories:
    """The derived-memory use cases and the memory writer."""

    def __init__(self, deps: Deps, lexical: LexicalIndex) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.lexical = lexical

    # -- writing ---------------------------------------------------------------------------------

    def event_in_scope(self, conn: Connection, event_id: str, scope: Scope) -> EventRecord:
        event = event_store.get(conn, event_id)
        if event is None or (event.persona, event.project) != (scope.persona, scope.project):
            raise NotFound("event", "event_id")
        return event

    def write_batch(
        self,
        conn: Connection,
        event: EventRecord,
        candidates: Sequence[MemoryCandidate],
        verdicts: Sequence[Sequence[Violation]],
        origin: str,
        reuse: Mapping[int, str] | None = None,
        states: Sequence[str] | None = None,
        skip: frozenset[int] = frozenset(),
    ) -> list[str]:
        """Insert the valid candidates of one event, close intervals, link ``related`` items.

        Runs inside the caller's transaction. Refused candidates are skipped; links to them dropped.
        Candidates in ``reuse`` (batch index -> id) are already stored: their id is returned instead.
        ``states`` gives each candidate's review state (all ``accepted`` when omitted); a ``proposed``
        one is stored but closes no interval and is not indexed until :meth:`apply_accepted`.
        Candidates in ``skip`` are left out like refused ones (a claim a person already rejected).
        """
        from yiji.domain import validation

        now = self.clock.now()
        created_at = to_db(now)
        ids: dict[int, str] = dict(reuse or {})
        for index, (cand, problems) in enumerate(zip(candidates, verdicts, strict=True)):
            if problems or index in ids or index in skip:
                continue
            memory_id = new_id("mem")
            valid_at = validation.resolve_valid_at(cand, event.occurred_at)
            values: dict[str, Any] = {
                "id": memory_id,
                "persona_id": event.persona,
                "project_id": event.project,
                "event_id": event.id,
                "kind": cand.kind,
                "basis": cand.basis,
                "text": cand.text.strip(),
                "quote": cand.quote,
                "confidence": float(cand.confidence),
                "subject": cand.subject,
                "fact_key": cand.fact_key,
                "valid_at": to_db(valid_at),
                "invalid_at": None,
                "valence": cand.valence,
                "arousal": cand.arousal,
                "gist": cand.gist.strip() if cand.gist else None,
                "origin": origin,
                "created_at": created_at,
                "review_state": states[index] if states else "accepted",
            }
            pk = store.insert(conn, values)
            ids[index] = memory_id
            if values["review_state"] == "accepted":
                self.apply_accepted(conn, pk, memory_id, event)
        scope = Scope(persona=event.persona, project=event.project)
        for index, cand in enumerate(candidates):
            if index not in ids or index in (reuse or {}):
                continue
            for link in cand.related:
                target = (
                    ids.get(link) if isinstance(link, int) else self._existing_in_scope(conn, link, scope)
                )
                if target and target != ids[index]:
                    store.insert_relation(conn, ids[index], target, "related", created_at)
        return [ids[i] for i in sorted(ids)]

    def apply_accepted(self, conn: Connection, pk: int, memory_id: str, event: EventRecord) -> None:
        """What an accepted memory changes beside its row: the intervals of its key close (at its own
        ``valid_at``) and the lexical index takes it. Runs when a memory is stored accepted, and when a
        proposal is accepted later, so both are one path."""
        record = store.get(conn, memory_id)
        assert record is not None
        if record.subject and record.fact_key:
            self._close_intervals(conn, record)
            record = store.get(conn, memory_id)
            assert record is not None
        self.lexical.add_memory(conn, pk, record, event)

    def _existing_in_scope(self, conn: Connection, memory_id: str, scope: Scope) -> str | None:
        found = store.get(conn, memory_id)
        if found is None or (found.persona, found.project) != (scope.persona, scope.project):
            return None
        return found.id

    @staticmethod
    def _close_intervals(conn: Connection, new: MemoryRecord) -> None:
        """Place a fact just stored (or just accepted) in its key's timeline. Only its two live
        neighbours matter (:func:`yiji.domain.intervals.close_intervals` changes nothing else), so only
        they are read: accepting a fact costs the same however many facts its key has."""
        neighbours = [f for f in store.fact_neighbours(conn, new) if f is not None]
        for update in intervals.close_intervals([_span(f) for f in neighbours], _span(new)):
            store.set_invalid_at(conn, update.id, to_db(update.invalid_at) if update.invalid_at else None)

    def memory_derive(self, request: DeriveRequest) -> DeriveResult:
        """Store caller-supplied memories for one event, all or nothing, under the same rules; with
        ``propose`` as proposals waiting for review.

        Identical claims are one memory (:meth:`_identical_existing`): a claim the event already has is
        not stored again, and the result gives the existing memory's id and its state as it is (an
        accepted one stays accepted, a waiting proposal keeps waiting for a person, a rejected one stays
        rejected and is not proposed again); ``created`` is false when nothing new was stored."""
        from yiji.domain import validation

        scope = self.scope(request.persona, request.project)
        candidates = [self.deps.redacted_candidate(candidate_from(m)) for m in request.memories]
        with self.db.write() as conn:
            event = self.event_in_scope(conn, request.event_id, scope)
            verdicts = validation.validate_batch(
                candidates, source_of(event), secrets=self.deps.known_secrets()
            )
            problems = [(f"memories.{i}.{v.field}", v) for i, vs in enumerate(verdicts) for v in vs]
            if problems:
                raise validation.refused(problems)
            for i, cand in enumerate(candidates):
                for link in cand.related:
                    if isinstance(link, str) and self._existing_in_scope(conn, link, scope) is None:
                        raise InvalidInput(f"memories.{i}.related", "names no memory in this scope")
            existing = self._identical_existing(conn, event, candidates, request.propose)
            arrival = "proposed" if request.propose else "accepted"
            states = [existing[i][1] if i in existing else arrival for i in range(len(candidates))]
            reuse = {i: memory_id for i, (memory_id, _) in existing.items()}
            memory_ids = self.write_batch(conn, event, candidates, verdicts, "manual", reuse, states)
            if event.extraction_state in (
                "none",
                "pending",
            ):  # derived by the caller: nothing left to extract
                event_store.set_extraction_state(conn, event.id, "done", None)
        review_states = [cast(ReviewState, state) for state in states]
        return DeriveResult(
            scope=scope,
            event_id=request.event_id,
            memory_ids=memory_ids,
            review_state=review_states[0] if len(set(review_states)) == 1 else "mixed",
            review_states=review_states,
            existing_ids=[memory_id for memory_id, _ in existing.values()],
            created=len(existing) < len(candidates),
        )

    @staticmethod
    def _identical_existing(
        conn: Connection, event: EventRecord, candidates: Sequence[MemoryCandidate], proposed: bool = False
    ) -> dict[int, tuple[str, str]]:
        """Batch index -> (id, review state) of a live memory of ``event`` that is the same claim as
        that candidate, so that deriving a claim twice stores it once.

        The same claim: identical text, quote, kind, basis, subject and key, in any review state (the
        accepted memory first, then a waiting proposal, then a rejected one); and, when ``proposed``, a
        rejected memory of the same quote, kind and key whatever its wording (the rule extraction
        follows: :func:`yiji.domain.review.rejected_identity`), since a person already said no."""
        from yiji.domain import review

        order = {"accepted": 0, "proposed": 1, "rejected": 2}
        mine = sorted(
            (m for m in store.by_event(conn, event.id) if m.revoked_at is None and m.review_state in order),
            key=lambda m: order[m.review_state],
        )

        def identity(text: str, quote: str, kind: str, basis: str, subject: Any, key: Any) -> tuple[Any, ...]:
            return (text.strip(), quote, kind, basis, subject, key)

        same: dict[tuple[Any, ...], tuple[str, str]] = {}
        for m in mine:
            same.setdefault(
                identity(m.text, m.quote, m.kind, m.basis, m.subject, m.fact_key), (m.id, m.review_state)
            )
        refused = {
            review.rejected_identity(m.quote, m.kind, m.subject, m.fact_key): (m.id, m.review_state)
            for m in reversed(mine)
            if m.review_state == "rejected"
        }
        found: dict[int, tuple[str, str]] = {}
        for i, c in enumerate(candidates):
            hit = same.get(identity(c.text, c.quote, c.kind, c.basis, c.subject, c.fact_key))
            if hit is None and proposed:
                hit = refused.get(review.rejected_identity(c.quote, c.kind, c.subject, c.fact_key))
            if hit is not None and hit[0] not in {f[0] for f in found.values()}:
                found[i] = hit
        return found

    def memory_derive_many(self, requests: Sequence[DeriveRequest]) -> list[DeriveResult]:
        """Several derivations in one transaction (bulk loads, benchmarks): all stored, or none. The
        lexical index takes the new memories together at the end (:meth:`LexicalIndex.together`)."""
        with self.db.write() as conn, self.lexical.together(conn):
            return [self.memory_derive(r) for r in requests]

    @staticmethod
    def rejections(verdicts: Sequence[Sequence[Violation]]) -> list[Rejection]:
        return [
            Rejection(index=i, field=v.field, rule=str(v.rule)) for i, vs in enumerate(verdicts) for v in vs
        ]

    # -- reading ---------------------------------------------------------------------------------

    def present_memory(self, record: MemoryRecord, now: datetime) -> forgetting.Presentation:
        """How ``record`` is shown at ``now`` under ordinary forgetting (``config.forgetting``).

        Facts, preferences, agreements and growth stay detailed; older episodes, observations and emotions
        fade to their authored gist or labeled extractive topic cues, and later to a decade label. The
        record itself is not changed.
        """
        return forgetting.present_memory(record, now, self.config.forgetting)

    def memory_get(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> MemoryRecord:
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            found = store.get(conn, memory_id)
        if found is None or (found.persona, found.project) != (scope.persona, scope.project):
            raise NotFound("memory")
        return found

    def memory_get_many(
        self, memory_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> dict[str, MemoryRecord]:
        """The memories of ``memory_ids`` that exist in the scope, by id (others are left out)."""
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            found = store.get_many(conn, list(dict.fromkeys(memory_ids)))
        return {k: m for k, m in found.items() if (m.persona, m.project) == (scope.persona, scope.project)}

    def memory_list(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        kinds: Sequence[str] | None = None,
        subject: str | None = None,
        fact_key: str | None = None,
        as_of: datetime | None = None,
        include_history: bool = False,
        include_revoked: bool = False,
        limit: int = 100,
    ) -> tuple[Scope, list[ListedMemory]]:
        """Memories of a scope: by default those valid now; ``as_of`` picks another instant;
        ``include_history`` adds expired (and not-yet-started) ones. Revoked ones are out unless asked
        (a corrected memory was never true, so it is out of current and ``as_of`` views alike).

        Each item carries its ``presentation`` at the present moment (see :meth:`present_memory`).
        :meth:`memory_page` is the paginated, filterable form."""
        scope = self.scope(persona, project)
        if kinds and any(k not in KINDS for k in kinds):
            raise InvalidInput("kinds", f"each must be one of {', '.join(KINDS)}")
        if limit < 1 or limit > 10_000:
            raise InvalidInput("limit", "must be between 1 and 10000")
        now = self.clock.now()
        selection = store.MemoryFilter(
            persona_id=scope.persona,
            project_id=scope.project,
            kinds=tuple(kinds or ()),
            subject=subject,
            fact_key=fact_key,
            valid_at_time=None if include_history else to_db(as_of or now),
            revoked="include" if include_revoked else "exclude",
        )
        with self.db.read() as conn:
            rows = store.list_memories(conn, selection, limit=limit)
        return scope, [self._listed(row, now) for row in rows]

    def _listed(self, row: MemoryRecord, now: datetime) -> ListedMemory:
        return ListedMemory.of(row, self.present_memory(row, now))

    def memory_page(self, query: MemoryQuery) -> MemoryPage:
        """One page of a scope's memories for review, with the total count and the next offset.

        ``view`` picks current (valid at ``as_of``, default now), history (every live memory, expired and
        future ones included) or revoked (corrected memories only); the other fields filter. Each item
        carries its presentation now (see :meth:`present_memory`).
        """
        scope = self.scope(query.persona, query.project)
        now = self.clock.now()
        selection = store.MemoryFilter(
            persona_id=scope.persona,
            project_id=scope.project,
            kinds=tuple(query.kinds or ()),
            bases=tuple(query.bases or ()),
            subject=query.subject,
            fact_key=query.fact_key,
            text=query.text,
            since=to_db(query.since) if query.since else None,
            until=to_db(query.until) if query.until else None,
            valid_at_time=to_db(query.as_of or now)
            if query.view == "current" and query.review == "accepted"
            else None,
            revoked="only"
            if query.view == "revoked"
            else ("include" if query.include_revoked else "exclude"),
            review=(query.review,),
        )
        with self.db.read() as conn:
            total = store.count_memories(conn, selection)
            rows = store.list_memories(
                conn, selection, limit=query.limit, offset=query.offset, newest_first=query.newest_first
            )
        end = query.offset + len(rows)
        return MemoryPage(
            scope=scope,
            total=total,
            offset=query.offset,
            limit=query.limit,
            next_offset=end if end < total else None,
            memories=[self._listed(row, now) for row in rows],
        )

    def memory_lineage(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]:
        """The correction lineage a memory belongs to: every memory joined to it by ``corrects`` links,
        in either direction and transitively, itself included, oldest first (by creation)."""
        start = self.memory_get(memory_id, persona, project)
        seen = {start.id}
        frontier = [start.id]
        with self.db.read() as conn:
            while frontier:
                found = {
                    other
                    for r in store.relations_of(conn, frontier)
                    if r.type == "corrects"
                    for other in (r.from_id, r.to_id)
                }
                frontier = sorted(found - seen)
                seen.update(frontier)
            members = store.get_many(conn, sorted(seen))
        return sorted(members.values(), key=lambda m: (m.created_at, m.id))

    def fact_history(
        self, subject: str, fact_key: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]:
        """Every memory of one single-valued property of a scope, revoked ones included, by validity."""
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            return store.facts_for_key(conn, scope.persona, scope.project, subject, fact_key)

    def memory_read(
        self,
        memory_id: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        offset: int = 0,
        limit: int = READ_PAGE,
    ) -> MemoryEvidence:
        """The memory with its evidence: source event metadata, a page of the original text, where the
        quote sits, co-derived memories and relations. Stored text is never altered."""
        if offset < 0:
            raise InvalidInput("offset", "must be >= 0")
        if limit < 1 or limit > 100_000:
            raise InvalidInput("limit", "must be between 1 and 100000")
        memory = self.memory_get(memory_id, persona, project)
        with self.db.read() as conn:
            event = event_store.get(conn, memory.event_id)
            co = [m for m in store.by_event(conn, memory.event_id) if m.id != memory.id]
            relations = store.relations_of(conn, [memory.id])
        assert event is not None
        text = event.text
        start = text.find(memory.quote)
        page = text[offset : offset + limit]
        return {
            "scope": Scope(persona=memory.persona, project=memory.project),
            "memory": memory,
            "event": event.model_dump(mode="json", exclude={"text"}),
            "text": {
                "offset": offset,
                "limit": limit,
                "total_chars": len(text),
                "content": page,
                "has_more": offset + len(page) < len(text),
            },
            "quote": {"start": start, "end": start + len(memory.quote) if start >= 0 else -1},
            "co_derived": co,
            "relations": relations,
        }
