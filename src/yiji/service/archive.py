"""Export, import, backup and restore: moving a yiji database without losing anything.

* **Export** reads one consistent snapshot (a single read transaction) and writes every authoritative table
  as a JSON or JSONL archive (format: :mod:`yiji.domain.archive_rules`) to a new ``0600`` file.
* **Import** only writes into an empty database. It decodes the whole archive, checks every rule (shape,
  times, quotes, roles, scope links, checkpoint coverage) and only then inserts everything in one
  transaction, keeping ids, ``seq`` and ``pk``; it then rebuilds the derived indexes.
* **Backup** copies the live database through SQLite's online backup API (WAL content included) into a new
  ``0600`` file, verifies the copy and only then publishes it.
* **Restore** opens a backup read-only, refuses a newer schema, copies it into a private temporary folder
  and migrates the copy there (the backup itself is never modified), then sends its content through the
  same validation and import path as an archive.

No target file is ever overwritten (see :mod:`yiji.fileutil`). Nothing here prints: callers may pass a
``progress`` factory (the CLI passes ``tqdm``) that receives a description and a total.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from yiji.db import Connection, Database
from yiji.domain import archive_rules as rules
from yiji.errors import ArchiveRejected, Conflict, IntegrityFailure, InvalidInput, SchemaTooNew
from yiji.fileutil import check_new_target, exclusive_text, publish, temp_beside
from yiji.models.archive import ArchiveResult
from yiji.schema import SCHEMA_VERSION
from yiji.service.base import Progress, ProgressFactory, ServiceBase, progress_bar
from yiji.store import archive as store
from yiji.store import health
from yiji.timeutil import to_db

__all__ = ["ArchiveOps", "Progress", "ProgressFactory", "read_archive", "write_archive"]


_NOT_EMPTY = (
    "the destination database is not empty ({tables}); import and restore only write into a new, "
    "empty database (use --db with a new file). Nothing was written."
)
_DESTINATION_TABLES = (*rules.TABLES, "embeddings")


def _tables_of(conn: Connection) -> tuple[int, tuple[str, ...]]:
    version = store.schema_version(conn)
    tables = rules.TABLES_BY_VERSION.get(version)
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
    fmt: rules.ArchiveFormat,
    exported_at: str,
    progress: ProgressFactory | None = None,
) -> ArchiveResult:
    """Write the database behind ``conn`` as an archive of *its* schema version to the new file ``target``.

    The caller holds a read transaction, so every table comes from one snapshot. Works on databases of
    older schema versions too (they give archives of that format version).
    """
    version, tables = _tables_of(conn)
    counts = store.count_rows(conn, tables)
    header = rules.make_header(version, exported_at, counts, store.sequences(conn))
    bar = progress_bar(progress, "export", sum(counts.values()))
    try:
        with exclusive_text(target) as out:
            for chunk in rules.encode(fmt, header, _rows(conn, tables, bar)):
                out.write(chunk)
    finally:
        bar.close()
    return ArchiveResult(
        operation="export", path=str(target), format=fmt, format_version=version, counts=counts
    )


def read_archive(conn: Connection, exported_at: str) -> rules.RawArchive:
    """The database behind ``conn`` as an undecoded archive (in memory), for validation and import."""
    version, tables = _tables_of(conn)
    counts = store.count_rows(conn, tables)
    header = rules.make_header(version, exported_at, counts, store.sequences(conn))
    return rules.RawArchive(
        header=header,
        tables={t: list(rows) for t, rows in _rows(conn, tables, progress_bar(None, "", None))},
        fmt="sqlite",
    )


def _existing_file(path: str | os.PathLike[str]) -> Path:
    source = Path(path).expanduser()
    if not source.is_file():
        raise InvalidInput("path", "no readable file at this path")
    return source


def _read_file(source: Path, fmt: str) -> rules.RawArchive:
    try:
        if fmt == "jsonl":
            with source.open(encoding="utf-8-sig", newline=None) as lines:
                return rules.decode_jsonl(lines)
        return rules.decode_json(source.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise ArchiveRejected([("archive", "not_utf8")]) from None
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None


def _detect(source: Path) -> str:
    try:
        with source.open("rb") as head:
            return rules.detect_format(head.readline(1 << 20))
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None


class ArchiveOps(ServiceBase):
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
        if fmt not in (None, "json", "jsonl", "sqlite"):
            raise InvalidInput("format", "must be json, jsonl or sqlite")
        source = _existing_file(path)
        kind = fmt or _detect(source)
        if kind == "sqlite":
            return self.backup_restore(source, progress=progress)
        self._ensure_empty()
        raw = _read_file(source, kind)
        return self._import(raw, source, "import", progress)

    def backup_create(self, path: str | os.PathLike[str]) -> ArchiveResult:
        """Copy the live database with SQLite's online backup API into a new, verified ``0600`` file.

        The copy is one backup step under one read transaction (a consistent snapshot; stepping page by
        page would restart on every concurrent write), so there is no progress to report.
        """
        target = check_new_target(path)
        tmp = temp_beside(target)
        try:
            store.backup_into(self.db.connection(), tmp)
            version, ok, counts = store.inspect_file(tmp, rules.TABLES)
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
        self._ensure_empty()
        version = store.probe_version(source)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"this backup has schema version {version}, newer than this yiji supports "
                f"({SCHEMA_VERSION}); upgrade yiji. Nothing was written."
            )
        if version < 1:
            raise ArchiveRejected([("database", "not_a_yiji_database")])
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
                    raw = read_archive(conn, to_db(self.clock.now()))
            finally:
                staging.close()
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{copy}{suffix}").unlink(missing_ok=True)
        return self._import(raw, source, "restore", progress, source_version=version)

    # -- shared import path -----------------------------------------------------------------------

    def _ensure_empty(self, conn: Connection | None = None) -> None:
        """Refuse a destination holding any row; checked early and again inside the import transaction."""
        if conn is None:
            with self.db.read() as reader:
                busy = store.nonempty_tables(reader, _DESTINATION_TABLES)
        else:
            busy = store.nonempty_tables(conn, _DESTINATION_TABLES)
        if busy:
            raise Conflict(_NOT_EMPTY.format(tables=", ".join(busy)))

    def _import(
        self,
        raw: rules.RawArchive,
        source: Path,
        operation: str,
        progress: ProgressFactory | None,
        *,
        source_version: int | None = None,
    ) -> ArchiveResult:
        total = sum(len(rows) for rows in raw.tables.values())
        bar = progress_bar(progress, "validate", total)
        try:
            valid = rules.validate(raw, bar.update)
        finally:
            bar.close()
        bar = progress_bar(progress, "import", total)
        try:
            with self.db.write() as conn:
                self._ensure_empty(conn)
                for table in rules.TABLES:
                    _insert(conn, table, valid.tables[table], bar)
                store.raise_sequences(conn, valid.sequences)
        finally:
            bar.close()
        self._rebuild_indexes(progress)
        return ArchiveResult(
            operation="restore" if operation == "restore" else "import",
            path=str(source),
            format=raw.fmt,
            format_version=source_version or valid.source_version,
            counts=valid.counts,
        )

    def _rebuild_indexes(self, progress: ProgressFactory | None = None) -> None:
        """Rebuild every derived index after an import or restore committed (a hook).

        Archives and backups carry no lexical index or vectors; they are derived from the imported rows.
        The mixin that owns an index overrides this method (it must precede ``ArchiveOps`` in the bases of
        :class:`yiji.service.MemoryService`). It runs after the import committed: if it fails, the data
        is complete, the index is left unstamped (recall and ``doctor`` say so) and ``yiji reindex``
        rebuilds it.
        """


def _insert(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]], bar: Progress) -> None:
    if not rows:
        return
    names = list(rows[0])

    def values() -> Iterator[tuple[Any, ...]]:
        for row in rows:
            bar.update(1)
            yield tuple(row[n] for n in names)

    store.insert_rows(conn, table, names, values())
