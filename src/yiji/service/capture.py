"""Host capture: commit a host's visible messages with a compare-and-set cursor (``yiji host-ingest``).

One call is one ``BEGIN IMMEDIATE`` transaction that checks the stored cursor, inserts the events, records a
capture checkpoint and moves the cursor from the expected value to the batch's last host ``seq``. If the
cursor is not the expected one, or an event id is already stored with another payload, nothing is written
and the result says so with the stored cursor. A host that lost an acknowledgement sends the same stable
ids again; an id with the same payload is a no-op.

Messages at or behind the cursor are refused: the cursor records what was captured. A message past the
cursor that repeats a deletion (a deleted event's id or text, or an identifier forgotten with
``delete --matching``: the deletion ledger, :mod:`yiji.service.deletions`) is skipped and counted
(``skipped_deleted``), and the cursor moves past it, so a replayed line, a fork or a re-import never
brings deleted text back and capture goes on. A message's text has its secrets replaced
(:mod:`yiji.domain.secrets`, as ``[redaction]`` says) before anything else sees it, the ledger included, so
a replay of the same message compares equal to what was stored. No extraction
provider is involved; events are stored raw (extraction state ``none``) unless the caller says an
extractor will pick them up.

A host runs this at every compaction, so :class:`HostCapture` is a use case on its own, with explicit
dependencies (the database, the clock, the configured scope): it imports neither the rest of the service
nor any pydantic model. :class:`yiji.service.MemoryService` offers the same call as ``host_ingest``.
"""

from __future__ import annotations

import os
import re
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from yiji.config import Config
from yiji.db import Connection, Database
from yiji.domain.capture import (
    BOUNDARY_REASONS,
    CAPTURE_GOALS,
    MAX_CAPTURE_LINES,
    NO_CURSOR,
    CaptureBatch,
    CaptureLine,
    CaptureResult,
    check_order,
    parse_cursor,
)
from yiji.domain.limits import ID_PATTERN, resolve_scope
from yiji.domain.secrets import Redactor
from yiji.domain.transcripts import Host, TranscriptMessage, event_id, read_transcript
from yiji.errors import IntegrityFailure, InvalidInput
from yiji.invocation import yiji_command
from yiji.service.event_writer import CONFLICT, Deleted, EventWriter, NewEvent
from yiji.service.indexing import LexicalIndex
from yiji.service.storage import open_database
from yiji.store import capture as store
from yiji.store import checkpoints as checkpoint_store
from yiji.store import events as event_store
from yiji.timeutil import Clock, SystemClock, to_db

__all__ = [
    "CAPTURE_SOURCE",
    "HostCapture",
    "TranscriptCapture",
    "capture_batch",
    "open_capture",
    "read_regular",
]

CAPTURE_SOURCE = "host-capture"
"""The ``source`` label of captured events."""
CAPTURE_CATEGORY = "conversation"

_GOALS = CAPTURE_GOALS


_EVENT_ID = re.compile(ID_PATTERN)
_RACE_ATTEMPTS = 3
"""How often a transcript capture reads again after another writer moved the cursor first."""


@dataclass(frozen=True)
class TranscriptCapture:
    """What one capture of a host transcript did: ``captured`` messages committed (ids already stored
    count too), the ``cursor`` (byte offset past the last captured line) and a conflict left unresolved;
    ``skipped_deleted`` messages passed over because they repeat a deletion; the scope the session is
    captured in; ``repaired``: messages stored with text repaired; ``unread``: the transcript showed the
    model answered but held no conversation yiji reads, and ``noted``: this capture noted that first (see
    :func:`yiji.store.capture.note_unread`)."""

    cursor: int
    captured: int
    conflict: str | None = None
    skipped_deleted: int = 0
    persona: str = ""
    project: str = ""
    repaired: int = 0
    unread: bool = False
    noted: bool = False


