"""The CLI as users run it: a subprocess, real files, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from yiji.schema import SCHEMA_VERSION

from .conftest import run_yiji


def test_demo_runs_on_a_throwaway_database(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_yiji("demo", "--db", str(db))
    assert result.code == 0, result.err
    assert "我住在杭州" in result.out and "Shanghai" in result.out
    again = run_yiji("--db", str(db), "--json", "demo")
    assert again.code == 0
    data = json.loads(again.out)
    assert all(not e["created"] for e in data["events"])  # idempotent re-run


def test_demo_uses_the_user_data_directory_by_default(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path), "YIJI_DB": ""}
    result = run_yiji("demo", env=env)
    assert result.code == 0, result.err
    assert (tmp_path / "xdg" / "yiji" / "yiji.db").exists()


def test_submit_list_show_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    sub = run_yiji(
        "event",
        "submit",
        "--db",
        db,
        "--json",
        "--id",
        "e-1",
        "--session",
        "s1",
        "--role",
        "user",
        "--occurred-at",
        "2026-03-01T09:00:00+08:00",
        "--cue",
        "photo:IMG_1=西湖",
        "我住在杭州",
    )
    assert sub.code == 0, sub.err
    assert json.loads(sub.out)["event"]["occurred_at"] == "2026-03-01T01:00:00.000000Z"
    stdin = run_yiji(
        "--db",
        db,
        "event",
        "submit",
        "--session",
        "s1",
        "--role",
        "assistant",
        "--file",
        "-",
        input="好的，记住了。",
    )
    assert stdin.code == 0, stdin.err
    listed = run_yiji("--db", db, "--json", "event", "list")
    events = json.loads(listed.out)["events"]
    assert [e["text"] for e in events] == ["我住在杭州", "好的，记住了。"]
    shown = run_yiji("--db", db, "event", "show", "e-1")
    assert "我住在杭州" in shown.out


def test_exit_codes(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    ok = run_yiji("--db", db, "event", "submit", "--id", "x", "--session", "s", "--role", "user", "a")
    assert ok.code == 0
    conflict = run_yiji("--db", db, "event", "submit", "--id", "x", "--session", "s", "--role", "user", "b")
    assert conflict.code == 3
    invalid = run_yiji("--db", db, "event", "submit", "--session", "s", "--role", "robot", "a")
    assert invalid.code == 2
    usage = run_yiji("--db", db, "no-such-command")
    assert usage.code == 2


def test_doctor_and_config_show(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    assert run_yiji("--db", db, "persona", "show").code == 0  # creates the database
    doctor = run_yiji("--db", db, "--json", "doctor")
    assert doctor.code == 0
    report = json.loads(doctor.out)
    assert report["ok"] and report["schema_version"] == SCHEMA_VERSION and report["integrity_check"] == ["ok"]
    config = tmp_path / "config.toml"
    config.write_text('[extraction]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "K"\n')
    shown = run_yiji(
        "--config", str(config), "--db", db, "--json", "config", "show", env={"K": "sk-very-secret-key"}
    )
    assert shown.code == 0, shown.err
    assert "sk-very-secret-key" not in shown.out
    assert json.loads(shown.out)["extraction"]["api_key_set"] is True


def test_config_rejects_pasted_secret(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[extraction]\napi_key = "sk-pasted-secret"\n')
    result = run_yiji("--config", str(config), "config", "show")
    assert result.code == 2
    assert "extraction.api_key" in result.err and "sk-pasted-secret" not in result.err


def test_newer_database_refused_by_cli(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    result = run_yiji("--db", str(path), "doctor")
    assert result.code == 1 and "newer" in result.err


def test_unusable_database_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    db = str(blocker / "SECRET-PATH-PART" / "yiji.db")
    result = run_yiji("--db", db, "event", "submit", "--session", "s", "--role", "user", "hi")
    assert result.code == 1
    assert "could not create the database file or its folder" in result.err and "Traceback" not in result.err
    assert "SECRET-PATH-PART" not in result.err
    doctor = run_yiji("--db", db, "doctor")
    assert doctor.code == 2 and "no database" in doctor.err and "SECRET-PATH-PART" not in doctor.err


def test_serve_reports_an_unusable_database_before_starting(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    result = run_yiji("--db", str(path), "serve", input="")
    assert result.code == 1
    assert "newer" in result.err and "Traceback" not in result.err
