"""The floor that ``yiji bench ingest`` compares yiji against: raw SQLite plus the same segmentation.

One table of events (its id unique, as yiji's) and one FTS5 table, in WAL mode with the given
``synchronous`` level; each event is one event row and one FTS row whose body is segmented by
:func:`yiji.domain.segment.document_body`, exactly as yiji indexes it. No validation, no cues, no
scope or idempotency checks: what any store of these rows must pay at least.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from yiji.domain.segment import document_body

__all__ = ["RawIngest", "RawRow"]

RawRow = tuple[str, str, str, str, str]
"""(id, session, role, text, occurred_at)"""

_DDL = (
    "PRAGMA journal_mode = WAL",
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, "
    "role TEXT NOT NULL, text TEXT NOT NULL, occurred_at TEXT NOT NULL)",
    "CREATE VIRTUAL TABLE event_fts USING fts5 (body)",
)
_INSERT = "INSERT INTO events (id, session_id, role, text, occurred_at) VALUES (?, ?, ?, ?, ?)"
_INDEX = "INSERT INTO event_fts (rowid, body) VALUES (?, ?)"


class RawIngest:
    """A new database at ``path`` written by the raw loop."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None)
        for statement in _DDL:
            self._conn.execute(statement)
        self._conn.execute(f"PRAGMA synchronous = {synchronous}")

    def store(self, rows: Sequence[RawRow], *, batched: bool) -> float:
        """Seconds to store ``rows``: one commit each, or one commit for all."""
        conn = self._conn
        t0 = time.perf_counter()
        if batched:
            conn.execute("BEGIN IMMEDIATE")
        for row in rows:
            if not batched:
                conn.execute("BEGIN IMMEDIATE")
            seq = conn.execute(_INSERT, row).lastrowid
            conn.execute(_INDEX, (seq, document_body(row[3])))
            if not batched:
                conn.execute("COMMIT")
        if batched:
            conn.execute("COMMIT")
        return time.perf_counter() - t0

    def close(self) -> None:
        self._conn.close()
