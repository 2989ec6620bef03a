"""Helpers for the lifecycle tests: building a scope's history, and an independent residue scan.

The residue scan here reads the database file with plain ``sqlite3``, not through yiji's store, so a
deletion is checked by code that shares nothing with the code that deleted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.service import MemoryService


def submit(service: MemoryService, eid: str, text: str, when: str, role: str = "user", **kw: Any) -> None:
    service.event_submit(
        parse(EventIn, {"id": eid, "session": "s1", "role": role, "text": text, "occurred_at": when, **kw})
    )


def derive(service: MemoryService, eid: str, *memories: dict[str, Any], **kw: Any) -> list[str]:
    request = parse(DeriveRequest, {"event_id": eid, "memories": list(memories), **kw})
    return service.memory_derive(request).memory_ids


def fact(text: str, quote: str, key: str = "home.city", **kw: Any) -> dict[str, Any]:
    return {
        "text": text,
        "quote": quote,
        "kind": "fact",
        "basis": "user_statement",
        "subject": "user",
        "fact_key": key,
        **kw,
    }


def note(text: str, quote: str, kind: str = "episode", **kw: Any) -> dict[str, Any]:
    return {"text": text, "quote": quote, "kind": kind, "basis": "user_statement", **kw}


def connect(db_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 5000")
    return conn


def all_tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def tables_holding(db_path: Path, needle: str | bytes) -> list[str]:
    """Every table (FTS5 shadow tables included) with a value whose bytes contain ``needle``."""
    pattern = needle.encode("utf-8") if isinstance(needle, str) else needle
    conn = connect(db_path)
    try:
        found = []
        for table in all_tables(conn):
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                if any(pattern in _bytes(value) for value in row):
                    found.append(table)
                    break
        return found
    finally:
        conn.close()


def _bytes(value: object) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def index_terms(db_path: Path) -> set[str]:
    """Every term the two FTS5 indexes hold, read through ``fts5vocab`` (the index, not the content)."""
    conn = connect(db_path)
    try:
        terms: set[str] = set()
        for table in ("memory_fts", "event_fts"):
            conn.execute(f"CREATE VIRTUAL TABLE temp.vocab_{table} USING fts5vocab(main, '{table}', 'row')")
            terms.update(r[0] for r in conn.execute(f"SELECT term FROM temp.vocab_{table}"))
        return terms
    finally:
        conn.close()


def index_bodies(db_path: Path, memory_pks: Iterable[int], event_seqs: Iterable[int]) -> list[str]:
    """The FTS5 ``body`` values stored for these memories (rowid = pk) and events (rowid = seq)."""
    conn = connect(db_path)
    try:
        bodies = []
        for table, rowids in (("memory_fts", memory_pks), ("event_fts", event_seqs)):
            for rowid in rowids:
                bodies += [r[0] for r in conn.execute(f"SELECT body FROM {table} WHERE rowid = ?", (rowid,))]
        return bodies
    finally:
        conn.close()


def keys_of(
    db_path: Path, memory_ids: Iterable[str], event_ids: Iterable[str]
) -> tuple[list[int], list[int]]:
    """The FTS rowids of memories (``pk``) and events (``seq``)."""
    conn = connect(db_path)
    try:
        pks = [r[0] for m in memory_ids for r in conn.execute("SELECT pk FROM memories WHERE id = ?", (m,))]
        seqs = [r[0] for e in event_ids for r in conn.execute("SELECT seq FROM events WHERE id = ?", (e,))]
        return pks, seqs
    finally:
        conn.close()


def dump(db_path: Path) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Every row of every table, for comparing a database before and after an operation."""
    conn = connect(db_path)
    try:
        return [
            (t, sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)) for t in all_tables(conn)
        ]
    finally:
        conn.close()


def add_checkpoint(db_path: Path, cid: str, session: str = "s1", project: str = "default") -> None:
    conn = connect(db_path)
    try:
        conn.execute(
            "INSERT INTO checkpoints (id, persona_id, project_id, session_id, goal, created_at) "
            "VALUES (?, 'default', ?, ?, 'finish the draft', '2026-06-01T00:00:00.000000Z')",
            (cid, project, session),
        )
    finally:
        conn.close()


def checkpoint_states(db_path: Path) -> dict[str, str | None]:
    conn = connect(db_path)
    try:
        return dict(conn.execute("SELECT id, invalid_reason FROM checkpoints ORDER BY id").fetchall())
    finally:
        conn.close()
