"""``session_resume``: gather the pack's components from the database and pack them within a budget.

What goes in, in pack order (each component whole or not at all; see :mod:`yiji.domain.budget`):

1. the persona in force (``persona_get``);
2. the session's latest checkpoint if it is valid; if the latest was invalidated by a correction or
   deletion, a notice in its place telling the model to ask the user (no older checkpoint is used);
3. up to 20 current, non-revoked ``agreement``/``growth`` memories, newest first;
4. up to 20 items of ``memory_recall`` (semantic mode when the scope has vectors for the configured
   embedder, otherwise fast mode) for the given query, or for a query of topic cues
   from the checkpoint's goal and next action and the recent events (:func:`derived_query`; none when
   there is nothing to build it from): memories, and raw events without derived memories as recall
   labels them; items already in the pack (agreements, recent events) are left out;
5. the current emotion (the latest role-emotion expression decayed toward calm);
6. up to 5 recent conversation events of the session (of the scope when no session is given),
   chronological, amended events left out, each text cut at 2,000 characters with a ``truncated`` flag.

Memories are presented through ordinary forgetting (``present_memory``, with ``config.forgetting``); the
emotion is ``current_emotion``. Everything after the persona is read in one snapshot; a semantic recall's
query is embedded before it, so no network call runs inside it. The budget counts the context string only,
with the counter for ``model``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from yiji.domain import emotion, forgetting
from yiji.models.recall import RecallQuery
from yiji.service.base import Deps
from yiji.service.checkpoints import Checkpoints, checkpoint_state
from yiji.service.lifecycle import Lifecycle
from yiji.service.memories import Memories
from yiji.service.personas import Personas
from yiji.service.recall_ops import EmbeddedQuery, Recaller
from yiji.service.vectors import VectorIndex
from yiji.store import events as event_store
from yiji.store import memories as memory_store
from yiji.timeutil import to_db

if TYPE_CHECKING:  # the packer and the resume models load when a pack is built: other commands skip them
    from yiji.domain.budget import CheckpointNotice, EventPart, MemoryPart
    from yiji.domain.forgetting import Presentation
    from yiji.domain.host_pack import PackCheckpoint
    from yiji.domain.records import RawEvent
    from yiji.models.checkpoints import CheckpointRecord
    from yiji.models.common import Scope
    from yiji.models.events import EventRecord
    from yiji.models.memories import MemoryRecord
    from yiji.models.resume import ResumeRequest, ResumeResult

__all__ = ["AGREEMENT_KINDS", "EVENT_EXCERPT_CHARS", "Resume", "derived_query"]

AGREEMENT_KINDS = ("agreement", "growth")
EVENT_EXCERPT_CHARS = 2000
"""Longest recent-event excerpt in a pack, in characters; longer texts are cut and flagged."""

DERIVED_TASK_CUES = 4
"""Topic cues taken from the checkpoint's goal and next action for a derived recall query."""
DERIVED_EVENT_CUES = 2
"""Topic cues taken from each recent event for a derived recall query."""
DERIVED_MAX_CUES = 12
LATEST_TURN_CHARS = 300
"""The latest user turn goes into a derived query whole up to this many characters (its cues beyond)."""

_BYTES_NOTE_NO_MODEL = "no model named: the budget counts UTF-8 bytes, a deliberately conservative estimate"
_BYTES_NOTE_UNKNOWN = (
    "no exact tokenizer is installed for this model: the budget counts UTF-8 bytes, a deliberately "
    "conservative estimate, not the model's tokens"
)


def model_warning(model: str | None, exact: bool) -> str | None:
    """Why a named model did not change the count, when it did not: its family's tokenizer is not installed
    (and which extra installs it), or yiji knows no tokenizer for the name. Never echoes the name."""
    from yiji.domain.budget import TOKENIZER_EXTRA, tokenizer_family

    if model is None or exact:
        return None
    effect = "so the model name has no effect: the budget counts UTF-8 bytes"
    if tokenizer_family(model) is not None:
        from yiji.invocation import install_hint

        hint = install_hint(TOKENIZER_EXTRA)
        return f"the tokenizer for this model is not installed ({hint}), {effect}"
    return f"yiji knows no tokenizer for this model name, {effect}"


