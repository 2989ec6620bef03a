"""``yiji hook HOST EVENT``: Claude Code and Codex command hooks; ``yiji hook install|uninstall``;
``yiji hook project`` (the project a folder's sessions go to); ``yiji import-transcripts``.

A host runs a hook with its JSON payload on standard input and waits for it under a timeout. A hook never
fails its host: whatever happens (no database, a locked or damaged one, a payload it cannot read, a
time limit reached) it exits 0, prints nothing that could mislead the model, and logs one sanitized line
(``[hooks] log``, else ``hooks.log`` beside the database, else standard error). Its time limit is kept
inside yiji by a watchdog thread: on expiry it logs and ends the process with status 0 at once; a
capture then in progress is rolled back by SQLite and the transcript is read again by the next hook, so
nothing acknowledged is lost and nothing is stored twice.

What reaches the host: ``SessionStart`` prints the session-start pack (:mod:`yiji.service.host_pack`) as
plain text (both hosts add plain standard output of this hook to the model's context), reading the
database without writing; ``UserPromptSubmit`` captures and prints recalled memories when asked to; the
other capture hooks (``Stop``, ``StopFailure``, ``Interrupt``, ``PreCompact``, ``SessionEnd``) print
nothing.

This module starts at every hook, so it imports only the standard library and :mod:`yiji.cli.context` at
module level (see :mod:`yiji.cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context

if TYPE_CHECKING:
    from yiji.config import Config

__all__ = ["register"]

HOSTS = ("claude-code", "codex")
"""Equal to ``yiji.domain.transcripts.HOSTS`` (a test checks)."""
EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "StopFailure", "Interrupt", "SessionEnd")
"""Equal to ``yiji.domain.hook_settings.EVENTS`` (a test checks)."""
MAX_PAYLOAD = 16 * 1024 * 1024
CAPTURE_REASONS = {
    "UserPromptSubmit": "event",
    "Stop": "event",
    "StopFailure": "event",
    "Interrupt": "event",
    "SessionEnd": "event",
    "PreCompact": "pre-summarize",
}
"""The hooks that capture: each end of a turn (``Stop``; ``StopFailure`` after an API error, Codex's
``Interrupt`` after the person interrupted, which send no ``Stop``), the session's end, the moment
before compaction, and each prompt (what earlier hooks could not read yet, such as a reply Codex wrote
after its ``Stop`` ran)."""
RESUMED_SOURCES = frozenset({"compact", "resume"})


class _Guard:
    """One hook's output, log line and time limit: the watchdog and the output share a lock, so the
    process either prints its whole answer or ends without printing."""

    def __init__(self, host: str, event: str) -> None:
        self.host = host
        self.event = event
        self.log_path: Path | None = None
        self.lock = threading.Lock()
        self.done = False
        self.timer: threading.Timer | None = None

    def arm(self, seconds: float) -> None:
        self.timer = threading.Timer(seconds, self._expire, args=(seconds,))
        self.timer.daemon = True
        self.timer.start()

    def _expire(self, seconds: float) -> None:
        with self.lock:
            if self.done:
                return
            self._write(f"time limit of {seconds:g} s reached; stopped, nothing acknowledged was lost")
            os._exit(0)

    def emit(self, text: str) -> None:
        with self.lock:
            if not self.done:
                sys.stdout.write(text.rstrip("\n") + "\n")
                sys.stdout.flush()
            self.done = True

    def finish(self) -> None:
        with self.lock:
            self.done = True
        if self.timer is not None:
            self.timer.cancel()

    def log(self, message: str) -> None:
        with self.lock:
            if not self.done:
                self._write(message)

    def _write(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        line = f"{stamp} yiji hook {self.host} {self.event}: {' '.join(_without_paths(message).split())}\n"
        if self.log_path is not None:
            try:
                with self.log_path.open("a", encoding="utf-8") as file:
                    file.write(line)
                return
            except OSError:
                pass
        sys.stderr.write(line)
        sys.stderr.flush()


_PATH = re.compile(
    r"""(?<![\w.~-])(?:~|[A-Za-z]:)?[/\\][^\s'"(),;]*"""  # the path up to a space
    r"""(?:\s+[^\s/\\'"(),;]*[/\\][^\s'"(),;]*)*"""  # words after a space, up to a later separator
)
"""An absolute path (``/…``, ``~/…``, ``C:\\…``), with the words of a folder name holding spaces that a later
separator shows belong to it."""


def _without_paths(message: str) -> str:
    """``message`` with every absolute path in it replaced by ``[path]``: a hook's log line never names a
    file (a home folder, a project or a checkout can say who and what a person works on)."""
    return _PATH.sub("[path]", message)