def read_regular(path: Path, start: int = 0) -> bytes:
    """The bytes of the regular file at ``path`` from offset ``start`` (none when it does not exist).

    Opened without blocking, so a FIFO or a device named like a transcript is refused at once instead
    of waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return b""
    except OSError:
        raise InvalidInput("transcript_path", "must name a transcript file that can be read") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidInput("transcript_path", "must name a regular file")
        file.seek(start)
        return file.read()


class _Rejected(Exception):
    """Rolls the capture transaction back; carries the kind of conflict."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class HostCapture:
    """The host capture use case over one database.

    ``persona`` and ``project`` are the configured defaults a batch without its own scope takes;
    ``extraction_pending`` stores events for a configured extractor to pick up (state ``pending``)
    instead of raw (``none``); ``writer`` stores the events (the service's own; else one over ``redactor``,
    which replaces secrets in each message's text, yiji's own rules unless given).
    """

    def __init__(  # noqa: PLR0913 - the database, the scope and four named collaborators
        self,
        db: Database,
        *,
        persona: str,
        project: str,
        clock: Clock | None = None,
        extraction_pending: bool = False,
        redactor: Redactor | None = None,
        writer: EventWriter | None = None,
    ) -> None:
        if writer is None:
            if redactor is None:
                from yiji.domain.secrets import default_redactor

                redactor = default_redactor()
            writer = EventWriter(redactor, LexicalIndex(db))
        self.db = db
        self.writer = writer
        """The event writer every path that stores an event uses (:mod:`yiji.service.event_writer`)."""
        self.persona = persona
        self.project = project
        self.clock = clock or SystemClock()
        self.extraction_state = "pending" if extraction_pending else "none"

    def close(self) -> None:
        """Close the database (a capture from :func:`open_capture` owns it)."""
        self.db.close()

    def ingest(self, batch: CaptureBatch) -> CaptureResult:
        """Commit one capture batch and advance the cursor, or change nothing and report the stored cursor."""
        persona, project = resolve_scope(batch.persona, batch.project, (self.persona, self.project))
        check_order(batch)
        key = (batch.instance, persona, project, batch.session)
        if batch.expect_cursor is None:  # a probe: answer the stored cursor
            with self.db.read() as conn:
                stored = _stored_cursor(conn, *key)
            return CaptureResult(ok=True, cursor=NO_CURSOR if stored is None else stored)
        try:
            with self.db.write() as conn:
                return self._commit(conn, batch, persona, project, batch.expect_cursor)
        except _Rejected as rejected:
            with self.db.read() as conn:
                stored = _stored_cursor(conn, *key)
            return CaptureResult(
                ok=False,
                cursor=NO_CURSOR if stored is None else stored,
                conflict="cursor" if rejected.kind == "cursor" else "event",
            )

    def capture_transcript(  # noqa: PLR0913 - the scope and the transcript, all named
        self,
        host: Host,
        session: str,
        path: Path,
        *,
        reason: str = "event",
        persona: str | None = None,
        project: str | None = None,
    ) -> TranscriptCapture:
        """Commit the conversation a host appended to its transcript since the session's cursor.

        The same path as ``host-ingest``: the instance is the host's name, a message's host ``seq`` is the
        byte offset just past its line, its id comes from the transcript (:mod:`yiji.domain.transcripts`).
        A writer that moved the cursor meanwhile (two hooks of one session at once) makes this read again
        from the new cursor, so the cursor moves once per message whoever commits it. A ``reason`` of
        :data:`BOUNDARY_REASONS` records a capture checkpoint even when nothing is new.

        A session is captured into one scope: the one its cursor is in once anything was captured (the
        ``persona`` and ``project`` given apply to a new session), so a session resumed from a moved or
        renamed folder goes on where it was. The cursor and the event ids belong to the session, as the
        transcript does, not to the folder the host runs in.
        """
        persona, project = resolve_scope(persona, project, (self.persona, self.project))
        with self.db.read() as conn:  # a session keeps the scope it was first captured in
            persona, project = store.session_scope(conn, host, session) or (persona, project)
        committed = already = skipped = 0
        result = CaptureResult(ok=True, cursor=NO_CURSOR)
        repaired, unread, noted = 0, False, False
        for _ in range(_RACE_ATTEMPTS):
            base = CaptureBatch(instance=host, session=session, persona=persona, project=project)
            cursor = self.ingest(base).cursor
            start = max(cursor, 0)
            found = read_transcript(host, read_regular(path, start), start)
            lines, already = self._new_lines(host, session, found.messages)
            repaired = found.repaired
            if found.unread and start == 0 and not noted:
                unread = True
                with self.db.write() as conn:
                    noted = store.note_unread(conn, host, session, to_db(self.clock.now()))
            chunks = [lines[i : i + MAX_CAPTURE_LINES] for i in range(0, len(lines), MAX_CAPTURE_LINES)]
            if not chunks and reason in BOUNDARY_REASONS:
                chunks = [[]]
            result = CaptureResult(ok=True, cursor=cursor)
            for chunk in chunks:
                batch = CaptureBatch(host, session, result.cursor, reason, persona, project, tuple(chunk))
                result = self.ingest(batch)
                if not result.ok:
                    break
                committed += len(chunk) - result.skipped_deleted
                skipped += result.skipped_deleted
            if result.conflict != "cursor":
                break
        captured = committed + already
        return TranscriptCapture(
            result.cursor, captured, result.conflict, skipped, persona, project, repaired, unread, noted
        )

    def _new_lines(
        self, host: Host, session: str, messages: list[TranscriptMessage]
    ) -> tuple[list[CaptureLine], int]:
        """The capture lines of ``messages`` not stored yet, and how many were stored already.

        A message's id comes from the session it was first written in (a fork's copy keeps its
        parent's id); an id that appears twice (a host that wrote a line again) or that is stored already
        (in any scope) is a no-op, so no repeated line can stop the capture of the lines after it."""
        lines: list[CaptureLine] = []
        seen: set[str] = set()
        for m in messages:
            key = event_id(host, m.origin or session, m.message_id)
            if key in seen or _EVENT_ID.fullmatch(key) is None:
                continue
            seen.add(key)
            lines.append(CaptureLine(key, m.message_id, session, m.end, m.role, m.text, m.occurred_at))
        with self.db.read() as conn:
            stored = event_store.stored_ids(conn, [line.event_id for line in lines])
        return [line for line in lines if line.event_id not in stored], len(stored)

    def _commit(
        self, conn: Connection, batch: CaptureBatch, persona: str, project: str, expected: int
    ) -> CaptureResult:
        key = {"instance_id": batch.instance, "persona_id": persona, "project_id": project}
        stored = _stored_cursor(conn, session_id=batch.session, **key)
        if (NO_CURSOR if stored is None else stored) != expected:
            raise _Rejected("cursor")
        if not batch.lines and batch.reason not in BOUNDARY_REASONS:
            return CaptureResult(ok=True, cursor=expected)
        moment = self.clock.now()
        now = to_db(moment)
        state = self.extraction_state
        items = [
            NewEvent(
                line.event_id,
                persona,
                project,
                line.session,
                line.role,
                CAPTURE_SOURCE,
                CAPTURE_CATEGORY,
                line.text,
                line.occurred_at,
                state,
            )
            for line in batch.lines
        ]
        # a replay of what was deleted is passed over (and counted); a copy of a message the scope holds
        # (a fork's inherited turn) is stored once; the same message again is a no-op, another a conflict
        outcomes = self.writer.write_many(conn, items, moment, copies_once=True)
        if CONFLICT in outcomes:
            raise _Rejected("event")
        skipped = sum(isinstance(outcome, Deleted) for outcome in outcomes)
        cursor = batch.lines[-1].seq if batch.lines else expected
        checkpoint_store.append(
            conn,
            checkpoint_id=f"cp_{uuid.uuid4().hex}",
            persona_id=persona,
            project_id=project,
            session_id=batch.session,
            goal=_GOALS[batch.reason],
            completed=[f"host capture {batch.instance}: {batch.reason}, messages through host seq {cursor}"],
            pending=[],
            constraints=[],
            next_action=None,
            covered_seq=store.last_session_seq(conn, persona, project, batch.session),
            created_at=now,
        )
        if not store.compare_and_set(
            conn,
            session_id=batch.session,
            **key,
            expected=None if stored is None else expected,
            new=cursor,
            updated_at=now,
        ):  # unreachable while the write lock is held; kept so a lost race can never commit
            raise _Rejected("cursor")
        return CaptureResult(ok=True, cursor=cursor, skipped_deleted=skipped)


