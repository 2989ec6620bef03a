"""The only owner of SQLite connections: connection policy, transactions and migrations.

Policy, applied to every connection:

* ``journal_mode=WAL`` so readers never block the writer;
* ``synchronous=FULL`` (configurable): in WAL mode every commit is fsynced to the WAL before it
  returns, so an acknowledged commit survives the process being killed *and* an OS crash or power
  loss (``NORMAL`` would survive a killed process only);
* ``foreign_keys=ON``; ``busy_timeout`` (30 s by default) so concurrent writers wait instead of
  failing;
* ``secure_delete=ON`` so deleted rows are overwritten in the file, not merely unlinked;
* every write runs in ``BEGIN IMMEDIATE`` (:meth:`Database.write`); nested units use savepoints.

Connections are per thread (the MCP server runs blocking calls in worker threads).
``sqlite3.Error`` is mapped to :class:`yiji.errors.StorageError` here, once; no other module
imports ``sqlite3`` except the store.

Migrations: ``PRAGMA user_version`` is the schema version. A database newer than this code is
refused *before* any pragma that writes, so it is left byte-for-byte untouched.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from yiji.errors import SchemaTooNew, StorageError
from yiji.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = ["Connection", "Database", "Row", "SCHEMA_VERSION"]

Connection = sqlite3.Connection
Row = sqlite3.Row

_SYNC_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")


def _secure_file(path: Path) -> None:
    """Create the database file (and its folder) private to the user where the OS supports it."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    with contextlib.suppress(OSError):  # not every filesystem supports modes
        os.chmod(path, 0o600)


class Database:
    """A yiji database file: opens connections with the policy above and runs migrations."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 30_000,
        target_version: int | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        if synchronous.upper() not in _SYNC_LEVELS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNC_LEVELS)}")
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []
        self._check_version_before_open()
        try:
            _secure_file(self.path)
        except OSError as exc:
            raise StorageError("could not create the database file or its folder (check the path)") from exc
        self.migrate(SCHEMA_VERSION if target_version is None else target_version)

    # -- connections -------------------------------------------------------------------------

    def _check_version_before_open(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        try:
            probe = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                version = int(probe.execute("PRAGMA user_version").fetchone()[0])
            finally:
                probe.close()
        except sqlite3.DatabaseError as exc:
            raise StorageError("the file is not a readable SQLite database") from exc
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"this database has schema version {version}, newer than this yiji supports "
                f"({SCHEMA_VERSION}); upgrade yiji. The file was not modified."
            )

    def connection(self) -> sqlite3.Connection:
        """The calling thread's connection, opened on first use."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self.busy_timeout_ms / 1000,
                )
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self.synchronous}")
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute("PRAGMA secure_delete = ON")
            except sqlite3.Error as exc:
                raise StorageError("could not open the database") from exc
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

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

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception.

        Nested use on the same thread becomes a savepoint inside the outer transaction.
        """
        conn = self.connection()
        if conn.in_transaction:
            with self.savepoint(conn):
                yield conn
            return
        self._begin(conn, "BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise StorageError("could not commit the transaction") from exc

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot."""
        conn = self.connection()
        if conn.in_transaction:
            yield conn
            return
        self._begin(conn, "BEGIN")
        try:
            yield conn
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
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                conn.execute(statement)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise StorageError("could not start a transaction") from exc
                if time.monotonic() > deadline:
                    raise StorageError("the database stayed busy past the timeout") from exc
                time.sleep(0.01)

    def checkpoint(self) -> None:
        """Fold the WAL back into the main file (outside any transaction)."""
        try:
            self.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StorageError("could not checkpoint the write-ahead log") from exc

    # -- migrations --------------------------------------------------------------------------

    def schema_version(self) -> int:
        return int(self.connection().execute("PRAGMA user_version").fetchone()[0])

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
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {current + 1}")
            except sqlite3.Error as exc:
                raise StorageError(f"migration to schema version {current + 1} failed") from exc
            current = self.schema_version()
        return current


@contextlib.contextmanager
def mapped_errors(operation: str) -> Iterator[None]:
    """Map any ``sqlite3.Error`` raised inside to :class:`StorageError` naming ``operation``."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise StorageError(f"{operation}: a database constraint failed") from exc
    except sqlite3.Error as exc:
        raise StorageError(f"{operation}: the database reported an error") from exc
