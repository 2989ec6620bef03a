"""The write-ahead log stays small: size-triggered checkpoints with readers open, and idle checkpoints."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from yiji.db import WAL_CHECK_SECONDS, Database, IdleCheckpointer


def _fill(db: Database, rows: int, start: int = 0) -> None:
    with db.write() as conn:
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [(f"k{i}", "x" * 2000) for i in range(start, start + rows)],
        )


def test_the_wal_is_folded_back_when_a_commit_outgrows_the_limit_despite_busy_readers(tmp_path: Path) -> None:
    limit = 256 * 1024
    writer = Database(tmp_path / "a.db", wal_limit_bytes=limit)
    reader = Database(tmp_path / "a.db")
    stop = threading.Event()
    reads: list[int] = []
    errors: list[BaseException] = []

    def read_without_pause() -> None:
        try:
            while not stop.is_set():
                with reader.read() as conn:
                    reads.append(conn.execute("SELECT count(*) FROM meta").fetchone()[0])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=read_without_pause) for _ in range(2)]
    for t in threads:
        t.start()
    peak = 0
    try:
        for step in range(40):
            _fill(writer, 50, step * 50)  # one commit is about 100 KiB of pages
            peak = max(peak, writer.wal_bytes())
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == [] and reads
    assert peak < limit + 512 * 1024  # without the limit: about 4 MiB
    with writer.read() as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 2000
    writer.close()
    reader.close()


def test_connections_cap_the_wal_file_after_a_checkpoint(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    assert db.connection().execute("PRAGMA journal_size_limit").fetchone()[0] > 0
    db.close()


def test_an_idle_checkpointer_empties_the_wal_once_nothing_happens(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    _fill(db, 100)
    assert db.wal_bytes() > 0
    idle = IdleCheckpointer(db, idle_seconds=0.2, poll_seconds=0.05)
    idle.start()
    try:
        deadline = time.monotonic() + 10
        while db.wal_bytes() > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        idle.stop()
    assert db.wal_bytes() == 0
    assert idle.checkpoints >= 1
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 100
    db.close()


def test_an_idle_checkpointer_waits_while_calls_keep_coming(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db")
    _fill(db, 100)
    idle = IdleCheckpointer(db, idle_seconds=5.0, poll_seconds=0.05)
    idle.start()
    try:
        time.sleep(0.5)
        assert db.wal_bytes() > 0 and idle.checkpoints == 0
    finally:
        idle.stop()
    db.close()


def test_commits_of_one_row_fold_the_wal_back_too(tmp_path: Path) -> None:
    db = Database(tmp_path / "a.db", wal_limit_bytes=64 * 1024)
    conn = db.connection()
    conn.execute("PRAGMA wal_autocheckpoint = 0")  # only the size limit folds the log back here
    for i in range(40):
        _fill(db, 1, i)  # one row per commit: the size is read at most every WAL_CHECK_SECONDS
    assert db.wal_bytes() > 64 * 1024
    time.sleep(WAL_CHECK_SECONDS)
    _fill(db, 1, 100)  # reads the size, finds it over the limit and checkpoints
    _fill(db, 1, 101)  # so this commit starts the log again from its beginning
    busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames <= 4
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 42
    db.close()
