from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from yiji.db import Database
from yiji.errors import DatabaseGone, SchemaTooNew, StorageError
from yiji.schema import MIGRATIONS, SCHEMA_VERSION

from .conftest import foreign_database


def _schema(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return [(t, n, " ".join(s.split())) for t, n, s in rows]


def test_fresh_database_is_current_with_policy(db_path: Path) -> None:
    db = Database(db_path)
    conn = db.connection()
    assert db.schema_version() == SCHEMA_VERSION == len(MIGRATIONS) == 13
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    db.close()


def test_v1_with_rows_upgraded_equals_fresh(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    db = Database(old, target_version=1)
    assert db.schema_version() == 1
    with db.write() as conn:
        conn.execute("INSERT INTO personas VALUES ('default', 1, 'p', NULL, '2026-01-01T00:00:00.000000Z')")
        conn.execute(
            "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, "
            "text, occurred_at, ingested_at) VALUES ('e1', 'default', 'default', 's', 'user', 'chat', "
            "'conversation', '我住在杭州', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
        )
        conn.execute(
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, valid_at, origin, created_at) VALUES ('m1', 'default', 'default', 'e1', 'fact', "
            "'user_statement', 'lives in Hangzhou', '我住在杭州', 0.9, '2026-01-01T00:00:00.000000Z', "
            "'manual', '2026-01-01T00:00:00.000000Z')"
        )
    db.close()
    upgraded = Database(old)
    assert upgraded.schema_version() == SCHEMA_VERSION
    with upgraded.read() as conn:
        assert conn.execute("SELECT text FROM events WHERE id = 'e1'").fetchone()[0] == "我住在杭州"
        assert conn.execute("SELECT gist FROM memories WHERE id = 'm1'").fetchone()[0] is None
        assert conn.execute("SELECT redacted FROM events WHERE id = 'e1'").fetchone()[0] == 0
        review = conn.execute("SELECT review_state, reviewed_at FROM memories WHERE id = 'm1'").fetchone()
        assert tuple(review) == ("accepted", None)  # everything stored before review existed is remembered
        assert conn.execute("SELECT COUNT(*) FROM personas").fetchone()[0] == 1
    upgraded.close()
    fresh = tmp_path / "fresh.db"
    Database(fresh).close()
    assert _schema(old) == _schema(fresh)


def test_each_step_is_atomic_with_its_version(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    db = Database(path, target_version=2)
    assert db.schema_version() == 2
    names = {r[0] for r in db.connection().execute("SELECT name FROM sqlite_master")}
    assert "event_cues" in names and "capture_cursors" not in names
    db.close()


def test_v6_with_memories_upgrades_to_review_states_all_accepted(tmp_path: Path) -> None:
    old = tmp_path / "v6.db"
    db = Database(old, target_version=6)
    with db.write() as conn:
        conn.execute(
            "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, text, "
            "occurred_at, ingested_at) VALUES ('e1', 'default', 'default', 's', 'user', 'chat', "
            "'conversation', 'I live in Lisbon', '2026-01-01T00:00:00.000000Z', "
            "'2026-01-01T00:00:00.000000Z')"
        )
        conn.execute(
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, valid_at, origin, created_at) VALUES ('m1', 'default', 'default', 'e1', 'fact', "
            "'user_statement', 'lives in Lisbon', 'I live in Lisbon', 0.9, '2026-01-01T00:00:00.000000Z', "
            "'extraction', '2026-01-01T00:00:00.000000Z')"
        )
    db.close()
    upgraded = Database(old)
    assert upgraded.schema_version() == SCHEMA_VERSION == 13
    with upgraded.read() as conn:
        row = conn.execute(
            "SELECT review_state, reviewed_at, reviewed_by, review_note FROM memories WHERE id = 'm1'"
        ).fetchone()
        assert tuple(row) == ("accepted", None, None, None)
    with pytest.raises(StorageError), upgraded.write() as conn:
        conn.execute("UPDATE memories SET review_state = 'maybe' WHERE id = 'm1'")
    upgraded.close()
    fresh = tmp_path / "fresh.db"
    Database(fresh).close()
    assert _schema(old) == _schema(fresh)


def test_newer_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = foreign_database(tmp_path / "future.db", SCHEMA_VERSION + 1)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(SchemaTooNew, match="newer"):
        Database(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not Path(str(path) + "-wal").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_private_permissions(tmp_path: Path) -> None:
    path = tmp_path / "new-dir" / "yiji.db"
    Database(path).close()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_write_rolls_back_on_error(db_path: Path) -> None:
    db = Database(db_path)
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute("INSERT INTO meta VALUES ('k', 'v')")
        raise RuntimeError("boom")
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0
    db.close()


def test_a_database_error_inside_a_write_is_a_storage_error_and_nothing_is_kept(db_path: Path) -> None:
    db = Database(db_path)
    with pytest.raises(StorageError) as caught, db.write() as conn:
        conn.execute("INSERT INTO meta VALUES ('k', 'v')")
        conn.execute("INSERT INTO meta VALUES ('k', 'again')")
    assert "could not write to the database" in str(caught.value)
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
    with db.write() as conn:  # the connection is usable again
        conn.execute("INSERT INTO meta VALUES ('other', 'v')")
    with db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT key FROM meta")] == ["other"]
    db.close()


def test_nested_write_is_a_savepoint(db_path: Path) -> None:
    db = Database(db_path)
    with db.write() as conn:
        conn.execute("INSERT INTO meta VALUES ('outer', '1')")
        with pytest.raises(RuntimeError), db.write() as inner:
            inner.execute("INSERT INTO meta VALUES ('inner', '1')")
            raise RuntimeError("inner fails")
    with db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT key FROM meta")] == ["outer"]
    db.close()


_EVENT_SQL = (
    "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, text, occurred_at, "
    "ingested_at) VALUES (?, 'default', 'default', 's', ?, 'chat', 'conversation', '你好', "
    "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
)
_MEMORY_SQL = (
    "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, confidence, "
    "valid_at, origin, created_at) VALUES (?, 'default', 'default', 'e1', ?, 'user_statement', 't', '你好', "
    "0.9, '2026-01-01T00:00:00.000000Z', 'manual', '2026-01-01T00:00:00.000000Z')"
)


def test_v5_keeps_every_value_rule_without_per_insert_lookup_tables(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    Database(path, target_version=4).close()
    other = sqlite3.connect(path, isolation_level=None)  # open before the upgrade, schema already read
    other.execute(_EVENT_SQL, ("e1", "user"))
    upgraded = Database(path)
    conn = upgraded.connection()
    assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 1
    for connection in (conn, other):
        for role in ("robot", "User", ""):
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                connection.execute(_EVENT_SQL, (f"bad-{role}", role))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            connection.execute(_MEMORY_SQL, ("m-bad", "rumour"))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            connection.execute(
                "UPDATE events SET extraction_state = 'waiting', category = 'conversation' WHERE id = 'e1'"
            )
    for role in ("assistant", "system", "tool"):
        conn.execute(_EVENT_SQL, (f"ok-{role}", role))
    for kind in ("fact", "preference", "episode", "observation", "emotion", "agreement", "growth"):
        conn.execute(_MEMORY_SQL, (f"m-{kind}", kind))
    for table, sql in (("events", _EVENT_SQL), ("memories", _MEMORY_SQL)):
        ops = {r[1] for r in conn.execute("EXPLAIN " + sql, ("x", "fact" if table == "memories" else "user"))}
        assert "OpenEphemeral" not in ops, table
    other.close()
    upgraded.close()


def test_v5_leaves_a_table_it_does_not_recognise_alone(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    Database(path, target_version=4).close()
    stranger = sqlite3.connect(path, isolation_level=None)  # respells one rule unlike yiji's steps
    stranger.execute("PRAGMA writable_schema = ON")
    stranger.execute(
        "UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE name = 'events'",
        (
            "CHECK (role IN ('user', 'assistant', 'system', 'tool'))",
            "CHECK (role IN ('user','assistant','system','tool'))",
        ),
    )
    stranger.execute("PRAGMA writable_schema = OFF")
    stranger.close()
    upgraded = Database(path)
    sql = upgraded.connection().execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchone()[0]
    assert "CHECK (role IN ('user','assistant','system','tool'))" in sql
    assert upgraded.schema_version() == SCHEMA_VERSION
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        upgraded.connection().execute(_EVENT_SQL, ("bad", "robot"))
    upgraded.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_file_deleted_or_replaced_under_an_open_database_is_never_used(
    db_path: Path, tmp_path: Path, how: str
) -> None:
    db = Database(db_path)
    with db.write() as conn:
        conn.execute("INSERT INTO personas (persona_id, version, text, created_at) VALUES ('p', 1, 't', 'x')")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    if how == "replaced":
        Database(tmp_path / "other.db").close()
        (tmp_path / "other.db").rename(db_path)
    for unit in (db.write, db.read):
        with pytest.raises(DatabaseGone, match="deleted, moved or replaced"), unit():
            pass
    errors: list[BaseException] = []

    def from_a_new_thread() -> None:  # a thread without a connection yet must not create a file
        try:
            with db.read():
                pass
        except DatabaseGone as exc:
            errors.append(exc)

    worker = threading.Thread(target=from_a_new_thread)
    worker.start()
    worker.join()
    db.close()
    assert len(errors) == 1
    assert db_path.exists() is (how == "replaced")
