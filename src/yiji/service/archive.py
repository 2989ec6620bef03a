"""Export, import, backup and restore: moving a yiji database without losing anything.

* **Export** reads one consistent snapshot (a single read transaction) and writes every authoritative table
  as a JSON or JSONL archive (format: :mod:`yiji.domain.archive_rules`) to a new ``0600`` file.
* **Import** only writes into an empty database. It streams the archive twice in bounded memory: the
  first pass checks every rule (shape, times, quotes, roles, scope links, checkpoint coverage) keeping
  only keys, scopes and memory candidates (:class:`yiji.domain.archive_rules.ArchiveChecker`; the quote
  rules look at the events once more); only then does the second pass insert every row in one
  transaction, keeping ids, ``seq`` and ``pk``, and builds the lexical index in that same transaction.
* **Backup** copies the live database through SQLite's online backup API (WAL content included) into a new
  ``0600`` file, verifies the copy and only then publishes it.
* **Restore** opens a backup read-only, refuses a newer schema, copies it into a private temporary folder
  and migrates the copy there (the backup itself is never modified), then sends its content through the
  same validation and import path as an archive.

Import and restore insert every row and build the lexical index in one transaction: a killed run leaves an
empty database, and its leftover private copy is removed by the next restore.

No target file is ever overwritten (see :mod:`yiji.fileutil`). Nothing here prints: callers may pass a
``progress`` factory (the CLI passes ``tqdm``) that receives a description and a total.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from yiji.db import Connection, Database
from yiji.errors import ArchiveRejected, ArchiveTooNew, Conflict, IntegrityFailure, InvalidInput
from yiji.fileutil import check_new_target, exclusive_text, publish, sweep_stale, temp_beside
from yiji.schema import SCHEMA_VERSION
from yiji.service.base import Deps, Progress, ProgressFactory, progress_bar
from yiji.service.indexing import LexicalIndex
from yiji.store import archive as store
from yiji.store import health
from yiji.timeutil import to_db

if TYPE_CHECKING:  # imported where used, so that other commands start without the archive rules and models
    from yiji.domain import archive_format
    from yiji.domain import archive_rules as rules
    from yiji.models.archive import ArchiveResult

__all__ = ["Archives", "Progress", "ProgressFactory", "check_source", "read_archive", "write_archive"]


_NOT_EMPTY = (
    "the destination database is not empty ({tables}); import and restore only write into a new, "
    "empty database (use --db with a new file). Nothing was written."
)
_CACHE_TABLES = ("embeddings", "event_embeddings")
"""Tables an archive does not carry (rebuildable caches) that must still be empty before a restore."""
_READ_BY_MIGRATIONS = ("meta", "sqlite_sequence")
"""Tables beside the authoritative ones that a backup of any version holds and migrating it reads."""


def _tables_of(conn: Connection) -> tuple[int, tuple[str, ...]]:
    from yiji.domain import archive_format

    version = store.schema_version(conn)
    tables = archive_format.TABLES_BY_VERSION.get(version)
    if tables is None or not set(tables) <= store.tables_present(conn):
        raise ArchiveRejected([("database", "not_a_yiji_database")])
    return version, tables


def _rows(
    conn: Connection, tables: Iterable[str], bar: Progress
) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
    def rows(table: str) -> Iterator[dict[str, Any]]:
        for row in store.iter_rows(conn, table, store.columns(conn, table)):
            bar.update(1)
            yield row

    for table in tables:
        yield table, rows(table)


def write_archive(
    conn: Connection,
    target: Path,
    fmt: archive_format.ArchiveFormat,
    exported_at: str,
    progress: ProgressFactory | None = None,
) -> ArchiveResult:
    """Write the database behind ``conn`` as an archive of *its* schema version to the new file ``target``.

    The caller holds a read transaction, so every table comes from one snapshot. Works on databases of
    older schema versions too (they give archives of that format version).
    """
    from yiji.domain import archive_format
    from yiji.models.archive import ArchiveResult

    version, tables = _tables_of(conn)
    counts = store.count_rows(conn, tables)
    header = archive_format.make_header(version, exported_at, counts, store.sequences(conn))
    bar = progress_bar(progress, "export", sum(counts.values()))
    try:
        with exclusive_text(target) as out:
            for chunk in archive_format.encode(fmt, header, _rows(conn, tables, bar)):
                out.write(chunk)
    finally:
        bar.close()
    return ArchiveResult(
        operation="export", path=str(target), format=fmt, format_version=version, counts=counts
    )


def read_archive(conn: Connection, exported_at: str) -> archive_format.RawArchive:
    """The database behind ``conn`` as an undecoded archive held in memory (small databases, tests)."""
    from yiji.domain import archive_format

    source = _SqliteSource(conn, exported_at)
    tables: dict[str, list[Any]] = {name: [] for name in source.tables}
    for table, row in source.rows():
        tables[table].append(row)
    return archive_format.RawArchive(header=source.header, tables=tables, fmt="sqlite")


TABLE_START: Any = object()
"""Yielded as the row when a table of a JSON archive starts, so empty tables are known too."""


class _Source:
    """An archive that can be read row by row, more than once (one pass to check, one to write)."""

    fmt: Literal["json", "jsonl", "sqlite"]
    header: Any
    tables: Sequence[str] = ()
    """Table names known before the rows (JSON and SQLite); JSONL names them on its rows."""

    def rows(self, only: str | None = None) -> Iterator[tuple[str, Any]]:
        """``(table, row)`` in file order; a JSON archive also yields ``(table, TABLE_START)``."""
        raise NotImplementedError


class _SqliteSource(_Source):
    def __init__(self, conn: Connection, exported_at: str) -> None:
        from yiji.domain import archive_format

        version, tables = _tables_of(conn)
        self._conn = conn
        self.fmt = "sqlite"
        self.tables = tables
        counts = store.count_rows(conn, tables)
        self.header = archive_format.make_header(version, exported_at, counts, store.sequences(conn))

    def rows(self, only: str | None = None) -> Iterator[tuple[str, Any]]:
        for table in self.tables:
            if only is None or table == only:
                for row in store.iter_rows(self._conn, table, store.columns(self._conn, table)):
                    yield table, row


class _JsonlSource(_Source):
    def __init__(self, path: Path) -> None:
        from yiji.domain import archive_format

        self._path = path
        self.fmt = "jsonl"
        with _reading(path) as lines:
            kind, self.header = next(archive_format.iter_jsonl(lines))

    def rows(self, only: str | None = None) -> Iterator[tuple[str, Any]]:
        from yiji.domain import archive_format

        with _reading(self._path) as lines:
            items = archive_format.iter_jsonl(lines)
            next(items)
            for table, row in items:
                if only is None or table == only:
                    yield table, row


class _JsonSource(_Source):
    """A JSON archive read as a stream (:func:`yiji.domain.archive_format.iter_json`)."""

    def __init__(self, path: Path) -> None:
        from yiji.domain import archive_format

        self._path = path
        self.fmt = "json"
        header: dict[str, Any] = {}
        with _reading(path) as text:
            for kind, key, value in archive_format.iter_json(text.read):
                if kind != "member":
                    if "format_version" not in header:  # the header may follow the tables
                        raise archive_format.HeaderAfterTables
                    break
                header[key] = value
        self.header = header

    def rows(self, only: str | None = None) -> Iterator[tuple[str, Any]]:
        from yiji.domain import archive_format

        with _reading(self._path) as text:
            for kind, name, value in archive_format.iter_json(text.read):
                if kind == "table" and only is None:
                    yield name, TABLE_START
                elif kind == "row" and (only is None or name == only):
                    yield name, value


class _MemorySource(_Source):
    def __init__(self, raw: archive_format.RawArchive) -> None:
        self._raw = raw
        self.fmt = raw.fmt
        self.header = raw.header
        self.tables = list(raw.tables)

    def rows(self, only: str | None = None) -> Iterator[tuple[str, Any]]:
        for table, rows in self._raw.tables.items():
            if only is None or table == only:
                for row in rows:
                    yield table, row


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[TextIO]:
    try:
        with path.open(encoding="utf-8-sig", newline=None) as text:
            yield text
    except UnicodeDecodeError:
        raise ArchiveRejected([("archive", "not_utf8")]) from None
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None


def _existing_file(path: str | os.PathLike[str]) -> Path:
    source = Path(path).expanduser()
    if not source.is_file():
        raise InvalidInput("path", "no readable file at this path")
    return source


def _open_source(path: Path, fmt: str) -> _Source:
    if fmt == "jsonl":
        return _JsonlSource(path)
    try:
        return _JsonSource(path)
    except ArchiveRejected:  # not even an archive's outline: the whole-file decoder names the problem
        return _whole_json(path)


def _whole_json(path: Path) -> _Source:
    from yiji.domain import archive_format

    with _reading(path) as text:
        return _MemorySource(archive_format.decode_json(text.read()))


def _detect(source: Path) -> str:
    from yiji.domain import archive_format

    try:
        with source.open("rb") as head:
            return archive_format.detect_format(head.readline(1 << 20))
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None


def _probe_backup(source: Path) -> int:
    """The schema version of a SQLite backup, refusing a newer one and a file that is not yiji's.

    A file that is not SQLite at all is refused from its first line, before SQLite opens it: an empty
    file, yiji's own JSON or JSONL export (named so, with the command that reads it), anything else."""
    from yiji.domain import archive_format

    try:
        with source.open("rb") as head:
            first = head.readline(1 << 20)
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None
    if not first:
        raise ArchiveRejected([("database", "empty_file")])
    if not first.startswith(archive_format.SQLITE_MAGIC):
        words = None
        if archive_format.looks_like_archive(first):
            from yiji.invocation import yiji_command

            words = f"this is an export archive: bring it in with `{yiji_command('import FILE')}`"
        raise ArchiveRejected([("database", "not_a_sqlite_database")], words=words)
    version, present = store.probe_file(source)
    if version > SCHEMA_VERSION:
        raise ArchiveTooNew(
            f"this backup has schema version {version}, newer than this yiji supports "
            f"({SCHEMA_VERSION}); upgrade yiji. Nothing was written."
        )
    tables = archive_format.TABLES_BY_VERSION.get(version)
    if tables is None or not {*tables, *_READ_BY_MIGRATIONS} <= present:
        raise ArchiveRejected([("database", "not_a_yiji_database")])
    return version


