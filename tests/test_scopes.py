"""``yiji scopes``: every scope (persona and project) a database holds something in, with its counts, the
most recently active first; run as users run it."""

from __future__ import annotations

import json
from pathlib import Path

from .inprocess import run_cli


def _submit(db: str, persona: str, project: str, session: str, when: str, text: str) -> str:
    done = run_cli(
        "--db", db, "--json", "--persona", persona, "--project", project, "event", "submit",
        "--session", session, "--role", "user", "--occurred-at", when, text,
    )  # fmt: skip
    assert done.code == 0, done.err
    return str(done.json()["event"]["id"])


def _derive(db: str, persona: str, project: str, event: str, text: str, quote: str) -> None:
    items = Path(db).with_name(f"{event}.json")
    items.write_text(
        json.dumps([{"text": text, "quote": quote, "kind": "fact", "basis": "user_statement"}]),
        encoding="utf-8",
    )
    done = run_cli(
        "--db", db, "--persona", persona, "--project", project, "memory", "derive", "--event", event,
        "--input", str(items),
    )  # fmt: skip
    assert done.code == 0, done.err


def _database(tmp_path: Path) -> str:
    """Three scopes: default/default (2 events, 1 session, 1 memory), default/atlas-1a2b3c4d (3 events in
    2 sessions, the newest), miso/diary (1 event, the oldest); and miso/plans with only a checkpoint."""
    db = str(tmp_path / "y.db")
    first = _submit(db, "default", "default", "s1", "2026-03-01T09:00:00+08:00", "我住在杭州")
    _submit(db, "default", "default", "s1", "2026-03-01T09:01:00+08:00", "每天跑步")
    _derive(db, "default", "default", first, "用户住在杭州", "我住在杭州")
    for session, minute in (("a1", "00"), ("a1", "05"), ("a2", "10")):
        _submit(db, "default", "atlas-1a2b3c4d", session, f"2026-05-02T10:{minute}:00Z", "We use PostgreSQL")
    _submit(db, "miso", "diary", "d1", "2025-12-24T20:00:00+08:00", "平安夜")
    saved = run_cli(
        "--db", db, "--persona", "miso", "--project", "plans", "checkpoint", "save", "--session", "p1",
        "--goal", "plan the trip",
    )  # fmt: skip
    assert saved.code == 0, saved.err
    return db


def test_scopes_lists_every_scope_with_its_counts(tmp_path: Path) -> None:
    db = _database(tmp_path)
    listed = run_cli("--db", db, "--json", "scopes")
    assert listed.code == 0, listed.err
    found = listed.json()
    assert found["current"] == {"persona": "default", "project": "default"} and found["current_holds"]
    assert (found["total"], found["offset"], found["next_offset"]) == (4, 0, None)
    rows = [
        (s["persona"], s["project"], s["events"], s["sessions"], s["memories"], s["checkpoints"])
        for s in found["scopes"]
    ]
    assert rows == [
        ("default", "atlas-1a2b3c4d", 3, 2, 0, 0),
        ("default", "default", 2, 1, 1, 0),
        ("miso", "diary", 1, 1, 0, 0),
        ("miso", "plans", 0, 0, 0, 1),  # no event: last
    ]
    newest = [s["newest_event_at"] for s in found["scopes"]]
    assert newest[0].startswith("2026-05-02T10:10:00") and newest[1].startswith("2026-03-01T01:01:00")
    assert newest[3] is None


def test_scopes_plain_marks_the_current_scope_and_shows_how_to_reach_another(tmp_path: Path) -> None:
    db = _database(tmp_path)
    plain = run_cli("--db", db, "scopes", env={"TZ": "UTC"})
    assert plain.code == 0, plain.err
    lines = plain.out.splitlines()
    assert lines[0].split() == [
        *("persona", "project", "events", "sessions", "memories", "to", "extract", "newest", "event")
    ]
    # every atlas event waits for extraction; default/default's first has its memory
    assert lines[1].split()[:6] == ["default", "atlas-1a2b3c4d", "3", "2", "0", "3"]
    assert lines[2].split()[:7] == ["*", "default", "default", "2", "1", "1", "1"]
    assert lines[1].endswith("2026-05-02 10:10 (+00:00)")
    assert lines[2].startswith("* default  default ")
    assert lines[4].split()[:6] == ["miso", "plans", "0", "0", "0", "0"] and lines[4].endswith(" -")
    assert lines[5] == "1-4 of 4 scopes"
    assert lines[6].startswith("* = the scope commands use now (default/default); another: ")
    assert lines[6].endswith(" --project atlas-1a2b3c4d recall ...")
    # another persona's scope is named with its persona
    miso = run_cli("--db", db, "--persona", "miso", "scopes").out.splitlines()
    assert [line.split()[1] for line in miso[1:3]] == ["diary", "plans"]
    assert miso[-1].startswith("miso/default, the scope commands use now, holds nothing; another: ")
    assert miso[-1].endswith(" --project diary recall ...")


def test_scopes_filters_and_pages(tmp_path: Path) -> None:
    db = _database(tmp_path)
    page = run_cli("--db", db, "--json", "scopes", "--limit", "2", "--offset", "1").json()
    assert [s["project"] for s in page["scopes"]] == ["default", "diary"]
    assert (page["total"], page["next_offset"]) == (4, 3)
    plain = run_cli("--db", db, "scopes", "--limit", "2").out.splitlines()
    assert "1-2 of 4 scopes; 2 more: --offset 2" in plain
    only = run_cli("--db", db, "--json", "--project", "atlas-1a2b3c4d", "scopes").json()
    assert [s["project"] for s in only["scopes"]] == ["atlas-1a2b3c4d"] and only["total"] == 1
    assert run_cli("--db", db, "--project", "atlas-1a2b3c4d", "scopes").out.splitlines()[2] == (
        "1-1 of 1 scope"
    )
    none = run_cli("--db", db, "--project", "nothing-here", "scopes")
    assert none.code == 0 and none.out == (
        "(no scopes)\ndefault/nothing-here, the scope commands use now, holds nothing\n"
    )


def test_scopes_only_reads(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "y.db"
    result = run_cli("--db", str(missing), "scopes")
    assert result.code == 2 and f"no database exists at {missing};" in result.err
    assert not missing.parent.exists()
    bad = run_cli("--db", _database(tmp_path), "--persona", "not ok!", "scopes")
    assert bad.code == 2 and "persona" in bad.err
