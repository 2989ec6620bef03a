"""SQL for events and their cues.

``seq`` is never reused, even after the newest events are deleted: a new event gets one above both the
highest stored ``seq`` and the floor in ``meta`` (:data:`SEQ_FLOOR_KEY`), which every deletion of events
raises to the highest deleted ``seq`` (:func:`raise_seq_floor`). Storing an event only reads the floor,
so a commit writes no page for it (``AUTOINCREMENT`` would rewrite ``sqlite_sequence`` every time).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from yiji.db import Connection, Row
from yiji.domain.records import SessionSummary
from yiji.store._sql import chunks, marks
from yiji.timeutil import from_db

if TYPE_CHECKING:  # the records are pydantic models, imported where one is built: inserting needs none
    from yiji.models.events import Cue, EventRecord

__all__ = [
    "SEQ_FLOOR_KEY",
    "CueRow",
    "EventRow",
    "EventSelection",
    "count_events",
    "count_sessions",
    "cues_for",
    "get",
    "get_by_seq",
    "get_many",
    "get_many_by_seq",
    "insert_many",
    "insert_new",
    "next_seq",
    "raise_seq_floor",
    "seq_high_water",
    "list_events",
    "list_sessions",
    "payload",
    "pending",
    "recent_conversation",
    "set_extraction_state",
    "stored_ids",
    "UNEXTRACTED_STATES",
]

EVENT_COLUMNS = (
    "seq, id, persona_id, project_id, session_id, role, source, category, text, occurred_at, "
    "ingested_at, amended, extraction_state, extraction_error, extraction_attempts, redacted"
)


def cues_for(conn: Connection, event_ids: Iterable[str]) -> dict[str, list[Cue]]:
    from yiji.models.events import Cue

    ids = list(event_ids)
    out: dict[str, list[Cue]] = {i: [] for i in ids}
    for chunk in chunks(ids):
        for row in conn.execute(
            f"SELECT event_id, cue_type, identifier, label FROM event_cues "
            f"WHERE event_id IN ({marks(chunk)}) ORDER BY rowid",
            chunk,
        ):
            out[row["event_id"]].append(
                Cue(type=row["cue_type"], identifier=row["identifier"], label=row["label"])
            )
    return out


def _record(row: Row, cues: list[Cue]) -> EventRecord:
    from yiji.models.events import EventRecord

    return EventRecord(
        id=row["id"],
        seq=row["seq"],
        persona=row["persona_id"],
        project=row["project_id"],
        session=row["session_id"],
        role=row["role"],
        source=row["source"],
        category=row["category"],
        text=row["text"],
        occurred_at=from_db(row["occurred_at"]),
        ingested_at=from_db(row["ingested_at"]),
        amended=bool(row["amended"]),
        extraction_state=row["extraction_state"],
        extraction_error=row["extraction_error"],
        cues=cues,
        redacted=bool(row["redacted"]),
    )


def _records(conn: Connection, rows: list[Row]) -> list[EventRecord]:
    cues = cues_for(conn, (r["id"] for r in rows))
    return [_record(r, cues[r["id"]]) for r in rows]


def get(conn: Connection, event_id: str) -> EventRecord | None:
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE id = ?", (event_id,)).fetchone()
    return _records(conn, [row])[0] if row else None


def get_by_seq(conn: Connection, seq: int) -> EventRecord | None:
    row = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,)).fetchone()
    return _records(conn, [row])[0] if row else None


def get_many_by_seq(conn: Connection, seqs: list[int]) -> dict[int, EventRecord]:
    if not seqs:
        return {}
    marks = ",".join("?" * len(seqs))
    rows = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq IN ({marks})", seqs).fetchall()
    return {r.seq: r for r in _records(conn, rows)}


def get_many(conn: Connection, event_ids: Iterable[str]) -> dict[str, EventRecord]:
    """The stored events among ``event_ids``, by id (one query per few hundred ids)."""
    rows: list[Row] = []
    for chunk in chunks(event_ids):
        rows += conn.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE id IN ({marks(chunk)})", chunk
        ).fetchall()
    return {r.id: r for r in _records(conn, rows)} if rows else {}


class EventRow(NamedTuple):
    """The columns :func:`insert_many` writes for one new event (the others take their defaults)."""

    seq: int | None
    """``None`` for :func:`insert_new`, which assigns the next one."""
    id: str
    persona_id: str
    project_id: str
    session_id: str
    role: str
    source: str
    category: str
    text: str
    occurred_at: str
    ingested_at: str
    extraction_state: str
    redacted: int = 0
    """1 when secrets were replaced in ``text`` (see :mod:`yiji.domain.secrets`)."""


class CueRow(NamedTuple):
    event_id: str
    cue_type: str
    identifier: str
    label: str | None


SEQ_FLOOR_KEY = "events_seq_floor"
"""The ``meta`` row holding the highest ``seq`` of a deleted event (or of an imported archive's header)."""

_HIGH_WATER = (
    "max(coalesce((SELECT max(seq) FROM events), 0), "
    f"coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{SEQ_FLOOR_KEY}'), 0))"
)
"""The highest ``seq`` ever assigned, deleted events included (two index seeks: ``max(seq)`` is the last
rowid)."""


def seq_high_water(conn: Connection) -> int:
    """The highest ``seq`` ever assigned, deleted events included (0 before the first event)."""
    return int(conn.execute(f"SELECT {_HIGH_WATER}").fetchone()[0])


def next_seq(conn: Connection) -> int:
    """The ``seq`` of the next event (call inside the write transaction).

    Above every seq ever used, deleted ones included, so numbers assigned from it are never reused.
    """
    return seq_high_water(conn) + 1


def raise_seq_floor(conn: Connection, seq: int) -> None:
    """Keep every ``seq`` up to ``seq`` from being assigned again (the floor only ever goes up).

    Call in the transaction that deletes events (with the highest deleted seq) or imports them.
    """
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
        "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
        (SEQ_FLOOR_KEY, int(seq)),
    )


