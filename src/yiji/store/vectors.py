"""SQL for the vector cache: ``embeddings`` (memories) and ``event_embeddings`` (raw conversation events).

Both tables are rebuildable caches keyed by the row they describe. A vector belongs to the vector space
named by its ``fingerprint`` and ``dim``; vectors of another space are never compared and count as missing.
Vectors are little-endian float32 BLOBs of ``dim`` values.

Which rows get vectors (the same rows recall can return):

* memories that are not revoked (expired facts too: ``include_history`` can recall them);
* conversation events that are not amended and have no derived memory (the raw-event fallback).

``meta.vectors_generation`` is bumped by every write here and by deletions (see
:mod:`yiji.store.lifecycle`), so an in-process copy of the vectors knows when to reload. Every stored
vector carries the generation that wrote it (``stamp``).

The packed copy (``vector_packs``, one row per scope and fingerprint, and its ``vector_blocks``): the
scope's vectors of one space as int8 rows with a float32 scale per row, in blocks of at most
:data:`BLOCK_ROWS` rows, with the candidate key (``m:<memory id>`` or ``e:<event seq>``) of each row.
``through`` is the generation the pack was read at: the vectors stamped after it are the
pack's *delta*, read by their stamp. It holds no text. Deleting any vector deletes the packs of its
scope in the same transaction (triggers of schema v9), so a pack never holds a deleted row's vector;
writes made after the pack was read are detected by the generation (:func:`put_pack` refuses them).
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from yiji.db import Connection, Row
from yiji.store._sql import CHUNK, chunks, derived_from, marks

__all__ = [
    "BLOCK_ROWS",
    "GENERATION_KEY",
    "PackBlock",
    "PackState",
    "VectorRow",
    "bump_generation",
    "change_marks",
    "clear_scope",
    "coverage",
    "coverage_of",
    "eligible_events",
    "eligible_memories",
    "event_sources",
    "generation",
    "has_vectors",
    "memory_sources",
    "pack_blocks",
    "pack_delta_count",
    "pack_state",
    "put_pack",
    "put_vectors",
    "scope_vectors",
    "vector_blobs",
]

GENERATION_KEY = "vectors_generation"

VectorRow = tuple[str, str, int, bytes]
"""(``"m"`` or ``"e"``, memory id or event id, dim, float32 BLOB)."""

BLOCK_ROWS = 4096
"""Rows per stored block of a pack (2 MiB of int8 codes at 512 dimensions)."""

PackBlock = tuple[list[str], bytes, bytes]
"""(candidate keys, little-endian float32 scales, int8 codes row after row) of one block."""


@dataclass(frozen=True)
class PackState:
    """The header of a scope's pack."""

    dim: int
    through: int
    rows: int
    separation: float | None


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
    """Insert or replace vectors, stamped with the generation this write moves to; returns how many."""
    bump_generation(conn)
    stamp = generation(conn)
    count = 0
    for kind, key, dim, blob in rows:
        table, column = ("embeddings", "memory_id") if kind == "m" else ("event_embeddings", "event_id")
        conn.execute(
            f"INSERT INTO {table} ({column}, fingerprint, dim, vector, created_at, stamp) "
            "VALUES (?, ?, ?, ?, ?, ?) "
            f"ON CONFLICT ({column}) DO UPDATE SET fingerprint = excluded.fingerprint, dim = excluded.dim, "
            "vector = excluded.vector, created_at = excluded.created_at, stamp = excluded.stamp",
            (key, fingerprint, dim, blob, created_at, stamp),
        )
        count += 1
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


def coverage_of(
    conn: Connection, persona_id: str, project_id: str, covered: Container[str]
) -> dict[str, int]:
    """:func:`coverage` against the keys of vectors already read (``m:<memory id>``, ``e:<event seq>``):
    the scope's recall candidates are listed by index and looked up in ``covered``, with no probe of the
    vector tables, whose rows hold the vectors (a probe per candidate reads a page per candidate)."""
    memories = conn.execute(
        f"SELECT m.id FROM memories m WHERE m.persona_id = ? AND m.project_id = ? AND {_LIVE_MEMORY}",
        (persona_id, project_id),
    ).fetchall()
    events = conn.execute(
        f"SELECT e.seq FROM events e WHERE e.persona_id = ? AND e.project_id = ? AND {_RAW_EVENT}",
        (persona_id, project_id),
    ).fetchall()
    missing = sum(f"m:{r[0]}" not in covered for r in memories) + sum(
        f"e:{r[0]}" not in covered for r in events
    )
    return {"candidates": len(memories) + len(events), "missing": missing}


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
    conn: Connection, persona_id: str, project_id: str, fingerprint: str, *, after: int | None = None
) -> Iterable[tuple[str, str, str, int, bytes, str | None]]:
    """(kind, key, time, dim, BLOB, session) of every vector of the scope in ``fingerprint`` (or, with
    ``after``, of those stamped after that generation: a pack's delta); key = memory id or event seq,
    time = the memory's ``valid_at`` or the event's ``occurred_at``, session = the event's session
    (``None`` for a memory)."""
    if after is None:  # the scope's rows first
        memories = "FROM embeddings v JOIN memories m ON m.id = v.memory_id WHERE v.fingerprint = ?"
        events = "FROM event_embeddings v JOIN events e ON e.id = v.event_id WHERE v.fingerprint = ?"
        params: tuple[Any, ...] = (fingerprint, persona_id, project_id)
    else:  # the rows stamped since, by the stamp index, whatever the scope's size
        memories = "FROM embeddings v CROSS JOIN memories m ON m.id = v.memory_id WHERE v.stamp > ? AND v.fingerprint = ?"
        events = "FROM event_embeddings v CROSS JOIN events e ON e.id = v.event_id WHERE v.stamp > ? AND v.fingerprint = ?"
        params = (after, fingerprint, persona_id, project_id)
    yield from (
        ("m", str(r[0]), str(r[1]), int(r[2]), bytes(r[3]), None)
        for r in conn.execute(
            f"SELECT m.id, m.valid_at, v.dim, v.vector {memories} "
            "AND m.persona_id = ? AND m.project_id = ? ORDER BY m.pk",
            params,
        )
    )
    yield from (
        ("e", str(r[0]), str(r[1]), int(r[2]), bytes(r[3]), str(r[4]))
        for r in conn.execute(
            f"SELECT e.seq, e.occurred_at, v.dim, v.vector, e.session_id {events} "
            "AND e.persona_id = ? AND e.project_id = ? ORDER BY e.seq",
            params,
        )
    )


