"""The only owner of SQLite connections: connection policy, transactions and migrations.

Policy, applied to every connection:

* ``journal_mode=WAL`` so readers never block the writer;
* ``synchronous=FULL`` (configurable): in WAL mode every commit is fsynced to the WAL before it
  returns, so an acknowledged commit survives the process being killed *and* an OS crash or power
  loss (``NORMAL`` would survive a killed process only);
* ``foreign_keys=ON``; ``busy_timeout`` (30 s by default) so concurrent writers wait instead of
  failing;
* ``secure_delete=FAST``: deleted content is overwritten on every page a write touches anyway, at no
  extra I/O, but pages that go to the free list (FTS5 merges free some every few commits) keep their
  old bytes. ``ON`` zeroes those too, and costs each one-event commit a few percent of CPU (measured:
  the same WAL writes either way). A permanent deletion switches to ``ON`` for its own transaction and
  wipes the free list (:func:`yiji.store.lifecycle.erasing`), so no deleted text is left in the file;
* every write runs in ``BEGIN IMMEDIATE`` (:meth:`Database.write`); nested units use savepoints;
* the WAL stays small: ``journal_size_limit`` truncates it after a checkpoint, and when a commit
  leaves it larger than ``wal_limit_bytes`` (16 MiB by default) the writer runs a ``RESTART``
  checkpoint, waiting briefly for the readers that still use old frames. Without it, readers that
  overlap without pause keep every checkpoint partial and the WAL grows with each write (measured:
  417 MB for a 2.9 MB database). ``yiji serve`` also checkpoints when idle (:meth:`Database.checkpoint`).
  The size is read after every commit that changed many rows, and otherwise at most every
  :data:`WAL_CHECK_SECONDS`: reading it right after each one-event commit (while the file system is
  still busy with that commit's sync) cost as much as a fifth of the commit.

Connections are per thread (the MCP server runs blocking calls in worker threads).
``sqlite3.Error`` and file-system ``OSError`` are mapped to the :class:`yiji.errors.StorageError` family
once, by :func:`yiji.dbfile.storage_error` (a full disk, a read-only file, folder or mount, damaged pages);
:mod:`yiji.dbfile` also creates the file private to its user. No other module imports ``sqlite3`` except
the store.

A path that cannot be a database at all is refused before SQLite opens it, in words that point at the
path rather than the disk (``Database._check_file_before_open``): a folder, or a non-empty file without
the SQLite header (``--db`` naming the wrong file). A file that carries the header and still fails is
damaged.

The file is watched: its identity (device and inode) is recorded when it is opened, and every
transaction first checks that the path still names that file (one ``stat``). A file deleted, moved or
replaced under a long-running process (``yiji ui``, ``yiji serve``) is :class:`DatabaseGone` for every
read and write after, never old data shown as current or a write to a file that no longer has a name.

``Database(path, read_only=True)`` reads an existing file without ever writing it (the context a hook
hands its host at session start): SQLite opens it ``mode=ro`` with ``query_only``, no pragma that writes
runs, nothing is migrated (a file of another schema version is refused, naming the versions), and
:meth:`Database.write` is refused. A WAL reader never waits for a writer's lock, and a file the user made
read-only is read all the same.

A database file this object had to create is removed again (with the folders it created) when
creating or migrating it fails, so a full disk never leaves an empty file behind.

Migrations: ``PRAGMA user_version`` is the schema version. A database newer than this code is
refused *before* any pragma that writes, so it is left byte-for-byte untouched.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from yiji.dbfile import missing_parents, secure_file, storage_error
from yiji.errors import DatabaseGone, InvalidInput, SchemaTooNew, StorageError
from yiji.schema import MIGRATIONS, SCHEMA_VERSION, Backfill, RewriteTable

__all__ = [
    "Connection",
    "Database",
    "IdleCheckpointer",
    "Row",
    "SCHEMA_VERSION",
    "SECURE_DELETE",
]

Connection = sqlite3.Connection
Row = sqlite3.Row

_SYNC_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")

WAL_LIMIT_BYTES = 16 * 1024 * 1024
"""A commit that leaves the WAL larger than this runs a RESTART checkpoint (see the module notes)."""
JOURNAL_SIZE_LIMIT = 4 * 1024 * 1024
"""``PRAGMA journal_size_limit``: after a checkpoint resets the WAL, its file is cut back to this size."""
WAL_CHECK_SECONDS = 0.05
"""A commit of few rows reads the WAL size only when this long has passed since it was last read."""
WAL_CHECK_CHANGES = 32
"""A commit that changed at least this many rows always reads the WAL size."""
CHECKPOINT_WAIT_MS = 2000
"""How long a size-triggered checkpoint waits for old readers before leaving it to a later commit."""
SECURE_DELETE = "FAST"
"""``PRAGMA secure_delete`` of every connection outside a permanent deletion (see the module notes)."""


_SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def _shown(path: Path) -> str:
    from yiji.display import visible

    return visible(str(path))


WAL_SWITCH_TRIES = 100
"""Tries of ``PRAGMA journal_mode = WAL`` 20 ms apart: on a new file that another process is switching
at the same moment, SQLite answers SQLITE_BUSY at once rather than through the busy handler."""


def _enter_wal(conn: sqlite3.Connection) -> None:
    for attempt in range(WAL_SWITCH_TRIES):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or attempt == WAL_SWITCH_TRIES - 1:
                raise
            time.sleep(0.02)


class Database:
    """A yiji database file: opens connections with the policy above and runs migrations."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 30_000,
        target_version: int | None = None,
        wal_limit_bytes: int | None = WAL_LIMIT_BYTES,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self.wal_limit_bytes = wal_limit_bytes
        """``None`` turns the size-triggered checkpoint (and ``journal_size_limit``) off."""
        self._wal_file = os.fspath(self.path.with_name(self.path.name + "-wal"))
        """A plain string: ``os.stat`` of it costs a third of ``Path.stat``."""
        self._wal_checked = -WAL_CHECK_SECONDS
        """``time.monotonic()`` when a commit last read the WAL size."""
        self._file = os.fspath(self.path)
        self._identity: tuple[int, int] | None = None
        """``(st_dev, st_ino)`` of the file when it was opened (:meth:`check_file`)."""
        self.created = False
        """Whether opening created the file: no database was at the path (a person may have mistyped it)."""
        if synchronous.upper() not in _SYNC_LEVELS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNC_LEVELS)}")
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        if read_only:
            self._open_read_only()
            return
        created = False
        created_dirs = missing_parents(self.path)
        try:
            self._check_file_before_open()
            try:
                created = secure_file(self.path)
            except OSError as exc:
                raise storage_error(
                    exc, "could not create the database file or its folder", self.path
                ) from exc
            self._identity = self._file_identity()
            self.migrate(SCHEMA_VERSION if target_version is None else target_version)
            self.created = created
        except BaseException:
            self.close()
            if created:  # only what this process made: another may be creating the same file
                self._remove_created(created_dirs)
            raise

    def _open_read_only(self) -> None:
        """Check an existing file of this schema version, writing nothing (see the module notes)."""
        if not self.path.is_file():
            raise StorageError("there is no database file at the configured path yet; nothing was read")
        self._check_file_before_open()
        self._identity = self._file_identity()
        try:
            version = self.schema_version()
        except BaseException:
            self.close()
            raise
        if version != SCHEMA_VERSION:
            self.close()
            raise StorageError(
                f"this database has schema version {version} and this yiji reads version {SCHEMA_VERSION} "
                "without writing; any command that writes (the next capture) upgrades it"
            )

    def _remove_created(self, created_dirs: list[Path]) -> None:
        """Undo a failed creation: the file, SQLite's side files, then the folders made for it."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                Path(f"{self.path}{suffix}").unlink()
        for folder in created_dirs:  # innermost first; only while empty
            with contextlib.suppress(OSError):
                folder.rmdir()

    # -- connections -------------------------------------------------------------------------

    def _file_identity(self) -> tuple[int, int] | None:
        """``(st_dev, st_ino)`` of the file at the path; None when there is none."""
        try:
            found = os.stat(self._file)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def check_file(self) -> None:
        """Raise :class:`DatabaseGone` unless the path still names the file this object opened."""
        if self._identity is None:
            return
        try:
            now = self._file_identity()
        except OSError:  # the folder cannot be searched: SQLite will report what it finds
            return
        if now != self._identity:
            raise DatabaseGone(
                f"the database file {self.path.name} was deleted, moved or replaced after yiji opened it; "
                "nothing was read or written. Stop yiji and start it again to open the file now at this "
                "path (or restore a backup there)."
            )

    def _check_file_before_open(self) -> None:
        """Refuse a path that cannot be a database (a folder, a non-empty file without the SQLite header)
        or one newer than this yiji, reading the header once; a missing or empty file is a new database."""
        try:
            with self.path.open("rb") as file:
                head = file.read(len(_SQLITE_HEADER))
        except (FileNotFoundError, NotADirectoryError):  # no file yet: creating it says what fails
            return
        except OSError:
            if self.path.is_dir():
                raise InvalidInput(
                    "db",
                    f"{_shown(self.path)} is a folder, not a database file "
                    "(--db or $YIJI_DB names the file itself)",
                ) from None
            head = _SQLITE_HEADER  # unreadable: the probe below says what SQLite finds
        if not head:
            return
        if head != _SQLITE_HEADER:
            raise InvalidInput(
                "db", f"{_shown(self.path)} is not a SQLite database (was --db meant to name another file?)"
            )
        try:
            probe = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                version = int(probe.execute("PRAGMA user_version").fetchone()[0])
            finally:
                probe.close()
        except sqlite3.DatabaseError as exc:
            raise storage_error(exc, "could not read the database", self.path) from exc
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"this database has schema version {version}, newer than this yiji supports "
                f"({SCHEMA_VERSION}); upgrade yiji. The file was not modified."
            )

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection, opened on first use."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self.read_only:
                conn = self._connect(
                    f"{self.path.absolute().as_uri()}?mode=ro",
                    self._read_only_pragmas,
                    "could not open the database to read it",
                )
            else:
                conn = self._connect(self.path, self._writable_pragmas, "could not open the database")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _connect(
        self, target: str | Path, pragmas: Callable[[sqlite3.Connection], None], failure: str
    ) -> sqlite3.Connection:
        """A new connection to ``target`` (a ``file:`` URI when a string), set up by ``pragmas``."""
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(
                target,
                uri=isinstance(target, str),
                isolation_level=None,
                check_same_thread=False,
                timeout=self.busy_timeout_ms / 1000,
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            pragmas(conn)
        except sqlite3.Error as exc:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            raise storage_error(exc, failure, self.path) from exc
        return conn

    def _writable_pragmas(self, conn: sqlite3.Connection) -> None:
        _enter_wal(conn)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA secure_delete = {SECURE_DELETE}")
        if self.wal_limit_bytes is not None:
            conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT}")

    @staticmethod
    def _read_only_pragmas(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA foreign_keys = ON")

    def close(self) -> None:
        """Close every connection this object opened (any thread)."""
        with self._lock:
            for conn in self._all:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._all.clear()
        self._local = threading.local()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ------------------------------------------------------------------------

    def write(self) -> _Write:
        """A write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception.

        Nested use on the same thread becomes a savepoint inside the outer transaction. A read-only
        database refuses it.
        """
        if self.read_only:
            raise StorageError("this database was opened read-only; nothing was written")
        return _Write(self)

    def _commit(self, conn: sqlite3.Connection, changes_before: int) -> None:
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise storage_error(exc, "could not commit the transaction", self.path) from exc
        if self.wal_limit_bytes is not None:
            now = time.monotonic()
            if (
                conn.total_changes - changes_before >= WAL_CHECK_CHANGES
                or now - self._wal_checked >= WAL_CHECK_SECONDS
            ):
                self._wal_checked = now
                self._limit_wal(conn)

    def _roll_back(self, conn: sqlite3.Connection, exc: BaseException) -> None:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.Error):
            raise storage_error(exc, "could not write to the database", self.path) from exc

    def wal_bytes(self) -> int:
        """The current size of the write-ahead log file (0 when there is none)."""
        try:
            return os.stat(self._wal_file).st_size
        except OSError:
            return 0

    def _limit_wal(self, conn: sqlite3.Connection) -> None:
        """After a commit: when the WAL outgrew the limit, fold it back, waiting a little for readers.

        The commit is already durable; a checkpoint that cannot finish (readers still busy after
        :data:`CHECKPOINT_WAIT_MS`) is left to a later commit and never reported as an error.
        """
        if self.wal_limit_bytes is None or self.wal_bytes() <= self.wal_limit_bytes:
            return
        try:
            conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            conn.execute("PRAGMA wal_checkpoint(RESTART)")
        except sqlite3.Error:
            pass
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot."""
        held: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if held is not None and held.in_transaction:
            yield held
            return
        self.check_file()  # before connecting: a new thread's connect would create an empty file
        conn = self.connection()
        self._begin(conn, "BEGIN")
        try:
            yield conn
        except sqlite3.Error as exc:
            raise storage_error(exc, "could not read the database", self.path) from exc
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    @contextlib.contextmanager
    def savepoint(self, conn: sqlite3.Connection, name: str = "unit") -> Iterator[None]:
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")

    def _begin(self, conn: sqlite3.Connection, statement: str) -> None:
        # busy_timeout covers most waits; a short retry loop covers the rare immediate SQLITE_BUSY
        # (for example while another connection checkpoints the WAL).
        deadline = None
        while True:
            try:
                conn.execute(statement)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise storage_error(exc, "could not start a transaction", self.path) from exc
                if deadline is None:
                    deadline = time.monotonic() + self.busy_timeout_ms / 1000
                elif time.monotonic() > deadline:
                    raise StorageError("the database stayed busy past the timeout") from exc
                time.sleep(0.01)

    def checkpoint(self, *, wait: bool = True) -> bool:
        """Fold the WAL back into the main file and truncate it (outside any transaction).

        With ``wait=False`` (the idle checkpoint of ``yiji serve``) it never waits for a reader or
        writer: it copies what it can and returns whether the WAL was fully folded back.
        """
        conn = self.connection()
        try:
            if wait:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                return not busy
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                busy, frames, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                if busy or frames != done:
                    return False
                return not conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        except sqlite3.Error as exc:
            raise storage_error(exc, "could not checkpoint the write-ahead log", self.path) from exc

    # -- migrations --------------------------------------------------------------------------

    def schema_version(self) -> int:
        try:
            return int(self.connection().execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise storage_error(exc, "could not read the schema version", self.path) from exc

    def migrate(self, target: int = SCHEMA_VERSION) -> int:
        """Apply steps until ``user_version == target``; each step atomic with its version bump."""
        if not 0 <= target <= SCHEMA_VERSION:
            raise ValueError("target schema version out of range")
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"this database has schema version {current}, newer than this yiji supports "
                f"({SCHEMA_VERSION}); upgrade yiji. The file was not modified."
            )
        while current < target:
            step = MIGRATIONS[current]
            try:
                with self.write() as conn:
                    # re-read inside the lock: another process may have migrated meanwhile
                    now = int(conn.execute("PRAGMA user_version").fetchone()[0])
                    if now != current:
                        current = now
                        continue
                    for statement in step:
                        if isinstance(statement, RewriteTable):
                            _rewrite_table(conn, statement)
                        elif isinstance(statement, Backfill):
                            module, function = statement.target.split(":")
                            getattr(importlib.import_module(module), function)(conn)
                        else:
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {current + 1}")
            except sqlite3.Error as exc:
                raise storage_error(
                    exc, f"migration to schema version {current + 1} failed", self.path
                ) from exc
            except StorageError as exc:
                if type(exc) is StorageError:
                    raise StorageError(
                        f"migration to schema version {current + 1} failed: {exc.message}"
                    ) from exc
                raise
            current = self.schema_version()
        return current


