"""``yiji hook install|uninstall``: yiji's entries merged into a host's settings file without touching
the user's own, idempotently; and the shipped integration files equal what the command writes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from yiji.domain import hook_settings

from .conftest import run_yiji

ROOT = Path(__file__).resolve().parent.parent

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
    },
}


def test_merge_keeps_other_entries_and_is_idempotent() -> None:
    once = hook_settings.merge(USER_SETTINGS, "claude-code", "yiji", hook_settings.EVENTS)
    assert hook_settings.merge(once, "claude-code", "yiji", hook_settings.EVENTS) == once
    assert once["model"] == "opus" and once["permissions"] == USER_SETTINGS["permissions"]
    assert once["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert once["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert [g["hooks"][0]["command"] for g in once["hooks"]["Stop"]] == [
        "notify-send done",
        "yiji hook claude-code Stop",
    ]
    assert once["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("UserPromptSubmit --recall")
    # another command replaces yiji's entries instead of adding to them
    moved = hook_settings.merge(once, "claude-code", "/opt/yiji/bin/yiji --db /d/y.db", ("Stop",))
    assert [g["hooks"][0]["command"] for g in moved["hooks"]["Stop"]] == [
        "notify-send done",
        "/opt/yiji/bin/yiji --db /d/y.db hook claude-code Stop",
    ]
    assert "SessionStart" not in moved["hooks"]
    assert hook_settings.remove(once, "claude-code") == USER_SETTINGS
    assert hook_settings.remove(once, "codex") == once  # another host's entries are not yiji's for this one


def test_a_group_shared_with_the_user_keeps_the_users_handler() -> None:
    shared = {
        "hooks": {
            "Stop": [
                {
                    "hooks": [
                        {"type": "command", "command": "yiji hook claude-code Stop"},
                        {"type": "command", "command": "say done"},
                    ]
                }
            ]
        }
    }
    assert hook_settings.remove(shared, "claude-code") == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


@pytest.mark.parametrize(
    ("host", "shipped"),
    [
        ("claude-code", ROOT / "integrations" / "claude-code" / "settings.json"),
        ("codex", ROOT / "integrations" / "codex" / "hooks.json"),
    ],
)
def test_shipped_integration_files_are_what_install_writes(host: str, shipped: Path) -> None:
    events = tuple(e for e in hook_settings.HOST_EVENTS[host] if e != "UserPromptSubmit")
    expected = hook_settings.merge({}, host, "yiji", events)
    assert json.loads(shipped.read_text(encoding="utf-8")) == expected
    if host == "claude-code":
        plugin = json.loads((shipped.parent / "hooks" / "hooks.json").read_text(encoding="utf-8"))
        assert plugin["hooks"] == expected["hooks"]
        manifest = json.loads((shipped.parent / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
        assert manifest["name"] == "yiji"


@pytest.mark.parametrize(
    ("command", "project"),
    [
        ("yiji", None),
        ("yiji --project work", "work"),
        ("/opt/yiji --db '/my data/y.db' --project=work", "work"),
        ("yiji --project a --project b", "b"),
        ("yiji --project", None),
        ("yiji 'unbalanced", None),
    ],
)
def test_the_project_an_installed_command_names(command: str, project: str | None) -> None:
    assert hook_settings.command_option(command, "--project") == project


def project_of(folder: Path) -> str:
    return f"{folder.name}-{hashlib.sha256(str(folder).encode()).hexdigest()[:8]}"


def test_install_dry_run_install_again_and_uninstall(tmp_path: Path) -> None:
    work = tmp_path.resolve() / "repo"
    (work / ".git").mkdir(parents=True)
    settings = work / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps(USER_SETTINGS, indent=4)
    settings.write_text(original, encoding="utf-8")
    env = {"HOME": str(tmp_path / "home")}

    dry = run_yiji("--json", "hook", "install", "claude-code", "--project", "--dry-run", env=env, cwd=work)
    assert dry.code == 0, dry.err
    assert dry.json()["changed"] is True and dry.json()["written"] is False
    assert settings.read_text(encoding="utf-8") == original

    plain_dry = run_yiji("hook", "install", "claude-code", "--project", "--dry-run", env=env, cwd=work)
    first, _, rest = plain_dry.out.partition("\n")
    assert first == (
        "yiji's claude-code hooks (SessionStart, PreCompact, Stop, SessionEnd) would be installed in "
        f"{settings}"
    )
    said, _, file = rest.partition("the file would read:\n")
    assert f"go to project {project_of(work)}" in said
    assert json.loads(file) == hook_settings.merge(
        USER_SETTINGS, "claude-code", "yiji", ("SessionStart", "PreCompact", "Stop", "SessionEnd")
    )
    assert settings.read_text(encoding="utf-8") == original

    done = run_yiji("hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert done.code == 0, done.err
    # one confirmation, the project this folder's sessions go to, and not the whole file
    assert done.out.splitlines()[0] == (
        f"yiji's claude-code hooks (SessionStart, PreCompact, Stop, SessionEnd) installed in {settings}"
    )
    assert done.out.splitlines()[1].startswith(f"sessions in {work} go to project {project_of(work)} (")
    assert f"--project {project_of(work)} recall ...)" in done.out
    assert len(done.out.splitlines()) == 2 and "{" not in done.out and done.err == ""
    installed = json.loads(settings.read_text(encoding="utf-8"))
    assert installed == hook_settings.merge(
        USER_SETTINGS, "claude-code", "yiji", ("SessionStart", "PreCompact", "Stop", "SessionEnd")
    )
    again = run_yiji("--json", "hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert again.json()["changed"] is False and json.loads(settings.read_text(encoding="utf-8")) == installed
    assert again.json()["project"] == {"project": project_of(work), "folder": str(work), "rule": "git-root"}
    same = run_yiji("hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert same.out.splitlines()[0].endswith(f"already in {settings}; nothing changed")
    recall = run_yiji("hook", "install", "claude-code", "--project", "--recall", env=env, cwd=work)
    assert recall.out.startswith("yiji's claude-code hooks (SessionStart, UserPromptSubmit, ") and (
        f"updated in {settings}\n" in recall.out
    )

    gone = run_yiji("hook", "uninstall", "claude-code", "--project", env=env, cwd=work)
    assert gone.code == 0, gone.err
    assert gone.out == f"yiji's claude-code hooks removed from {settings}\n"
    none = run_yiji("hook", "uninstall", "claude-code", "--project", env=env, cwd=work)
    assert none.out == f"yiji has no claude-code hooks in {settings}; nothing changed\n"
    assert json.loads(settings.read_text(encoding="utf-8")) == USER_SETTINGS
    assert not (tmp_path / "home" / ".claude").exists()  # --project touched the project's file only


def test_codex_user_install_with_recall_and_a_broken_file(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home)}
    done = run_yiji(
        "hook", "install", "codex", "--recall", "--command", "/opt/yiji/bin/yiji", env=env, cwd=tmp_path
    )
    assert done.code == 0, done.err
    written = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))
    assert sorted(written["hooks"]) == ["PreCompact", "SessionStart", "Stop", "UserPromptSubmit"]
    assert (
        written["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        == "/opt/yiji/bin/yiji hook codex UserPromptSubmit --recall"
    )
    # a user-wide install: every folder gets a project of its own
    assert "; other folders have their own: " in done.out and done.out.endswith(" hook project --dir PATH\n")
    pinned = run_yiji(
        "hook", "install", "codex", "--command", "yiji --project work --db /d/y.db", env=env, cwd=tmp_path
    )
    assert pinned.out.splitlines()[1].startswith("sessions go to project work, the command's --project (")
    assert run_yiji("hook", "uninstall", "codex", env=env, cwd=tmp_path).code == 0
    assert json.loads((codex_home / "hooks.json").read_text(encoding="utf-8")) == {}

    (codex_home / "hooks.json").write_text("{not json", encoding="utf-8")
    refused = run_yiji("hook", "install", "codex", env=env, cwd=tmp_path)
    assert refused.code == 2 and "not valid JSON" in refused.err
    assert (codex_home / "hooks.json").read_text(encoding="utf-8") == "{not json"
