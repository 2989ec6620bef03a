"""Forgetting an identifier in every spelling: the normalisation (table tests), then ``delete --matching``
and ``doctor --scan-for`` through the CLI, and ``memory_delete`` with ``matching`` through the MCP SDK
client. Real SQLite files; the CLI through its entry point in this process."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.identifiers import Needle, holds, holds_identifier, identifier_form, normalise

from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client, payload


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("123-45-6789", "123456789"),
        ("123 45 6789", "123456789"),
        ("123456789", "123456789"),
        ("１２３４５６７８９", "123456789"),
        ("１２３－４５－６７８９", "123456789"),
        ("123\u00a045\u20136789", "123456789"),  # a no-break space and an en dash
        ("123.45/6789", "123456789"),
        ("SSN on file: 123-45-6789", "ssn on file: 123456789"),
        ("Alice@ACME.io", "alice@acmeio"),
        ("alice.smith@acme.io", "alicesmith@acmeio"),
        ("ＡＢＣ-１２３", "abc 123"),  # letters then digits: two runs, kept apart
        ("New   York", "new york"),  # words stay words
        ("  trimmed \t", "trimmed"),
        ("Straße", "strasse"),
        ("身份证号是１２３４５６７８９。", "身份证号是123456789。"),
        ("+1 (555) 123-4567", "+1 (555) 1234567"),
    ],
)
def test_normalise(text: str, form: str) -> None:
    assert normalise(text) == form


@pytest.mark.parametrize(
    ("needle", "text", "found"),
    [
        ("123-45-6789", "SSN on file: 123-45-6789", True),
        ("123-45-6789", "alternate record: 123456789 (no dashes)", True),
        ("123-45-6789", "１２３ ４５ ６７８９", True),
        ("123456789", "用户的身份证号是123-45-6789。", True),
        ("123456789", "1234567890", False),
        ("123456789", "0123456789", False),
        ("123456789", "12345678", False),
        ("123456789", "12-3456789-0", False),
        ("alice@acme.io", "write to ALICE@acme.io!", True),
        ("alice@acme.io", "alice.smith@acme.io", False),
        ("alice@acme.io", "malice@acme.io", False),
        ("alice@acme.io", "alice@acme.io.example", False),
        ("alice.smith@acme.io", "Alice.Smith@ACME.IO", True),
        ("Alice", "I met alice today", True),
        ("Alice", "I met Alicia today", False),
        ("AB-1234", "plate ab-1234 seen", True),
        ("AB-1234", "plate ab 1234 seen", True),
        ("AB-1234", "plate ab-12345 seen", False),
    ],
)
def test_holds_as_one_identifier(needle: str, text: str, found: bool) -> None:
    assert holds(identifier_form(text), identifier_form(needle)) is found
    assert Needle.of(needle).found_in(None, text) is found
    assert holds_identifier(text, needle) is found


# The boundary of one identifier, against a generated table: every spelling of project_2024 in every
# ordinary sentence context is found; every distinct identifier built from it (a prefix, a suffix or an
# infix of letters or digits, joined by nothing, underscores, dots, hyphens, slashes, in ASCII or
# full-width, in any case) is never found, in the same contexts.
IDENTIFIER = "project_2024"
SPELLINGS_OF_IT = (
    "project_2024",
    "PROJECT_2024",
    "Project_2024",
    "ＰＲＯＪＥＣＴ＿２０２４",
    "ｐｒｏｊｅｃｔ＿２０２４",
    "project-2024",
    "project.2024",
    "project 2024",
)
JOINERS = ("", "_", ".", "-", "/", "＿", "．", "－", "\u2013")
PARTS = ("x", "X", "v2", "9", "ｘ", "９", "é", "预算")
CONTEXTS = (
    "{}",
    "{} budget is $500K.",
    "the budget of {}.",
    "the budget of {}",
    "is it {}?",
    "'{}'",
    '"{}" was renamed',
    "({})",
    "[{}]",
    "{}, then the rest",
    "{}: done",
    "{}; next",
    "see {}!",
    "关于{}的预算",
    "预算：{}。",
    "「{}」",
    "{}\nnext line",
    "\t{} ",
    "{}... and more",
    "{} - the old one",
    "{}，下一步",
    "{},next",
)


def _lookalikes(spelled: str) -> list[str]:
    """Distinct identifiers containing ``spelled``: a part before it, after it or inside it."""
    found: list[str] = []
    for part, joiner in itertools.product(PARTS, JOINERS):
        if joiner == "" and part == "预算":  # beside CJK text is a sentence context, not an identifier
            continue
        found.append(part + joiner + spelled)
        found.append(spelled + joiner + part)
    found.extend(
        spelled[:cut] + part + spelled[cut:] for cut in range(1, len(spelled)) for part in ("x", "9", "ｚ")
    )
    # a digit placed inside a run of digits, or a letter beside a letter, makes another identifier;
    # what only adds a separator between letters and digits is the same one, spelled otherwise
    return [f for f in found if normalise(f) != normalise(spelled)]


def test_every_spelling_in_every_context_is_found() -> None:
    missed = [
        (spelled, context)
        for spelled, context in itertools.product(SPELLINGS_OF_IT, CONTEXTS)
        if not holds_identifier(context.format(spelled), IDENTIFIER)
    ]
    assert missed == []


def test_no_distinct_identifier_containing_it_is_found() -> None:
    table = [
        (lookalike, context)
        for spelled in SPELLINGS_OF_IT
        for lookalike in _lookalikes(spelled)
        for context in CONTEXTS
    ]
    assert len(table) > 20_000  # the generator really generated
    taken = [
        (lookalike, context)
        for lookalike, context in table
        if holds_identifier(context.format(lookalike), IDENTIFIER)
    ]
    assert taken == []


def test_delete_matching_keeps_an_identifier_that_contains_it(tmp_path: Path) -> None:
    """The reported case: project_2024_v2 is another identifier; --matching project_2024 keeps it."""
    db = str(tmp_path / "y.db")
    _submit(db, "v1", "project_2024 budget is $500K.")
    _submit(db, "v2", "project_2024_v2 budget is $750K.")
    _submit(db, "v3", "Budget of project_2024.v2 and project-2024-b are others.")
    preview = json.loads(
        run_cli("--db", db, "delete", "--matching", "project_2024", "--dry-run", "--json").out
    )
    assert preview["matched_event_ids"] == ["v1"]
    done = run_cli("--db", db, "delete", "--matching", "PROJECT_2024", "--yes", "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["event_ids"] == ["v1"]
    assert _event_ids(db) == ["v2", "v3"]
    scan = json.loads(run_cli("--db", db, "doctor", "--scan-for", "project_2024", "--json").out)
    assert "events" not in scan["scan"][0]["found_in"]


def test_a_needle_without_a_letter_or_digit_names_nothing() -> None:
    assert not Needle.of(" - . ").usable and Needle.of("x").usable


SPELLINGS = {
    "dash": "SSN on file: 123-45-6789",
    "plain": "alternate record: 123456789 (no dashes)",
    "wide": "我的社保号是１２３４５６７８９，别告诉别人。",
    "spaced": "read it back as 123 45 6789 please",
}
LOOKALIKES = {
    "longer": "order number 1234567890 shipped",
    "other-mail": "write to alice.smith@acme.io about it",
    "unrelated": "I like green tea in the morning",
}


def _submit(db: str, eid: str, text: str) -> None:
    sent = run_cli("--db", db, "event", "submit", "--id", eid, "--session", "s", "--role", "user", text)
    assert sent.code == 0, sent.err


def _event_ids(db: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        found = [r[0] for r in conn.execute("SELECT id FROM events ORDER BY id")]
    conn.close()
    return found


def test_delete_matching_forgets_every_spelling_and_keeps_lookalikes(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    for eid, text in {**SPELLINGS, **LOOKALIKES}.items():
        _submit(db, eid, text)
    derived = run_cli(
        "--db",
        db,
        "memory",
        "derive",
        "--event",
        "plain",
        "--input",
        "-",
        "--json",
        input=json.dumps(
            [
                {
                    "text": "record 123456789",
                    "quote": "123456789",
                    "kind": "observation",
                    "basis": "user_statement",
                }
            ]
        ),
    )
    before = json.loads(run_cli("--db", db, "doctor", "--scan-for", "123-45-6789", "--json").out)
    assert before["ok"] is False and "events" in before["scan"][0]["found_in"]

    preview = run_cli("--db", db, "delete", "--matching", "１２３-４５-６７８９", "--dry-run", "--json")
    assert preview.code == 0, preview.err
    plan = json.loads(preview.out)
    assert plan["dry_run"] is True
    assert plan["matched_event_ids"] == sorted(SPELLINGS) and plan["event_ids"] == sorted(SPELLINGS)
    assert _event_ids(db) == sorted({**SPELLINGS, **LOOKALIKES})  # a preview writes nothing
    human = run_cli("--db", db, "delete", "--matching", "123-45-6789", "--dry-run")
    assert "4 events" in human.out and "hold the identifier" in human.out and "6789" not in human.out

    done = run_cli("--db", db, "delete", "--matching", "123-45-6789", "--yes", "--json")
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["event_ids"] == plan["event_ids"] and result["memory_ids"] == plan["memory_ids"]
    assert derived.code == 0, derived.err  # the memory derived from one spelling goes with it
    assert json.loads(derived.out)["memory_ids"][0] in result["memory_ids"]
    assert _event_ids(db) == sorted(LOOKALIKES)
    for spelling in ("123-45-6789", "123456789", "１２３４５６７８９", "123 45 6789"):
        after = json.loads(run_cli("--db", db, "doctor", "--scan-for", spelling, "--json").out)
        # no text holds it; the lexical index's segment data holds the bytes of 1234567890, a lookalike
        # kept on purpose, and is searched byte for byte (it stores terms, not text)
        assert set(after["scan"][0]["found_in"]) <= {"event_fts_data"}, spelling
        assert spelling == "123456789" or after["ok"] is True, spelling
        recalled = json.loads(run_cli("--db", db, "recall", spelling, "--json").out)
        assert recalled["items"] == [], spelling
    assert json.loads(run_cli("--db", db, "doctor", "--scan-for", "1234567890", "--json").out)["ok"] is False

    mail = json.loads(run_cli("--db", db, "delete", "--matching", "alice@acme.io", "--yes", "--json").out)
    assert mail["event_ids"] == [] and mail["checkpoints"] == 0  # alice.smith@acme.io is someone else
    assert _event_ids(db) == sorted(LOOKALIKES)


def test_delete_matching_refuses_what_names_nothing(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    _submit(db, "e1", "a - b")
    refused = run_cli("--db", db, "delete", "--matching", " -- ", "--yes")
    assert refused.code == 2 and "matching" in refused.err
    both = run_cli("--db", db, "delete", "--matching", "x", "--event", "e1", "--yes")
    assert both.code == 2


async def _call(client: Any, tool: str, **arguments: Any) -> Any:
    return payload(await client.call_tool(tool, arguments))


@pytest.mark.anyio
async def test_memory_delete_matching_previews_without_confirm_and_deletes_with_it(tmp_path: Path) -> None:
    db_path = tmp_path / "m.db"
    async with memory_client(db_path) as client:
        for eid, text in {**SPELLINGS, **LOOKALIKES}.items():
            await _call(client, "event_submit", id=eid, session="s", role="user", text=text)
        preview = await _call(client, "memory_delete", matching="123 45 6789")
        assert preview["dry_run"] is True and preview["matched_event_ids"] == sorted(SPELLINGS)
        assert len(_event_ids(str(db_path))) == len(SPELLINGS) + len(LOOKALIKES)
        both = await client.call_tool(
            "memory_delete", {"matching": "x", "event_id": "plain", "confirm": True}
        )
        assert both.isError and "exactly one" in error_text(both)
        done = await _call(client, "memory_delete", matching="123 45 6789", confirm=True)
        assert done["dry_run"] is False and done["event_ids"] == sorted(SPELLINGS)
    assert _event_ids(str(db_path)) == sorted(LOOKALIKES)
