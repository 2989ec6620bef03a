"""An event's ``seq`` is never given to another event, whatever was deleted: through single and batch
submits, schema upgrades, archives and backups. Real SQLite files; numbers are read back through the
service, and the database files are inspected with plain ``sqlite3``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from yiji.db import Database
from yiji.models import EventIn
from yiji.models.lifecycle import DeleteRequest
from yiji.schema import SCHEMA_VERSION
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .conftest import T0
from .factory import make_service

_T = "2026-01-01T00:00:00.000000Z"


def _open(path: Path) -> MemoryService:
    return make_service(path, clock=FixedClock(T0))


def _submit(service: MemoryService, event_id: str) -> int:
    event = EventIn(id=event_id, session="s", role="user", text=f"text {event_id}")
    return service.event_submit(event).event.seq


def _submit_many(service: MemoryService, *event_ids: str) -> list[int]:
    results = service.event_submit_many(
        [EventIn(id=i, session="s", role="user", text=f"text {i}") for i in event_ids]
    )
    return [r.event.seq for r in results]


def _delete(service: MemoryService, event_id: str) -> None:
    service.memory_delete(DeleteRequest(event_id=event_id))


def _events_sequence_rows(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM sqlite_sequence WHERE name = 'events'").fetchone()[0])
    finally:
        conn.close()


def _v5_database(path: Path, events: int, keep: int) -> None:
    """A schema-5 database (yiji's own first five steps) that stored ``events`` events and then lost
    all but the first ``keep`` of them, as a version-5 yiji deleted them (no floor, AUTOINCREMENT kept
    the mark in ``sqlite_sequence``)."""
    db = Database(path, target_version=5)
    with db.write() as conn:
        for n in range(1, events + 1):
            conn.execute(
                "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, "
                "text, occurred_at, ingested_at) "
                "VALUES (?, 'default', 'default', 's', 'user', 'chat', 'conversation', ?, ?, ?)",
                (f"old{n}", f"old text {n}", _T, _T),
            )
        conn.execute("DELETE FROM events WHERE seq > ?", (keep,))
    with db.read() as conn:
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()[0] == events
    db.close()


def test_a_v5_database_whose_newest_events_were_deleted_keeps_their_numbers_after_the_upgrade(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.db"
    _v5_database(path, events=5, keep=2)
    service = _open(path)
    assert service.db.schema_version() == SCHEMA_VERSION >= 6  # v6 moved the high-water mark
    with service.db.read() as conn:
        sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchone()[0]
        assert "AUTOINCREMENT" not in sql
        memories_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'memories'").fetchone()[0]
        assert "pk INTEGER PRIMARY KEY AUTOINCREMENT" in memories_sql
    assert _submit(service, "new1") == 6
    assert _submit_many(service, "new2", "new3") == [7, 8]
    assert _events_sequence_rows(path) == 0
    service.close()


def test_a_v5_database_without_events_starts_at_one_after_the_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    Database(path, target_version=5).close()
    service = _open(path)
    assert _submit(service, "e1") == 1
    service.close()


def test_a_v5_database_whose_events_were_all_deleted_continues_above_them(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    _v5_database(path, events=3, keep=0)
    service = _open(path)
    assert _submit_many(service, "a", "b") == [4, 5]
    service.close()


def test_a_permanently_deleted_newest_event_never_gives_its_number_again(tmp_path: Path) -> None:
    service = _open(tmp_path / "yiji.db")
    assert [_submit(service, i) for i in ("e1", "e2", "e3")] == [1, 2, 3]
    _delete(service, "e3")
    assert _submit(service, "e4") == 4  # a single submit
    _delete(service, "e4")
    assert _submit_many(service, "e5", "e6") == [5, 6]  # a batch
    _delete(service, "e6")
    _delete(service, "e5")  # deleting a lower number never lowers the mark
    assert _submit_many(service, "e7", "e8") == [7, 8]
    for event_id in ("e1", "e2", "e7", "e8"):
        _delete(service, event_id)  # no event is left at all
    assert _submit(service, "e9") == 9
    # Deleting an older event leaves the next number where it was.
    _delete(service, "e9")
    _submit(service, "e10")
    _submit(service, "e11")
    _delete(service, "e10")
    assert _submit(service, "e12") == 12
    assert _events_sequence_rows(service.db.path) == 0
    service.close()


def test_storing_events_writes_no_autoincrement_bookkeeping(tmp_path: Path) -> None:
    service = _open(tmp_path / "yiji.db")
    _submit(service, "e1")
    _submit_many(service, "e2", "e3")
    conn = sqlite3.connect(service.db.path)
    try:
        before = conn.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name").fetchall()
        meta_before = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
        _submit(service, "e4")
        assert conn.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name").fetchall() == before
        assert conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall() == meta_before
        assert ("events",) not in {(name,) for name, _ in before}
    finally:
        conn.close()
    service.close()


def test_an_archive_and_a_backup_carry_the_mark_of_deleted_events(tmp_path: Path) -> None:
    service = _open(tmp_path / "source.db")
    _submit_many(service, "e1", "e2", "e3", "e4")
    _delete(service, "e4")
    _delete(service, "e3")
    for fmt in ("json", "jsonl"):
        archive = tmp_path / f"archive.{fmt}"
        service.archive_export(archive, fmt)
        imported = _open(tmp_path / f"imported-{fmt}.db")
        imported.archive_import(archive)
        assert _submit(imported, "e5") == 5
        assert _submit_many(imported, "e6", "e7") == [6, 7]
        imported.close()
    backup = tmp_path / "backup.db"
    service.backup_create(backup)
    restored = _open(tmp_path / "restored.db")
    restored.backup_restore(backup)
    assert _submit(restored, "e5") == 5
    restored.close()
    service.close()


def test_an_older_backup_with_a_deleted_tail_restores_above_its_mark(tmp_path: Path) -> None:
    backup = tmp_path / "v5.db"
    _v5_database(backup, events=4, keep=1)
    target = _open(tmp_path / "restored.db")
    target.backup_restore(backup)
    assert _submit(target, "new") == 5
    target.close()
