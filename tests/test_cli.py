"""The CLI as users run it, through its entry point in this process (the MCP server as a process of its
own): real files, exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from yiji.schema import SCHEMA_VERSION

from .conftest import run_yiji
from .inprocess import run_cli


def test_demo_runs_on_a_throwaway_database(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_cli("demo", "--db", str(db))
    assert result.code == 0, result.err
    assert "我住在杭州" in result.out and "Shanghai" in result.out
    again = run_cli("--db", str(db), "--json", "demo")
    assert again.code == 0
    data = json.loads(again.out)
    assert all(not e["created"] for e in data["events"])  # idempotent re-run


def test_demo_uses_the_user_data_directory_by_default(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path), "YIJI_DB": ""}
    result = run_cli("demo", env=env)
    assert result.code == 0, result.err
    assert (tmp_path / "xdg" / "yiji" / "yiji.db").exists()


def test_submit_list_show_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    sub = run_cli(
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
    stdin = run_cli(
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
    listed = run_cli("--db", db, "--json", "event", "list")
    events = json.loads(listed.out)["events"]
    assert [e["text"] for e in events] == ["我住在杭州", "好的，记住了。"]
    shown = run_cli("--db", db, "event", "show", "e-1")
    assert "我住在杭州" in shown.out


def test_exit_codes(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    ok = run_cli("--db", db, "event", "submit", "--id", "x", "--session", "s", "--role", "user", "a")
    assert ok.code == 0
    conflict = run_cli("--db", db, "event", "submit", "--id", "x", "--session", "s", "--role", "user", "b")
    assert conflict.code == 3
    invalid = run_cli("--db", db, "event", "submit", "--session", "s", "--role", "robot", "a")
    assert invalid.code == 2
    usage = run_cli("--db", db, "no-such-command")
    assert usage.code == 2


def test_doctor_and_config_show(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    assert run_cli("--db", db, "persona", "show").code == 0  # creates the database
    doctor = run_cli("--db", db, "--json", "doctor")
    assert doctor.code == 0
    report = json.loads(doctor.out)
    assert report["ok"] and report["schema_version"] == SCHEMA_VERSION and report["integrity_check"] == ["ok"]
    config = tmp_path / "config.toml"
    config.write_text('[extraction]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "K"\n')
    shown = run_cli(
        "--config", str(config), "--db", db, "--json", "config", "show", env={"K": "sk-very-secret-key"}
    )
    assert shown.code == 0, shown.err
    assert "sk-very-secret-key" not in shown.out
    assert json.loads(shown.out)["extraction"]["api_key_set"] is True


def test_config_rejects_pasted_secret(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[extraction]\napi_key = "sk-pasted-secret"\n')
    result = run_cli("--config", str(config), "config", "show")
    assert result.code == 2
    assert "extraction.api_key" in result.err and "sk-pasted-secret" not in result.err


def test_newer_database_refused_by_cli(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    result = run_cli("--db", str(path), "doctor")
    assert result.code == 1 and "newer" in result.err


def test_unusable_database_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    db = str(blocker / "SECRET-PATH-PART" / "yiji.db")
    result = run_cli("--db", db, "event", "submit", "--session", "s", "--role", "user", "hi")
    assert result.code == 1
    assert "could not create the database file or its folder" in result.err and "Traceback" not in result.err
    assert "SECRET-PATH-PART" not in result.err
    doctor = run_cli("--db", db, "doctor")
    # a command that only reads names the path it was given, so a mistyped --db is seen
    assert doctor.code == 2 and f"no database exists at {db};" in doctor.err


def test_serve_reports_an_unusable_database_before_starting(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    result = run_yiji("--db", str(path), "serve", input="")  # the server starts as a process of its own
    assert result.code == 1
    assert "newer" in result.err and "Traceback" not in result.err


def _zone_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a user with no configuration of their own, plus ``extra``."""
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    zone_keys = ("TZ", "YIJI_TIMEZONE", "YIJI_DISPLAY_TIMEZONE", "YIJI_CONFIG")
    env = {k: v for k, v in os.environ.items() if k not in zone_keys}
    return {**env, "YIJI_CONFIG": str(empty), **extra}


def _morning_in_shanghai(tmp_path: Path, env: dict[str, str]) -> str:
    db = str(tmp_path / "t.db")
    sub = run_cli(
        "--db", db, "event", "submit", "--id", "e-am", "--session", "s1", "--role", "user",
        "--occurred-at", "2026-03-01T09:00:00+08:00", "早上好，我到公司了",
        env=env,
    )  # fmt: skip
    assert sub.code == 0, sub.err
    derive = run_cli(
        "--db", db, "memory", "derive", "--event", "e-am", "--input", "-",
        input=json.dumps([{"text": "用户到公司了", "quote": "我到公司了", "kind": "episode",
                           "basis": "user_statement"}]),
        env=env,
    )  # fmt: skip
    assert derive.code == 0, derive.err
    return db


def test_plain_output_shows_local_time_and_json_stays_utc(tmp_path: Path) -> None:
    config = tmp_path / "shanghai.toml"
    config.write_text('[display]\ntimezone = "Asia/Shanghai"\n', encoding="utf-8")
    env = _zone_env(tmp_path, YIJI_CONFIG=str(config), TZ="America/New_York")
    db = _morning_in_shanghai(tmp_path, env)
    listed = run_cli("--db", db, "event", "list", env=env)
    assert "2026-03-01 09:00 (+08:00)" in listed.out, listed.out
    memory_id = json.loads(run_cli("--db", db, "--json", "memory", "list", env=env).out)["memories"][0]["id"]
    read = run_cli("--db", db, "memory", "read", memory_id, env=env)
    assert "2026-03-01 09:00 (+08:00)" in read.out and "01:00" not in read.out
    recalled = run_cli("--db", db, "recall", "公司", env=env)
    assert " 2026-03-01.." in recalled.out, recalled.out
    as_json = run_cli("--db", db, "--json", "event", "list", env=env)
    assert json.loads(as_json.out)["events"][0]["occurred_at"] == "2026-03-01T01:00:00.000000Z"
    read_json = run_cli("--db", db, "--json", "memory", "read", memory_id, env=env).json()
    assert read_json["event"]["occurred_at"] == "2026-03-01T01:00:00.000000Z"


@pytest.mark.parametrize(
    ("tz", "shown"),
    [("UTC", "2026-03-01 01:00 (+00:00)"), ("Asia/Tokyo", "2026-03-01 10:00 (+09:00)"),
     ("America/New_York", "2026-02-28 20:00 (-05:00)")],
)  # fmt: skip
def test_plain_output_follows_the_system_zone_by_default(tmp_path: Path, tz: str, shown: str) -> None:
    env = _zone_env(tmp_path, TZ=tz)
    db = _morning_in_shanghai(tmp_path, env)
    listed = run_cli("--db", db, "event", "list", env=env)
    assert shown in listed.out, listed.out
    as_json = run_cli("--db", db, "--json", "event", "show", "e-am", env=env)
    assert as_json.json()["occurred_at"] == "2026-03-01T01:00:00.000000Z"


def test_an_unknown_display_zone_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[display]\ntimezone = "Mars/Olympus"\n', encoding="utf-8")
    result = run_cli(
        "--db", str(tmp_path / "x.db"), "event", "list", env=_zone_env(tmp_path, YIJI_CONFIG=str(config))
    )
    assert result.code == 2
    assert "display.timezone: must be an IANA timezone name such as Asia/Shanghai" in result.err
    assert "Olympus" not in result.err
