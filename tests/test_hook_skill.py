"""``yiji hook install|uninstall`` and the ``remember`` skill: install puts yiji's skill where each host
reads a person's skills (Claude Code ``~/.claude/skills``, Codex ``$CODEX_HOME/skills``), marked as yiji's
in its front matter; install again updates it, uninstall takes it away; a person's own skill of that name
is never written, replaced or removed. (That the real hosts list the installed skill to their model is
checked in tests/test_real_week.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from yiji.service.hooks import skill_text

from .conftest import CliResult, run_yiji

ROOT = Path(__file__).resolve().parent.parent
HOSTS = ("claude-code", "codex")
MINE = "---\nname: remember\ndescription: my own notes skill\n---\n\nWrite it to ~/notes.md.\n"


def _env(tmp_path: Path) -> dict[str, str]:
    """A home of its own, with neither host's folder variable set (the default places)."""
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    return env | {"HOME": str(tmp_path / "home")}


def _skill(tmp_path: Path, host: str) -> Path:
    folder = ".claude" if host == "claude-code" else ".codex"
    return tmp_path / "home" / folder / "skills" / "remember" / "SKILL.md"


def _hook(env: dict[str, str], verb: str, host: str, *flags: str) -> CliResult:
    done = run_yiji("hook", verb, host, *flags, env=env)
    assert done.code == 0, done.err
    return done


@pytest.mark.parametrize("host", HOSTS)
def test_the_shipped_skill_is_what_install_writes(host: str) -> None:
    shipped = ROOT / "integrations" / host / "skills" / "remember" / "SKILL.md"
    assert shipped.read_text(encoding="utf-8") == skill_text(host)
    assert "\nmetadata:\n  installed-by: yiji\n---\n" in skill_text(host)


@pytest.mark.parametrize("host", HOSTS)
def test_install_writes_the_skill_in_the_home_and_uninstall_takes_it_away(tmp_path: Path, host: str) -> None:
    env, skill = _env(tmp_path), _skill(tmp_path, host)
    dry = _hook(env, "install", host, "--dry-run")
    assert f"yiji's remember skill would be installed in {skill}" in dry.out
    assert not skill.parent.exists()

    done = _hook(env, "install", host)
    assert f"yiji's remember skill installed in {skill}\n" in done.out
    assert skill.read_text(encoding="utf-8") == skill_text(host)
    assert sorted(p.name for p in skill.parent.iterdir()) == ["SKILL.md"]
    again = run_yiji("--json", "hook", "install", host, env=env)
    assert again.json()["skill"] == {"path": str(skill), "action": "unchanged", "written": False}

    gone = _hook(env, "uninstall", host)
    assert f"yiji's remember skill removed from {skill}\n" in gone.out
    assert not skill.parent.exists()
    assert skill.parent.parent.is_dir()  # the skills folder, which may hold a person's other skills, stays


def test_an_older_skill_of_yijis_is_updated_and_a_file_beside_it_kept(tmp_path: Path) -> None:
    env, skill = _env(tmp_path), _skill(tmp_path, "claude-code")
    _hook(env, "install", "claude-code")
    older = skill_text("claude-code").replace("# Remember with yiji", "# Remember (an older release)")
    skill.write_text(older, encoding="utf-8")
    done = _hook(env, "install", "claude-code")
    assert f"yiji's remember skill updated in {skill}\n" in done.out
    assert skill.read_text(encoding="utf-8") == skill_text("claude-code")
    note = skill.parent / "notes.txt"
    note.write_text("mine", encoding="utf-8")
    _hook(env, "uninstall", "claude-code")
    assert not skill.exists() and note.read_text(encoding="utf-8") == "mine"


@pytest.mark.parametrize("host", HOSTS)
def test_a_persons_own_remember_skill_is_never_touched(tmp_path: Path, host: str) -> None:
    env, skill = _env(tmp_path), _skill(tmp_path, host)
    skill.parent.mkdir(parents=True)
    skill.write_text(MINE, encoding="utf-8")
    before = skill.stat()
    said = f"the remember skill in {skill} is not yiji's (its front matter has no installed-by: yiji): "
    done = _hook(env, "install", host)
    assert said + "left as it is\n" in done.out
    assert "hooks" in done.out.splitlines()[0] and "installed in" in done.out.splitlines()[0]
    assert run_yiji("--json", "hook", "install", host, env=env).json()["skill"]["action"] == "yours"
    gone = _hook(env, "uninstall", host)
    assert said + "left as it is\n" in gone.out
    assert skill.read_text(encoding="utf-8") == MINE
    assert (skill.stat().st_mtime_ns, skill.stat().st_ino) == (before.st_mtime_ns, before.st_ino)


def test_a_link_or_a_file_named_like_the_skill_is_left_alone(tmp_path: Path) -> None:
    env, skill = _env(tmp_path), _skill(tmp_path, "codex")
    elsewhere = tmp_path / "shared-skill"
    elsewhere.mkdir()
    (elsewhere / "SKILL.md").write_text(skill_text("codex"), encoding="utf-8")
    skill.parent.parent.mkdir(parents=True)
    skill.parent.symlink_to(elsewhere)  # a person's link, even to a copy of yiji's skill
    assert "is not yiji's" in _hook(env, "install", "codex").out
    assert "is not yiji's" in _hook(env, "uninstall", "codex").out
    assert skill.parent.is_symlink() and (elsewhere / "SKILL.md").read_text(encoding="utf-8")
    skill.parent.unlink()
    skill.parent.write_text("a file", encoding="utf-8")
    assert "is not yiji's" in _hook(env, "install", "codex").out
    assert skill.parent.read_text(encoding="utf-8") == "a file"


def test_codex_home_and_claude_config_dir_are_where_the_skill_goes(tmp_path: Path) -> None:
    env = _env(tmp_path) | {
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    _hook(env, "install", "codex")
    _hook(env, "install", "claude-code")
    assert (tmp_path / "codex-home" / "skills" / "remember" / "SKILL.md").is_file()
    assert (tmp_path / "claude-config" / "skills" / "remember" / "SKILL.md").is_file()
    assert not (tmp_path / "home").exists()
