"""``yiji hook install|uninstall``: yiji's entries merged into a host's settings file without touching
the user's own, idempotently; and the shipped integration files equal what the command writes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from yiji.domain import hook_settings

from .conftest import CliResult, require_tool, run_yiji
from .hook_fixtures import cc_payload, cc_turns, write_lines

SESSION = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
SCRIPT = Path(sys.executable).parent / "yiji"  # the console script of the environment the tests run in

ROOT = Path(__file__).resolve().parent.parent

USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
    },
}


CC_EVENTS = hook_settings.HOST_EVENTS["claude-code"]
ALL_CC = ", ".join(CC_EVENTS)
MODULE = f"{sys.executable} -m yiji"  # what install writes when run as `python -m yiji`, as tests run it


def test_merge_keeps_other_entries_and_is_idempotent() -> None:
    once = hook_settings.merge(USER_SETTINGS, "claude-code", "yiji", CC_EVENTS, recall=True)
    assert hook_settings.merge(once, "claude-code", "yiji", CC_EVENTS, recall=True) == once
    assert once["model"] == "opus" and once["permissions"] == USER_SETTINGS["permissions"]
    assert once["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    assert once["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert once["hooks"]["Stop"][1] == {
        "hooks": [
            {"type": "command", "command": "yiji hook claude-code Stop", "timeout": 20, "yiji": "claude-code"}
        ]
    }
    assert once["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("UserPromptSubmit --recall")
    # another command replaces yiji's entries where they stand instead of adding to them
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
                        {"type": "command", "command": "/x/y", "yiji": "claude-code"},
                        {"type": "command", "command": "say done"},
                    ]
                }
            ]
        }
    }
    assert hook_settings.remove(shared, "claude-code") == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }
    replaced = hook_settings.merge(shared, "claude-code", "/bin/yiji", ("Stop",))
    assert [h["command"] for h in replaced["hooks"]["Stop"][0]["hooks"]] == [
        "/bin/yiji hook claude-code Stop",
        "say done",
    ]


@pytest.mark.parametrize(
    ("host", "shipped"),
    [
        ("claude-code", ROOT / "integrations" / "claude-code" / "settings.json"),
        ("codex", ROOT / "integrations" / "codex" / "hooks.json"),
    ],
)
def test_shipped_integration_files_are_what_install_writes(host: str, shipped: Path) -> None:
    expected = hook_settings.merge({}, host, "yiji", hook_settings.HOST_EVENTS[host])
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
    assert first == f"yiji's claude-code hooks ({ALL_CC}) would be installed in {settings}"
    said, _, file = rest.partition("the file would read:\n")
    assert f"go to project {project_of(work)}" in said
    assert json.loads(file) == hook_settings.merge(USER_SETTINGS, "claude-code", MODULE, CC_EVENTS)
    assert settings.read_text(encoding="utf-8") == original

    done = run_yiji("hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert done.code == 0, done.err
    # one confirmation, the project this folder's sessions go to, and not the whole file
    assert done.out.splitlines()[0] == f"yiji's claude-code hooks ({ALL_CC}) installed in {settings}"
    assert done.out.splitlines()[1] == f"the host runs {MODULE} hook claude-code EVENT"
    assert done.out.splitlines()[2].startswith(f"sessions in {work} go to project {project_of(work)} (")
    assert f"--project {project_of(work)} recall ...)" in done.out
    skill = work / ".claude" / "skills" / "remember" / "SKILL.md"
    assert done.out.splitlines()[3] == f"yiji's remember skill installed in {skill}"
    assert len(done.out.splitlines()) == 4 and "{" not in done.out and done.err == ""
    installed = json.loads(settings.read_text(encoding="utf-8"))
    assert installed == hook_settings.merge(USER_SETTINGS, "claude-code", MODULE, CC_EVENTS)
    again = run_yiji("--json", "hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert again.json()["changed"] is False and json.loads(settings.read_text(encoding="utf-8")) == installed
    assert again.json()["project"] == {"project": project_of(work), "folder": str(work), "rule": "git-root"}
    same = run_yiji("hook", "install", "claude-code", "--project", env=env, cwd=work)
    assert same.out.splitlines()[0].endswith(f"already in {settings}; nothing changed")
    recall = run_yiji("hook", "install", "claude-code", "--project", "--recall", env=env, cwd=work)
    assert recall.out.startswith(f"yiji's claude-code hooks ({ALL_CC}) updated in {settings}\n")
    prompt = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["UserPromptSubmit"]
    assert prompt[0]["hooks"][0]["command"] == f"{MODULE} hook claude-code UserPromptSubmit --recall"

    gone = run_yiji("hook", "uninstall", "claude-code", "--project", env=env, cwd=work)
    assert gone.code == 0, gone.err
    assert gone.out == (
        f"yiji's claude-code hooks removed from {settings}\nyiji's remember skill removed from {skill}\n"
    )
    none = run_yiji("hook", "uninstall", "claude-code", "--project", env=env, cwd=work)
    assert none.out == (
        f"yiji has no claude-code hooks in {settings}; nothing changed\n"
        f"no remember skill of yiji's in {skill}\n"
    )
    assert not skill.parent.exists()
    assert json.loads(settings.read_text(encoding="utf-8")) == USER_SETTINGS
    assert not (tmp_path / "home" / ".claude").exists()  # --project touched the project's file only


def test_codex_user_install_with_recall_and_a_broken_file(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home)}
    done = run_yiji("hook", "install", "codex", "--recall", "--command", str(SCRIPT), env=env, cwd=tmp_path)
    assert done.code == 0, done.err
    written = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))
    assert sorted(written["hooks"]) == sorted(hook_settings.HOST_EVENTS["codex"])
    assert (
        written["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        == f"{SCRIPT} hook codex UserPromptSubmit --recall"
    )
    # a user-wide install: every folder gets a project of its own
    assert "; other folders have their own: " in done.out and " hook project --dir PATH\n" in done.out
    pinned = run_yiji(
        "hook",
        "install",
        "codex",
        "--command",
        f"{SCRIPT} --project work --db /d/y.db",
        env=env,
        cwd=tmp_path,
    )
    assert pinned.out.splitlines()[2].startswith("sessions go to project work, the command's --project (")
    assert run_yiji("hook", "uninstall", "codex", env=env, cwd=tmp_path).code == 0
    assert not (codex_home / "hooks.json").exists()  # it held nothing but yiji's hooks

    (codex_home / "hooks.json").write_text("{not json", encoding="utf-8")
    refused = run_yiji("hook", "install", "codex", env=env, cwd=tmp_path)
    assert refused.code == 2 and "not valid JSON" in refused.err
    assert (codex_home / "hooks.json").read_text(encoding="utf-8") == "{not json"


# -- a person's settings file: kept as theirs (issue 50, item 6) ----------------------------------


def claude_settings(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The user settings file of Claude Code under a home of its own, and the environment naming it."""
    folder = tmp_path / "home" / ".claude"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "settings.json", {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(folder)}


