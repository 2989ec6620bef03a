"""Hostile input: a clear error naming field and rule, exit 2, nothing written, no value echoed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from yiji.errors import Conflict, InvalidInput
from yiji.models import EventIn, parse
from yiji.models.events import MAX_EVENT_TEXT
from yiji.service import MemoryService

SECRET = "SECRET-VALUE-9f3a"

VALID: dict[str, Any] = {"session": "s1", "role": "user", "text": "hello"}

CASES = [
    ("naive timestamp", {"occurred_at": "2026-03-01T08:00:00"}, "occurred_at", "timezone"),
    ("unparseable timestamp", {"occurred_at": f"{SECRET}"}, "occurred_at", "ISO 8601"),
    ("timestamp wrong type", {"occurred_at": 1700000000}, "occurred_at", "ISO 8601"),
    ("unknown role", {"role": SECRET}, "role", "Input should be"),
    ("unknown category", {"category": SECRET}, "category", "Input should be"),
    ("empty text", {"text": ""}, "text", "at least 1"),
    ("whitespace text", {"text": " \n\t "}, "text", "empty or whitespace"),
    ("text too long", {"text": "x" * (MAX_EVENT_TEXT + 1)}, "text", "at most"),
    ("malformed id", {"id": f"{SECRET} with spaces"}, "id", "pattern"),
    ("id too long", {"id": "a" * 129}, "id", "pattern"),
    ("malformed session", {"session": f"/{SECRET}"}, "session", "pattern"),
    ("malformed persona", {"persona": f"{SECRET}!"}, "persona", "pattern"),
    ("text wrong type", {"text": 12345}, "text", "valid string"),
    ("cues wrong type", {"cues": SECRET}, "cues", "valid list"),
    ("cue unknown type", {"cues": [{"type": SECRET, "identifier": "x"}]}, "cues.0.type", "Input"),
    ("unknown field", {SECRET: 1}, SECRET, "unknown field"),
]


@pytest.mark.parametrize(("name", "change", "field", "rule"), CASES, ids=[c[0] for c in CASES])
def test_cli_rejects_with_field_and_rule(
    cli: Any, tmp_path: Path, name: str, change: dict[str, Any], field: str, rule: str
) -> None:
    payload = tmp_path / "event.json"
    payload.write_text(json.dumps({**VALID, **change}), encoding="utf-8")
    result = cli("event", "submit", "--input", str(payload))
    assert result.code == 2
    assert field in result.err and rule in result.err
    if name != "unknown field":
        assert SECRET not in result.err and SECRET not in result.out
    listed = cli("event", "list", "--json").json()
    assert listed["events"] == []


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
