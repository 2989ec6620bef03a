"""Task checkpoint use cases: save (append-only) and show.

A checkpoint is host-reported task state. yiji validates its shape (in the boundary model) and that
``covered_seq`` names an event of the same persona, project and session (here, inside the write
transaction, so the event cannot disappear between the check and the insert). It never verifies that
the reported work happened.

Which checkpoint a session resumes from: the newest one. If the newest was invalidated (a correction or
deletion in the scope invalidates every checkpoint of the scope), the session's state is
``invalidated`` and no checkpoint is used, not even an older valid one: an older account is staler
than the one that was withdrawn. Saving a new checkpoint makes the state ``valid`` again.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from yiji.db import Connection
from yiji.domain.limits import ID_RULE
from yiji.errors import InvalidInput
from yiji.models.common import ID_PATTERN, Scope
from yiji.service.base import Deps, new_id
from yiji.store import checkpoints as store
from yiji.store import events as event_store
from yiji.timeutil import to_db

if TYPE_CHECKING:  # the models are imported where used, so that other commands start without them
    from yiji.models.checkpoints import (
        CheckpointIn,
        CheckpointRecord,
        CheckpointResult,
        CheckpointState,
        CheckpointView,
    )

__all__ = ["COVERED_SEQ_RULE", "Checkpoints", "check_session", "checkpoint_state"]

COVERED_SEQ_RULE = "must name an event of the same scope and session"
MAX_HISTORY = 1000
_SESSION_RE = re.compile(ID_PATTERN)


def check_session(session: object, field: str = "session") -> str:
    """A session id as the boundary models accept it; raises :class:`InvalidInput` naming ``field``."""
    if not isinstance(session, str) or not _SESSION_RE.fullmatch(session):
        raise InvalidInput(field, ID_RULE)
    return session


def checkpoint_state(latest: CheckpointRecord | None) -> CheckpointState:
    """The state of a session whose newest checkpoint is ``latest``."""
    if latest is None:
        return "none"
    return "valid" if latest.valid else "invalidated"


class Checkpoints:
    """The checkpoint use cases."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope

    def _check_coverage(self, conn: Connection, scope: Scope, session: str, seq: int) -> None:
        event = event_store.get_by_seq(conn, seq)
        if event is None or (event.persona, event.project, event.session) != (
            scope.persona,
            scope.project,
            session,
        ):
            raise InvalidInput("covered_seq", COVERED_SEQ_RULE)

    def checkpoint_save(self, checkpoint: CheckpointIn) -> CheckpointResult:
        """Append a checkpoint for a session. Earlier checkpoints stay as they were."""
        from yiji.models.checkpoints import CheckpointResult

        scope = self.scope(checkpoint.persona, checkpoint.project)
        with self.db.write() as conn:
            if checkpoint.covered_seq is not None:
                self._check_coverage(conn, scope, checkpoint.session, checkpoint.covered_seq)
            checkpoint_id = new_id("cp")
            store.append(
                conn,
                checkpoint_id=checkpoint_id,
                persona_id=scope.persona,
                project_id=scope.project,
                session_id=checkpoint.session,
                goal=checkpoint.goal,
                completed=list(checkpoint.completed),
                pending=list(checkpoint.pending),
                constraints=list(checkpoint.constraints),
                next_action=checkpoint.next_action,
                covered_seq=checkpoint.covered_seq,
                created_at=to_db(self.clock.now()),
            )
            record = store.get(conn, checkpoint_id)
        assert record is not None  # written in this transaction
        return CheckpointResult(scope=scope, checkpoint=record)

    def latest_checkpoint(self, conn: Connection, scope: Scope, session: str) -> CheckpointRecord | None:
        return store.latest(conn, scope.persona, scope.project, session)

    def checkpoint_show(
        self,
        session: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        history: bool = False,
        limit: int = 100,
    ) -> CheckpointView:
        """The checkpoint state of a session: its newest checkpoint and whether it can be used."""
        from yiji.models.checkpoints import CheckpointView

        scope = self.scope(persona, project)
        check_session(session)
        if limit < 1 or limit > MAX_HISTORY:
            raise InvalidInput("limit", f"must be between 1 and {MAX_HISTORY}")
        with self.db.read() as conn:
            latest = self.latest_checkpoint(conn, scope, session)
            rows = store.history(conn, scope.persona, scope.project, session, limit) if history else None
        return CheckpointView(
            scope=scope, session=session, state=checkpoint_state(latest), checkpoint=latest, history=rows
        )