_INSERT_NEW = (
    "INSERT INTO events (seq, id, persona_id, project_id, session_id, role, source, category, text, "
    f"occurred_at, ingested_at, extraction_state, redacted) VALUES (({_HIGH_WATER}) + 1, "
    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)


def insert_new(conn: Connection, row: EventRow, cues: Sequence[CueRow] = ()) -> int | None:
    """Insert one event and its cues with the next seq (``row.seq`` is ignored); return the seq, or
    None when the id is taken."""
    cur = conn.execute(_INSERT_NEW, row[1:])
    if cur.rowcount == 0:
        return None
    if cues:
        conn.executemany(_INSERT_CUE, cues)
    return int(cur.lastrowid or 0)


_INSERT_CUE = "INSERT OR IGNORE INTO event_cues (event_id, cue_type, identifier, label) VALUES (?, ?, ?, ?)"


_INSERT_EVENTS = (
    "INSERT INTO events (seq, id, persona_id, project_id, session_id, role, source, category, text, "
    "occurred_at, ingested_at, extraction_state, redacted) VALUES "
)
_EVENT_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
ROWS_PER_INSERT = 64
"""Events per multi-row INSERT (832 parameters): a statement run per 64 rows instead of per row."""


def insert_many(conn: Connection, rows: Sequence[EventRow], cues: Sequence[CueRow] = ()) -> None:
    """Insert new events with the seqs assigned from :func:`next_seq`, and their cues.

    The ids must be free (checked with :func:`get_many` in the same transaction): a taken id is an
    integrity error, not a silent skip.
    """
    full = len(rows) - len(rows) % ROWS_PER_INSERT
    if full:
        statement = _INSERT_EVENTS + ",".join([_EVENT_VALUES] * ROWS_PER_INSERT)
        conn.executemany(
            statement,
            (
                list(itertools.chain.from_iterable(rows[start : start + ROWS_PER_INSERT]))
                for start in range(0, full, ROWS_PER_INSERT)
            ),
        )
    if full < len(rows):
        conn.executemany(_INSERT_EVENTS + _EVENT_VALUES, rows[full:])
    if cues:
        conn.executemany(_INSERT_CUE, cues)


def stored_ids(conn: Connection, event_ids: Sequence[str]) -> set[str]:
    """Which of ``event_ids`` are stored (in any scope)."""
    found: set[str] = set()
    for i in range(0, len(event_ids), 500):
        chunk = event_ids[i : i + 500]
        marks = ", ".join("?" * len(chunk))
        found.update(r[0] for r in conn.execute(f"SELECT id FROM events WHERE id IN ({marks})", chunk))
    return found


