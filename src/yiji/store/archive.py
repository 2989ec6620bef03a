"""SQL for archives and backups: reading whole tables in stored order, bulk inserts, sequences, and
SQLite's online backup API.

Table and column names are checked against the fixed set below before they reach a statement; they never
come from an archive. Reading works on a database of any schema version (a table's columns come from
``PRAGMA table_info``), so older databases can be exported as older archive versions.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from yiji.db import Connection, mapped_errors
from yiji.dbfile import storage_error
from yiji.errors import ArchiveRejected, IntegrityFailure
from yiji.schema import AUTHORITATIVE_TABLES
from yiji.store.events import raise_seq_floor, seq_high_water

__all__ = [
    "ARCHIVE_TABLES",
    "backup_into",
    "columns",
    "copy_database",
    "count_rows",
    "inspect_file",
    "insert_rows",
    "iter_rows",
    "nonempty_tables",
    "probe_file",
    "raise_sequences",
    "schema_version",
    "sequences",
    "tables_present",
]

ARCHIVE_TABLES = frozenset({*AUTHORITATIVE_TABLES, "embeddings", "event_embeddings"})
_SEQUENCE_TABLES = frozenset({"events", "memories"})


def _table(name: str) -> str:
    if name not in ARCHIVE_TABLES:
        raise ValueError("not an archive table")
    return name


def schema_version(conn: Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def tables_present(conn: Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: Connection, table: str) -> list[str]:
    """Column names in schema order."""
    return [str(r[1]) for r in conn.execute(f"PRAGMA table_info({_table(table)})")]


def count_rows(conn: Connection, tables: Iterable[str]) -> dict[str, int]:
    return {t: int(conn.execute(f"SELECT COUNT(*) FROM {_table(t)}").fetchone()[0]) for t in tables}


def nonempty_tables(conn: Connection, tables: Iterable[str]) -> list[str]:
    return [t for t in tables if conn.execute(f"SELECT EXISTS (SELECT 1 FROM {_table(t)})").fetchone()[0]]


def iter_rows(conn: Connection, table: str, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Every row of ``table`` in stored (rowid) order, as ``{column: value}``; streamed, not loaded."""
    known = set(columns(conn, table))
    if not set(names) <= known:
        raise ValueError("unknown column")
    cursor = conn.execute(f"SELECT {', '.join(names)} FROM {_table(table)} ORDER BY rowid")
    for row in cursor:
        yield dict(zip(names, tuple(row), strict=True))


def sequences(conn: Connection) -> dict[str, int]:
    """The highest ``events.seq`` and ``memories.pk`` ever assigned (deleted rows included).

    ``memories.pk`` is ``AUTOINCREMENT`` (``sqlite_sequence``); ``events.seq`` is too before schema
    version 6, and from version 6 on its mark is the floor in ``meta`` (see :mod:`yiji.store.events`).
    Both are read, so a database of any version gives its own mark.
    """
    out = dict.fromkeys(sorted(_SEQUENCE_TABLES), 0)
    if "sqlite_sequence" in tables_present(conn):
        for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence"):
            if name in out:
                out[name] = int(seq)
    out["events"] = max(out["events"], seq_high_water(conn))
    return out


def insert_rows(conn: Connection, table: str, names: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    known = set(columns(conn, table))
    if not set(names) <= known:
        raise ValueError("unknown column")
    marks = ", ".join("?" * len(names))
    with mapped_errors(f"importing {table}"):
        conn.executemany(f"INSERT INTO {_table(table)} ({', '.join(names)}) VALUES ({marks})", rows)


def raise_sequences(conn: Connection, values: dict[str, int]) -> None:
    """Make the next ``seq``/``pk`` at least ``value + 1`` so numbers used before are never reused
    (a database of the current schema version)."""
    with mapped_errors("restoring sequences"):
        for name, value in values.items():
            if name not in _SEQUENCE_TABLES or value <= 0:
                continue
            if name == "events":
                raise_seq_floor(conn, value)
                continue
            updated = conn.execute(
                "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", (value, name)
            ).rowcount
            if not updated:
                conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, value))


def backup_into(conn: Connection, dest: Path) -> None:
    """Copy the database behind ``conn`` into the file ``dest`` with SQLite's online backup API.

    One backup step copies every page under a single read transaction, so the copy is one consistent
    snapshot, WAL content included, while other connections keep writing. The copy is switched to the
    rollback journal so it is one self-contained file.
    """
    try:
        target = sqlite3.connect(dest, isolation_level=None)
        try:
            conn.backup(target, pages=-1)
            target.execute("PRAGMA journal_mode = DELETE")
        finally:
            target.close()
    except sqlite3.Error as exc:
        raise storage_error(exc, "could not write the backup", dest) from exc


def _open_read_only(path: Path) -> sqlite3.Connection:
    """Open a file read-only without creating anything beside it.

    A WAL-mode file without a ``-wal`` file has no connection and no log content, so it is opened as
    immutable; otherwise SQLite would leave empty ``-wal``/``-shm`` files next to a backup. With a ``-wal``
    present, it is read through SQLite's normal read-only path so the log content is included.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with path.open("rb") as head:
            header = head.read(20)
    except OSError as exc:
        raise IntegrityFailure("the file could not be read") from exc
    in_wal_mode = len(header) == 20 and header[18] == header[19] == 2
    if in_wal_mode and not Path(f"{path}-wal").exists():
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, isolation_level=None)


def probe_file(path: Path) -> tuple[int, set[str]]:
    """The schema version and the tables of a SQLite file, opened read-only; the file is never modified."""
    try:
        conn = _open_read_only(path)
        try:
            return schema_version(conn), tables_present(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ArchiveRejected([("database", "not_a_sqlite_database")]) from exc


def copy_database(source: Path, dest: Path) -> None:
    """Copy the read-only ``source`` into ``dest`` through the backup API (its WAL content included)."""
    try:
        conn = _open_read_only(source)
        try:
            backup_into(conn, dest)
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
    except sqlite3.Error as exc:
        raise IntegrityFailure("the backup file could not be read") from exc


def inspect_file(path: Path, tables: Iterable[str]) -> tuple[int, bool, dict[str, int]]:
    """Schema version, whether ``PRAGMA quick_check`` passes, and row counts of a file (read-only)."""
    try:
        conn = _open_read_only(path)
        try:
            ok = [str(r[0]) for r in conn.execute("PRAGMA quick_check")] == ["ok"]
            present = tables_present(conn)
            return schema_version(conn), ok, count_rows(conn, [t for t in tables if t in present])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise IntegrityFailure("the backup could not be verified") from exc
