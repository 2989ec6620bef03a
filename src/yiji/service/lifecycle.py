"""Lifecycle use cases: correcting a mistaken memory, permanent deletion, and the companion's emotion.

Correction is for an *error*: the memory was never true. A change in the world (the user moved, changed
their mind) is a new event, submitted like any other, and closes the earlier fact's interval. A correction,
in one transaction:

1. stores a new event of category ``correction`` holding the corrected statement (role ``user`` unless
   told otherwise, in the mistaken memory's session unless told otherwise). Its extraction state is
   ``done``: the corrected memory is derived from it right here, so automatic extraction never queues it;
2. revokes the mistaken memory (``revoked_at``/``revoked_reason``) *before* deriving the corrected one,
   so the interval logic ignores the mistaken fact and the corrected fact takes its place: an omitted
   ``valid_at`` keeps the mistaken start, the predecessor's end stays where it was, and the corrected fact
   ends where its successor begins;
3. derives the corrected memory from the new event through :mod:`yiji.domain.validation` (its quote comes
   from the correction event) with origin ``correction``;
4. records ``corrects`` (corrected -> mistaken), marks the mistaken memory's source event as amended and
   invalidates every checkpoint of the scope (task prose cannot be scrubbed reliably).

A revoked memory leaves current and ``as_of`` views alike; ``memory_read`` still shows it with its lineage.

Permanent deletion starts from an event or a memory and removes, in one transaction, the closure reached by
repeating until nothing new appears: the events, every memory co-derived from a removed event, and every
memory joined to a removed memory by ``corrects`` in either direction (each bringing its own event). Their
cues, search-index rows, vectors and relation edges go too; a memory joined only by ``related`` survives
without the edge. The FTS5 indexes are then optimized so no deleted token survives in their segment data;
what was removed is overwritten with zeros in the file, and so is every free page (an earlier FTS5 merge
may have freed one holding a deleted event's words); the write-ahead log is checkpointed (best effort).
Every checkpoint of the scope is invalidated. Closed validity intervals of surviving facts are not
reopened, and host-capture cursors are left as they are. In the same transaction the deletion ledger
(:mod:`yiji.service.deletions`) records each removed event's id and text by digest, and a ``matching``
identifier by the digest of its normalised form (even when nothing holds it yet), so no later capture,
submission or import stores any of them again. A dry run reports the same identifiers and counts and
writes nothing. This is a logical deletion in the database, not forensic erasure of storage, backups,
exported archives or remote logs.

The current emotion is the most recent live role emotion (an emotion memory the assistant expressed, with
valence and arousal) decayed toward calm with ``config.forgetting.emotion_half_life_hours``. Earlier
expressions stay as records; the persona is never edited.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from yiji.db import Connection
from yiji.domain import emotion
from yiji.errors import Conflict, InvalidInput, NotFound, StorageError
from yiji.invocation import yiji_command
from yiji.models.common import Scope
from yiji.models.events import EventIn
from yiji.models.memories import MemoryRecord
from yiji.service.base import Deps
from yiji.service.deletions import remember_deletion
from yiji.service.events import Events
from yiji.service.memories import Memories, source_of
from yiji.store import events as event_store
from yiji.store import lifecycle as store
from yiji.store import memories as memory_store
from yiji.timeutil import to_db

if TYPE_CHECKING:  # the rules and models are imported where used, so that other commands start without them
    from yiji.domain.validation import MemoryCandidate
    from yiji.models.lifecycle import (
        CorrectRequest,
        CorrectResult,
        DeleteRequest,
        DeleteResult,
        EmotionResult,
    )

__all__ = ["Lifecycle"]

CORRECTION_SOURCE = "correction"
REVOKED_REASON = "corrected"
_BASIS_OF_ROLE = {"user": "user_statement", "assistant": "assistant_expression"}
_KEYED_KINDS = frozenset({"fact", "preference"})


class Lifecycle:
    """Correction, deletion and the current emotion."""

    def __init__(self, deps: Deps, events: Events, memories: Memories) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.events = events
        self.memories = memories

    # -- correction ------------------------------------------------------------------------------

    def memory_correct(self, request: CorrectRequest) -> CorrectResult:
        """Correct a mistaken memory: it was never true. See the module docstring for every step.

        Raises :class:`NotFound` for a memory outside the scope, :class:`Conflict` when the memory was
        already corrected (revoked) or ``event_id`` names another event, and :class:`InvalidInput` when
        the corrected memory breaks a grounding rule; nothing is stored then.
        """
        from yiji.domain import validation
        from yiji.models.lifecycle import CorrectResult

        scope = self.scope(request.persona, request.project)
        with self.db.write() as conn:
            mistaken = memory_store.get(conn, request.memory_id)
            if mistaken is None or (mistaken.persona, mistaken.project) != (scope.persona, scope.project):
                raise NotFound("memory", "memory_id")
            if request.event_id is not None and event_store.get(conn, request.event_id) is not None:
                return self._repeated_correction(conn, request, mistaken, scope)
            if mistaken.revoked_at is not None:
                raise Conflict("the memory was already corrected or revoked; correct its correction instead")
            if mistaken.review_state != "accepted":
                raise Conflict(
                    f"the memory is {mistaken.review_state}, not accepted: review a proposal "
                    f"({yiji_command('review')}) "
                    "instead of correcting it"
                )
            source = event_store.get(conn, mistaken.event_id)
            assert source is not None  # memories.event_id is a foreign key
            event_in = EventIn(
                id=request.event_id,
                persona=scope.persona,
                project=scope.project,
                session=request.session or source.session,
                role=request.role,
                source=CORRECTION_SOURCE,
                category="correction",
                text=request.statement,
                occurred_at=request.occurred_at,
            )
            inserted, _ = self.events.insert_event(conn, event_in, scope)
            event_store.set_extraction_state(conn, inserted.id, "done", None)
            event = event_store.get(conn, inserted.id)
            assert event is not None
            candidate = self.deps.redacted_candidate(_corrected_candidate(request, mistaken))
            verdicts = validation.validate_batch([candidate], source_of(event))
            validation.raise_for(verdicts[0])
            now = to_db(self.clock.now())
            memory_store.revoke(conn, mistaken.id, now, REVOKED_REASON)
            corrected_id = self.memories.write_batch(conn, event, [candidate], verdicts, "correction")[0]
            memory_store.insert_relation(conn, corrected_id, mistaken.id, "corrects", now)
            store.mark_amended(conn, mistaken.event_id)
            invalidated = store.invalidate_checkpoints(conn, scope.persona, scope.project, now, "correction")
        return CorrectResult(
            scope=scope,
            event=event,
            corrected_memory_id=corrected_id,
            mistaken_memory_id=mistaken.id,
            amended_event_id=mistaken.event_id,
            checkpoints_invalidated=invalidated,
        )

    def _repeated_correction(
        self, conn: Connection, request: CorrectRequest, mistaken: MemoryRecord, scope: Scope
    ) -> CorrectResult:
        """The stored result of the same correction submitted again (same event id and statement)."""
        from yiji.models.lifecycle import CorrectResult

        assert request.event_id is not None
        event = event_store.get(conn, request.event_id)
        assert event is not None
        corrected = [
            r.from_id
            for r in memory_store.relations_of(conn, [mistaken.id])
            if r.type == "corrects" and r.to_id == mistaken.id
        ]
        mine = {m.id for m in memory_store.by_event(conn, event.id)}
        matches = [m for m in corrected if m in mine]
        if (
            event.category != "correction"
            or (event.persona, event.project) != (scope.persona, scope.project)
            or event.text != request.statement
            or not matches
        ):
            raise Conflict("event id already exists with a different payload or scope; nothing was changed")
        return CorrectResult(
            scope=scope,
            event=event,
            corrected_memory_id=matches[0],
            mistaken_memory_id=mistaken.id,
            amended_event_id=mistaken.event_id,
            checkpoints_invalidated=0,
            created=False,
        )

    # -- permanent deletion ----------------------------------------------------------------------

    def memory_delete(self, request: DeleteRequest) -> DeleteResult:
        """Permanently delete an event or a memory with its co-derived memories and correction lineage.

        With ``matching``, the start is every event and memory of the scope holding that identifier in
        any spelling (:mod:`yiji.domain.identifiers`: case, width, spacing and separators inside runs of
        digits or letters), and each goes with its usual closure, all in one transaction. No index can
        answer that question, so the scope's events and memories are read as one streamed scan (a row at
        a time, nothing held but the ids that match): linear in the scope's text, which an explicit
        deletion can afford. Nothing matching is an empty result, not an error; the identifier is still
        remembered, so a line holding it that a host has not yet handed over is never stored.

        With ``dry_run`` nothing is written and the result lists exactly what a real run would remove.
        """
        scope = self.scope(request.persona, request.project)
        if request.dry_run:
            with self.db.read() as conn:
                return self._delete(conn, request, scope, apply=False)
        with self.db.write() as conn:
            result = self._delete(conn, request, scope, apply=True)
        with contextlib.suppress(StorageError):  # the deletion is committed; folding the WAL is hygiene
            self.db.checkpoint()
        return result

    def _delete(self, conn: Connection, request: DeleteRequest, scope: Scope, *, apply: bool) -> DeleteResult:
        from yiji.models.lifecycle import DeleteResult

        matched_events, matched_memories = self._deletion_start(conn, request, scope)
        events, memories = self._deletion_closure(conn, matched_events, matched_memories)
        footprint = store.delete_footprint(conn, events, memories)
        now = to_db(self.clock.now())
        if apply:  # before the rows go: the ledger keeps their digests, and a forgotten identifier
            remember_deletion(
                conn, events, persona=scope.persona, project=scope.project, matching=request.matching, at=now
            )
        if not events and not memories:  # nothing matched: no row to delete, no checkpoint touched
            checkpoints = 0
        elif apply:
            with store.erasing(conn):
                store.delete_rows(conn, events, memories)
                store.optimize_search(conn)
            checkpoints = store.invalidate_checkpoints(conn, scope.persona, scope.project, now, "deletion")
        else:
            checkpoints = store.count_live_checkpoints(conn, scope.persona, scope.project)
        return DeleteResult(
            scope=scope,
            dry_run=not apply,
            event_ids=sorted(events),
            memory_ids=sorted(memories),
            relations=footprint["relations"],
            embeddings=footprint["embeddings"],
            cues=footprint["cues"],
            checkpoints=checkpoints,
            **(
                {"matched_event_ids": sorted(matched_events), "matched_memory_ids": sorted(matched_memories)}
                if request.matching is not None
                else {}
            ),
        )

    def _deletion_start(
        self, conn: Connection, request: DeleteRequest, scope: Scope
    ) -> tuple[set[str], set[str]]:
        """The events and memories a deletion starts from."""
        if request.matching is not None:
            return self._matching(conn, request.matching, scope)
        if request.event_id is not None:
            return {self.memories.event_in_scope(conn, request.event_id, scope).id}, set()
        assert request.memory_id is not None
        found = memory_store.get(conn, request.memory_id)
        if found is None or (found.persona, found.project) != (scope.persona, scope.project):
            raise NotFound("memory", "memory_id")
        return set(), {found.id}

    @staticmethod
    def _matching(conn: Connection, text: str, scope: Scope) -> tuple[set[str], set[str]]:
        """Events and memories of the scope holding ``text`` as one identifier (a streamed scan)."""
        from yiji.domain.identifiers import Needle

        needle = Needle.of(text)
        if not needle.usable:
            raise InvalidInput("matching", "must hold a letter or digit")
        events: set[str] = set()
        memories: set[str] = set()
        for kind, item_id, texts in store.scope_texts(conn, scope.persona, scope.project):
            if needle.found_in(*texts):
                (events if kind == "event" else memories).add(item_id)
        return events, memories

    @staticmethod
    def _deletion_closure(
        conn: Connection, new_events: set[str], new_memories: set[str]
    ) -> tuple[set[str], set[str]]:
        """Events and memories to delete: grown from the start until a fixed point."""
        events: set[str] = set()
        memories: set[str] = set()
        while new_events or new_memories:
            events |= new_events
            memories |= new_memories
            reached_memories = store.memories_of_events(conn, new_events) | store.lineage_neighbours(
                conn, new_memories
            )
            reached_events = store.events_of_memories(conn, new_memories)
            new_memories = reached_memories - memories
            new_events = reached_events - events
        return events, memories

    # -- the companion's emotion -----------------------------------------------------------------

    def current_emotion(self, persona: str | None = None, project: str | None = None) -> EmotionResult:
        """The current role emotion of a scope, or ``emotion=None`` when there is none or it has decayed
        below the omission threshold. Reads only; nothing is edited."""
        from yiji.models.lifecycle import CurrentEmotionState, EmotionResult

        scope = self.scope(persona, project)
        now = self.clock.now()
        with self.db.read() as conn:
            latest = store.latest_role_emotion(conn, scope.persona, scope.project, to_db(now))
        if latest is None:
            return EmotionResult(scope=scope, emotion=None)
        expression = emotion.expression_from_memory(
            latest.basis, latest.valence, latest.arousal, latest.valid_at, latest.id
        )
        half_life = self.config.forgetting.emotion_half_life_hours
        state = emotion.current_emotion(expression, now, half_life_hours=half_life)
        if state is None or expression is None:
            return EmotionResult(scope=scope, emotion=None)
        return EmotionResult(
            scope=scope,
            emotion=CurrentEmotionState(
                memory_id=latest.id,
                valence=state.valence,
                arousal=state.arousal,
                factor=state.factor,
                expressed_valence=expression.valence,
                expressed_arousal=expression.arousal,
                expressed_at=state.expressed_at,
                half_life_hours=half_life,
            ),
        )


def _corrected_candidate(request: CorrectRequest, mistaken: MemoryRecord) -> MemoryCandidate:
    """The corrected memory: given fields, else defaults from the statement and the mistaken memory."""
    from yiji.domain.validation import MemoryCandidate

    statement = request.statement.strip()
    kind = request.kind or mistaken.kind
    basis = request.basis or _BASIS_OF_ROLE.get(request.role, mistaken.basis)
    keyed = kind in _KEYED_KINDS and basis == "user_statement"
    emotional = kind == "emotion"
    return MemoryCandidate(
        text=request.text if request.text is not None else statement,
        quote=request.quote if request.quote is not None else statement,
        kind=kind,
        basis=basis,
        confidence=request.confidence if request.confidence is not None else mistaken.confidence,
        subject=request.subject if request.subject is not None else mistaken.subject,
        fact_key=request.fact_key if request.fact_key is not None else (mistaken.fact_key if keyed else None),
        valid_at=request.valid_at if request.valid_at is not None else mistaken.valid_at,
        valence=request.valence if request.valence is not None else (mistaken.valence if emotional else None),
        arousal=request.arousal if request.arousal is not None else (mistaken.arousal if emotional else None),
        gist=request.gist,
    )