def holds_copy(  # noqa: PLR0913 - the scope and the message, all named
    conn: Connection, persona_id: str, project_id: str, event_id: str, role: str, text: str, occurred_at: str
) -> bool:
    """Whether the scope holds this message under another session's id: the same host message (the last
    part of the id, after its final ``:``), role and text at this very moment (stored form). That is what a
    host's copy of a line it wrote before looks like (Claude Code's ``--fork-session`` keeps each line's
    uuid and time under the new session id)."""
    message = event_id.rpartition(":")[2]
    rows = conn.execute(
        "SELECT id FROM events WHERE persona_id = ? AND project_id = ? AND occurred_at = ? AND role = ? "
        "AND text = ?",
        (persona_id, project_id, occurred_at, role, text),
    )
    return any(str(row[0]).rpartition(":")[2] == message for row in rows)


def payload(conn: Connection, event_id: str) -> tuple[Any, ...] | None:
    """What decides whether a stored event equals a resubmitted one, as plain values (no model built):
    persona, project, session, role, source, category, text, stored occurred_at, and the set of cues."""
    row = conn.execute(
        "SELECT persona_id, project_id, session_id, role, source, category, text, occurred_at "
        "FROM events WHERE id = ?",
        (event_id,),
    ).fetchone()
    if row is None:
        return None
    cues = conn.execute(
        "SELECT cue_type, identifier, label FROM event_cues WHERE event_id = ?", (event_id,)
    ).fetchall()
    return (*tuple(row), frozenset(tuple(c) for c in cues))


def payloads(conn: Connection, event_ids: Iterable[str]) -> dict[str, tuple[Any, ...]]:
    """:func:`payload` of each stored event among ``event_ids``, by id (one query per few hundred ids)."""
    out: dict[str, tuple[Any, ...]] = {}
    cues: dict[str, set[tuple[Any, ...]]] = {}
    for chunk in chunks(event_ids):
        for row in conn.execute(
            "SELECT id, persona_id, project_id, session_id, role, source, category, text, occurred_at "
            f"FROM events WHERE id IN ({marks(chunk)})",
            chunk,
        ):
            out[row[0]] = tuple(row)[1:]
        found = [i for i in chunk if i in out]
        if found:
            for cue in conn.execute(
                f"SELECT event_id, cue_type, identifier, label FROM event_cues WHERE event_id IN ({marks(found)})",
                found,
            ):
                cues.setdefault(cue[0], set()).add(tuple(cue)[1:])
    return {k: (*v, frozenset(cues.get(k, ()))) for k, v in out.items()}


UNEXTRACTED_STATES = ("none", "pending")
"""The extraction states of an event with no memories from extraction yet: stored without extraction
(``none``, as every capture stores them) or waiting for a retry (``pending``)."""


