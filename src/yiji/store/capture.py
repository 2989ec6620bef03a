"""SQL for host-capture cursors: one row per (instance, persona, project, session).

The stored ``cursor`` is the highest host sequence number whose message is committed, as decimal text.
A session without a row has captured nothing. Updates are compare-and-set: they name the cursor they
expect and change nothing when another writer moved it first. Deleting events never touches this table,
so a cursor past a deleted event keeps that event from being captured again.

Host transcripts that showed the model answered but held no conversation yiji reads are noted in
``meta``, one key per instance and session (``capture_unread:<instance>:<session>``, the time noted as
its value): diagnostic state, like the rest of ``meta`` never exported or restored.
"""

from __future__ import annotations

from yiji.db import Connection

__all__ = [
    "compare_and_set",
    "cursor_rows",
    "get_cursor",
    "last_session_seq",
    "note_unread",
    "session_scope",
    "unread_counts",
]


def get_cursor(
    conn: Connection, instance_id: str, persona_id: str, project_id: str, session_id: str
) -> str | None:
    """The stored cursor as stored (decimal text), or ``None`` when the session has no row yet."""
    row = conn.execute(
        "SELECT cursor FROM capture_cursors "
        "WHERE instance_id = ? AND persona_id = ? AND project_id = ? AND session_id = ?",
        (instance_id, persona_id, project_id, session_id),
    ).fetchone()
    return str(row["cursor"]) if row else None


def cursor_rows(conn: Connection) -> list[dict[str, object]]:
    """Every cursor row in stored order, with ``persona_known``: whether a persona version, event or
    checkpoint has its persona (``doctor``)."""
    rows = conn.execute(
        "SELECT instance_id, persona_id, project_id, session_id, cursor, "
        "EXISTS (SELECT 1 FROM personas p WHERE p.persona_id = c.persona_id) "
        "OR EXISTS (SELECT 1 FROM events e WHERE e.persona_id = c.persona_id) "
        "OR EXISTS (SELECT 1 FROM checkpoints k WHERE k.persona_id = c.persona_id) AS persona_known "
        "FROM capture_cursors c ORDER BY rowid"
    ).fetchall()
    return [dict(row) for row in rows]


def compare_and_set(
    conn: Connection,
    *,
    instance_id: str,
    persona_id: str,
    project_id: str,
    session_id: str,
    expected: int | None,
    new: int,
    updated_at: str,
) -> bool:
    """Move the cursor from ``expected`` (``None``: no row yet) to ``new``; false if it was not ``expected``."""
    if expected is None:
        cur = conn.execute(
            "INSERT INTO capture_cursors (instance_id, persona_id, project_id, session_id, cursor, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (instance_id, persona_id, project_id, session_id, str(new), updated_at),
        )
    else:
        cur = conn.execute(
            "UPDATE capture_cursors SET cursor = ?, updated_at = ? "
            "WHERE instance_id = ? AND persona_id = ? AND project_id = ? AND session_id = ? AND cursor = ?",
            (str(new), updated_at, instance_id, persona_id, project_id, session_id, str(expected)),
        )
    return cur.rowcount == 1


def last_session_seq(conn: Connection, persona_id: str, project_id: str, session_id: str) -> int | None:
    """The yiji ``seq`` of the newest stored event of a session, if any."""
    row = conn.execute(
        "SELECT MAX(seq) AS seq FROM events WHERE persona_id = ? AND project_id = ? AND session_id = ?",
        (persona_id, project_id, session_id),
    ).fetchone()
    return None if row is None or row["seq"] is None else int(row["seq"])


def session_scope(conn: Connection, instance_id: str, session_id: str) -> tuple[str, str] | None:
    """The ``(persona, project)`` of a session's cursor in any scope (the furthest one when several),
    or ``None`` when the session captured nothing yet."""
    row = conn.execute(
        "SELECT persona_id, project_id FROM capture_cursors WHERE instance_id = ? AND session_id = ? "
        "ORDER BY CAST(cursor AS INTEGER) DESC LIMIT 1",
        (instance_id, session_id),
    ).fetchone()
    return None if row is None else (str(row["persona_id"]), str(row["project_id"]))


_UNREAD = "capture_unread:"
_UNREAD_END = "capture_unread;"  # the next key after every one that starts with _UNREAD


def note_unread(conn: Connection, instance_id: str, session_id: str, noted_at: str) -> bool:
    """Note that a session's transcript held no conversation yiji reads; true the first time."""
    cur = conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
        (f"{_UNREAD}{instance_id}:{session_id}", noted_at),
    )
    return cur.rowcount == 1


def unread_counts(conn: Connection) -> dict[str, int]:
    """Per instance (host), how many transcripts were noted as holding no conversation yiji reads."""
    counts: dict[str, int] = {}
    for row in conn.execute(
        "SELECT key FROM meta WHERE key >= ? AND key < ? ORDER BY key", (_UNREAD, _UNREAD_END)
    ):
        instance = str(row["key"])[len(_UNREAD) :].partition(":")[0]
        counts[instance] = counts.get(instance, 0) + 1
    return counts