class _Write:
    """The context manager :meth:`Database.write` returns (a class: it runs once per stored event)."""

    __slots__ = ("_db", "_conn", "_savepoint", "_changes")

    def __init__(self, db: Database) -> None:
        self._db = db
        self._savepoint: contextlib.AbstractContextManager[None] | None = None

    def __enter__(self) -> sqlite3.Connection:
        db = self._db
        held: sqlite3.Connection | None = getattr(db._local, "conn", None)
        if held is None or not held.in_transaction:
            db.check_file()  # before connecting: a new thread's connect would create an empty file
        conn = self._conn = db.connection()
        if conn.in_transaction:
            self._savepoint = db.savepoint(conn)
            self._savepoint.__enter__()
        else:
            db._begin(conn, "BEGIN IMMEDIATE")
            self._changes = conn.total_changes
        return conn

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._savepoint is not None:
            self._savepoint.__exit__(kind, exc, tb)
        elif exc is None:
            self._db._commit(self._conn, self._changes)
        else:
            self._db._roll_back(self._conn, exc)


def _rewrite_table(conn: sqlite3.Connection, change: RewriteTable) -> None:
    """Apply ``change`` to a table's stored ``CREATE TABLE`` text inside the migration's transaction.

    The schema cookie is bumped so that this and every other connection re-read the schema before
    their next statement. Text that does not match (a table yiji's steps did not write, or no such
    table) is left as it is, and so is everything when SQLite's defensive mode forbids the edit: the
    old text stays correct, only slower (a rule checked with a lookup table, ``events.seq``'s
    ``AUTOINCREMENT`` bookkeeping written with every insert).
    """
    row = conn.execute(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (change.table,)
    ).fetchone()
    if row is None:
        return
    old_sql = sql = str(row[0])
    for old, new in change.replacements:
        sql = sql.replace(old, new)
    if sql == old_sql:
        return
    cookie = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?", (sql, change.table)
        )
    except sqlite3.DatabaseError:
        return  # defensive mode: the stored text stays as it was
    finally:
        conn.execute("PRAGMA writable_schema = OFF")
    conn.execute(f"PRAGMA schema_version = {cookie + 1}")


