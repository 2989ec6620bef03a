"""Host capture: commit a host's visible messages with a compare-and-set cursor (``yiji host-ingest``).

One call is one ``BEGIN IMMEDIATE`` transaction that checks the stored cursor, inserts the events, records a
capture checkpoint and moves the cursor from the expected value to the batch's last host ``seq``. If the
cursor is not the expected one, or an event id is already stored with another payload, nothing is written
and the result says so with the stored cursor. A host that lost an acknowledgement sends the same stable
ids again; an id with the same payload is a no-op.

Messages at or behind the cursor are refused: the cursor is the only record that an event which has since
been deleted was captured, so it is what keeps a replay from bringing that event back. No extraction
provider is involved; events are stored raw (extraction state ``none``) unless the service was opened with
one.
"""

from __future__ import annotations

from yiji.db import Connection
from yiji.errors import InvalidInput
from yiji.models.capture import BOUNDARY_REASONS, NO_CURSOR, CaptureBatch, CaptureResult
from yiji.models.common import Scope
from yiji.models.events import EventIn
from yiji.service.events import EventOps
from yiji.store import capture as store
from yiji.store import checkpoints as checkpoint_store
from yiji.timeutil import to_db

__all__ = ["CAPTURE_SOURCE", "CaptureOps"]

CAPTURE_SOURCE = "host-capture"
"""The ``source`` label of captured events."""

_GOALS = {
    "event": "Conversation captured from the host as it happened",
    "backfill": "Conversation captured from the host's session log",
    "pre-summarize": "Conversation captured before the host summarized its context",
    "pre-return": "Conversation captured before the host replaced its context with a summary",
}


class _Rejected(Exception):
    """Rolls the capture transaction back; carries the kind of conflict."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _check_lines(batch: CaptureBatch) -> None:
    if batch.lines and batch.expect_cursor is None:
        raise InvalidInput("expect_cursor", "is required when messages are given")
    previous = batch.expect_cursor if batch.expect_cursor is not None else NO_CURSOR
    ids: set[str] = set()
    for index, line in enumerate(batch.lines):
        field = f"lines[{index}]"
        if line.session != batch.session:
            raise InvalidInput(f"{field}.session", "must equal --session")
        if line.seq <= previous:
            raise InvalidInput(
                f"{field}.seq", "must be greater than the expected cursor and the previous line"
            )
        if line.event_id in ids:
            raise InvalidInput(f"{field}.event_id", "must be unique within the batch")
        ids.add(line.event_id)
        previous = line.seq


class CaptureOps(EventOps):
    def host_ingest(self, batch: CaptureBatch) -> CaptureResult:
        """Commit one capture batch and advance the cursor, or change nothing and report the stored cursor."""
        scope = self.scope(batch.persona, batch.project)
        _check_lines(batch)
        key = (batch.instance, scope.persona, scope.project, batch.session)
        if batch.expect_cursor is None:  # a probe: answer the stored cursor
            with self.db.read() as conn:
                stored = store.get_cursor(conn, *key)
            return CaptureResult(ok=True, cursor=NO_CURSOR if stored is None else stored)
        try:
            with self.db.write() as conn:
                return self._commit(conn, batch, scope, batch.expect_cursor)
        except _Rejected as rejected:
            with self.db.read() as conn:
                stored = store.get_cursor(conn, *key)
            return CaptureResult(
                ok=False,
                cursor=NO_CURSOR if stored is None else stored,
                conflict="cursor" if rejected.kind == "cursor" else "event",
            )

    def _commit(self, conn: Connection, batch: CaptureBatch, scope: Scope, expected: int) -> CaptureResult:
        key = {
            "instance_id": batch.instance,
            "persona_id": scope.persona,
            "project_id": scope.project,
            "session_id": batch.session,
        }
        stored = store.get_cursor(conn, **key)
        if (NO_CURSOR if stored is None else stored) != expected:
            raise _Rejected("cursor")
        if not batch.lines and batch.reason not in BOUNDARY_REASONS:
            return CaptureResult(ok=True, cursor=expected)
        events = [
            EventIn.model_construct(
                id=line.event_id,
                persona=scope.persona,
                project=scope.project,
                session=line.session,
                role=line.role,
                source=CAPTURE_SOURCE,
                category="conversation",
                text=line.text,
                occurred_at=line.occurred_at,
                cues=[],
            )
            for line in batch.lines
        ]
        if None in self._insert_events(conn, [(event, scope) for event in events]):
            raise _Rejected("event")
        cursor = batch.lines[-1].seq if batch.lines else expected
        now = to_db(self.clock.now())
        checkpoint_store.insert(
            conn,
            checkpoint_id=self.new_id("cp"),
            persona_id=scope.persona,
            project_id=scope.project,
            session_id=batch.session,
            goal=_GOALS[batch.reason],
            completed=[f"host capture {batch.instance}: {batch.reason}, messages through host seq {cursor}"],
            pending=[],
            constraints=[],
            next_action=None,
            covered_seq=store.last_session_seq(conn, scope.persona, scope.project, batch.session),
            created_at=now,
        )
        if not store.compare_and_set(
            conn, **key, expected=None if stored is None else expected, new=cursor, updated_at=now
        ):  # unreachable while the write lock is held; kept so a lost race can never commit
            raise _Rejected("cursor")
        return CaptureResult(ok=True, cursor=cursor)