def _checkpoint_part(cp: CheckpointRecord) -> PackCheckpoint | CheckpointNotice:
    from yiji.domain.budget import CheckpointNotice
    from yiji.domain.host_pack import PackCheckpoint

    if cp.invalidated_at is not None:
        return CheckpointNotice(
            checkpoint_id=cp.id,
            session_id=cp.session,
            saved_at=cp.created_at,
            invalidated_at=cp.invalidated_at,
            reason=cp.invalid_reason,
        )
    return PackCheckpoint(
        checkpoint_id=cp.id,
        session_id=cp.session,
        goal=cp.goal,
        saved_at=cp.created_at,
        completed=tuple(cp.completed),
        pending=tuple(cp.pending),
        constraints=tuple(cp.constraints),
        next_action=cp.next_action,
    )


def _event_part(e: EventRecord) -> EventPart:
    from yiji.domain.budget import EventPart

    cut = len(e.text) > EVENT_EXCERPT_CHARS
    return EventPart(
        event_id=e.id,
        seq=e.seq,
        role=e.role,
        occurred_at=e.occurred_at,
        text=e.text[:EVENT_EXCERPT_CHARS] if cut else e.text,
        truncated=cut,
    )


def _raw_event_part(e: RawEvent, context: Iterable[RawEvent] = ()) -> MemoryPart:
    from yiji.domain.budget import EventPart, MemoryPart

    # A shorter label than recall's (same meaning, plus the role): it repeats on up to 20 items.
    return MemoryPart(
        memory_id=e.id,
        kind="raw_event",
        text=e.text,
        time=forgetting.exact_time_label(e.occurred_at),
        shown_as="raw_event",
        label=f"{e.role} turn",
        truncated=e.truncated,
        context=tuple(
            EventPart(
                event_id=c.id,
                seq=c.seq,
                role=c.role,
                occurred_at=c.occurred_at,
                text=c.text,
                truncated=c.truncated,
            )
            for c in context
        ),
    )


def derived_query(checkpoint: CheckpointRecord | None, events: list[EventRecord]) -> str | None:
    """A recall query of salient words: the topic cues (:func:`yiji.domain.forgetting.topic_cues`) of a
    valid checkpoint's goal and next action, then the latest user turn whole (what it asks about:
    "你还记得我住在哪里吗？" has no topic cue but 记得, and its question words are what finds a keyed
    fact; cues only when it is longer than :data:`LATEST_TURN_CHARS`), then the cues of each other
    recent event, newest first; ``None`` when there is nothing to build it from.

    Cues rather than whole texts: a handful of names and nouns says what the task and the conversation
    are about, while every extra word of a long query makes the lexical search score more of the index
    (measured at 100,000 memories: 7 whole texts cost about 65 ms per recall, their cues under 25 ms).
    """
    from yiji.models.resume import MAX_QUERY

    cues: list[str] = []
    if checkpoint is not None and checkpoint.valid:
        task = "\n".join(p for p in (checkpoint.goal, checkpoint.next_action) if p)
        cues.extend(forgetting.topic_cues(task[:MAX_QUERY], max_cues=DERIVED_TASK_CUES))
    latest = next((e for e in events if e.role == "user"), None)
    if latest is not None and len(latest.text.strip()) <= LATEST_TURN_CHARS:
        cues.append(" ".join(latest.text.split()))
    for event in events:
        if event is latest and len(latest.text.strip()) <= LATEST_TURN_CHARS:
            continue
        cues.extend(forgetting.topic_cues(event.text[:MAX_QUERY], max_cues=DERIVED_EVENT_CUES))
    unique = [c for c in dict.fromkeys(cues) if c][:DERIVED_MAX_CUES]
    return " ".join(unique)[:MAX_QUERY] or None


