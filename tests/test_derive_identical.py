"""Identical claims are one memory: ``memory derive`` (with and without ``--propose``) beside a memory of
the same claim stores nothing again and answers with that memory's id and its state as it is, through
the CLI (its entry point, in this process) and ``memory_derive`` through the MCP SDK client. Real
SQLite files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .inprocess import run_cli
from .mcp_helpers import memory_client, payload

TEXT = "I run every morning and I live in Hangzhou."
RUNS = {"text": "The user runs every morning", "quote": "I run every morning", "kind": "preference"}
LIVES = {"text": "The user lives in Hangzhou", "quote": "I live in Hangzhou", "kind": "observation"}
BASIS = {"basis": "user_statement"}


def _derive(db: str, claim: dict[str, str], *flags: str) -> dict[str, Any]:
    done = run_cli(
        "--db", db, "memory", "derive", "--event", "e1", "--input", "-", "--json", *flags,
        input=json.dumps([{**claim, **BASIS}]),
    )  # fmt: skip
    assert done.code == 0, done.err
    return dict(json.loads(done.out))


def _states(db: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        found = [(str(r[0]), str(r[1])) for r in conn.execute("SELECT text, review_state FROM memories")]
    conn.close()
    return sorted(found)


def test_cli_derive_beside_the_same_claim_answers_what_is_true(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    sent = run_cli("--db", db, "event", "submit", "--id", "e1", "--session", "s", "--role", "user", TEXT)
    assert sent.code == 0, sent.err

    accepted = _derive(db, RUNS)
    assert accepted["created"] is True and accepted["review_state"] == "accepted"
    proposed_again = _derive(db, RUNS, "--propose")
    assert proposed_again["memory_ids"] == accepted["memory_ids"]
    assert proposed_again["created"] is False
    assert proposed_again["review_state"] == "accepted" and proposed_again["review_states"] == ["accepted"]
    assert proposed_again["existing_ids"] == accepted["memory_ids"]
    plain = run_cli(
        "--db", db, "memory", "derive", "--event", "e1", "--input", "-", "--propose",
        input=json.dumps([{**RUNS, **BASIS}]),
    )  # fmt: skip
    assert plain.code == 0 and "already remembered" in plain.out and "waiting" not in plain.out

    proposal = _derive(db, LIVES, "--propose")
    assert proposal["created"] is True and proposal["review_state"] == "proposed"
    derived_beside = _derive(db, LIVES)  # a plain derive beside the waiting proposal: no second copy
    assert derived_beside["memory_ids"] == proposal["memory_ids"] and derived_beside["created"] is False
    assert derived_beside["review_state"] == "proposed"
    assert _states(db) == [(LIVES["text"], "proposed"), (RUNS["text"], "accepted")]

    rejected = run_cli("--db", db, "review", "reject", proposal["memory_ids"][0])
    assert rejected.code == 0, rejected.err
    again = _derive(db, {**LIVES, "text": "Lives in Hangzhou"}, "--propose")  # other words, same claim
    assert again["memory_ids"] == proposal["memory_ids"] and again["created"] is False
    assert again["review_state"] == "rejected"
    shown = run_cli(
        "--db", db, "memory", "derive", "--event", "e1", "--input", "-", "--propose",
        input=json.dumps([{**LIVES, **BASIS}]),
    )  # fmt: skip
    assert "not proposed again" in shown.out and "rejected" in shown.out
    assert _states(db) == [(LIVES["text"], "rejected"), (RUNS["text"], "accepted")]
    waiting = json.loads(run_cli("--db", db, "review", "--json").out)
    assert waiting["waiting"] == 0


@pytest.mark.anyio
async def test_mcp_derive_beside_the_same_claim_answers_what_is_true(tmp_path: Path) -> None:
    db_path = tmp_path / "m.db"
    async with memory_client(db_path) as client:
        await client.call_tool("event_submit", {"id": "e1", "session": "s", "role": "user", "text": TEXT})
        memories = [{**RUNS, **BASIS}, {**LIVES, **BASIS}]
        first = payload(await client.call_tool("memory_derive", {"event_id": "e1", "memories": memories[:1]}))
        both = payload(
            await client.call_tool("memory_derive", {"event_id": "e1", "memories": memories, "propose": True})
        )
        assert both["memory_ids"][0] == first["memory_ids"][0]
        assert both["review_states"] == ["accepted", "proposed"] and both["review_state"] == "mixed"
        assert both["created"] is True and both["existing_ids"] == first["memory_ids"]
        same = payload(
            await client.call_tool("memory_derive", {"event_id": "e1", "memories": memories, "propose": True})
        )
        assert same["memory_ids"] == both["memory_ids"] and same["created"] is False
    assert len(_states(str(db_path))) == 2
