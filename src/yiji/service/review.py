"""The review queue: a person accepts, edits or rejects the memories extraction proposed.

With ``[extraction] review`` set (see :mod:`yiji.domain.review`), some extracted memories are stored
``proposed``. A proposal is not remembered yet: recall, ``session_resume``, fact intervals and the
current emotion ignore it, and its source event stays searchable as a raw event. Then:

* **accept** applies it as if it had just been derived (:meth:`Memories.apply_accepted`): a keyed
  fact closes the earlier interval of its key at its own ``valid_at``, and the lexical index takes it;
* **edit** changes its text, kind, key or validity start; the result passes the same rules as
  ``memory derive`` (:mod:`yiji.domain.validation`) or nothing changes;
* **reject** keeps it for audit (who, when, why) and out of every view but an explicit listing; the
  same claim from the same event is not proposed again.

Only a waiting proposal can be decided: any other state is a :class:`Conflict` and nothing changes.
Each decision records ``reviewed_at`` (the service clock), ``reviewed_by`` (named by the adapter) and
an optional note.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from yiji.db import Connection
from yiji.errors import Conflict, InvalidInput, NotFound
from yiji.models.common import Scope
from yiji.models.memories import MemoryRecord, ReviewEdit, ReviewResult
from yiji.service.base import Deps
from yiji.service.memories import Memories, source_of
from yiji.store import events as event_store
from yiji.store import memories as store
from yiji.timeutil import to_db

if TYPE_CHECKING:
    from yiji.models.reports import ReviewAllResult, ReviewContext, ReviewQueue

__all__ = ["Review"]

MAX_NOTE = 1000
MAX_REVIEWER = 200
BULK_LIMIT = 10_000
"""At most this many proposals are decided by one bulk call."""
BULK_BATCH = 250
"""Proposals decided per transaction by a bulk call (about a tenth of a second of write lock)."""
BULK_PAUSE_SECONDS = 0.12
"""The pause after each bulk batch commits: longer than the longest sleep of SQLite's busy handler
(100 ms), so a writer waiting for the lock wakes while it is free and takes it."""

Action = Literal["accept", "reject", "edit"]


def _check_words(reviewer: str, note: str | None) -> None:
    if not reviewer.strip() or len(reviewer) > MAX_REVIEWER:
        raise InvalidInput("reviewer", f"must be 1 to {MAX_REVIEWER} characters")
    if note is not None and len(note) > MAX_NOTE:
        raise InvalidInput("note", f"must be at most {MAX_NOTE} characters")


class Review:
    """The review queue."""

    def __init__(self, deps: Deps, memories: Memories) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.memories = memories

    def review_queue(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> ReviewQueue:
        """Proposals waiting for review, oldest first, with how many wait in all (``after``: the id of
        the last proposal already seen, to page on)."""
        scope = self.scope(persona, project)
        if limit < 1 or limit > BULK_LIMIT:
            raise InvalidInput("limit", f"must be between 1 and {BULK_LIMIT}")
        with self.db.read() as conn:
            after_pk = 0
            if after is not None:
                found = store.get(conn, after)
                if found is None or (found.persona, found.project) != (scope.persona, scope.project):
                    raise NotFound("memory", "after")
                after_pk = store.pk_of(conn, after)
            waiting = store.proposals(conn, scope.persona, scope.project, limit=limit, after_pk=after_pk)
            counts = store.review_counts(conn, scope.persona, scope.project)
        return {"scope": scope, "waiting": counts["proposed"], "counts": counts, "proposals": waiting}

    def review_waiting(self, persona: str | None = None, project: str | None = None) -> int:
        """How many proposals of a scope wait for review (cheap: for a page header)."""
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            return store.count_proposed(conn, scope.persona, scope.project)

    def review_context(
        self, memory_id: str, *, persona: str | None = None, project: str | None = None, turns: int = 3
    ) -> ReviewContext:
        """A memory with what a reviewer needs beside it: its source event, where the quote sits in it,
        and up to ``turns`` neighbouring events of the same session on each side, in order."""
        if turns < 0 or turns > 20:
            raise InvalidInput("turns", "must be between 0 and 20")
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            memory = store.get(conn, memory_id)
            if memory is None or (memory.persona, memory.project) != (scope.persona, scope.project):
                raise NotFound("memory", "memory_id")
            event = event_store.get(conn, memory.event_id)
            assert event is not None
            session = event_store.EventSelection(scope.persona, scope.project, session_id=event.session)
            before = event_store.list_events(
                conn, replace(session, before_seq=event.seq), limit=turns, newest_first=True
            )
            after = event_store.list_events(conn, replace(session, after_seq=event.seq), limit=turns)
        start = event.text.find(memory.quote)
        return {
            "scope": scope,
            "memory": memory,
            "event": event,
            "quote": {"start": start, "end": start + len(memory.quote) if start >= 0 else -1},
            "before": list(reversed(before)),
            "after": after,
        }

    def events_with_proposals(
        self, event_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> set[str]:
        """The ids among ``event_ids`` (of the scope) from which a proposal waits for review: a page
        that shows such an event as raw text says that a memory from it waits."""
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            found = store.by_events(conn, list(event_ids))
        return {
            event_id
            for event_id, memories in found.items()
            for m in memories
            if m.review_state == "proposed" and (m.persona, m.project) == (scope.persona, scope.project)
        }

    def review_counts(self, persona: str | None = None, project: str | None = None) -> dict[str, int]:
        """Memories of a scope per review state (``proposed`` is the number waiting)."""
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            return store.review_counts(conn, scope.persona, scope.project)

    def memory_review(
        self,
        memory_id: str,
        action: Action,
        *,
        persona: str | None = None,
        project: str | None = None,
        reviewer: str,
        note: str | None = None,
        edit: ReviewEdit | None = None,
        accept: bool = False,
    ) -> ReviewResult:
        """Decide one proposal: ``accept``, ``reject`` or ``edit`` (then also accept it when ``accept``).

        Raises :class:`NotFound` for an unknown id (or one of another scope), :class:`Conflict` when the
        memory is not proposed, :class:`InvalidInput` when an edit breaks a rule; nothing changes then.
        """
        scope = self.scope(persona, project)
        _check_words(reviewer, note)
        if action not in ("accept", "reject", "edit"):
            raise InvalidInput("action", "must be one of accept, reject, edit")
        if action == "edit" and (edit is None or not edit.model_fields_set):
            raise InvalidInput("edit", "names nothing to change (text, kind, subject, fact_key, valid_at)")
        with self.db.write() as conn:
            memory = self._proposal(conn, memory_id, scope)
            if action == "edit":
                assert edit is not None
                self._edit(conn, memory, edit)
                if accept:
                    self._accept(conn, memory.id, reviewer, note)
            elif action == "accept":
                self._accept(conn, memory.id, reviewer, note)
            else:
                self._reject(conn, memory.id, reviewer, note)
            now = store.get(conn, memory.id)
        assert now is not None
        return ReviewResult(scope=scope, action=action, memory=now)

    def memory_review_all(
        self,
        action: Literal["accept", "reject"],
        *,
        persona: str | None = None,
        project: str | None = None,
        reviewer: str,
        note: str | None = None,
    ) -> ReviewAllResult:
        """Accept or reject every proposal of a scope waiting when the call starts, oldest first.

        The proposals are decided in batches of :data:`BULK_BATCH`, each its own transaction, with a
        pause of :data:`BULK_PAUSE_SECONDS` after each commit: the write lock is held for one batch at a
        time, so another writer (an ``event submit``) waiting on the busy timeout gets it between two
        batches instead of failing. Deciding them in order, batch after batch, gives the same result as
        deciding them one by one. Proposals that arrive during the call wait for the next one; one that
        another process decided meanwhile is left as that process decided it. A failure leaves the
        batches already committed decided and the rest waiting, so running the command again finishes.
        """
        scope = self.scope(persona, project)
        _check_words(reviewer, note)
        if action not in ("accept", "reject"):
            raise InvalidInput("action", "must be accept or reject")
        decide: Callable[[Connection, str, str, str | None], None] = (
            self._accept if action == "accept" else self._reject
        )
        with self.db.read() as conn:
            upto = store.last_proposal_pk(conn, scope.persona, scope.project)
        decided: list[str] = []
        after = 0
        while upto and len(decided) < BULK_LIMIT:
            with self.db.write() as conn:
                batch = store.proposals(
                    conn,
                    scope.persona,
                    scope.project,
                    limit=min(BULK_BATCH, BULK_LIMIT - len(decided)),
                    after_pk=after,
                    upto_pk=upto,
                )
                for memory in batch:
                    decide(conn, memory.id, reviewer, note)
                if batch:
                    after = store.pk_of(conn, batch[-1].id)
            if not batch:
                break
            decided += [m.id for m in batch]
            time.sleep(BULK_PAUSE_SECONDS)
        return {"scope": scope, "action": action, "memory_ids": decided}

    # -- steps, inside the caller's transaction ---------------------------------------------------

    @staticmethod
    def _proposal(conn: Connection, memory_id: str, scope: Scope) -> MemoryRecord:
        memory = store.get(conn, memory_id)
        if memory is None or (memory.persona, memory.project) != (scope.persona, scope.project):
            raise NotFound("memory", "memory_id")
        if memory.review_state != "proposed":
            raise Conflict(
                f"the memory is {memory.review_state}, not proposed: only a waiting proposal can be "
                "accepted, edited or rejected (correct an accepted memory with memory correct)"
            )
        return memory

    def _accept(self, conn: Connection, memory_id: str, reviewer: str, note: str | None) -> None:
        memory = store.get(conn, memory_id)
        if memory is not None and (memory.revoked_at is not None or memory.invalid_at is not None):
            # a state yiji never writes (yiji.domain.review.STATE_RULES), only an old import could
            raise Conflict(
                "the proposal is revoked or has an end of validity, which yiji never writes; "
                "yiji doctor names such memories"
            )
        if not store.set_review(conn, memory_id, "accepted", to_db(self.clock.now()), reviewer, note):
            raise Conflict("the memory is no longer proposed")
        memory = store.get(conn, memory_id)
        assert memory is not None
        event = event_store.get(conn, memory.event_id)
        assert event is not None  # memories.event_id is a foreign key
        self.memories.apply_accepted(conn, store.pk_of(conn, memory_id), memory_id, event)

    def _reject(self, conn: Connection, memory_id: str, reviewer: str, note: str | None) -> None:
        if not store.set_review(conn, memory_id, "rejected", to_db(self.clock.now()), reviewer, note):
            raise Conflict("the memory is no longer proposed")

    def _edit(self, conn: Connection, memory: MemoryRecord, edit: ReviewEdit) -> None:
        """Change a proposal after checking the changed memory as ``memory derive`` checks one."""
        from yiji.domain import validation
        from yiji.domain.validation import MemoryCandidate

        changes = {name: getattr(edit, name) for name in edit.model_fields_set}
        candidate = MemoryCandidate(
            text=changes.get("text", memory.text),
            quote=memory.quote,
            kind=changes.get("kind", memory.kind),
            basis=memory.basis,
            confidence=memory.confidence,
            subject=changes.get("subject", memory.subject),
            fact_key=changes.get("fact_key", memory.fact_key),
            valid_at=changes.get("valid_at", memory.valid_at),
            valence=memory.valence,
            arousal=memory.arousal,
            gist=memory.gist,
        )
        event = event_store.get(conn, memory.event_id)
        assert event is not None
        verdicts = validation.validate_batch([candidate], source_of(event), secrets=self.deps.known_secrets())
        validation.raise_for(verdicts[0])
        values: dict[str, Any] = {}
        for name in ("text", "kind", "subject", "fact_key"):
            if name in changes:
                value = getattr(candidate, name)
                values[name] = value.strip() if name == "text" and isinstance(value, str) else value
        if "valid_at" in changes:
            values["valid_at"] = to_db(validation.resolve_valid_at(candidate, event.occurred_at))
        if not store.edit_proposal(conn, memory.id, values):
            raise Conflict("the memory is no longer proposed")
