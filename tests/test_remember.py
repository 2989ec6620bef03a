"""``yiji remember`` and ``memory_remember``: one statement to a recalled, grounded memory."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .inprocess import run_cli
from .mcp_helpers import memory_client, payload

GITHUB = "ghp_" + "R8kD2mX7qL4vN9bT3wY6hJ1cF5gZ0aPs1E2u"


def test_remember_then_recall_finds_the_memory_with_its_quote(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    done = run_cli(
        "--db",
        db,
        "remember",
        "我更喜欢喝茶，不喝咖啡",
        "--kind",
        "preference",
        "--fact-key",
        "preference.drink",
        "--json",
    )
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["event"]["role"] == "user" and result["event"]["source"] == "remember"
    found = run_cli("--db", db, "recall", "喝茶", "--json")
    memories = json.loads(found.out)["items"]
    assert memories[0]["id"] == result["memory_id"]
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT m.quote, e.text, m.basis, m.subject, m.fact_key, m.kind, e.extraction_state "
            "FROM memories m JOIN events e ON e.id = m.event_id"
        ).fetchone()
    assert row == (
        "我更喜欢喝茶，不喝咖啡",
        "我更喜欢喝茶，不喝咖啡",
        "user_statement",
        "user",
        "preference.drink",
        "preference",
        "done",
    )


def test_remember_refuses_what_derive_refuses_and_stores_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    run_cli("--db", db, "remember", "first")
    refused = run_cli("--db", db, "remember", "I feel great", "--kind", "emotion")
    assert refused.code == 2 and "I feel great" not in refused.err
    blank = run_cli("--db", db, "remember", "   ")
    assert blank.code == 2 and "text" in blank.err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 1


def test_remember_redacts_the_statement_and_its_memory(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    done = run_cli("--db", db, "remember", f"my release token is {GITHUB}", "--json")
    assert done.code == 0, done.err
    with sqlite3.connect(db) as conn:
        text, quote, redacted = conn.execute(
            "SELECT m.text, m.quote, e.redacted FROM memories m JOIN events e ON e.id = m.event_id"
        ).fetchone()
    assert (
        GITHUB not in text + quote
        and quote == "my release token is [redacted:github-token]"
        and redacted == 1
    )


@pytest.mark.anyio
async def test_memory_remember_over_mcp_proposes_when_asked(tmp_path: Path) -> None:
    async with memory_client(tmp_path / "m.db") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "memory_remember" in tools
        result = payload(
            await client.call_tool(
                "memory_remember", {"text": "I live in Hangzhou", "fact_key": "home.city", "propose": True}
            )
        )
        assert result["review_state"] == "proposed" and result["event"]["text"] == "I live in Hangzhou"


def test_doctor_counts_and_redacts_secrets_an_older_database_holds(tmp_path: Path) -> None:
    db = tmp_path / "y.db"
    config = tmp_path / "off.toml"
    config.write_text("[redaction]\nenabled = false\n", encoding="utf-8")
    statement = f"deploy token {GITHUB} for the release job"
    off = ("--config", str(config), "--db", str(db))
    assert (
        run_cli(*off, "event", "submit", "--id", "e1", "--session", "s", "--role", "user", statement).code
        == 0
    )
    memory = [
        {"text": "a release job", "quote": "the release job", "kind": "fact", "basis": "user_statement"}
    ]
    derived = run_cli(*off, "memory", "derive", "--event", "e1", "--input", "-", input=json.dumps(memory))
    assert derived.code == 0, derived.err
    report = json.loads(run_cli("--db", str(db), "doctor", "--json").out)
    assert report["secrets"] == {"events": 1, "memories": 0, "rules": {"github-token": 1}}
    assert GITHUB not in json.dumps(report)
    fixed = json.loads(run_cli("--db", str(db), "doctor", "--redact-secrets", "--json").out)
    assert fixed["redacted"] == {"events": 1, "memories": 1}  # the memory's index row holds its source
    assert fixed["secrets"] == {"events": 0, "memories": 0, "rules": {}}
    with sqlite3.connect(db) as conn:
        text, quote, flag = conn.execute(
            "SELECT e.text, m.quote, e.redacted FROM memories m JOIN events e ON e.id = m.event_id"
        ).fetchone()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert text == "deploy token [redacted:github-token] for the release job" and flag == 1
    assert quote == "the release job"
    assert GITHUB.encode() not in db.read_bytes()
    found = json.loads(run_cli("--db", str(db), "recall", "deploy token release", "--json").out)
    assert found["items"] and GITHUB not in json.dumps(found)