def vector_blobs(
    conn: Connection, fingerprint: str, dim: int, memory_ids: Sequence[str], event_seqs: Sequence[int]
) -> dict[str, bytes]:
    """The stored float32 BLOBs of these memories and events in ``fingerprint`` and ``dim``, by candidate
    key (``m:<id>``, ``e:<seq>``); rows without such a vector are absent."""
    out: dict[str, bytes] = {}
    for chunk in chunks(memory_ids):
        for r in conn.execute(
            f"SELECT memory_id, vector FROM embeddings WHERE memory_id IN ({marks(chunk)}) "
            "AND fingerprint = ? AND dim = ?",
            [*chunk, fingerprint, dim],
        ):
            out[f"m:{r[0]}"] = bytes(r[1])
    for seqs in chunks(int(s) for s in event_seqs):
        for r in conn.execute(
            "SELECT e.seq, v.vector FROM events e JOIN event_embeddings v ON v.event_id = e.id "
            f"WHERE e.seq IN ({marks(seqs)}) AND v.fingerprint = ? AND v.dim = ?",
            [*seqs, fingerprint, dim],
        ):
            out[f"e:{r[0]}"] = bytes(r[1])
    return out


def pack_state(conn: Connection, persona_id: str, project_id: str, fingerprint: str) -> PackState | None:
    """The header of the scope's pack in ``fingerprint``; ``None`` when there is none."""
    row = conn.execute(
        "SELECT dim, through, rows, separation FROM vector_packs "
        "WHERE persona_id = ? AND project_id = ? AND fingerprint = ?",
        (persona_id, project_id, fingerprint),
    ).fetchone()
    if row is None:
        return None
    return PackState(int(row[0]), int(row[1]), int(row[2]), None if row[3] is None else float(row[3]))


def pack_delta_count(conn: Connection, persona_id: str, project_id: str, fingerprint: str, after: int) -> int:
    """How many of the scope's vectors in ``fingerprint`` were stamped after generation ``after``."""
    row = conn.execute(
        "SELECT (SELECT COUNT(*) FROM embeddings v CROSS JOIN memories m ON m.id = v.memory_id "
        "WHERE v.stamp > ? AND v.fingerprint = ? AND m.persona_id = ? AND m.project_id = ?) + "
        "(SELECT COUNT(*) FROM event_embeddings v CROSS JOIN events e ON e.id = v.event_id "
        "WHERE v.stamp > ? AND v.fingerprint = ? AND e.persona_id = ? AND e.project_id = ?)",
        (after, fingerprint, persona_id, project_id) * 2,
    ).fetchone()
    return int(row[0])


def pack_blocks(conn: Connection, persona_id: str, project_id: str, fingerprint: str) -> Iterator[PackBlock]:
    """The blocks of the scope's pack, in order."""
    for r in conn.execute(
        "SELECT keys, scales, codes FROM vector_blocks "
        "WHERE persona_id = ? AND project_id = ? AND fingerprint = ? ORDER BY block",
        (persona_id, project_id, fingerprint),
    ):
        yield json.loads(r[0]), bytes(r[1]), bytes(r[2])


def put_pack(
    conn: Connection,
    persona_id: str,
    project_id: str,
    fingerprint: str,
    state: PackState,
    blocks: Iterable[PackBlock],
    built_at: str,
) -> bool:
    """Replace the scope's pack, read at generation ``state.through``; refused (``False``, nothing
    written) when any vector was written or deleted since: the pack could hold a deleted row's vector."""
    if generation(conn) != state.through:
        return False
    scope = (persona_id, project_id, fingerprint)
    conn.execute(
        "DELETE FROM vector_packs WHERE persona_id = ? AND project_id = ? AND fingerprint = ?", scope
    )
    conn.execute(
        "INSERT INTO vector_packs (persona_id, project_id, fingerprint, dim, through, rows, separation, "
        "built_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (*scope, state.dim, state.through, state.rows, state.separation, built_at),
    )
    for index, (keys, scales, codes) in enumerate(blocks):
        conn.execute(
            "INSERT INTO vector_blocks (persona_id, project_id, fingerprint, block, keys, scales, codes) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*scope, index, json.dumps(keys), scales, codes),
        )
    return True


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
