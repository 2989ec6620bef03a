"""SQL for memories and relations. Memories are never updated in place except for interval closing,
revocation, the gist column and review; the text and quote of an accepted memory are immutable.

Review states (schema v7): ``accepted`` memories are the remembered ones; ``proposed`` ones wait for a
person (only then may their text, kind, key and validity start change, see :func:`edit_proposal`) and
``rejected`` ones are kept for audit. Only accepted memories take part in fact intervals
(:func:`facts_for_key`), the current view (:func:`newest_current`) and, in the other store modules,
recall and the raw-event fallback (an event whose memories all wait or were rejected is searched as a
raw event, as one with no memory)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from yiji.db import Connection, Row
from yiji.domain.records import MemoryRecord
from yiji.store._sql import chunks, marks
from yiji.timeutil import from_db, to_db

if TYPE_CHECKING:  # a pydantic model, imported where one is built: recall reads plain records
    from yiji.models.memories import RelationRecord

__all__ = [
    "MEMORY_COLUMNS",
    "MemoryFilter",
    "by_event",
    "by_events",
    "count_proposed",
    "count_memories",
    "fact_neighbours",
    "facts_for_key",
    "get",
    "get_many",
    "insert",
    "last_proposal_pk",
    "insert_relation",
    "list_memories",
    "newest_current",
    "pk_of",
    "proposals",
    "record",
    "review_counts",
    "set_review",
    "edit_proposal",
    "relations_of",
    "review_columns",
    "revoke",
    "set_invalid_at",
]

MEMORY_COLUMNS = (
    "pk, id, persona_id, project_id, event_id, kind, basis, text, quote, confidence, subject, fact_key, "
    "valid_at, invalid_at, revoked_at, revoked_reason, valence, arousal, gist, origin, created_at, "
    "review_state, reviewed_at, reviewed_by, review_note"
)
REVIEW_STATES = ("accepted", "proposed", "rejected")


def _t(value: str | None) -> Any:
    return from_db(value) if value else None


def record(row: Row) -> MemoryRecord:
    return MemoryRecord(
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
        review_state=row["review_state"],
        reviewed_at=_t(row["reviewed_at"]),
        reviewed_by=row["reviewed_by"],
        review_note=row["review_note"],
    )


def get(conn: Connection, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return record(row) if row else None


def _rows_by_id(conn: Connection, ids: Sequence[str]) -> Iterator[Row]:
    for chunk in chunks(ids):
        yield from conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks(chunk)})", chunk)


def get_many(conn: Connection, ids: Sequence[str]) -> dict[str, MemoryRecord]:
    return {row["id"]: record(row) for row in _rows_by_id(conn, ids)}


def _where(conn: Connection, clause: str, params: Sequence[Any]) -> list[MemoryRecord]:
    """The memories ``WHERE clause`` selects (``clause`` may go on with ``ORDER BY`` and ``LIMIT``)."""
    return [record(r) for r in conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}", params)]


def by_event(conn: Connection, event_id: str) -> list[MemoryRecord]:
    return _where(conn, "event_id = ? ORDER BY pk", (event_id,))


def by_events(conn: Connection, event_ids: Sequence[str]) -> dict[str, list[MemoryRecord]]:
    """The memories derived from each of ``event_ids`` (revoked ones included), in insertion order."""
    found: dict[str, list[MemoryRecord]] = {}
    for chunk in chunks(event_ids):
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE event_id IN ({marks(chunk)}) ORDER BY pk", chunk
        ).fetchall()
        for row in rows:
            found.setdefault(row["event_id"], []).append(record(row))
    return found


def facts_for_key(
    conn: Connection, persona_id: str, project_id: str, subject: str, fact_key: str
) -> list[MemoryRecord]:
    """Every accepted memory of one single-valued property in a scope (revoked ones included), by
    validity. Proposals and rejected memories take no part in fact intervals."""
    return _where(
        conn,
        "persona_id = ? AND project_id = ? AND subject = ? AND fact_key = ? AND review_state = 'accepted' "
        "ORDER BY valid_at, created_at, id",
        (persona_id, project_id, subject, fact_key),
    )


_LIVE_FACT = (
    "persona_id = ? AND project_id = ? AND subject = ? AND fact_key = ? AND review_state = 'accepted' "
    "AND revoked_at IS NULL AND id != ?"
)


def fact_neighbours(conn: Connection, fact: MemoryRecord) -> tuple[MemoryRecord | None, MemoryRecord | None]:
    """The live facts just before and just after ``fact`` in its key's timeline (accepted, not revoked,
    ordered by ``(valid_at, created_at, id)``), without reading the rest of the key.

    Both are one seek on the ``memories_fact`` index from ``fact``'s ``valid_at``, so the cost does not
    grow with how many facts the key has; only rows of the key that take no part in intervals
    (proposals, rejected or revoked memories) between ``fact`` and a neighbour are stepped over.
    """
    assert fact.subject is not None and fact.fact_key is not None
    valid_at, created_at = to_db(fact.valid_at), to_db(fact.created_at)
    key = (fact.persona, fact.project, fact.subject, fact.fact_key, fact.id)
    before = _where(
        conn,
        f"{_LIVE_FACT} AND valid_at <= ? AND (valid_at, created_at, id) < (?, ?, ?) "
        "ORDER BY valid_at DESC, created_at DESC, id DESC LIMIT 1",
        (*key, valid_at, valid_at, created_at, fact.id),
    )
    after = _where(
        conn,
        f"{_LIVE_FACT} AND valid_at >= ? AND (valid_at, created_at, id) > (?, ?, ?) "
        "ORDER BY valid_at, created_at, id LIMIT 1",
        (*key, valid_at, valid_at, created_at, fact.id),
    )
    return (before[0] if before else None, after[0] if after else None)


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


def pk_of(conn: Connection, memory_id: str) -> int:
    return int(conn.execute("SELECT pk FROM memories WHERE id = ?", (memory_id,)).fetchone()[0])


def set_review(conn: Connection, memory_id: str, state: str, at: str, by: str, note: str | None) -> bool:
    """Move a proposal to ``state`` (``accepted`` or ``rejected``) with who, when and why; False when
    the memory is not (or no longer) proposed."""
    cur = conn.execute(
        "UPDATE memories SET review_state = ?, reviewed_at = ?, reviewed_by = ?, review_note = ? "
        "WHERE id = ? AND review_state = 'proposed'",
        (state, at, by, note, memory_id),
    )
    return cur.rowcount == 1


def edit_proposal(conn: Connection, memory_id: str, values: dict[str, Any]) -> bool:
    """Change columns of a waiting proposal (already validated); False when it is not proposed."""
    allowed = {"text", "kind", "subject", "fact_key", "valid_at", "gist"}
    if not set(values) <= allowed:
        raise ValueError("only a proposal's text, kind, key, validity start and gist can change")
    if not values:
        return _state(conn, memory_id) == "proposed"
    assignments = ", ".join(f"{column} = ?" for column in values)
    cur = conn.execute(
        f"UPDATE memories SET {assignments} WHERE id = ? AND review_state = 'proposed'",
        [*values.values(), memory_id],
    )
    return cur.rowcount == 1


def _state(conn: Connection, memory_id: str) -> str | None:
    row = conn.execute("SELECT review_state FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return str(row[0]) if row else None


def proposals(
    conn: Connection,
    persona_id: str,
    project_id: str,
    *,
    limit: int,
    after_pk: int = 0,
    upto_pk: int | None = None,
) -> list[MemoryRecord]:
    """Waiting proposals of a scope, oldest first (by insertion), after ``after_pk`` (and up to
    ``upto_pk`` when given)."""
    upto = "" if upto_pk is None else f" AND pk <= {int(upto_pk)}"
    return _where(
        conn,
        f"persona_id = ? AND project_id = ? AND review_state = 'proposed' AND pk > ?{upto} ORDER BY pk LIMIT ?",
        (persona_id, project_id, after_pk, limit),
    )


def last_proposal_pk(conn: Connection, persona_id: str, project_id: str) -> int:
    """The pk of the newest waiting proposal of a scope (0 when none waits)."""
    row = conn.execute(
        "SELECT max(pk) FROM memories WHERE persona_id = ? AND project_id = ? AND review_state = 'proposed'",
        (persona_id, project_id),
    ).fetchone()
    return int(row[0] or 0)


def count_proposed(conn: Connection, persona_id: str, project_id: str) -> int:
    """How many proposals of a scope wait (the partial index ``memories_proposed`` answers it)."""
    row = conn.execute(
        "SELECT count(*) FROM memories WHERE persona_id = ? AND project_id = ? AND review_state = 'proposed'",
        (persona_id, project_id),
    ).fetchone()
    return int(row[0])


def review_counts(
    conn: Connection, persona_id: str | None = None, project_id: str | None = None
) -> dict[str, int]:
    """Memories per review state, of one scope or (without one) of the whole database."""
    sql = "SELECT review_state, count(*) FROM memories"
    params: list[Any] = []
    if persona_id is not None and project_id is not None:
        sql += " WHERE persona_id = ? AND project_id = ?"
        params = [persona_id, project_id]
    found = {str(r[0]): int(r[1]) for r in conn.execute(sql + " GROUP BY review_state", params)}
    return {state: found.get(state, 0) for state in REVIEW_STATES}


def insert_relation(conn: Connection, from_id: str, to_id: str, rel_type: str, created_at: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO relations (from_id, to_id, type, created_at) VALUES (?, ?, ?, ?)",
        (from_id, to_id, rel_type, created_at),
    )


def relations_of(conn: Connection, memory_ids: Iterable[str]) -> list[RelationRecord]:
    from yiji.models.memories import RelationRecord

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


@dataclass(frozen=True)
class MemoryFilter:
    """Which memories of a scope a listing selects (every field optional but the scope).

    ``valid_at_time`` keeps only memories whose interval contains it; ``revoked`` is ``"exclude"``,
    ``"include"`` or ``"only"``; ``text`` is a plain substring of the text, quote or gist (no pattern
    syntax); ``since``/``until`` bound ``valid_at`` (inclusive, exclusive); ``review`` lists the review
    states wanted (accepted memories only unless asked).
    """

    persona_id: str
    project_id: str
    kinds: Sequence[str] = ()
    bases: Sequence[str] = ()
    subject: str | None = None
    fact_key: str | None = None
    text: str | None = None
    since: str | None = None
    until: str | None = None
    valid_at_time: str | None = None
    revoked: str = "exclude"
    review: Sequence[str] = ("accepted",)

    def where(self) -> tuple[str, list[Any]]:
        where = ["persona_id = ?", "project_id = ?"]
        params: list[Any] = [self.persona_id, self.project_id]
        if tuple(self.review) != REVIEW_STATES:
            where.append(f"review_state IN ({marks(list(self.review))})")
            params.extend(self.review)
        for column, values in (("kind", self.kinds), ("basis", self.bases)):
            if values:
                where.append(f"{column} IN ({marks(list(values))})")
                params.extend(values)
        for column, value in (("subject", self.subject), ("fact_key", self.fact_key)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if self.text is not None:
            where.append("(instr(text, ?) > 0 OR instr(quote, ?) > 0 OR instr(coalesce(gist, ''), ?) > 0)")
            params.extend([self.text] * 3)
        if self.since is not None:
            where.append("valid_at >= ?")
            params.append(self.since)
        if self.until is not None:
            where.append("valid_at < ?")
            params.append(self.until)
        if self.valid_at_time is not None:
            where.append("valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)")
            params.extend([self.valid_at_time, self.valid_at_time])
        if self.revoked == "exclude":
            where.append("revoked_at IS NULL")
        elif self.revoked == "only":
            where.append("revoked_at IS NOT NULL")
        return " AND ".join(where), params


def list_memories(
    conn: Connection,
    selection: MemoryFilter,
    *,
    limit: int = 100,
    offset: int = 0,
    newest_first: bool = False,
) -> list[MemoryRecord]:
    """One page of the memories ``selection`` picks, by validity start, then creation time, then
    insertion order (so memories derived together list in the order they were given, on every run)."""
    where, params = selection.where()
    order = "DESC" if newest_first else "ASC"
    return _where(
        conn,
        f"{where} ORDER BY valid_at {order}, created_at {order}, pk {order} LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )


def count_memories(conn: Connection, selection: MemoryFilter) -> int:
    where, params = selection.where()
    return int(conn.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0])


_CURRENT = "revoked_at IS NULL AND review_state = 'accepted' AND valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)"


def newest_current(
    conn: Connection, persona_id: str, project_id: str, kinds: Sequence[str], at: str, limit: int
) -> list[MemoryRecord]:
    """Up to ``limit`` accepted memories of ``kinds`` valid at ``at`` and not revoked, newest ``valid_at`` first.

    One bounded backward scan of the (scope, kind, valid_at) index per kind, then a merge, so the cost does
    not grow with the number of older records.
    """
    found: list[MemoryRecord] = []
    for kind in kinds:
        found += _where(
            conn,
            f"persona_id = ? AND project_id = ? AND kind = ? AND {_CURRENT} ORDER BY valid_at DESC, pk DESC LIMIT ?",
            (persona_id, project_id, kind, at, at, limit),
        )
    found.sort(key=lambda m: (m.valid_at, m.created_at, m.id), reverse=True)
    return found[:limit]


def review_columns(conn: Connection) -> Iterator[dict[str, Any]]:
    """Every memory's id and review-related columns, streamed (for ``doctor``'s review-state rule)."""
    for row in conn.execute(
        "SELECT id, review_state, origin, reviewed_at, reviewed_by, review_note, invalid_at, revoked_at "
        "FROM memories ORDER BY pk"
    ):
        yield dict(row)
