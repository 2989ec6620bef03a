"""Messages are built where they start, in one way each: a missing record by what it is (never the name of
the field that referred to it), a refused flag by the flag a person typed, a confirmation that cannot be asked
by ``--yes``, a rule of a memory in words (its stable id kept for machines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from yiji.cli.context import flag_of
from yiji.errors import NotFound

from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client

KINDS = "fact, preference, episode, observation, emotion, agreement, growth"


def test_not_found_reads_the_same_for_every_field() -> None:
    for field in ("id", "memory_id", "after"):
        assert NotFound("memory", field).message == "no memory with that id in this scope"
    assert NotFound("event", "event_id").message == "no event with that id in this scope"
    refused = NotFound("persona version", "to", key="number")
    assert refused.message == "no persona version with that number in this scope"
    assert refused.to_dict()["problems"] == [{"field": "to", "rule": refused.message}]


def test_a_missing_persona_version_and_memory_on_the_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert run_cli("--db", db, "persona", "set", "你是小忆").code == 0
    rollback = run_cli("--db", db, "persona", "rollback", "--to", "99")
    assert (rollback.code, rollback.err) == (
        2,
        "yiji: not found: no persona version with that number in this scope\n",
    )
    assert run_cli("--db", db, "event", "submit", "--session", "s", "--role", "user", "你好").code == 0
    for args in (("memory", "read", "mem_missing"), ("review", "accept", "mem_missing")):
        missing = run_cli("--db", db, *args)
        assert (missing.code, missing.err) == (2, "yiji: not found: no memory with that id in this scope\n")


@pytest.mark.anyio
async def test_a_missing_memory_over_mcp_reads_as_on_the_cli(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        read = error_text(await client.call_tool("memory_read", {"memory_id": "mem_missing"}))
        correct = error_text(
            await client.call_tool("memory_correct", {"memory_id": "mem_missing", "statement": "我住在苏州"})
        )
    assert read == correct == "not_found: no memory with that id in this scope"


def test_flag_of_names_the_flag_without_an_item_index() -> None:
    renamed = {"kinds": "--kind", "fact_key": "--key"}
    assert flag_of("kinds.0", renamed) == "--kind"
    assert flag_of("kinds.12", renamed) == "--kind"
    assert flag_of("fact_key", renamed) == "--key"
    assert flag_of("as_of") == "--as-of"
    assert flag_of("cues.0.type") == "--cues.type"
    assert flag_of("project") == "project"  # the scope may come from the configuration too
    assert flag_of("memories.0.quote", {"event_id": "--event"}, input_prefix="--input ") == (
        "--input memories.0.quote"
    )


def test_a_repeatable_flag_is_refused_by_its_name(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    assert run_cli("--db", db, "event", "submit", "--session", "s", "--role", "user", "你好").code == 0
    expected = f"yiji: invalid input: --kind: must be one of {KINDS}\n"
    for args in (("memory", "list", "--kind", "nope"), ("recall", "你好", "--kind", "nope")):
        refused = run_cli("--db", db, *args)
        assert (refused.code, refused.err) == (2, expected)
    twice = run_cli("--db", db, "--json", "memory", "list", "--kind", "fact", "--kind", "no", "--kind", "pe")
    assert json.loads(twice.err)["problems"] == [{"field": "--kind", "rule": f"must be one of {KINDS}"}]
    basis = run_cli("--db", db, "memory", "list", "--basis", "nope")
    assert (
        basis.err
        == "yiji: invalid input: --basis: must be one of user_statement, assistant_expression, inference\n"
    )
    as_of = run_cli("--db", db, "memory", "list", "--as-of", "yesterday")
    assert as_of.err == "yiji: invalid input: --as-of: must be an ISO 8601 time with a timezone\n"


def test_without_a_terminal_the_confirmation_names_yes(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    assert (
        run_cli("--db", db, "event", "submit", "--id", "e1", "--session", "s", "--role", "user", "hi").code
        == 0
    )
    delete = run_cli("--db", db, "delete", "--event", "e1", input="")
    assert (delete.code, delete.err) == (
        2,
        "yiji: invalid input: --yes: is required to delete permanently: there is no terminal to confirm on "
        "(--dry-run shows what would go)\n",
    )
    accept = run_cli("--db", db, "--json", "review", "accept", "--all", input="")
    problem = {
        "field": "--yes",
        "rule": "is required to accept every proposal: there is no terminal to confirm on",
    }
    assert accept.code == 2 and json.loads(accept.err)["problems"] == [problem]
    assert json.loads(run_cli("--db", db, "--json", "event", "show", "e1").out)["id"] == "e1"  # nothing gone


QUESTION = "你是不是搬家了？我住在杭州。"


def _derive_refusal(tmp_path: Path, memories: list[dict[str, Any]], *json_flag: str) -> Any:
    db = str(tmp_path / "d.db")
    run_cli("--db", db, "event", "submit", "--id", "e1", "--session", "s", "--role", "user", QUESTION)
    items = tmp_path / "items.json"
    items.write_text(json.dumps(memories, ensure_ascii=False), encoding="utf-8")
    return run_cli("--db", db, *json_flag, "memory", "derive", "--event", "e1", "--input", str(items))


def test_a_refused_derivation_says_its_rules_in_words(tmp_path: Path) -> None:
    fact = {"kind": "fact", "basis": "user_statement", "subject": "user", "fact_key": "home.city"}
    memories = [
        {
            "text": "用户搬家了",
            "quote": "你是不是搬家了？",
            **{k: v for k, v in fact.items() if k == "kind"},
            "basis": "user_statement",
        },
        {"text": "用户住在苏州", "quote": "我住在苏州", **fact},
    ]
    plain = _derive_refusal(tmp_path, memories)
    assert plain.code == 2
    assert plain.err == (
        "yiji: invalid input: memories.0.quote: is a question, a condition or a plan, not a stated fact; "
        "memories.1.quote: is not in the source event's text (copy part of it exactly)\n"
    )
    assert "conditional_or_question_not_fact" not in plain.err and "苏州" not in plain.err
    as_json = json.loads(_derive_refusal(tmp_path, memories, "--json").err)
    assert [(p["field"], p["code"]) for p in as_json["problems"]] == [
        ("memories.0.quote", "conditional_or_question_not_fact"),
        ("memories.1.quote", "quote_not_in_source"),
    ]
    assert as_json["problems"][1]["rule"] == "is not in the source event's text (copy part of it exactly)"