def _stored_cursor(
    conn: Connection, instance_id: str, persona_id: str, project_id: str, session_id: str
) -> int | None:
    """The stored cursor (``None``: no row yet); a stored value that is not a cursor is a damaged row."""
    text = store.get_cursor(conn, instance_id, persona_id, project_id, session_id)
    if text is None:
        return None
    cursor = parse_cursor(text)
    if cursor is None:
        raise IntegrityFailure(
            f"the stored cursor of this capture session is not a valid cursor ({yiji_command('doctor')} "
            "names the row); "
            "nothing was written"
        )
    return cursor


def open_capture(config: Config, notify: Callable[[str], None] | None = None) -> HostCapture:
    """The composition root of ``yiji host-ingest``: the configured database and scope, nothing else
    (no extraction provider is constructed)."""
    from yiji.service.redaction import redactor_for

    redactor = redactor_for(config)
    return HostCapture(
        open_database(config, notify), persona=config.persona, project=config.project, redactor=redactor
    )


def capture_batch(
    config: Config, batch: CaptureBatch, notify: Callable[[str], None] | None = None
) -> CaptureResult:
    """``yiji host-ingest`` whole: :meth:`HostCapture.ingest` on the configured database, opened only when
    needed. A batch that breaks a rule is refused before the database is opened, and a probe (no
    ``expect_cursor``) on a database that does not exist answers :data:`NO_CURSOR` without creating one:
    neither writes anything, so neither leaves a file behind."""
    resolve_scope(batch.persona, batch.project, (config.persona, config.project))
    check_order(batch)
    if batch.expect_cursor is None and not config.db.expanduser().exists():
        return CaptureResult(ok=True, cursor=NO_CURSOR)
    capture = open_capture(config, notify)
    try:
        return capture.ingest(batch)
    finally:
        capture.close()
