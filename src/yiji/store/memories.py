"""SQL for memories and relations. Memories are never updated in place except for interval closing,
revocation, and the gist column; their text and quote are immutable."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from yiji.db import Connection, Row
from yiji.models.memories import MemoryRecord, RelationRecord
from yiji.store._sql import chunks, marks
from yiji.timeutil import from_db

__all__ = [
    "MEMORY_COLUMNS",
    "by_event",
    "facts_for_key",
    "get",
    "get_many",
    "insert",
    "insert_relation",
    "list_memories",
    "newest_current",
    "record",
    "relations_of",
    "revoke",
    "set_invalid_at",
]

MEMORY_COLUMNS = (
    "pk, id, persona_id, project_id, event_id, kind, basis, text, quote, confidence, subject, fact_key, "
    "valid_at, invalid_at, revoked_at, revoked_reason, valence, arousal, gist, origin, created_at"
)


def _t(value: str | None) -> Any:
    return from_db(value) if value else None


def record(row: Row) -> MemoryRecord:
    return MemoryRecord.model_construct(
        id=row["id"],
        persona=row["persona_id"],
        project=row["project_id"],
        event_id=row["event_id"],
        kind=row["kind"],
        basis=row["basis"],
        text=row["text"],
        quote=row["quote"],
        confidence=row["confidence"],
        subject=row["subject"],
        fact_key=row["fact_key"],
        valid_at=from_db(row["valid_at"]),
        invalid_at=_t(row["invalid_at"]),
        revoked_at=_t(row["revoked_at"]),
        revoked_reason=row["revoked_reason"],
        valence=row["valence"],
        arousal=row["arousal"],
        gist=row["gist"],
        origin=row["origin"],
        created_at=from_db(row["created_at"]),
    )


def get(conn: Connection, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return record(row) if row else None


def get_many(conn: Connection, ids: Sequence[str]) -> dict[str, MemoryRecord]:
    out: dict[str, MemoryRecord] = {}
    for chunk in chunks(ids):
        for row in conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(chunk)})", chunk):
            out[row["id"]] = record(row)
    return out


def by_event(conn: Connection, event_id: str) -> list[MemoryRecord]:
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE event_id = ? ORDER BY pk", (event_id,)
    ).fetchall()
    return [record(r) for r in rows]


def facts_for_key(
    conn: Connection, persona_id: str, project_id: str, subject: str, fact_key: str
) -> list[MemoryRecord]:
    """Every memory of one single-valued property in a scope (revoked ones included), by validity."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE persona_id = ? AND project_id = ? AND subject = ? "
        "AND fact_key = ? ORDER BY valid_at, created_at, id",
        (persona_id, project_id, subject, fact_key),
    ).fetchall()
    return [record(r) for r in rows]


def insert(conn: Connection, values: dict[str, Any]) -> int:
    """Insert one memory row (column -> value); return its pk."""
    columns = ", ".join(values)
    marks = ", ".join("?" * len(values))
    cur = conn.execute(f"INSERT INTO memories ({columns}) VALUES ({marks})", list(values.values()))
    return int(cur.lastrowid or 0)


def set_invalid_at(conn: Connection, memory_id: str, invalid_at: str | None) -> None:
    conn.execute("UPDATE memories SET invalid_at = ? WHERE id = ?", (invalid_at, memory_id))


def revoke(conn: Connection, memory_id: str, revoked_at: str, reason: str) -> None:
    conn.execute(
        "UPDATE memories SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
        (revoked_at, reason, memory_id),
    )


def insert_relation(conn: Connection, from_id: str, to_id: str, rel_type: str, created_at: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO relations (from_id, to_id, type, created_at) VALUES (?, ?, ?, ?)",
        (from_id, to_id, rel_type, created_at),
    )


def relations_of(conn: Connection, memory_ids: Iterable[str]) -> list[RelationRecord]:
    ids = list(memory_ids)
    out: list[RelationRecord] = []
    seen: set[tuple[str, str, str]] = set()
    for chunk in chunks(ids):
        in_list = marks(chunk)
        for row in conn.execute(
            f"SELECT from_id, to_id, type, created_at FROM relations "
            f"WHERE from_id IN ({in_list}) OR to_id IN ({in_list}) ORDER BY created_at, from_id, to_id",
            chunk + chunk,
        ):
            key = (row["from_id"], row["to_id"], row["type"])
            if key not in seen:
                seen.add(key)
                out.append(
                    RelationRecord(
                        from_id=row["from_id"],
                        to_id=row["to_id"],
                        type=row["type"],
                        created_at=from_db(row["created_at"]),
                    )
                )
    return out


def list_memories(
    conn: Connection,
    *,
    persona_id: str,
    project_id: str,
    kinds: list[str] | None = None,
    subject: str | None = None,
    fact_key: str | None = None,
    valid_at_time: str | None = None,
    include_revoked: bool = False,
    limit: int = 100,
) -> list[MemoryRecord]:
    """Memories of a scope; with ``valid_at_time``, only those whose interval contains it."""
    where = ["persona_id = ?", "project_id = ?"]
    params: list[Any] = [persona_id, project_id]
    if kinds:
        where.append(f"kind IN ({','.join('?' * len(kinds))})")
        params.extend(kinds)
    if subject is not None:
        where.append("subject = ?")
        params.append(subject)
    if fact_key is not None:
        where.append("fact_key = ?")
        params.append(fact_key)
    if valid_at_time is not None:
        where.append("valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)")
        params.extend([valid_at_time, valid_at_time])
    if not include_revoked:
        where.append("revoked_at IS NULL")
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {' AND '.join(where)} "
        "ORDER BY valid_at, created_at, id LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [record(r) for r in rows]


_CURRENT = "revoked_at IS NULL AND valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)"


def newest_current(
    conn: Connection, persona_id: str, project_id: str, kinds: Sequence[str], at: str, limit: int
) -> list[MemoryRecord]:
    """Up to ``limit`` memories of ``kinds`` valid at ``at`` and not revoked, newest ``valid_at`` first.

    One bounded backward scan of the (scope, kind, valid_at) index per kind, then a merge, so the cost does
    not grow with the number of older records.
    """
    found: list[MemoryRecord] = []
    for kind in kinds:
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE persona_id = ? AND project_id = ? AND kind = ? "
            f"AND {_CURRENT} ORDER BY valid_at DESC, pk DESC LIMIT ?",
            (persona_id, project_id, kind, at, at, limit),
        ).fetchall()
        found.extend(record(r) for r in rows)
    found.sort(key=lambda m: (m.valid_at, m.created_at, m.id), reverse=True)
    return found[:limit]