@contextlib.contextmanager
def mapped_errors(operation: str) -> Iterator[None]:
    """Map any ``sqlite3.Error`` raised inside to :class:`StorageError` naming ``operation``."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise StorageError(f"{operation}: a database constraint failed") from exc
    except sqlite3.Error as exc:
        raise storage_error(exc, operation) from exc


class IdleCheckpointer:
    """Checkpoints a database when its user (the ``yiji serve`` MCP server) has been idle a while.

    A background thread wakes every ``poll_seconds``; when nothing called :meth:`touch` for
    ``idle_seconds`` and the WAL is not empty, it folds the WAL back without waiting for anyone
    (:meth:`Database.checkpoint` with ``wait=False``). Failures are retried at the next wake-up.
    """

    def __init__(self, db: Database, *, idle_seconds: float = 30.0, poll_seconds: float = 5.0) -> None:
        self._db = db
        self._idle = idle_seconds
        self._poll = poll_seconds
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="yiji-idle-checkpoint", daemon=True)
        self.checkpoints = 0

    def touch(self) -> None:
        self._last = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            if time.monotonic() - self._last < self._idle or self._db.wal_bytes() == 0:
                continue
            with contextlib.suppress(StorageError):
                if self._db.checkpoint(wait=False):
                    self.checkpoints += 1
