"""Small things the command line says: the flag a mistyped one meant (the command's own, else another
command's, named as such), the command, subcommand or choice a mistyped one meant, and why ``doctor``
counts fewer ``event_fts`` rows than events."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiji.cli import closest_name

from .inprocess import run_cli

RECALL_FLAGS = [
    "--help",
    "--db",
    "--config",
    "--persona",
    "--project",
    "--json",
    "--kind",
    "--limit",
    "--mode",
]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--sesion", None),  # recall has no --session: nothing of its own is that close
        ("--jsn", "--json"),
        ("--lmit", "--limit"),
        ("--limti", "--limit"),  # two letters swapped
        ("--projetc", "--project"),
        ("--Mode", "--mode"),
        ("--zzzz", None),
        ("--", None),
    ],
)
def test_the_closest_name_counts_edits_of_the_name(typed: str, meant: str | None) -> None:
    assert closest_name(typed, RECALL_FLAGS) == meant


def test_the_shared_dashes_do_not_make_a_flag_close() -> None:
    assert closest_name("--sesion", ["--json", "--session"]) == "--session"
    assert closest_name("--sesion", ["--json"]) is None


def test_a_flag_of_another_command_is_named_with_its_commands(tmp_path: Path) -> None:
    result = run_cli("--db", str(tmp_path / "x.db"), "recall", "--sesion", "s1", "杭州")
    assert result.code == 2
    assert "unrecognized flag --sesion (did you mean --session? yiji recall has no such flag;" in result.err
    assert "did you mean --json" not in result.err
    own = run_cli("--db", str(tmp_path / "x.db"), "event", "submit", "--sesion", "s", "--role", "user", "hi")
    assert "unrecognized flag --sesion (did you mean --session?)" in own.err


def test_a_flag_that_names_an_argument_says_to_give_it_without_the_flag(tmp_path: Path) -> None:
    result = run_cli("--db", str(tmp_path / "x.db"), "event", "submit", "--session", "s", "--text", "hi")
    assert result.code == 2
    assert "unrecognized flag --text (yiji event submit takes the text without a flag)" in result.err
    assert "did you mean --text" not in result.err
    assert not (tmp_path / "x.db").exists()


def test_a_flag_other_commands_take_as_it_is_is_not_offered_as_a_guess(tmp_path: Path) -> None:
    result = run_cli("--db", str(tmp_path / "x.db"), "scopes", "--text", "hi")
    assert result.code == 2
    assert "did you mean --text" not in result.err
    assert "unrecognized flag --text (yiji scopes has no such flag;" in result.err


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (
            ["recal", "西湖"],
            "yiji: error: argument COMMAND: invalid choice (did you mean recall?) (see yiji --help)",
        ),
        (["memory", "lst"], "invalid choice (did you mean list?) (see yiji memory --help)"),
        (["hook", "instal", "claude-code"], "invalid choice (did you mean install?) (see yiji hook --help)"),
        (
            ["hook", "install", "codx"],
            "invalid choice (did you mean codex? choose from 'claude-code', 'codex')",
        ),
        (["recall", "--mode", "semntic", "x"], "argument --mode: invalid choice (did you mean semantic?"),
    ],
)
def test_a_mistyped_command_or_choice_names_the_one_meant(
    tmp_path: Path, words: list[str], said: str
) -> None:
    result = run_cli("--db", str(tmp_path / "x.db"), *words, cwd=tmp_path)
    assert result.code == 2
    assert said in result.err
    assert "'import-transcripts'" not in result.err  # not the list of every command
    assert not (tmp_path / "x.db").exists()


def test_a_command_nothing_is_close_to_lists_the_commands(tmp_path: Path) -> None:
    result = run_cli("--db", str(tmp_path / "x.db"), "zzzz")
    assert result.code == 2
    assert "did you mean" not in result.err and "(choose from 'event', 'memory'" in result.err
    as_json = run_cli("--json", "--db", str(tmp_path / "x.db"), "recal", "西湖")
    assert as_json.code == 2
    assert (
        as_json.err.strip()
        and '"rule": "invalid choice (did you mean recall?) (see yiji --help)"' in as_json.err
    )


def test_doctor_says_why_event_fts_counts_fewer(tmp_path: Path) -> None:
    db = str(tmp_path / "d.db")
    assert run_cli("--db", db, "demo").code == 0
    report = run_cli("--db", db, "doctor")
    assert report.code == 0, report.err
    assert "events=5" in report.out and "event_fts=1" in report.out
    assert "event_fts indexes only conversation events without a derived memory" in report.out
    fresh = str(tmp_path / "f.db")
    assert run_cli("--db", fresh, "persona", "show").code == 0
    assert "event_fts indexes" not in run_cli("--db", fresh, "doctor").out  # nothing to explain