def install(env: dict[str, str], *args: str, verb: str = "install", host: str = "claude-code") -> CliResult:
    return run_yiji("hook", verb, host, *args, env=env, cwd=Path(env["HOME"]))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".yiji-" in p.name)


def yiji_handlers(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        h
        for g in settings.get("hooks", {}).get(event, [])
        for h in g["hooks"]
        if hook_settings.ours(h, "claude-code", event)
    ]


def test_permissions_of_a_private_settings_file_are_kept(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    settings.write_text(json.dumps({"env": {"API_TOKEN": "s3cret"}}), encoding="utf-8")
    settings.chmod(0o600)
    assert install(env).code == 0
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert json.loads(settings.read_text(encoding="utf-8"))["env"] == {"API_TOKEN": "s3cret"}
    assert install(env, verb="uninstall").code == 0
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600


def test_a_symlinked_settings_file_is_changed_through_its_link(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}', encoding="utf-8")
    settings.symlink_to(dotfiles)
    assert install(env).code == 0
    assert settings.is_symlink() and settings.resolve() == dotfiles.resolve()
    assert "Stop" in json.loads(dotfiles.read_text(encoding="utf-8"))["hooks"]
    assert leftovers(settings.parent) == [] and leftovers(dotfiles.parent) == []


def test_a_read_only_settings_file_is_refused_not_replaced(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    settings.write_text('{"model": "opus"}', encoding="utf-8")
    settings.chmod(0o444)
    done = install(env)
    assert done.code != 0 and "the settings file is read-only; nothing was changed" in done.err, done.err
    assert settings.read_text(encoding="utf-8") == '{"model": "opus"}'
    assert stat.S_IMODE(settings.stat().st_mode) == 0o444 and leftovers(settings.parent) == []


def test_as_root_another_users_file_keeps_its_owner(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        require_tool("/nonexistent/root", "changing a file's owner needs root; CI runs as root")
    settings, env = claude_settings(tmp_path)
    settings.write_text("{}", encoding="utf-8")
    os.chown(settings, 4321, 4322)
    settings.chmod(0o640)
    assert install(env).code == 0
    found = settings.stat()
    assert (found.st_uid, found.st_gid, stat.S_IMODE(found.st_mode)) == (4321, 4322, 0o640)


def test_numbers_are_written_back_as_they_were_and_nan_is_refused(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    text = '{"big": 1e400, "exact": 1.10, "huge": 123456789012345678901234567890, "neg": -0.0}'
    settings.write_text(text, encoding="utf-8")
    assert install(env).code == 0
    written = settings.read_text(encoding="utf-8")
    assert '"big": 1e400' in written and '"exact": 1.10' in written and "Infinity" not in written
    assert '"huge": 123456789012345678901234567890' in written and '"neg": -0.0' in written
    assert install(env, verb="uninstall").code == 0
    assert json.loads(settings.read_text(encoding="utf-8"), parse_float=str) == json.loads(
        text, parse_float=str
    )
    for constant in ("NaN", "Infinity", "-Infinity"):
        settings.write_text(f'{{"x": {constant}}}', encoding="utf-8")
        refused = install(env)
        assert refused.code == 2 and f"{constant} is not JSON" in refused.err, refused.err
        assert settings.read_text(encoding="utf-8") == f'{{"x": {constant}}}'


def test_a_users_command_that_mentions_yiji_is_never_taken(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    mine = {"type": "command", "command": "~/bin/yiji-notify.sh hook claude-code Stop"}
    also = {"type": "command", "command": "echo yiji hook claude-code Stop"}
    original = {"hooks": {"Stop": [{"hooks": [mine]}, {"hooks": [also]}]}}
    settings.write_text(json.dumps(original), encoding="utf-8")
    assert install(env).code == 0
    stop = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["Stop"]
    assert stop[0] == {"hooks": [mine]} and stop[1] == {"hooks": [also]} and len(stop) == 3
    assert install(env, verb="uninstall").code == 0
    assert json.loads(settings.read_text(encoding="utf-8")) == original


def test_yiji_entries_a_user_edited_or_an_earlier_release_wrote_are_recognised(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    assert install(env).code == 0
    edited = json.loads(settings.read_text(encoding="utf-8"))
    handler = yiji_handlers(edited, "Stop")[0]
    handler["command"] += " 2>>/tmp/yiji-stop.log"
    # an earlier release wrote no marker: its exact command line is still known
    edited["hooks"]["PreCompact"] = [
        {"hooks": [{"type": "command", "command": "yiji hook claude-code PreCompact"}]}
    ]
    settings.write_text(json.dumps(edited), encoding="utf-8")
    again = install(env)
    assert again.code == 0 and " updated in " in again.out
    reread = json.loads(settings.read_text(encoding="utf-8"))
    assert len(yiji_handlers(reread, "Stop")) == 1 and len(reread["hooks"]["Stop"]) == 1
    assert len(reread["hooks"]["PreCompact"]) == 1 and "marker" not in reread
    assert install(env, verb="uninstall").code == 0
    assert not settings.exists()  # it held nothing but yiji's hooks
    settings.write_text(json.dumps(edited), encoding="utf-8")
    assert install(env, verb="uninstall").code == 0
    assert not settings.exists()


def test_the_command_written_runs_from_the_hosts_environment(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    bare = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "CLAUDE_CONFIG_DIR": env["CLAUDE_CONFIG_DIR"]}
    done = subprocess.run(
        [str(SCRIPT), "hook", "install", "claude-code"],
        env=bare,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    command = yiji_handlers(json.loads(settings.read_text(encoding="utf-8")), "Stop")[0]["command"]
    assert command == f"{SCRIPT} hook claude-code Stop"
    assert f"the host runs {SCRIPT} hook claude-code EVENT" in done.stdout
    # the host runs it with its own PATH, which does not hold yiji's folder
    transcript = tmp_path / "t.jsonl"
    write_lines(transcript, cc_turns(SESSION, str(tmp_path), [("remember the blue door", "noted")]))
    payload = json.dumps(cc_payload("Stop", SESSION, transcript, tmp_path))
    db = tmp_path / "data" / "y.db"
    ran = subprocess.run(
        ["sh", "-c", command],
        input=payload,
        env={"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "YIJI_DB": str(db)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (ran.returncode, ran.stderr) == (0, "")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (2,)
    # run as `python -m yiji`, the command is this interpreter with -m yiji
    module = run_yiji("--json", "hook", "install", "claude-code", "--dry-run", env=env, cwd=tmp_path)
    assert module.json()["command"] == f"{sys.executable} -m yiji"


def test_no_command_that_would_not_run_is_written(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    missing = install(env, "--command", "yiji-nowhere-to-be-found --db /d/y.db")
    assert missing.code == 2 and "its program is not an executable file nor found on PATH" in missing.err
    embedded = subprocess.run(
        [sys.executable, "-c", "import sys; from yiji.cli import main; sys.exit(main(sys.argv[1:]))"]
        + ["hook", "install", "claude-code"],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert embedded.returncode == 2 and "yiji was not started as a command" in embedded.stderr
    assert not settings.exists()


def test_every_failure_is_named_and_nothing_is_left_behind(tmp_path: Path) -> None:
    settings, env = claude_settings(tmp_path)
    # a lone surrogate escape is valid JSON text: it is written back as the same escape
    settings.write_text('{"note": "cut \\ud83d here"}', encoding="utf-8")
    kept = install(env)
    assert kept.code == 0, kept.err
    assert '"note": "cut \\ud83d here"' in settings.read_text(encoding="utf-8")
    assert leftovers(settings.parent) == []
    settings.write_text("[" * 500 + "]" * 500, encoding="utf-8")
    deep = install(env)
    assert deep.code == 2 and "nests deeper than 128 levels" in deep.err, deep.err
    settings.unlink()
    settings.mkdir()
    folder = install(env)
    assert folder.code == 2 and "the settings path is a folder, not a file" in folder.err
    settings.rmdir()
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    parent = install({**env, "CLAUDE_CONFIG_DIR": str(blocker / "claude")})
    assert parent.code == 2 and "a parent of the settings file is a file, not a folder" in parent.err
    for result in (kept, deep, folder, parent):
        assert "internal" not in result.err and "Traceback" not in result.err
    assert leftovers(settings.parent) == []


def test_a_folder_the_user_cannot_write_is_named(tmp_path: Path) -> None:
    require_tool("unshare", "runs yiji as an unprivileged user")
    settings, env = claude_settings(tmp_path)
    settings.write_text("{}", encoding="utf-8")
    settings.chmod(0o666)
    settings.parent.chmod(0o555)
    tmp_path.chmod(0o755)
    script = (
        f"HOME={env['HOME']} CLAUDE_CONFIG_DIR={env['CLAUDE_CONFIG_DIR']} "
        f"{sys.executable} -m yiji hook install claude-code --command {sys.executable}; echo code=$?"
    )
    prefix = ["sh", "-s"]
    if os.geteuid() == 0:
        prefix = ["unshare", "--user", "--map-user=1000", "--map-group=1000", "sh", "-s"]
    try:
        out = subprocess.run(prefix, input=script, capture_output=True, text=True, check=False)
    finally:
        settings.parent.chmod(0o755)
    text = out.stdout + out.stderr
    assert "code=1" in text and "the settings file's folder is not writable; nothing was changed" in text, (
        text
    )
    assert settings.read_text(encoding="utf-8") == "{}" and leftovers(settings.parent) == []


# -- Codex: the events it sends and the trust it asks for (issue 50, item 2) ----------------------

# (event, command, timeout) -> the hash Codex 0.171.0 reports (`codex app-server`, hooks/list currentHash)
CODEX_HASHES = [
    (
        "PreCompact",
        "yiji hook codex PreCompact",
        20,
        "9132eadcd5766e4a26ab8b08e6a08632813218b7004f66c0e3e082ddb3e2dc0a",
    ),
    (
        "SessionStart",
        "yiji hook codex SessionStart",
        15,
        "ceb0658107475fcd37df57bce2bd58739eed09ede53278ab34b346517c0165a4",
    ),
    ("Stop", "yiji hook codex Stop", 20, "978f9b3be8e0f762c4ebc110cf4f481a1d7a3c34eded72959d634f2ba9f10f6c"),
    ("SessionEnd", "echo b", 3, "7fdcfde7cebf533caec0e61dd15d95edd097d182e378b222f3398ee015d76340"),
]


@pytest.mark.parametrize(("event", "command", "timeout", "digest"), CODEX_HASHES)
def test_codex_trusted_hash_is_the_one_codex_computes(
    event: str, command: str, timeout: int, digest: str
) -> None:
    handler = {"type": "command", "command": command, "timeout": timeout, hook_settings.MARKER: "codex"}
    assert hook_settings.codex_trusted_hash(event, handler) == f"sha256:{digest}"


def codex_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir(parents=True, exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    return codex_home, {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home)}


USER_CONFIG = """# my Codex
model = "o3"

[projects."/home/me/atlas"]
trust_level = "trusted"

[hooks.state."/home/me/.codex/hooks.json:stop:0:0"]
trusted_hash = "sha256:0000"
"""


def test_codex_install_wires_every_event_and_says_how_codex_comes_to_run_them(tmp_path: Path) -> None:
    codex_home, env = codex_env(tmp_path)
    (codex_home / "config.toml").write_text(USER_CONFIG, encoding="utf-8")
    done = install(env, host="codex")
    assert done.code == 0, done.err
    written = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))
    assert sorted(written["hooks"]) == sorted(
        ["SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "Interrupt", "SessionEnd"]
    )
    assert written["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex's own limit for it
    assert '"Trust all and continue"' in done.out and "--dangerously-bypass-hook-trust" in done.out
    assert "yiji hook install codex --trust" in done.out
    assert (codex_home / "config.toml").read_text(encoding="utf-8") == USER_CONFIG  # never trusted silently


def test_codex_trust_is_recorded_when_asked_and_removed_by_uninstall(tmp_path: Path) -> None:
    codex_home, env = codex_env(tmp_path)
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    done = install(env, "--trust", host="codex")
    assert done.code == 0, done.err
    assert f"Codex's trust in yiji's 6 hooks recorded in {config}" in done.out
    state = tomllib.loads(config.read_text(encoding="utf-8"))["hooks"]["state"]
    hooks = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    real = codex_home.resolve()
    for event, key in [
        ("Stop", "stop"),
        ("SessionEnd", "session_end"),
        ("UserPromptSubmit", "user_prompt_submit"),
    ]:
        handler = hooks[event][0]["hooks"][0]
        assert state[f"{real}/hooks.json:{key}:0:0"] == {
            "trusted_hash": hook_settings.codex_trusted_hash(event, handler)
        }
    assert config.read_text(encoding="utf-8").startswith(USER_CONFIG)
    again = install(env, "--trust", host="codex")
    assert "already in" in again.out and "Codex's trust in yiji's" not in again.out

    gone = install(env, verb="uninstall", host="codex")
    assert gone.code == 0, gone.err
    assert f"Codex's trust in 6 of yiji's former hooks removed from {config}" in gone.out
    assert config.read_text(encoding="utf-8") == USER_CONFIG.rstrip("\n") + "\n"


def test_uninstall_removes_the_trust_codex_itself_recorded(tmp_path: Path) -> None:
    codex_home, env = codex_env(tmp_path)
    assert install(env, host="codex").code == 0
    real = codex_home.resolve()
    hooks = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    trusted = "".join(
        f'\n[hooks.state."{real}/hooks.json:{key}:0:0"]\n'
        f'trusted_hash = "{hook_settings.codex_trusted_hash(event, hooks[event][0]["hooks"][0])}"\n'
        for event, key in [("Stop", "stop"), ("SessionStart", "session_start")]
    )
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG + trusted, encoding="utf-8")  # as Codex writes it when a person trusts
    gone = install(env, verb="uninstall", host="codex")
    assert gone.code == 0 and "Codex's trust in 2 of yiji's former hooks removed" in gone.out
    assert config.read_text(encoding="utf-8") == USER_CONFIG.rstrip("\n") + "\n"


def test_user_prompt_submit_and_the_turn_ending_events_capture(tmp_path: Path) -> None:
    db = tmp_path / "data" / "y.db"
    env = {"YIJI_DB": str(db), "YIJI_HOOK_LOG": str(tmp_path / "hooks.log"), "HOME": str(tmp_path)}
    transcript = tmp_path / "t.jsonl"
    write_lines(transcript, cc_turns(SESSION, str(tmp_path), [("the blue door", "noted")]))
    for host, event, count in (("claude-code", "UserPromptSubmit", 2), ("claude-code", "StopFailure", 4)):
        if count == 4:
            write_lines(transcript, cc_turns(SESSION, str(tmp_path), [("the red door", "noted")], first=10))
        payload = json.dumps(cc_payload(event, SESSION, transcript, tmp_path, prompt="next"))
        ran = run_yiji("hook", host, event, env=env, input=payload)
        assert (ran.code, ran.out, ran.err) == (0, "", "")
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM events").fetchone() == (count,), event


def test_codex_refusals_come_before_either_file_is_written(tmp_path: Path) -> None:
    codex_home, env = codex_env(tmp_path)
    assert install(env, host="codex").code == 0
    hooks = codex_home / "hooks.json"
    installed = hooks.read_text(encoding="utf-8")
    config = codex_home / "config.toml"
    config.write_text("model = [unclosed\n", encoding="utf-8")
    broken = install(env, verb="uninstall", host="codex")
    assert broken.code == 2 and "config.toml cannot be read as TOML; nothing was changed" in broken.err
    assert hooks.read_text(encoding="utf-8") == installed
    config.write_text(USER_CONFIG, encoding="utf-8")
    hooks.chmod(0o444)
    refused = install(env, "--trust", "--recall", host="codex")
    assert refused.code == 1 and "the settings file is read-only" in refused.err
    assert (
        config.read_text(encoding="utf-8") == USER_CONFIG and hooks.read_text(encoding="utf-8") == installed
    )
    assert install(env, "--trust", verb="uninstall", host="codex").code == 2  # --trust is for install only


CODEX_HOSTS_BIN = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "yiji"
    / "hosts-claude-code-2.1.332-codex-0.171.0"
    / "node_modules"
    / ".bin"
)


def _codex_hooks(codex: str, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    """The hooks Codex itself lists for ``cwd`` (``codex app-server``, JSON-RPC ``hooks/list``), with
    each one's ``key``, ``currentHash`` and ``trustStatus``."""
    node = os.environ.get("YIJI_NODE") or shutil.which("node")
    path = os.pathsep.join([*([str(Path(node).parent)] if node else []), "/usr/bin", "/bin"])
    requests = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "yiji-test", "version": "0"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    with subprocess.Popen(
        [codex, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=cwd,
        env={**env, "PATH": path},
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            for request in requests:
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
            for line in server.stdout:
                answer = json.loads(line)
                if answer.get("id") == 2:
                    return list(answer["result"]["data"][0]["hooks"])
        finally:
            server.kill()
    raise AssertionError("codex app-server gave no answer to hooks/list")


def test_the_real_codex_trusts_what_install_trust_records(tmp_path: Path) -> None:
    """Codex 0.171.0 itself: yiji's six hooks are untrusted after a plain install, trusted after
    `install --trust` (the keys and hashes are Codex's own), and gone after `uninstall`."""
    codex = next(
        (
            c
            for c in (os.environ.get("YIJI_CODEX"), str(CODEX_HOSTS_BIN / "codex"))
            if c and os.access(c, os.X_OK)
        ),
        None,
    ) or require_tool("codex", "@openai/codex 0.171.0 from npm (see .ci/run)")
    codex_home, env = codex_env(tmp_path)
    (codex_home / "config.toml").write_text('model = "o3"\n', encoding="utf-8")
    assert install(env, host="codex").code == 0
    listed = _codex_hooks(codex, env, tmp_path)
    ours = [h for h in listed if str(codex_home.resolve()) in h["key"]]
    assert len(ours) == 6 and {h["trustStatus"] for h in ours} == {"untrusted"}
    written = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    expected = {
        f"{codex_home.resolve()}/hooks.json:{key}:0:0": hook_settings.codex_trusted_hash(
            event, written[event][0]["hooks"][0]
        )
        for event, key in [
            ("SessionStart", "session_start"),
            ("UserPromptSubmit", "user_prompt_submit"),
            ("PreCompact", "pre_compact"),
            ("Stop", "stop"),
            ("Interrupt", "interrupt"),
            ("SessionEnd", "session_end"),
        ]
    }
    assert {h["key"]: h["currentHash"] for h in ours} == expected
    assert install(env, "--trust", host="codex").code == 0
    assert {h["key"]: h["trustStatus"] for h in _codex_hooks(codex, env, tmp_path)} == dict.fromkeys(
        expected, "trusted"
    )
    # a hook of the person's own after yiji's, trusted by them: after uninstall it moves up, and so does
    # its trust
    mine = {"type": "command", "command": "echo mine", "timeout": 5}
    written["Stop"].append({"hooks": [mine]})
    (codex_home / "hooks.json").write_text(json.dumps({"hooks": written}), encoding="utf-8")
    with (codex_home / "config.toml").open("a", encoding="utf-8") as config:
        config.write(
            f'\n[hooks.state."{codex_home.resolve()}/hooks.json:stop:1:0"]\n'
            f'trusted_hash = "{hook_settings.codex_trusted_hash("Stop", mine)}"\n'
        )
    assert install(env, verb="uninstall", host="codex").code == 0
    assert [(h["command"], h["trustStatus"]) for h in _codex_hooks(codex, env, tmp_path)] == [
        ("echo mine", "trusted")
    ]


def test_a_persons_trust_moves_with_their_hook_when_yijis_go(tmp_path: Path) -> None:
    codex_home, env = codex_env(tmp_path)
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG, encoding="utf-8")
    assert install(env, "--trust", host="codex").code == 0
    hooks = json.loads((codex_home / "hooks.json").read_text(encoding="utf-8"))
    mine = {"type": "command", "command": "echo mine", "timeout": 5}
    hooks["hooks"]["Stop"] += [{"hooks": [mine]}]
    (codex_home / "hooks.json").write_text(json.dumps(hooks), encoding="utf-8")
    real = f"{codex_home.resolve()}/hooks.json"
    digest = hook_settings.codex_trusted_hash("Stop", mine)
    with config.open("a", encoding="utf-8") as file:
        file.write(f'\n[hooks.state."{real}:stop:1:0"]\ntrusted_hash = "{digest}"\nenabled = true\n')
    dry = install(env, "--dry-run", verb="uninstall", host="codex")
    assert "the trust of 1 of your own hooks, which moved up in place of yiji's, would be moved" in dry.out
    gone = install(env, verb="uninstall", host="codex")
    assert gone.code == 0, gone.err
    assert "Codex's trust in 6 of yiji's former hooks removed" in gone.out
    state = tomllib.loads(config.read_text(encoding="utf-8"))["hooks"]["state"]
    assert state == {
        "/home/me/.codex/hooks.json:stop:0:0": {"trusted_hash": "sha256:0000"},
        f"{real}:stop:0:0": {"trusted_hash": digest, "enabled": True},
    }
    assert json.loads((codex_home / "hooks.json").read_text(encoding="utf-8")) == {
        "hooks": {"Stop": [{"hooks": [mine]}]}
    }