def _describe(exc: BaseException) -> str:
    """A failure in words that never quote input: yiji's own errors carry no values; others by type."""
    from yiji.errors import YijiError

    if isinstance(exc, YijiError):
        return f"{exc.heading}: {exc.message}" if exc.heading else exc.message
    return f"unexpected {type(exc).__name__}; nothing was changed"


def _log_path(config: Config) -> Path | None:
    if config.hooks.log is not None:
        return config.hooks.log.expanduser()
    folder = config.db.expanduser().parent
    return folder / "hooks.log" if folder.is_dir() else None


def _payload() -> dict[str, Any]:
    from yiji.errors import InvalidInput

    data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(MAX_PAYLOAD + 1)
    if len(data) > MAX_PAYLOAD:
        raise InvalidInput("stdin", f"the hook payload must be at most {MAX_PAYLOAD} bytes")
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInput("stdin", "the hook payload must be one JSON object in UTF-8") from None
    if not isinstance(value, dict):
        raise InvalidInput("stdin", "the hook payload must be one JSON object in UTF-8")
    return value


def _text(payload: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    from yiji.errors import InvalidInput

    value = payload.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(name, "must be a non-empty string")
    return value


def _session(payload: dict[str, Any]) -> str:
    import re

    from yiji.domain.limits import ID_PATTERN, ID_RULE
    from yiji.errors import InvalidInput

    session = _text(payload, "session_id")
    assert session is not None
    if re.fullmatch(ID_PATTERN, session) is None:
        raise InvalidInput("session_id", ID_RULE)
    return session


def _run_event(ctx: Context, config: Config, args: argparse.Namespace, guard: _Guard) -> str | None:
    """The work of one hook; what to print, if anything."""
    from yiji.service.hooks import hook_project

    event = args.event
    if event not in EVENTS:
        guard.log("not an event yiji handles; nothing was done")
        return None
    payload = _payload()
    project = hook_project(config, _text(payload, "cwd", required=False), ctx.project)
    if event in CAPTURE_REASONS:
        _capture(ctx, args, payload, project, guard)
        if event != "UserPromptSubmit" or not (args.recall or config.hooks.recall_on_prompt):
            return None
    if not config.db.expanduser().exists():
        guard.log("no database at the configured path yet; nothing to add")
        return None
    if event == "SessionStart":
        from yiji.service.hooks import resume_context

        session = _session(payload)
        return resume_context(
            config,
            host=args.host,
            persona=ctx.persona,
            project=project,
            session=session,
            resumed=payload.get("source") in RESUMED_SOURCES,
            pack=args.pack,
        )
    from yiji.service.hooks import prompt_context

    prompt = _text(payload, "prompt", required=False)
    return prompt_context(config, persona=ctx.persona, project=project, prompt=prompt) if prompt else None


def _capture(
    ctx: Context, args: argparse.Namespace, payload: dict[str, Any], project: str, guard: _Guard
) -> None:
    from yiji.service.capture import open_capture

    session = _session(payload)
    transcript = _text(payload, "transcript_path", required=False)
    if transcript is None:  # Codex may run a hook without a transcript: nothing to read
        return
    result = ctx.use_case(open_capture).capture_transcript(
        args.host,
        session,
        Path(transcript).expanduser(),
        reason=CAPTURE_REASONS[args.event],
        persona=ctx.persona,
        project=project,
    )
    if result.skipped_deleted:
        from yiji.domain.wording import counted

        guard.log(
            f"{counted(result.skipped_deleted, 'message')} not stored: a replay of what was deleted "
            "(yiji delete); the cursor moved past them"
        )
    if result.captured:  # [extraction] auto: a detached, bounded run; the host does not wait for it
        from yiji.cli.autorun import start

        start(ctx.config, getattr(args, "config", None))
    if result.conflict is not None:
        guard.log(
            f"capture stopped by a {result.conflict} conflict (an event id stored with other content, or "
            f"another writer); the cursor stays at {result.cursor}; see docs/host-capture.md"
        )
    if result.noted:
        guard.log(
            "the transcript shows the model answered but holds no conversation yiji reads (a transcript "
            "format this yiji does not know?); logged once per transcript, counted by yiji doctor"
        )
    if result.repaired:
        guard.log(
            f"{result.repaired} message(s) held text UTF-8 cannot store (a lone surrogate escape); "
            "stored with U+FFFD in its place"
        )


def _hook(ctx: Context, args: argparse.Namespace) -> int:
    guard = _Guard(args.host, args.event if args.event in EVENTS else "(an unknown event)")
    try:
        from yiji.domain.hook_settings import time_limit

        config = ctx.config
        guard.log_path = _log_path(config)
        guard.arm(config.hooks.time_limit_seconds or time_limit(args.host, args.event))
        output = _run_event(ctx, config, args, guard)
        if output:
            guard.emit(output)
    except BaseException as exc:  # a hook never fails its host: one log line, exit 0
        guard.log(_describe(exc))
    finally:
        guard.finish()
    return 0


def _command_line(args: argparse.Namespace) -> str:
    """The command the host starts yiji with: ``--command``, whose program must be found, or the
    absolute path of this yiji; a refusal that says why when there is none."""
    import shlex
    import shutil

    from yiji.errors import InvalidInput
    from yiji.invocation import host_command

    if args.command_line is None:
        try:
            return host_command()
        except ValueError as exc:
            raise InvalidInput("command", f"{exc}; nothing was changed") from None
    try:
        program = shlex.split(args.command_line)[0]
    except (ValueError, IndexError):
        raise InvalidInput("command", "must be a command line a shell can split") from None
    if shutil.which(program) is None:
        raise InvalidInput(
            "command", "its program is not an executable file nor found on PATH; nothing was changed"
        )
    return str(args.command_line)


def _install(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.domain.hook_settings import HOST_EVENTS, command_option, dumps, plain
    from yiji.service.hooks import (
        SettingsChange,
        change_codex_trust,
        change_settings,
        change_skill,
        folder_project,
        settings_path,
        skill_path,
    )

    install = args.hook_command == "install"
    cwd = Path.cwd()
    environ = dict(os.environ)
    path = settings_path(args.target_host, args.where, cwd, environ)
    events = HOST_EVENTS[args.target_host]
    command = _command_line(args) if install else ""
    trust = bool(getattr(args, "trust", False))
    if trust and args.target_host != "codex":
        from yiji.errors import InvalidInput

        raise InvalidInput("--trust", "only Codex keeps a trust of its own for hooks")

    def settings(dry_run: bool) -> SettingsChange:
        return change_settings(
            path,
            args.target_host,
            install=install,
            command=command,
            events=events if install else (),
            recall=args.recall,
            dry_run=dry_run,
        )

    change = settings(True)  # every refusal comes before anything is written
    skill_file = skill_path(args.target_host, args.where, cwd, environ)
    skill = change_skill(skill_file, args.target_host, install=install, dry_run=True)
    trust_change = None
    if args.target_host == "codex":  # the trust first: a failure then leaves the hooks untrusted, never
        # yiji's hooks gone with their trust kept for whatever takes their place
        trust_change = change_codex_trust(change, environ, trust=trust, dry_run=args.dry_run)
    if not args.dry_run:
        change = settings(False)
        skill = change_skill(skill_file, args.target_host, install=install, dry_run=False)
    result: dict[str, Any] = {
        "path": str(change.path),
        "changed": change.changed,
        "written": change.written,
        "dry_run": args.dry_run,
        "events": list(events) if install else [],
        "command": command if install else None,
        "settings": plain(change.after),
        "skill": {"path": str(skill.path), "action": skill.action, "written": skill.written},
    }
    if install:  # where this folder's sessions go: the installed command's --project, else the rule
        found = folder_project(ctx.config, cwd, command_option(command, "--project"))
        result["project"] = {"project": found.project, "folder": str(found.folder), "rule": found.rule}
    if trust_change is not None:
        gone, kept, added = trust_change
        result["trust"] = {
            "config": str(gone.path),
            "removed": list(gone.changed),
            "moved": list(kept.changed),
            "recorded": list(added.changed),
            "left": sorted({*gone.left, *kept.left, *added.left}),
        }

    def human(r: dict[str, Any]) -> str:
        hooks = f"yiji's {args.target_host} hooks"
        if install:
            listed = f"{hooks} ({', '.join(r['events'])})"
            done = "updated" if change.had_ours else "installed"
            verb = f"would be {done}" if r["dry_run"] else done
            line = f"{listed} {verb} in {r['path']}" if r["changed"] else f"{listed} already in {r['path']}"
        else:
            verb = "would be removed" if r["dry_run"] else "removed"
            none = f"yiji has no {args.target_host} hooks in {r['path']}"
            line = f"{hooks} {verb} from {r['path']}" if r["changed"] else none
        lines = [line + ("" if r["changed"] else "; nothing changed")]
        if install:
            lines.append(f"the host runs {r['command']} hook {args.target_host} EVENT")
            lines.append(_project_line(r["project"], args.where == "user"))
        lines.append(_skill_line(r["skill"], dry_run=r["dry_run"]))
        if "trust" in r:
            lines += _trust_lines(r["trust"], install=install, trusted=trust, dry_run=r["dry_run"])
        if r["dry_run"]:
            lines += ["the file would read:", dumps(change.after)]
        return "\n".join(lines)

    ctx.emit(result, human)


def _skill_line(skill: dict[str, Any], *, dry_run: bool) -> str:
    """What install or uninstall did to the ``remember`` skill."""
    path, action = skill["path"], skill["action"]
    would = "would be " if dry_run else ""
    return {
        "installed": f"yiji's remember skill {would}installed in {path}",
        "updated": f"yiji's remember skill {would}updated in {path}",
        "unchanged": f"yiji's remember skill already in {path}",
        "removed": f"yiji's remember skill {would}removed from {path}",
        "absent": f"no remember skill of yiji's in {path}",
        "yours": (
            f"the remember skill in {path} is not yiji's (its front matter has no installed-by: yiji): "
            "left as it is"
        ),
    }[action]


def _trust_lines(trust: dict[str, Any], *, install: bool, trusted: bool, dry_run: bool) -> list[str]:
    """What Codex's trust needs, and what install or uninstall did to it in ``config.toml``."""
    lines = []
    would = "would be " if dry_run else ""
    if trust["removed"]:
        lines.append(
            f"Codex's trust in {len(trust['removed'])} of yiji's former hooks {would}removed from "
            f"{trust['config']}"
        )
    if trust["moved"]:
        lines.append(
            f"the trust of {len(trust['moved'])} of your own hooks, which moved up in place of yiji's, "
            f"{would}moved with them in {trust['config']}"
        )
    if trust["recorded"]:
        lines.append(
            f"Codex's trust in yiji's {len(trust['recorded'])} hooks {would}recorded in {trust['config']}, "
            "as trusting them in Codex would"
        )
    if trust["left"]:
        lines.append(
            f"{len(trust['left'])} hook trust entries in {trust['config']} are in a form yiji does not "
            "edit; left as they were: " + ", ".join(trust["left"])
        )
    if install and not trusted:
        lines.append(
            "Codex runs new or changed hooks only once a person trusts them: start codex and choose "
            '"Trust all and continue" when it says "Hooks need review" (or review them under /hooks); '
            "codex exec never asks, and runs untrusted hooks only with --dangerously-bypass-hook-trust. "
            "To record that trust now instead: yiji hook install codex --trust"
        )
    return lines


def _project_line(found: dict[str, str], every_folder: bool) -> str:
    """Where the hooks file the current folder's sessions, and how to recall from there."""
    from yiji.invocation import yiji_command

    project = found["project"]
    recall = yiji_command(f"--project {project} recall ...")
    if found["rule"] == "--project":
        return f"sessions go to project {project}, the command's --project ({recall})"
    if found["rule"] == "configured":
        return f"sessions go to project {project}, as [hooks] project_rule = configured says ({recall})"
    other = (
        f"; other folders have their own: {yiji_command('hook project --dir PATH')}" if every_folder else ""
    )
    return f"sessions in {found['folder']} go to project {project} ({recall}){other}"


def _project(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.errors import InvalidInput
    from yiji.service.hooks import folder_project

    directory = Path(os.path.realpath(Path(args.dir).expanduser())) if args.dir else Path.cwd()
    if not directory.is_dir():
        raise InvalidInput("dir", "must be an existing folder")
    found = folder_project(ctx.config, directory, ctx.project)
    result = {
        "project": found.project,
        "persona": ctx.persona or ctx.config.persona,
        "folder": str(found.folder),
        "rule": found.rule,
    }
    ctx.emit(result, lambda r: str(r["project"]))


def _import(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.service.hooks import import_transcripts

    files: list[Path] = []
    for name in args.paths:
        path = Path(name).expanduser()
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    results = import_transcripts(ctx.config, args.host, files, persona=ctx.persona, project=ctx.project)

    def human(r: list[dict[str, Any]]) -> str:
        from yiji.domain.wording import counted

        return (
            "\n".join(
                f"{x['path']}: "
                + (
                    x["skipped"]
                    if x.get("skipped")
                    else f"{counted(x['captured'], 'message')}, session "
                    f"{x['session']}, project {x['project']}"
                    + (f", {x['skipped_deleted']} not stored as deleted" if x["skipped_deleted"] else "")
                    + (f", {x['conflict']} conflict" if x["conflict"] else "")
                    + (f", {x['repaired']} repaired (U+FFFD for a lone surrogate)" if x["repaired"] else "")
                    + (
                        "; the model answered but no conversation yiji reads was found (a transcript "
                        "format this yiji does not know?)"
                        if x["unread"]
                        else ""
                    )
                )
                for x in r
            )
            or "(no transcript files)"
        )

    ctx.emit(results, human)


COMMANDS = ("hook", "import-transcripts")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    h = sub.add_parser(
        "hook",
        parents=[common],
        help="Claude Code and Codex command hooks (capture, resume) and their installation",
        description=(
            "Run as a host's command hook (JSON payload on stdin): SessionStart prints the session_resume "
            "pack; Stop, StopFailure, Interrupt, PreCompact, SessionEnd and UserPromptSubmit capture the "
            "transcript's new conversation through the host-ingest path; UserPromptSubmit also adds "
            "recalled memories when asked. Always exits 0. "
            "install and uninstall change the host's settings file and its remember skill; project prints "
            "the project a folder's sessions go to."
        ),
    )
    hs = h.add_subparsers(dest="hook_command", required=True, metavar="HOST|install|uninstall|project")
    for host in HOSTS:
        p = hs.add_parser(host, parents=[common], help=f"run as a {host} hook")
        p.add_argument(
            "event",
            help=(
                "the hook event: SessionStart, UserPromptSubmit, PreCompact, Stop, StopFailure, "
                "Interrupt, SessionEnd"
            ),
        )
        p.add_argument("--recall", action="store_true", help="UserPromptSubmit: add recalled memories")
        p.add_argument(
            "--pack",
            choices=("auto", "coding", "companion"),
            help="SessionStart: who reads the pack (default: [hooks] pack; auto: coding for this host)",
        )
        p.set_defaults(func=_hook, host=host)
    for verb, text in (
        ("install", "merge yiji's hooks into the host's settings file and add yiji's remember skill"),
        ("uninstall", "remove yiji's hooks from the host's settings file, and yiji's remember skill"),
    ):
        # no common options here: --project names the settings file, not a yiji project
        p = hs.add_parser(verb, help=text)
        p.add_argument("target_host", choices=HOSTS, metavar="HOST", help="claude-code or codex")
        where = p.add_mutually_exclusive_group()
        where.add_argument(
            "--project",
            dest="where",
            action="store_const",
            const="project",
            help="the settings file of the project in the current directory",
        )
        where.add_argument(
            "--user",
            dest="where",
            action="store_const",
            const="user",
            help="the user's settings file (default)",
        )
        p.add_argument(
            "--dry-run", action="store_true", help="print the whole file as it would be, without writing it"
        )
        p.add_argument(
            "--command",
            dest="command_line",
            default=None,
            help=(
                "how the host starts yiji (default: the absolute path of this yiji), e.g. "
                "'/path/to/yiji --db /path/to/yiji.db'"
            ),
        )
        p.add_argument("--recall", action="store_true", help="also add recalled memories to each prompt")
        if verb == "uninstall":
            p.set_defaults(func=_install, where="user")
            continue
        p.add_argument(
            "--trust",
            action="store_true",
            help=(
                "Codex: record in its config.toml that you trust yiji's hooks, as its own review would "
                "(without it, Codex runs them only after you trust them in codex)"
            ),
        )
        p.set_defaults(func=_install, where="user")
    p = hs.add_parser(
        "project",
        parents=[common],
        help="print the project the hooks file a folder's sessions under",
        description=(
            "Print the project id the Claude Code and Codex hooks give sessions run in a folder (the current "
            "one, or --dir), by [hooks] project_rule: for git-root the enclosing git work tree's name and a "
            "hash of its path, e.g. atlas-1a2b3c4d. Use it to reach those memories from the command line: "
            'yiji --project "$(yiji hook project)" recall ...; yiji scopes lists every scope.'
        ),
    )
    p.add_argument("--dir", metavar="PATH", help="the folder (default: the current one)")
    p.set_defaults(func=_project)
    i = sub.add_parser(
        "import-transcripts",
        parents=[common],
        help="capture Claude Code or Codex sessions from their transcript files",
        description=(
            "Capture the conversation of host transcripts (files, or folders searched for *.jsonl) through "
            "the same path and with the same ids as the hooks: importing a session the hooks captured, or "
            "capturing one that was imported, stores nothing twice."
        ),
    )
    i.add_argument("host", choices=HOSTS, help="claude-code or codex")
    i.add_argument("paths", nargs="+", metavar="PATH", help="transcript files or folders")
    i.set_defaults(func=_import)
