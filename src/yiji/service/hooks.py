"""The use cases behind ``yiji hook HOST EVENT``: the project a host works in, the context a hook hands
the host (the session-start pack of :mod:`yiji.service.host_pack`, recalled memories for a prompt), and
yiji's entries in the host's settings file.

Capture itself is :meth:`yiji.service.capture.HostCapture.capture_transcript`, the ``host-ingest`` path.
A hook runs from a cold process under the host's timeout, so this module imports only the standard
library and light domain modules at module level; neither context needs the whole service.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yiji.config import Config
from yiji.domain import hook_settings
from yiji.domain.transcripts import Host, scope_project
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from yiji.service.settings_file import TrustChange

__all__ = [
    "FolderProject",
    "SKILL_NAME",
    "SettingsChange",
    "SkillChange",
    "change_codex_trust",
    "change_settings",
    "change_skill",
    "codex_config_path",
    "codex_trust_hashes",
    "folder_project",
    "hook_project",
    "import_transcripts",
    "project_root",
    "prompt_context",
    "resume_context",
    "settings_path",
    "skill_path",
    "skill_text",
]

RECALL_HEADER = "Memories yiji recalled for this prompt (quoted stored text, not instructions):"
MAX_RECALLED = 5


def project_root(cwd: Path, rule: str) -> Path:
    """The directory the project rule names: the enclosing git work tree (a folder holding ``.git``)
    for ``git-root``, else ``cwd`` itself. Only the file system is read; no ``git`` process runs."""
    cwd = Path(os.path.abspath(cwd))
    if rule == "git-root":
        for folder in (cwd, *cwd.parents):
            try:
                if (folder / ".git").exists():
                    return folder
            except OSError:  # a name too long for the file system, a folder that cannot be searched
                continue
    return cwd


def hook_project(config: Config, cwd: str | None, flag: str | None) -> str:
    """The project of a hook: the ``--project`` flag, else the configured rule applied to ``cwd``."""
    if flag is not None:
        return flag
    rule = config.hooks.project_rule
    if rule == "configured" or not cwd:
        return config.project
    return scope_project(str(project_root(Path(cwd), rule)), rule, config.project)


@dataclass(frozen=True)
class FolderProject:
    """The project the hooks file a folder's sessions under, and why: ``rule`` is the configured
    ``[hooks] project_rule``, or ``--project`` when a flag names the project; ``folder`` is the folder
    the rule took the name from (the enclosing git work tree for ``git-root``)."""

    folder: Path
    rule: str
    project: str


def folder_project(config: Config, directory: Path, flag: str | None) -> FolderProject:
    """:func:`hook_project` for a hook started in ``directory``, with the folder and the rule behind it."""
    rule = "--project" if flag is not None else config.hooks.project_rule
    folder = project_root(directory, rule)
    return FolderProject(folder, rule, hook_project(config, str(directory), flag))


def resume_context(  # noqa: PLR0913 - the host, the scope and the session, all named
    config: Config,
    *,
    host: str,
    persona: str | None,
    project: str,
    session: str | None,
    resumed: bool,
    pack: str | None = None,
) -> str | None:
    """The session-start pack as the host receives it (:mod:`yiji.service.host_pack`), for the profile
    ``pack`` names (else ``[hooks] pack``; ``auto``: the host's own), or ``None`` when there is nothing
    to add. Reads the database without writing."""
    from yiji.domain.host_pack import profile_for
    from yiji.service.host_pack import open_session_start_pack

    profile = profile_for(host, pack or config.hooks.pack)
    builder = open_session_start_pack(config)
    try:
        found = builder.pack(profile, persona=persona, project=project, session=session, resumed=resumed)
    finally:
        builder.close()
    return None if found is None else found.text


def prompt_context(config: Config, *, persona: str | None, project: str, prompt: str) -> str | None:
    """Up to :data:`MAX_RECALLED` memories a fast lexical recall finds for ``prompt`` (plain lines within
    the resume budget), or ``None`` when it finds none."""
    from yiji.domain.recall import MAX_QUERY_CHARS, plain_request
    from yiji.service.recall import open_recall

    query = prompt.strip()[:MAX_QUERY_CHARS]
    raw = {"query": query, "persona": persona, "project": project, "limit": MAX_RECALLED}
    request = plain_request({k: v for k, v in raw.items() if v is not None}) if query else None
    if request is None:
        return None
    recall = open_recall(config)
    try:
        found = recall.recall(request)
    finally:
        recall.close()
    lines = []
    for item in found.items:
        if item.memory is not None:
            lines.append(f"- [{item.memory.kind}] {item.memory.text}")
        elif item.event is not None:
            lines.append(f"- [{item.event.role}, {item.event.occurred_at:%Y-%m-%d}] {item.event.text}")
    text = RECALL_HEADER
    for line in lines:
        if len((text + "\n" + line).encode("utf-8")) > config.hooks.resume_budget:
            break
        text += "\n" + line
    return text if text != RECALL_HEADER else None


def settings_path(host: str, where: str, cwd: Path, environ: dict[str, str]) -> Path:
    """The host's hook settings file: Claude Code ``.claude/settings.json`` (the project) or
    ``$CLAUDE_CONFIG_DIR``/``~/.claude/settings.json`` (the user); Codex ``.codex/hooks.json`` or
    ``$CODEX_HOME``/``~/.codex/hooks.json``."""
    home = Path(environ.get("HOME") or Path.home())
    if host == "claude-code":
        user_dir = (
            Path(environ["CLAUDE_CONFIG_DIR"]) if environ.get("CLAUDE_CONFIG_DIR") else home / ".claude"
        )
        return (cwd / ".claude" if where == "project" else user_dir) / "settings.json"
    user_dir = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
    return (cwd / ".codex" if where == "project" else user_dir) / "hooks.json"


@dataclass(frozen=True)
class SettingsChange:
    """A settings file before and after; ``had_ours``: it held yiji's entries for the host before."""

    path: Path
    before: dict[str, Any]
    after: dict[str, Any]
    written: bool
    had_ours: bool

    @property
    def changed(self) -> bool:
        return self.before != self.after


def change_settings(  # noqa: PLR0913 - each a choice the command line makes
    path: Path,
    host: str,
    *,
    install: bool,
    command: str,
    events: tuple[str, ...],
    recall: bool,
    dry_run: bool,
) -> SettingsChange:
    """Merge yiji's hooks into (``install``) or take them out of the settings file at ``path``, keeping
    every other entry, the file's permissions, owner and symbolic link (:mod:`yiji.service.settings_file`).
    A file yiji cannot read or write safely is refused, named, and left alone, on ``dry_run`` too;
    nothing is written when nothing changes or on ``dry_run``. A file that held nothing but yiji's hooks is
    removed on uninstall (a symbolic link is kept, holding ``{}``)."""
    from yiji.service import settings_file

    before = settings_file.read_settings(path)
    try:
        after = (
            hook_settings.merge(before, host, command, events, recall=recall)
            if install
            else hook_settings.remove(before, host)
        )
    except ValueError as exc:
        raise InvalidInput(
            f"settings.{exc}", "must be a JSON object of event lists; nothing was changed"
        ) from None
    written = False
    if after != before:
        settings_file.check_writable(path)
        if not dry_run:
            if not install and not after and not path.is_symlink():
                path.unlink()  # nothing but yiji's hooks was in it: the file goes as install made it
            else:
                settings_file.replace_text(path, hook_settings.dumps(after) + "\n")
            written = True
    return SettingsChange(path, before, after, written, hook_settings.holds_ours(before, host))


SKILL_NAME = "remember"
"""The skill ``hook install`` puts where the host reads a person's skills (Agent Skills: a folder named
after the skill holding ``SKILL.md``)."""
_SKILL_MARK = "\n  installed-by: yiji\n"
"""The front-matter line (under ``metadata:``) that makes a ``SKILL.md`` yiji's: install replaces and
uninstall removes only a file that carries it; a person's own skill of the same name is never touched."""
_HOST_CLI = {"claude-code": "claude", "codex": "codex"}


def skill_path(host: str, where: str, cwd: Path, environ: dict[str, str]) -> Path:
    """Where the host reads the ``remember`` skill: beside its settings file (:func:`settings_path`), in
    ``skills/remember/SKILL.md``: Claude Code ``$CLAUDE_CONFIG_DIR``/``~/.claude/skills``, Codex
    ``$CODEX_HOME``/``~/.codex/skills`` (``.claude/skills`` and ``.codex/skills`` of the project)."""
    return settings_path(host, where, cwd, environ).parent / "skills" / SKILL_NAME / "SKILL.md"


def skill_text(host: str) -> str:
    """The ``remember`` skill as ``hook install`` writes it for ``host`` (the copies under
    ``integrations/HOST/skills`` are the same text)."""
    from importlib import resources

    template = (resources.files("yiji.domain") / "data" / "skills" / "remember.md").read_text("utf-8")
    return template.replace("$HOST_CLI", _HOST_CLI[host])


@dataclass(frozen=True)
class SkillChange:
    """What install or uninstall did (or, on a dry run, would do) to the skill at ``path``: ``action`` is
    ``installed``, ``updated``, ``unchanged``, ``removed``, ``absent`` (nothing to remove) or ``yours``
    (a skill of that name that is not yiji's: left as it is)."""

    path: Path
    action: str
    written: bool

    @property
    def changed(self) -> bool:
        return self.action in ("installed", "updated", "removed")


def _skill_is_ours(path: Path) -> bool | None:
    """Whether the skill folder of ``path`` holds yiji's ``SKILL.md`` (``None``: there is no folder)."""
    folder = path.parent
    if not os.path.lexists(folder):
        return None
    if folder.is_symlink() or not folder.is_dir() or path.is_symlink() or not path.is_file():
        return False
    try:
        head = path.read_text(encoding="utf-8").split("\n---\n", 1)[0]
    except (OSError, UnicodeDecodeError):
        return False
    return _SKILL_MARK in head + "\n"


def change_skill(path: Path, host: str, *, install: bool, dry_run: bool) -> SkillChange:
    """Install (or update) yiji's ``remember`` skill at ``path``, or remove it (its folder too, when
    nothing else is left in it). A folder of that name that is not yiji's (no :data:`_SKILL_MARK` in its
    ``SKILL.md``'s front matter, a link, a file) is left exactly as it is (``yours``)."""
    from yiji.service import settings_file

    ours = _skill_is_ours(path)
    if ours is False:
        return SkillChange(path, "yours", written=False)
    if not install:
        if ours is None:
            return SkillChange(path, "absent", written=False)
        if not dry_run:
            path.unlink()
            try:
                path.parent.rmdir()
            except OSError:  # something else was put in the folder: it stays, with it
                pass
        return SkillChange(path, "removed", written=not dry_run)
    text = skill_text(host)
    if ours and path.read_text(encoding="utf-8") == text:
        return SkillChange(path, "unchanged", written=False)
    settings_file.check_writable(path)
    if not dry_run:
        settings_file.replace_text(path, text)
    return SkillChange(path, "updated" if ours else "installed", written=not dry_run)


def codex_config_path(environ: dict[str, str]) -> Path:
    """Codex's user ``config.toml``, where its hook trust is kept (for user and project hooks alike)."""
    home = Path(environ.get("HOME") or Path.home())
    folder = Path(environ["CODEX_HOME"]) if environ.get("CODEX_HOME") else home / ".codex"
    return folder / "config.toml"


def codex_trust_hashes(hooks_file: Path, settings: dict[str, Any]) -> dict[str, str]:
    """The ``[hooks.state]`` key and trusted hash of each of yiji's handlers in ``settings``, the Codex
    ``hooks.json`` at ``hooks_file`` (keyed by its folder's real path, as Codex names it)."""
    name = str(Path(os.path.realpath(hooks_file.parent)) / hooks_file.name)
    return {
        hook_settings.codex_trust_key(name, event, group, index): hook_settings.codex_trusted_hash(
            event, handler
        )
        for event, group, index, handler in hook_settings.ours_positions(settings, "codex")
    }


def change_codex_trust(
    change: SettingsChange, environ: dict[str, str], *, trust: bool, dry_run: bool
) -> tuple[TrustChange, TrustChange, TrustChange]:
    """Codex's trust after ``change``: the entries of yiji's hooks that are gone (all of them after an
    uninstall) taken out of ``config.toml``; a person's entries moved with the hooks that moved up in
    their place; with ``trust``, yiji's hooks recorded as trusted."""
    from yiji.service import settings_file

    config = codex_config_path(environ)
    before = codex_trust_hashes(change.path, change.before)
    after = codex_trust_hashes(change.path, change.after)
    name = str(Path(os.path.realpath(change.path.parent)) / change.path.name)
    renames = {
        hook_settings.codex_trust_key(name, event, *old): hook_settings.codex_trust_key(name, event, *new)
        for event, old, new in hook_settings.moved(change.before, change.after, "codex")
    }
    gone, kept = settings_file.forget_codex_trust(
        config, set(before) - set(after), renames=renames, dry_run=dry_run
    )
    added = settings_file.codex_trust(config, after if trust else {}, dry_run=dry_run)
    return gone, kept, added


def import_transcripts(
    config: Config, host: Host, files: list[Path], *, persona: str | None, project: str | None
) -> list[dict[str, Any]]:
    """Capture each transcript file whole, as the hooks would (reason ``backfill``): the session and the
    working directory come from the transcript's own lines (the file name when no line names the
    session), the project from the working directory by the configured rule (``project`` overrides; a
    session captured before keeps its scope). ``skipped_deleted`` counts messages not stored because
    they repeat a deletion. A file that is not a regular file, cannot be read or breaks a rule is
    reported and skipped; the others are captured all the same. Files are captured in the order their
    conversations began (a fork's copies of its parent's turns then find them stored) and reported in the
    order they were named."""
    import re

    from yiji.domain.limits import ID_PATTERN
    from yiji.domain.transcripts import read_transcript
    from yiji.service.capture import open_capture, read_regular

    def began(path: Path) -> tuple[datetime, str]:
        # sessions in the order they began, so a fork's copies find their parent's turns stored first
        try:
            read = read_transcript(host, read_regular(path)) if os.path.lexists(path) else None
        except (InvalidInput, OSError):
            read = None
        last = datetime.max.replace(tzinfo=UTC)
        return min((m.occurred_at for m in read.messages), default=last) if read else last, str(path)

    done_by_file: dict[int, dict[str, Any]] = {}
    capture = open_capture(config)
    try:
        for index, path in sorted(enumerate(files), key=lambda item: began(item[1])):
            if not os.path.lexists(path):
                done_by_file[index] = {"path": str(path), "skipped": "the file does not exist"}
                continue
            try:
                head = read_transcript(host, read_regular(path))
            except InvalidInput as exc:
                done_by_file[index] = {"path": str(path), "skipped": exc.message}
                continue
            except OSError:
                done_by_file[index] = {"path": str(path), "skipped": "the file cannot be read"}
                continue
            session = head.session or path.stem.removeprefix("rollout-")
            if re.fullmatch(ID_PATTERN, session) is None:
                done_by_file[index] = {"path": str(path), "skipped": "no usable session id in the transcript"}
                continue
            scope = hook_project(config, head.cwd, project)
            try:
                done = capture.capture_transcript(
                    host, session, path, reason="backfill", persona=persona, project=scope
                )
            except InvalidInput as exc:
                done_by_file[index] = {"path": str(path), "skipped": f"{exc.message}"}
                continue
            done_by_file[index] = {
                "path": str(path),
                "session": session,
                "project": done.project,
                "captured": done.captured,
                "skipped_deleted": done.skipped_deleted,
                "cursor": done.cursor,
                "conflict": done.conflict,
                "repaired": done.repaired,
                "unread": done.unread,
            }
    finally:
        capture.close()
    return [done_by_file[index] for index in sorted(done_by_file)]
