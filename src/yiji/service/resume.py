"""``session_resume``: gather the pack's components from the database and pack them within a budget.

What goes in, in pack order (each component whole or not at all; see :mod:`yiji.domain.budget`):

1. the persona in force (``persona_get``);
2. the session's latest checkpoint if it is valid; if the latest was invalidated by a correction or
   deletion, a notice in its place telling the model to ask the user (no older checkpoint is used);
3. up to 20 current, non-revoked ``agreement``/``growth`` memories, newest first;
4. up to 20 recalled memories for the given query, or for a query built from the checkpoint's goal and
   next action and the recent events' text (none when there is nothing to build it from), leaving out
   memories already shown as agreements;
5. the current emotion (the latest role-emotion expression decayed toward calm);
6. up to 5 recent conversation events of the session (of the scope when no session is given),
   chronological, amended events left out, each text cut at 2,000 characters with a ``truncated`` flag.

Memories are presented through ordinary forgetting (``config.forgetting``). Everything after the persona
is read in one snapshot. The budget counts the context string only, with the counter for ``model``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from yiji.db import Connection
from yiji.domain import emotion, forgetting
from yiji.domain.budget import (
    MAX_AGREEMENTS,
    MAX_RECALLED,
    MAX_RECENT_EVENTS,
    CheckpointNotice,
    CheckpointPart,
    EventPart,
    MemoryPart,
    PersonaPart,
    ResumeComponents,
    counter_for_model,
    pack,
)
from yiji.models.checkpoints import CheckpointRecord
from yiji.models.common import Scope
from yiji.models.events import EventRecord
from yiji.models.memories import MemoryRecord
from yiji.models.resume import (
    MAX_QUERY,
    CheckpointUse,
    OmittedComponent,
    RecallUse,
    ResumeMetadata,
    ResumeRequest,
    ResumeResult,
)
from yiji.service.checkpoints import CheckpointOps, checkpoint_state
from yiji.service.memories import MemoryOps
from yiji.service.personas import PersonaOps
from yiji.store import events as event_store
from yiji.store import memories as memory_store
from yiji.timeutil import to_db

__all__ = ["AGREEMENT_KINDS", "EVENT_EXCERPT_CHARS", "ResumeOps"]

AGREEMENT_KINDS = ("agreement", "growth")
EVENT_EXCERPT_CHARS = 2000
"""Longest recent-event excerpt in a pack, in characters; longer texts are cut and flagged."""

_BYTES_NOTE_NO_MODEL = "no model named: the budget counts UTF-8 bytes, a deliberately conservative estimate"
_BYTES_NOTE_UNKNOWN = (
    "no exact tokenizer is installed for this model: the budget counts UTF-8 bytes, a deliberately "
    "conservative estimate, not the model's tokens"
)


def _checkpoint_part(cp: CheckpointRecord) -> CheckpointPart | CheckpointNotice:
    if cp.invalidated_at is not None:
        return CheckpointNotice(
            checkpoint_id=cp.id,
            session_id=cp.session,
            saved_at=cp.created_at,
            invalidated_at=cp.invalidated_at,
            reason=cp.invalid_reason,
        )
    return CheckpointPart(
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
    cut = len(e.text) > EVENT_EXCERPT_CHARS
    return EventPart(
        event_id=e.id,
        seq=e.seq,
        role=e.role,
        occurred_at=e.occurred_at,
        text=e.text[:EVENT_EXCERPT_CHARS] if cut else e.text,
        truncated=cut,
    )


def derived_query(checkpoint: CheckpointRecord | None, events: list[EventRecord]) -> str | None:
    """A recall query from a valid checkpoint's goal and next action and the recent events (newest
    first), cut to :data:`MAX_QUERY` characters; ``None`` when there is nothing to build it from."""
    parts: list[str] = []
    if checkpoint is not None and checkpoint.valid:
        parts.append(checkpoint.goal)
        if checkpoint.next_action:
            parts.append(checkpoint.next_action)
    parts.extend(e.text[:MAX_QUERY] for e in events)
    text = "\n".join(p.strip() for p in parts if p.strip())
    return text[:MAX_QUERY] or None


class ResumeOps(PersonaOps, MemoryOps, CheckpointOps):
    def _memory_part(self, m: MemoryRecord, now: datetime) -> MemoryPart:
        section = self.config.forgetting
        shown = forgetting.present(
            m.kind,
            m.text,
            m.gist,
            m.valid_at,
            now,
            gist_after_days=section.gist_after_days,
            coarsen_after_days=section.coarsen_after_days,
        )
        return MemoryPart.presented(m.id, m.kind, m.basis, shown)

    def _recall_for_resume(
        self, scope: Scope, query: str, limit: int
    ) -> tuple[list[MemoryRecord], list[str]]:
        """PLACEHOLDER until ``memory_recall`` lands: current memories containing a topic cue of the query,
        newest first. Returns the memories and any recall warnings."""
        cues = [c.casefold() for c in forgetting.topic_cues(query, max_cues=10)]
        if not cues:
            return [], []
        _, rows = self.memory_list(persona=scope.persona, project=scope.project, limit=10_000)
        hits = [m for m in reversed(rows) if any(c in m.text.casefold() for c in cues)]
        return hits[:limit], ["placeholder recall: topic-cue substring match over current memories"]

    def _current_emotion(
        self, conn: Connection, scope: Scope, now: datetime
    ) -> emotion.CurrentEmotion | None:
        row = memory_store.latest_expressed_emotion(conn, scope.persona, scope.project, to_db(now))
        if row is None:
            return None
        expression = emotion.expression_from_memory(row.basis, row.valence, row.arousal, row.valid_at, row.id)
        return emotion.current_emotion(
            expression, now, half_life_hours=self.config.forgetting.emotion_half_life_hours
        )

    def session_resume(self, request: ResumeRequest) -> ResumeResult:
        """Build the budgeted context pack for a resuming session (see the module docstring)."""
        scope = self.scope(request.persona, request.project)
        counter = counter_for_model(request.model)
        persona = self.persona_get(scope.persona)
        now = self.clock.now()
        at = to_db(now)
        with self.db.read() as conn:
            latest = (
                self._latest_checkpoint(conn, scope, request.session) if request.session is not None else None
            )
            agreements = memory_store.newest_current(
                conn, scope.persona, scope.project, AGREEMENT_KINDS, at, MAX_AGREEMENTS
            )
            events = event_store.recent_conversation(
                conn, scope.persona, scope.project, request.session, MAX_RECENT_EVENTS
            )
            query = request.query if request.query is not None else derived_query(latest, events)
            source: Literal["given", "derived", "none"] = (
                "given" if request.query is not None else "derived" if query is not None else "none"
            )
            shown = {m.id for m in agreements}
            recalled: list[MemoryRecord] = []
            warnings: list[str] = []
            if query is not None:
                found, warnings = self._recall_for_resume(scope, query, MAX_RECALLED + len(shown))
                recalled = [m for m in found if m.id not in shown][:MAX_RECALLED]
            current = self._current_emotion(conn, scope, now)

        components = ResumeComponents(
            persona=PersonaPart(persona.persona, persona.version, persona.text),
            checkpoint=_checkpoint_part(latest) if latest is not None else None,
            agreements=[self._memory_part(m, now) for m in agreements],
            recalled_memories=[self._memory_part(m, now) for m in recalled],
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
            included=list(packed.included),
            omitted=[
                OmittedComponent(component=o.component, size=o.size, reason=o.reason) for o in packed.omitted
            ],
            empty=list(packed.empty),
            checkpoint=CheckpointUse(
                state=checkpoint_state(latest),
                checkpoint_id=latest.id if latest is not None else None,
                invalidated_at=latest.invalidated_at if latest is not None else None,
            ),
            recall=RecallUse(query=source, found=len(recalled), warnings=warnings),
            generated_at=now,
        )
        return ResumeResult(scope=scope, session=request.session, context=packed.context, metadata=metadata)