@dataclass(frozen=True)
class EventSelection:
    """Which events of a scope :func:`list_events` pages through and :func:`count_events` counts.

    ``since`` is inclusive and ``until`` exclusive (stored UTC text); ``before_seq`` keeps events stored
    before that sequence number, ``after_seq`` those stored after it. ``roles`` and ``states`` (extraction
    states) keep events with one of them when not empty. ``persona_id`` and ``project_id`` ``None``: every
    scope (only ``yiji extraction run --auto`` reads across scopes).
    """

    persona_id: str | None
    project_id: str | None
    session_id: str | None = None
    role: str | None = None
    category: str | None = None
    since: str | None = None
    until: str | None = None
    before_seq: int | None = None
    after_seq: int | None = None
    roles: tuple[str, ...] = ()
    states: tuple[str, ...] = ()

    @classmethod
    def earlier_in_session(cls, event: EventRecord) -> EventSelection:
        """The events stored before ``event`` in its own session."""
        return cls(event.persona, event.project, session_id=event.session, before_seq=event.seq)

    def where(self) -> tuple[str, list[Any]]:
        where = ["1"]
        params: list[Any] = []
        for column, value in (
            ("persona_id = ?", self.persona_id),
            ("project_id = ?", self.project_id),
            ("session_id = ?", self.session_id),
            ("role = ?", self.role),
            ("category = ?", self.category),
            ("occurred_at >= ?", self.since),
            ("occurred_at < ?", self.until),
            ("seq < ?", self.before_seq),
            ("seq > ?", self.after_seq),
        ):
            if value is not None:
                where.append(column)
                params.append(value)
        for column, values in (("role", self.roles), ("extraction_state", self.states)):
            if values:
                where.append(f"{column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        return " AND ".join(where[1:] or where), params


def list_events(
    conn: Connection,
    selection: EventSelection,
    *,
    limit: int = 50,
    offset: int = 0,
    newest_first: bool = False,
) -> list[EventRecord]:
    """A page of the selected events, ordered by seq."""
    where, params = selection.where()
    order = "DESC" if newest_first else "ASC"
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY seq {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    return _records(conn, rows)


def count_events(conn: Connection, selection: EventSelection) -> int:
    """How many events :func:`list_events` would page through for the same selection."""
    where, params = selection.where()
    return int(conn.execute(f"SELECT count(*) FROM events WHERE {where}", params).fetchone()[0])


def list_sessions(
    conn: Connection, persona_id: str, project_id: str, *, limit: int, offset: int, preview: int = 200
) -> list[SessionSummary]:
    """A page of a scope's sessions, the most recently active first (ties by session id)."""
    rows = conn.execute(
        "SELECT s.session_id, s.n, s.first_at, s.last_at, "
        "(SELECT substr(e.text, 1, ?) FROM events e WHERE e.persona_id = ? AND e.project_id = ? "
        " AND e.session_id = s.session_id ORDER BY e.seq LIMIT 1) "
        "FROM (SELECT session_id, count(*) AS n, min(occurred_at) AS first_at, max(occurred_at) AS last_at "
        "      FROM events WHERE persona_id = ? AND project_id = ? GROUP BY session_id) AS s "
        "ORDER BY s.last_at DESC, s.session_id LIMIT ? OFFSET ?",
        (preview, persona_id, project_id, persona_id, project_id, limit, offset),
    ).fetchall()
    return [SessionSummary(r[0], int(r[1]), from_db(r[2]), from_db(r[3]), r[4] or "") for r in rows]


def count_sessions(conn: Connection, persona_id: str, project_id: str) -> int:
    row = conn.execute(
        "SELECT count(DISTINCT session_id) FROM events WHERE persona_id = ? AND project_id = ?",
        (persona_id, project_id),
    ).fetchone()
    return int(row[0])


def set_extraction_state(
    conn: Connection, event_id: str, state: str, error: str | None, *, attempted: bool = False
) -> None:
    conn.execute(
        "UPDATE events SET extraction_state = ?, extraction_error = ?, "
        "extraction_attempts = extraction_attempts + ? WHERE id = ?",
        (state, error, 1 if attempted else 0, event_id),
    )


def pending(conn: Connection, persona_id: str, project_id: str, limit: int) -> list[EventRecord]:
    """Events of a scope waiting for extraction, oldest first."""
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE extraction_state = 'pending' AND persona_id = ? "
        "AND project_id = ? ORDER BY seq LIMIT ?",
        (persona_id, project_id, limit),
    ).fetchall()
    return _records(conn, rows)


def pending_after(
    conn: Connection, persona_id: str, project_id: str, after_seq: int, limit: int
) -> list[EventRecord]:
    """Up to ``limit`` pending events of a scope with ``seq`` above ``after_seq``, oldest first."""
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE extraction_state = 'pending' AND persona_id = ? "
        "AND project_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (persona_id, project_id, after_seq, limit),
    ).fetchall()
    return _records(conn, rows)


def count_pending(conn: Connection, persona_id: str, project_id: str) -> int:
    row = conn.execute(
        "SELECT count(*) FROM events WHERE extraction_state = 'pending' AND persona_id = ? AND project_id = ?",
        (persona_id, project_id),
    ).fetchone()
    return int(row[0])


def recent_conversation(
    conn: Connection, persona_id: str, project_id: str, session_id: str | None, limit: int
) -> list[EventRecord]:
    """The latest ``limit`` conversation events of a session (or of the scope), newest first.

    Amended events (a correction marked their claim as mistaken) are left out.
    """
    where = "persona_id = ? AND project_id = ? AND category = 'conversation' AND amended = 0"
    params: list[Any] = [persona_id, project_id]
    # a session's events are read by the session's index and sorted: walking the scope's time index
    # for them would read every event of the scope when the session is new or old
    table = "events"
    if session_id is not None:
        where += " AND session_id = ?"
        params.append(session_id)
        table = "events INDEXED BY events_session"
    rows = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM {table} WHERE {where} ORDER BY occurred_at DESC, seq DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return _records(conn, rows)
