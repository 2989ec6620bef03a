"""Archives and backups cover the whole database: a scope flag is refused by name, never ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from .inprocess import run_cli


@pytest.mark.parametrize("command", ["export", "backup"])
@pytest.mark.parametrize("flag", ["persona", "project"])
@pytest.mark.parametrize("before", [True, False])
def test_a_scope_flag_on_a_whole_database_command_is_refused_by_name(
    tmp_path: Path, command: str, flag: str, before: bool
) -> None:
    db = str(tmp_path / "y.db")
    for persona in ("pa", "pb"):
        sent = run_cli(
            "--db", db, "--persona", persona, "event", "submit", "--session", "s", "--role", "user", "hi"
        )
        assert sent.code == 0, sent.err
    target = tmp_path / "out.json"
    scope = (f"--{flag}", "pa")
    args = (*scope, command, str(target)) if before else (command, str(target), *scope)
    refused = run_cli("--db", db, *args)
    assert refused.code == 2 and f"{flag}: is not accepted by {command}" in refused.err
    assert not target.exists()
    whole = run_cli("--db", db, command, str(target), "--json")
    assert whole.code == 0 and target.exists()


@pytest.mark.parametrize("command", ["import", "restore"])
def test_import_and_restore_refuse_a_scope_flag_too(tmp_path: Path, command: str) -> None:
    source = tmp_path / "src.db"
    assert run_cli("--db", str(source), "event", "submit", "--session", "s", "--role", "user", "hi").code == 0
    copy = tmp_path / ("copy.json" if command == "import" else "copy.db")
    made = run_cli("--db", str(source), "export" if command == "import" else "backup", str(copy))
    assert made.code == 0, made.err
    target = tmp_path / "target.db"
    refused = run_cli("--db", str(target), "--persona", "pa", command, str(copy))
    assert refused.code == 2 and f"persona: is not accepted by {command}" in refused.err
    assert not target.exists()


@pytest.mark.parametrize("command", ["export", "import", "backup", "restore"])
def test_the_help_of_a_whole_database_command_does_not_offer_a_scope(command: str) -> None:
    shown = run_cli(command, "--help")
    assert shown.code == 0
    for offered in ("--db", "--config", "--json"):
        assert offered in shown.out
    assert "--persona" not in shown.out and "--project" not in shown.out