class Resume:
    """``session_resume``."""

    def __init__(
        self,
        deps: Deps,
        personas: Personas,
        recaller: Recaller,
        lifecycle: Lifecycle,
        memories: Memories,
        checkpoints: Checkpoints,
        vectors: VectorIndex,
    ) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.personas = personas
        self.recaller = recaller
        self.lifecycle = lifecycle
        self.memories = memories
        self.checkpoints = checkpoints
        self.vectors = vectors

    def _memory_part(self, m: MemoryRecord, now: datetime, shown: Presentation | None = None) -> MemoryPart:
        """``m`` as ordinary forgetting presents it at ``now`` (``shown`` when already computed)."""
        from yiji.domain.budget import MemoryPart

        p = shown if shown is not None else self.memories.present_memory(m, now)
        return MemoryPart(
            memory_id=m.id,
            kind=m.kind,
            text=p.text,
            time=p.time_label,
            basis=m.basis,
            shown_as=p.mode,
            label=p.label,
        )

    def _recalled_parts(  # noqa: PLR0913 - the query, what the pack shows already, and its embedding
        self,
        scope: Scope,
        query: str,
        skip: set[str],
        now: datetime,
        shown_seqs: set[int],
        embedded: EmbeddedQuery | None,
    ) -> tuple[list[MemoryPart], list[str]]:
        """Up to :data:`MAX_RECALLED` recalled items (memories, or labelled raw events) for ``query``,
        leaving out the ids in ``skip`` (already shown elsewhere in the pack); and recall's warnings.
        Semantic when the query was ``embedded`` (the scope has vectors), fast otherwise.

        The ranking runs to ``MAX_RECALLED + len(skip)`` items, so what is left out does not change which
        items are ranked; only the items the pack takes are read and presented."""
        from yiji.domain.budget import MAX_RECALLED

        semantic = embedded is not None
        request = RecallQuery(
            query=query,
            persona=scope.persona,
            project=scope.project,
            limit=MAX_RECALLED + len(skip),
            mode="semantic" if semantic else "fast",
        ).request()
        # the turns the pack shows (the question being answered among them) are not evidence for itself
        result = self.recaller.recall(
            request, frozenset(shown_seqs), embedded, leave_out=frozenset(skip), take=MAX_RECALLED
        )
        parts: list[MemoryPart] = []
        for item in result.items:
            if item.id in skip:
                continue
            if item.memory is not None:
                parts.append(self._memory_part(item.memory, now, item.presentation))
            elif item.event is not None:
                beside = [c.event for c in item.context if c.event is not None and c.id not in skip]
                parts.append(_raw_event_part(item.event, beside))
            if len(parts) == MAX_RECALLED:
                break
        return parts, list(result.warnings)

    def _emotion_part(self, scope: Scope) -> emotion.CurrentEmotion | None:
        state = self.lifecycle.current_emotion(scope.persona, scope.project).emotion
        if state is None:
            return None
        return emotion.CurrentEmotion(
            valence=state.valence,
            arousal=state.arousal,
            factor=state.factor,
            expressed_at=state.expressed_at,
            memory_id=state.memory_id,
        )

    def _embedded_query(
        self, request: ResumeRequest, scope: Scope
    ) -> tuple[str | None, EmbeddedQuery | None]:
        """The recall query and, when the scope has vectors for the configured embedder, its embedding:
        made before the pack's snapshot, so no network call runs inside it. A derived query is derived
        here from the checkpoint and recent events as they are now (none is derived when recall will not
        be semantic: the snapshot derives it)."""
        from yiji.domain.budget import MAX_RECENT_EVENTS

        if self.vectors.embedder is None:
            return request.query, None
        with self.db.read() as conn:
            if not self.vectors.has_vectors(conn, scope):
                return request.query, None
            query = request.query
            if query is None:
                latest = (
                    self.checkpoints.latest_checkpoint(conn, scope, request.session)
                    if request.session is not None
                    else None
                )
                recent = event_store.recent_conversation(
                    conn, scope.persona, scope.project, request.session, MAX_RECENT_EVENTS
                )
                query = derived_query(latest, recent)
        if query is None:
            return None, None
        # the scope's vector pack is left as it is: recall reads what is there (row by row without one)
        return query, self.recaller.embed_query(query, scope, refresh_pack=False)

    def session_resume(self, request: ResumeRequest) -> ResumeResult:
        """Build the budgeted context pack for a resuming session (see the module docstring)."""
        from yiji.domain.budget import (
            MAX_AGREEMENTS,
            MAX_RECENT_EVENTS,
            ResumeComponents,
            counter_for_model,
            pack,
        )
        from yiji.domain.host_pack import PackPersona
        from yiji.models.resume import (
            CheckpointUse,
            RecallUse,
            ResumeMetadata,
            ResumeResult,
        )

        scope = self.scope(request.persona, request.project)
        counter = counter_for_model(request.model)
        persona = self.personas.persona_get(scope.persona)
        now = self.clock.now()
        at = to_db(now)
        query, embedded = self._embedded_query(request, scope)
        with self.db.read() as conn:  # every component from one snapshot, with no network call in it
            latest = (
                self.checkpoints.latest_checkpoint(conn, scope, request.session)
                if request.session is not None
                else None
            )
            agreements = memory_store.newest_current(
                conn, scope.persona, scope.project, AGREEMENT_KINDS, at, MAX_AGREEMENTS
            )
            events = event_store.recent_conversation(
                conn, scope.persona, scope.project, request.session, MAX_RECENT_EVENTS
            )
            if embedded is None and request.query is None:
                query = derived_query(latest, events)
            source: Literal["given", "derived", "none"] = (
                "given" if request.query is not None else "derived" if query is not None else "none"
            )
            # already in the pack: agreements, and recent events (a raw-event recall item is one)
            shown = {m.id for m in agreements} | {e.id for e in events}
            recalled: list[MemoryPart] = []
            warnings: list[str] = []
            if query is not None:
                seqs = {e.seq for e in events}
                recalled, warnings = self._recalled_parts(scope, query, shown, now, seqs, embedded)
            current = self._emotion_part(scope)

        components = ResumeComponents(
            persona=PackPersona(persona.persona, persona.version, persona.text),
            checkpoint=_checkpoint_part(latest) if latest is not None else None,
            agreements=[self._memory_part(m, now) for m in agreements],
            recalled_memories=recalled,
            emotion=current,
            recent_events=[_event_part(e) for e in events],
        )
        packed = pack(components, request.budget, counter)
        note = None
        if not counter.exact:
            note = _BYTES_NOTE_NO_MODEL if request.model is None else _BYTES_NOTE_UNKNOWN
        metadata = ResumeMetadata(
            status=packed.status,
            budget=packed.budget,
            used=packed.used,
            counter=packed.counter,
            exact=packed.exact,
            counter_note=note,
            model_warning=model_warning(request.model, counter.exact),
            included=list(packed.included),
            omitted=list(packed.omitted),
            empty=list(packed.empty),
            trimmed=list(packed.trimmed),
            checkpoint=CheckpointUse(
                state=checkpoint_state(latest),
                checkpoint_id=latest.id if latest is not None else None,
                invalidated_at=latest.invalidated_at if latest is not None else None,
            ),
            recall=RecallUse(
                query=source,
                derived_query=query if source == "derived" else None,
                found=len(recalled),
                warnings=warnings,
            ),
            generated_at=now,
        )
        return ResumeResult(scope=scope, session=request.session, context=packed.context, metadata=metadata)