def check_source(path: str | os.PathLike[str], fmt: str | None = None) -> None:
    """What can be refused before the destination database is opened (so a refusal creates no file):
    a missing or unreadable file, a SQLite file that is not a yiji backup, and an archive or backup of a
    newer format (:class:`ArchiveTooNew`). Everything else is checked by the import itself."""
    from yiji.domain import archive_format
    from yiji.domain import archive_rules as rules

    if fmt not in (None, "json", "jsonl", "sqlite"):
        raise InvalidInput("format", "must be json, jsonl or sqlite")
    source = _existing_file(path)
    kind = fmt or _detect(source)
    if kind == "sqlite":
        _probe_backup(source)
        return
    try:
        opened = _open_source(source, kind)
        rules.ArchiveChecker(opened.header, opened.fmt, opened.tables)  # the version is checked first
    except (ArchiveRejected, archive_format.HeaderAfterTables):
        pass  # named by the import, with every other problem


class Archives:
    """Export, import, backup and restore."""

    def __init__(self, deps: Deps, lexical: LexicalIndex) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.lexical = lexical

    def archive_export(
        self, path: str | os.PathLike[str], fmt: str = "json", *, progress: ProgressFactory | None = None
    ) -> ArchiveResult:
        """Write every authoritative table, from one snapshot, to a new JSON or JSONL archive file."""
        if fmt not in ("json", "jsonl"):
            raise InvalidInput("format", "must be json or jsonl")
        target = check_new_target(path)
        exported_at = to_db(self.clock.now())
        with self.db.read() as conn:
            return write_archive(conn, target, "jsonl" if fmt == "jsonl" else "json", exported_at, progress)

    def archive_import(
        self,
        path: str | os.PathLike[str],
        fmt: str | None = None,
        *,
        progress: ProgressFactory | None = None,
    ) -> ArchiveResult:
        """Import a JSON/JSONL archive (or a SQLite backup) into this empty database, after validating it.

        ``fmt`` is detected from the content when omitted. Nothing is written unless every record passes.
        """
        from yiji.domain import archive_format

        if fmt not in (None, "json", "jsonl", "sqlite"):
            raise InvalidInput("format", "must be json, jsonl or sqlite")
        source = _existing_file(path)
        kind = fmt or _detect(source)
        if kind == "sqlite":
            return self.backup_restore(source, progress=progress)
        self._ensure_empty()
        try:
            return self._import(_open_source(source, kind), source, "import", progress)
        except archive_format.HeaderAfterTables:  # rare hand-made layout: checked from memory instead
            return self._import(_whole_json(source), source, "import", progress)

    def backup_create(self, path: str | os.PathLike[str]) -> ArchiveResult:
        """Copy the live database with SQLite's online backup API into a new, verified ``0600`` file.

        The copy is one backup step under one read transaction (a consistent snapshot; stepping page by
        page would restart on every concurrent write), so there is no progress to report.
        """
        from yiji.domain import archive_format
        from yiji.models.archive import ArchiveResult

        target = check_new_target(path)
        tmp = temp_beside(target)
        try:
            store.backup_into(self.db.connection(), tmp)
            version, ok, counts = store.inspect_file(tmp, archive_format.TABLES)
            if not ok:
                raise IntegrityFailure("the backup copy failed its integrity check; nothing was written")
            publish(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return ArchiveResult(
            operation="backup", path=str(target), format="sqlite", format_version=version, counts=counts
        )

    def backup_restore(
        self, path: str | os.PathLike[str], *, progress: ProgressFactory | None = None
    ) -> ArchiveResult:
        """Restore a SQLite backup (schema 1 to current) into this empty database through archive validation.

        The backup is opened read-only and never modified: an older one is copied and migrated in a
        private temporary folder. A newer one is refused.
        """

        source = _existing_file(path)
        sweep_stale(self.db.path.parent)  # the private copy a killed restore left beside the database
        self._ensure_empty()
        version = _probe_backup(source)
        # The private copy sits beside the database (0600), not in the shared temp folder: a copy left by
        # a killed restore is removed by the next restore or by `yiji doctor --clean`.
        copy = temp_beside(self.db.path)
        try:
            copy.unlink()
            store.copy_database(source, copy)
            staging = Database(copy, synchronous="OFF")  # migrates the private copy only
            try:
                with staging.read() as conn:
                    if health.integrity(conn) != ["ok"]:
                        raise IntegrityFailure("the backup failed its integrity check; nothing was written")
                    archive = _SqliteSource(conn, to_db(self.clock.now()))
                    return self._import(archive, source, "restore", progress, source_version=version)
            finally:
                staging.close()
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)

    # -- shared import path -----------------------------------------------------------------------

    def _ensure_empty(self, conn: Connection | None = None) -> None:
        """Refuse a destination holding any row; checked early and again inside the import transaction."""
        from yiji.domain import archive_format

        if conn is None:
            with self.db.read() as reader:
                busy = store.nonempty_tables(reader, (*archive_format.TABLES, *_CACHE_TABLES))
        else:
            busy = store.nonempty_tables(conn, (*archive_format.TABLES, *_CACHE_TABLES))
        if busy:
            raise Conflict(_NOT_EMPTY.format(tables=", ".join(busy)))

    def _import(
        self,
        archive: _Source,
        source: Path,
        operation: str,
        progress: ProgressFactory | None,
        *,
        source_version: int | None = None,
    ) -> ArchiveResult:
        from yiji.domain import archive_rules as rules
        from yiji.models.archive import ArchiveResult

        checker = rules.ArchiveChecker(archive.header, archive.fmt, archive.tables)
        declared = checker.header.counts
        total = sum(declared.values()) if declared else None
        bar = progress_bar(progress, "validate", total)
        try:
            index: Counter[str] = Counter()
            for table, row in archive.rows():
                if row is TABLE_START:
                    checker.table(table)
                    continue
                checker.row(table, index[table], row)
                index[table] += 1
                bar.update(1)
            checker.end_of_rows()
            if checker.needs_events:
                for _, row in archive.rows("events"):
                    checker.event(row)
                for position, (_, row) in enumerate(archive.rows("memories")):
                    checker.memory(position, row)
            counts, sequences = checker.result()
        finally:
            bar.close()
        bar = progress_bar(progress, "import", sum(counts.values()))
        with self.db.write() as conn:
            try:
                self._ensure_empty(conn)
                _insert_all(conn, archive, checker, bar)
                store.raise_sequences(conn, sequences)
            finally:
                bar.close()
            # archives carry no index: the lexical index is derived from the imported rows before they
            # commit, so a killed import leaves nothing or rows with their index (vectors: yiji reindex)
            self.lexical.rebuild(conn, progress)
        return ArchiveResult(
            operation="restore" if operation == "restore" else "import",
            path=str(source),
            format=archive.fmt,
            format_version=source_version or checker.version,
            counts=counts,
        )


INSERT_CHUNK = 2000
"""Rows inserted per ``executemany`` in the write pass (memory stays bounded by this)."""


def _insert_all(conn: Connection, archive: _Source, checker: rules.ArchiveChecker, bar: Progress) -> None:
    """The write pass: every table in dependency order, each row upgraded to the current format."""
    from yiji.domain import archive_format

    for table in archive_format.TABLES:
        if table not in checker.models:
            continue
        chunk: list[dict[str, Any]] = []
        for _, row in archive.rows(table):
            chunk.append(checker.upgrade(table, row))
            if len(chunk) == INSERT_CHUNK:
                _insert(conn, table, chunk, bar)
                chunk = []
        _insert(conn, table, chunk, bar)


def _insert(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]], bar: Progress) -> None:
    if not rows:
        return
    names = list(rows[0])

    def values() -> Iterator[tuple[Any, ...]]:
        for row in rows:
            bar.update(1)
            yield tuple(row[n] for n in names)

    store.insert_rows(conn, table, names, values())
