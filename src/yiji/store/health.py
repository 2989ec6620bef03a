"""SQL for ``doctor``: integrity, foreign keys, table counts, pending work, and the residue scan.

The residue scan reads every table in the schema, the FTS5 virtual tables and their shadow tables
(``*_data``, ``*_idx``, ``*_content``, ``*_config``) included: every text value as one
identifier in any spelling (:func:`text_values`, compared by the service through
:mod:`yiji.domain.identifiers`), every other value (blobs, numbers) byte for byte with the text sought
(:func:`tables_containing`); it also asks the FTS5 indexes
themselves whether a row holds given terms (:func:`indexes_matching`), since an index stores segmented,
prefix-compressed terms rather than the text. It reports table names only.
"""

from __future__ import annotations

from collections.abc import Iterator

from yiji.db import Connection
from yiji.schema import AUTHORITATIVE_TABLES, CACHE_TABLES

__all__ = [
    "AUTHORITATIVE_TABLES",
    "foreign_key_problems",
    "indexes_matching",
    "integrity",
    "pending_extractions",
    "table_counts",
    "tables_containing",
    "text_values",
]


def integrity(conn: Connection) -> list[str]:
    """``PRAGMA integrity_check`` lines; ``["ok"]`` when healthy."""
    return [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]


def foreign_key_problems(conn: Connection) -> int:
    return len(conn.execute("PRAGMA foreign_key_check").fetchall())


def table_counts(conn: Connection) -> dict[str, int]:
    return {
        t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
        for t in (*AUTHORITATIVE_TABLES, *CACHE_TABLES)
    }


def pending_extractions(conn: Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM events WHERE extraction_state = 'pending'").fetchone()[0])


def index_segmenter(conn: Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'segmenter'").fetchone()
    return str(row[0]) if row else None


def indexes_matching(conn: Connection, expression: str) -> list[str]:
    """The lexical indexes (``memory_fts``, ``event_fts``) with a row matching the FTS5 ``expression``."""
    return [
        table
        for table in ("memory_fts", "event_fts")
        if conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {table} MATCH ?)", (expression,)
        ).fetchone()[0]
    ]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _table_names(conn: Connection) -> list[str]:
    return [
        str(r[0])
        for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").fetchall()
    ]


def tables_containing(conn: Connection, needles: list[str]) -> list[str]:
    """Names of the tables (of the whole schema) where any value that is not text holds any of
    ``needles`` as a byte substring: blobs (FTS5 segment data, vectors) as they are, numbers as their
    text form. Text values are searched by :func:`text_values` and the identifier rule instead."""
    patterns = [n.encode("utf-8") for n in needles if n]
    if not patterns:
        return []
    found: list[str] = []
    for table in _table_names(conn):
        columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({_ident(table)})").fetchall()]
        if not columns:
            continue
        tests = " OR ".join(
            f"(typeof({_ident(c)}) != 'text' AND instr(CAST({_ident(c)} AS BLOB), ?{i + 1}) > 0)"
            for c in columns
            for i in range(len(patterns))
        )
        row = conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM {_ident(table)} WHERE {tests})", patterns
        ).fetchone()
        if row[0]:
            found.append(table)
    return found


def text_values(conn: Connection) -> Iterator[tuple[str, str]]:
    """Every text value of every table of the schema (FTS5 tables and their shadow tables included) as
    ``(table, value)``, streamed one row at a time, for a comparison SQL cannot make (an identifier in
    every spelling)."""
    for table in _table_names(conn):
        columns = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({_ident(table)})").fetchall()]
        if not columns:
            continue
        listed = ", ".join(_ident(c) for c in columns)
        for row in conn.execute(f"SELECT {listed} FROM {_ident(table)}"):
            for value in row:
                if isinstance(value, str):
                    yield table, value
