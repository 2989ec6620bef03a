"""Hostile input: a clear error naming field and rule, exit 2, nothing written, no value echoed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yiji.domain.limits import ID_PATTERN, ID_RULE, SCOPE_PATTERN, SCOPE_RULE
from yiji.errors import Conflict, InvalidInput
from yiji.models import EventIn, parse
from yiji.models.events import MAX_EVENT_TEXT
from yiji.service import MemoryService

from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client

SECRET = "SECRET-VALUE-9f3a"

VALID: dict[str, Any] = {"session": "s1", "role": "user", "text": "hello"}

CASES = [
    ("naive timestamp", {"occurred_at": "2026-03-01T08:00:00"}, "occurred_at", "timezone"),
    ("unparseable timestamp", {"occurred_at": f"{SECRET}"}, "occurred_at", "ISO 8601"),
    ("timestamp wrong type", {"occurred_at": 1700000000}, "occurred_at", "ISO 8601"),
    ("unknown role", {"role": SECRET}, "role", "must be one of user, assistant, system, tool"),
    ("unknown category", {"category": SECRET}, "category", "must be one of conversation, reference"),
    ("empty text", {"text": ""}, "text", "must not be empty"),
    ("whitespace text", {"text": " \n\t "}, "text", "empty or whitespace"),
    ("text too long", {"text": "x" * (MAX_EVENT_TEXT + 1)}, "text", "at most"),
    ("malformed id", {"id": f"{SECRET} with spaces"}, "id", "hold only letters, digits"),
    ("id too long", {"id": "a" * 129}, "id", "at most 128 characters"),
    ("malformed session", {"session": f"/{SECRET}"}, "session", "must start with a letter or digit"),
    ("malformed persona", {"persona": f"{SECRET}!"}, "persona", "at most 64 characters"),
    ("text wrong type", {"text": 12345}, "text", "valid string"),
    ("cues wrong type", {"cues": SECRET}, "cues", "valid list"),
    ("cue unknown type", {"cues": [{"type": SECRET, "identifier": "x"}]}, "cues.0.type", "must be one of"),
    ("unknown field", {SECRET: 1}, SECRET, "unknown field"),
]


@pytest.mark.parametrize(("name", "change", "field", "rule"), CASES, ids=[c[0] for c in CASES])
def test_cli_rejects_with_field_and_rule(
    cli: Any, tmp_path: Path, db_path: Path, name: str, change: dict[str, Any], field: str, rule: str
) -> None:
    payload = tmp_path / "event.json"
    payload.write_text(json.dumps({**VALID, **change}), encoding="utf-8")
    result = cli("event", "submit", "--input", str(payload))
    assert result.code == 2
    assert field in result.err and rule in result.err
    if name != "unknown field":
        assert SECRET not in result.err and SECRET not in result.out
    assert not db_path.exists()  # refused before the database is opened: nothing created


def test_cli_json_error_lists_problems(cli: Any, tmp_path: Path) -> None:
    payload = tmp_path / "event.json"
    payload.write_text(json.dumps({"session": "s", "role": "x", "text": ""}), encoding="utf-8")
    result = cli("--json", "event", "submit", "--input", str(payload))
    assert result.code == 2
    error = json.loads(result.err)
    assert error["error"] == "invalid_input"
    assert {p["field"] for p in error["problems"]} == {"role", "text"}


def test_cli_rejects_non_object_json(cli: Any, tmp_path: Path) -> None:
    payload = tmp_path / "event.json"
    payload.write_text("[1, 2]", encoding="utf-8")
    assert cli("event", "submit", "--input", str(payload)).code == 2
    payload.write_text("{not json", encoding="utf-8")
    assert cli("event", "submit", "--input", str(payload)).code == 2


_field_values = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.dictionaries(
        st.sampled_from(
            ["id", "session", "role", "text", "occurred_at", "category", "source", "cues", "persona", "extra"]
        ),
        _field_values,
        max_size=8,
    )
)
def test_property_submission_is_stored_or_rejected_cleanly(
    service: MemoryService, data: dict[str, Any]
) -> None:
    """Any payload is either stored exactly once or rejected with InvalidInput and nothing written."""
    before = service.doctor()["tables"]["events"]
    try:
        event = parse(EventIn, data)
        result = service.event_submit(event)
    except InvalidInput as exc:
        assert exc.problems and all(f and r for f, r in exc.problems)
        assert service.doctor()["tables"]["events"] == before
        return
    except Conflict:  # an id drawn twice with another payload: refused, nothing written
        assert service.doctor()["tables"]["events"] == before
        return
    assert result.event.text == event.text
    assert result.event.role == event.role
    after = service.doctor()["tables"]["events"]
    assert after == before + (1 if result.created else 0)


@pytest.mark.parametrize(
    "args",
    [
        ["event", "list", "--limit", SECRET],
        ["export", "--format", SECRET, "x.json"],
        ["recall", "tea", "--bogus", SECRET],
        ["persona", "rollback", "--to", SECRET],
        [SECRET],
    ],
)
def test_usage_errors_do_not_echo_values(cli: Any, args: list[str]) -> None:
    result = cli(*args)
    assert result.code == 2
    assert "error:" in result.err and SECRET not in result.err + result.out


# -- an id that breaks its pattern is refused in words, never as a regular expression, the same way on the
# command line, from the environment and over MCP; text that is empty says so and where text comes from.

SCOPE_WORDS = (
    "must start with a letter or digit and hold only letters, digits, '.', '_' and '-', at most 64 characters"
)
ID_WORDS = (
    "must start with a letter or digit and hold only letters, digits, '.', '_', ':' and '-', "
    "at most 128 characters"
)
EMPTY = "is empty (give it as an argument, --file PATH, or on stdin)"


def test_the_rules_in_words_are_the_patterns() -> None:
    assert (SCOPE_RULE, ID_RULE) == (SCOPE_WORDS, ID_WORDS)
    import re

    scope, ids = re.compile(SCOPE_PATTERN), re.compile(ID_PATTERN)
    assert scope.match("a" * 64) and ids.match("a" * 128) and ids.match("a:b")
    assert not any(scope.match(v) for v in ("a" * 65, "-a", "a:b"))
    assert not any(ids.match(v) for v in ("a" * 129, ".a", "a b"))


def test_an_id_that_breaks_its_pattern_is_refused_in_words(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    stored = run_cli("--db", db, "event", "submit", "--role", "user", "--session", "s1", "你好")
    assert stored.code == 0, stored.err
    project = run_cli("--db", db, "recall", "你好", "--project", "my project")
    assert (project.code, project.err) == (2, f"yiji: invalid input: project: {SCOPE_WORDS}\n")
    from_env = run_cli("--db", db, "recall", "你好", env={"YIJI_PROJECT": "my project"})
    assert (from_env.code, from_env.err) == (2, f"yiji: invalid input: project: {SCOPE_WORDS}\n")
    session = run_cli("--db", db, "--json", "event", "submit", "--role", "user", "--session", "a b", "hi")
    assert session.code == 2
    assert json.loads(session.err)["problems"] == [{"field": "--session", "rule": ID_WORDS}]
    for result in (project, from_env, session):
        assert "[A-Za-z0-9]" not in result.err


@pytest.mark.anyio
async def test_mcp_tools_refuse_an_id_in_the_same_words(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        project = error_text(await client.call_tool("memory_recall", {"query": "x", "project": "my project"}))
        session = error_text(
            await client.call_tool("event_submit", {"session": "a b", "role": "user", "text": "hi"})
        )
    assert project == f"invalid_input: project: {SCOPE_WORDS}"
    assert session == f"invalid_input: session: {ID_WORDS}"


@pytest.mark.parametrize("piped", ["", "\n"])
def test_empty_standard_input_says_the_text_is_empty(piped: str, tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    submit = run_cli("--db", db, "event", "submit", "--role", "user", "--session", "s1", input=piped)
    assert (submit.code, submit.err) == (2, f"yiji: invalid input: text: {EMPTY}\n")
    submit_args = ("--db", db, "event", "submit", "--role", "user", "--session", "s1")
    dash = run_cli(*submit_args, "--file", "-", input=piped)
    assert (dash.code, dash.err) == (2, f"yiji: invalid input: text: {EMPTY}\n")
    correct = run_cli("--db", db, "memory", "correct", "mem_x", input=piped)
    assert (correct.code, correct.err) == (2, f"yiji: invalid input: statement: {EMPTY}\n")
    assert not (tmp_path / "y.db").exists()


def test_an_empty_argument_or_file_says_so(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    argument = run_cli("--db", db, "event", "submit", "--role", "user", "--session", "s1", "")
    assert (argument.code, argument.err) == (2, f"yiji: invalid input: text: {EMPTY}\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    file = run_cli("--db", db, "event", "submit", "--role", "user", "--session", "s1", "--file", str(empty))
    assert (file.code, file.err) == (2, "yiji: invalid input: text: the file is empty\n")
