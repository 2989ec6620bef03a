"""SQL for the vector cache: ``embeddings`` (memories) and ``event_embeddings`` (raw conversation events).

Both tables are rebuildable caches keyed by the row they describe. A vector belongs to the vector space
named by its ``fingerprint`` and ``dim``; vectors of another space are never compared and count as missing.
Vectors are little-endian float32 BLOBs of ``dim`` values.

Which rows get vectors (the same rows recall can return):

* memories that are not revoked (expired facts too: ``include_history`` can recall them);
* conversation events that are not amended and have no derived memory (the raw-event fallback).

``meta.vectors_generation`` is bumped by every write here and by deletions (see
:mod:`yiji.store.lifecycle`), so an in-process copy of the vectors knows when to reload.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from yiji.db import Connection, Row
from yiji.store._sql import CHUNK, chunks, derived_from, marks

__all__ = [
    "GENERATION_KEY",
    "VectorRow",
    "bump_generation",
    "change_marks",
    "clear_scope",
    "coverage",
    "eligible_events",
    "eligible_memories",
    "event_sources",
    "generation",
    "has_vectors",
    "memory_sources",
    "put_vectors",
    "scope_vectors",
]

GENERATION_KEY = "vectors_generation"

VectorRow = tuple[str, str, int, bytes]
"""(``"m"`` or ``"e"``, memory id or event id, dim, float32 BLOB)."""

_LIVE_MEMORY = "m.revoked_at IS NULL AND m.review_state = 'accepted'"
_RAW_EVENT = f"e.category = 'conversation' AND e.amended = 0 AND NOT {derived_from('e', 'x')}"


def bump_generation(conn: Connection) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') "
        "ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (GENERATION_KEY,),
    )


def generation(conn: Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION_KEY,)).fetchone()
    return int(row[0]) if row else 0


def change_marks(conn: Connection) -> tuple[int, int, int]:
    """(vector generation, newest event seq, newest memory pk): when none moved, coverage is unchanged."""
    row = conn.execute(
        "SELECT (SELECT COALESCE(MAX(seq), 0) FROM events), (SELECT COALESCE(MAX(pk), 0) FROM memories)"
    ).fetchone()
    return generation(conn), int(row[0]), int(row[1])


def _cues(conn: Connection, event_ids: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
    out: dict[str, list[tuple[str, str, str]]] = {}
    for chunk in chunks(event_ids):
        for row in conn.execute(
            f"SELECT event_id, cue_type, identifier, label FROM event_cues WHERE event_id IN ({marks(chunk)}) "
            "AND label IS NOT NULL ORDER BY rowid",
            chunk,
        ):
            out.setdefault(row[0], []).append((str(row[1]), str(row[2]), str(row[3])))
    return out


def memory_sources(
    conn: Connection, persona_id: str, project_id: str, ids: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """(id, text, source role) of the scope's live memories (or of those among ``ids``), oldest first."""
    sql = (
        "SELECT m.id, m.text, e.role FROM memories m JOIN events e ON e.id = m.event_id "
        f"WHERE m.persona_id = ? AND m.project_id = ? AND {_LIVE_MEMORY}"
    )
    if ids is None:
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in conn.execute(sql + " ORDER BY m.pk", (persona_id, project_id))
        ]
    out: list[tuple[str, str, str]] = []
    for chunk in chunks(ids):
        rows = conn.execute(
            sql + f" AND m.id IN ({marks(chunk)}) ORDER BY m.pk", [persona_id, project_id, *chunk]
        )
        out.extend((str(r[0]), str(r[1]), str(r[2])) for r in rows)
    return out


def event_sources(
    conn: Connection, persona_id: str, project_id: str, ids: Sequence[str] | None = None
) -> list[tuple[str, str, str, list[tuple[str, str, str]]]]:
    """(id, text, role, labelled cues as (type, identifier, label)) of the scope's raw-event candidates,
    oldest first."""
    sql = f"SELECT e.id, e.text, e.role FROM events e WHERE e.persona_id = ? AND e.project_id = ? AND {_RAW_EVENT}"
    if ids is None:
        rows = conn.execute(sql + " ORDER BY e.seq", (persona_id, project_id)).fetchall()
    else:
        rows = []
        for chunk in chunks(ids):
            rows += conn.execute(
                sql + f" AND e.id IN ({marks(chunk)}) ORDER BY e.seq", [persona_id, project_id, *chunk]
            ).fetchall()
    labels = _cues(conn, [str(r[0]) for r in rows])
    return [(str(r[0]), str(r[1]), str(r[2]), labels.get(str(r[0]), [])) for r in rows]


def put_vectors(conn: Connection, fingerprint: str, rows: Iterable[VectorRow], created_at: str) -> int:
    """Insert or replace vectors; returns how many were written."""
    count = 0
    for kind, key, dim, blob in rows:
        table, column = ("embeddings", "memory_id") if kind == "m" else ("event_embeddings", "event_id")
        conn.execute(
            f"INSERT INTO {table} ({column}, fingerprint, dim, vector, created_at) VALUES (?, ?, ?, ?, ?) "
            f"ON CONFLICT ({column}) DO UPDATE SET fingerprint = excluded.fingerprint, dim = excluded.dim, "
            "vector = excluded.vector, created_at = excluded.created_at",
            (key, fingerprint, dim, blob, created_at),
        )
        count += 1
    bump_generation(conn)
    return count


def clear_scope(conn: Connection, persona_id: str, project_id: str) -> None:
    """Delete every vector of the scope, whatever its fingerprint."""
    conn.execute(
        "DELETE FROM embeddings WHERE memory_id IN "
        "(SELECT id FROM memories WHERE persona_id = ? AND project_id = ?)",
        (persona_id, project_id),
    )
    conn.execute(
        "DELETE FROM event_embeddings WHERE event_id IN "
        "(SELECT id FROM events WHERE persona_id = ? AND project_id = ?)",
        (persona_id, project_id),
    )
    bump_generation(conn)


def coverage(conn: Connection, persona_id: str, project_id: str, fingerprint: str) -> dict[str, int]:
    """How many recall candidates of the scope exist and how many lack a vector of ``fingerprint``."""
    memories, memories_missing = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(v.memory_id IS NULL), 0) FROM memories m "
        "LEFT JOIN embeddings v ON v.memory_id = m.id AND v.fingerprint = ? "
        f"WHERE m.persona_id = ? AND m.project_id = ? AND {_LIVE_MEMORY}",
        (fingerprint, persona_id, project_id),
    ).fetchone()
    events, events_missing = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(v.event_id IS NULL), 0) FROM events e "
        "LEFT JOIN event_embeddings v ON v.event_id = e.id AND v.fingerprint = ? "
        f"WHERE e.persona_id = ? AND e.project_id = ? AND {_RAW_EVENT}",
        (fingerprint, persona_id, project_id),
    ).fetchone()
    return {
        "candidates": int(memories) + int(events),
        "missing": int(memories_missing) + int(events_missing),
    }


def has_vectors(conn: Connection, persona_id: str, project_id: str, fingerprint: str) -> bool:
    """True when any memory or event of the scope has a vector of ``fingerprint``.

    CROSS JOIN keeps the vector tables outside: without statistics the planner would walk every
    memory (or event) of the scope and probe for a vector, about 30 ms at 100,000 memories and none
    embedded, on every ``session_resume``."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM embeddings v CROSS JOIN memories m ON m.id = v.memory_id "
        "WHERE v.fingerprint = ? AND m.persona_id = ? AND m.project_id = ?) "
        "OR EXISTS (SELECT 1 FROM event_embeddings v CROSS JOIN events e ON e.id = v.event_id "
        "WHERE v.fingerprint = ? AND e.persona_id = ? AND e.project_id = ?)",
        (fingerprint, persona_id, project_id, fingerprint, persona_id, project_id),
    ).fetchone()
    return bool(row[0])


def scope_vectors(
    conn: Connection, persona_id: str, project_id: str, fingerprint: str
) -> Iterable[tuple[str, str, str, int, bytes, str | None]]:
    """(kind, key, time, dim, BLOB, session) of every vector of the scope in ``fingerprint``; key = memory
    id or event seq, time = the memory's ``valid_at`` or the event's ``occurred_at``, session = the
    event's session (``None`` for a memory)."""
    yield from (
        ("m", str(r[0]), str(r[1]), int(r[2]), bytes(r[3]), None)
        for r in conn.execute(
            "SELECT m.id, m.valid_at, v.dim, v.vector FROM embeddings v JOIN memories m ON m.id = v.memory_id "
            "WHERE v.fingerprint = ? AND m.persona_id = ? AND m.project_id = ? ORDER BY m.pk",
            (fingerprint, persona_id, project_id),
        )
    )
    yield from (
        ("e", str(r[0]), str(r[1]), int(r[2]), bytes(r[3]), str(r[4]))
        for r in conn.execute(
            "SELECT e.seq, e.occurred_at, v.dim, v.vector, e.session_id FROM event_embeddings v "
            "JOIN events e ON e.id = v.event_id "
            "WHERE v.fingerprint = ? AND e.persona_id = ? AND e.project_id = ? ORDER BY e.seq",
            (fingerprint, persona_id, project_id),
        )
    )


def _memory_filters(
    valid_at_time: str | None, kinds: Sequence[str] | None, since: str | None, until: str | None
) -> tuple[str, list[Any]]:
    sql, params = f" AND {_LIVE_MEMORY}", []
    if valid_at_time is not None:
        sql += " AND m.valid_at <= ? AND (m.invalid_at IS NULL OR m.invalid_at > ?)"
        params += [valid_at_time, valid_at_time]
    if kinds:
        sql += f" AND m.kind IN ({marks(kinds)})"
        params += list(kinds)
    if since is not None:
        sql += " AND m.valid_at >= ?"
        params.append(since)
    if until is not None:
        sql += " AND m.valid_at < ?"
        params.append(until)
    return sql, params


def _event_filters(
    occurred_before: str | None, since: str | None, until: str | None
) -> tuple[str, list[Any]]:
    sql, params = f" AND {_RAW_EVENT}", []
    for clause, value in (
        (" AND e.occurred_at <= ?", occurred_before),
        (" AND e.occurred_at >= ?", since),
        (" AND e.occurred_at < ?", until),
    ):
        if value is not None:
            sql += clause
            params.append(value)
    return sql, params


def eligible_memories(
    conn: Connection,
    ids: Sequence[str],
    *,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> list[Row]:
    """(id, basis, confidence, valid_at, seq, session_id) of the memories among ``ids`` that recall may
    return; ``seq`` and ``session_id`` are those of the source event."""
    where, params = _memory_filters(valid_at_time, kinds, since, until)
    out: list[Row] = []
    for chunk in chunks(ids):
        out += conn.execute(
            "SELECT m.id, m.basis, m.confidence, m.valid_at, e.seq, e.session_id FROM memories m "
            f"JOIN events e ON e.id = m.event_id WHERE m.id IN ({marks(chunk)}){where}",
            [*chunk, *params],
        ).fetchall()
    return out


def eligible_events(
    conn: Connection,
    seqs: Sequence[int],
    *,
    occurred_before: str | None,
    since: str | None,
    until: str | None,
) -> list[Row]:
    """(seq, id, session_id, occurred_at, role) of the raw-event candidates among ``seqs``."""
    where, params = _event_filters(occurred_before, since, until)
    out: list[Row] = []
    distinct = list(dict.fromkeys(int(s) for s in seqs))
    for start in range(0, len(distinct), CHUNK):
        chunk = distinct[start : start + CHUNK]
        out += conn.execute(
            "SELECT e.seq, e.id, e.session_id, e.occurred_at, e.role FROM events e "
            f"WHERE e.seq IN ({marks(chunk)}){where}",
            [*chunk, *params],
        ).fetchall()
    return out
