"""The ``yiji`` command line: a thin adapter over :class:`yiji.service.MemoryService`.

Exit codes (the same table is in the README):

====  =====================================================================================
0     success
1     storage or internal error: disk full, read-only or damaged database, a provider failure,
      an unexpected error; also ``doctor`` when it found a problem
2     invalid input: a bad flag or field, an unreadable or rejected file or archive, a database
      that does not exist for a command that only reads, and *not found* (a referenced
      persona, event, memory or checkpoint is missing)
3     conflict: an id already taken by different content, a target file that already exists
130   interrupted (Ctrl-C)
====  =====================================================================================

Error messages name the field and the rule; they never echo input values or secrets. An unexpected
exception is reported by its type alone (``YIJI_DEBUG=1`` shows the traceback).

Start-up cost. ``yiji --help`` builds the whole parser, and a command line that names a command imports
only the module that registers it (:data:`COMMAND_HOMES`) and builds its parser, so a command pays for
what its own module imports. The rule for a command module (``tests/test_startup_imports.py`` guards
it):

* at module level, import only the standard library, :mod:`yiji.cli.context` and :mod:`yiji.errors`;
  names used only in annotations go under ``if TYPE_CHECKING:``;
* ``register(sub, common)`` adds the subcommands and their options; it needs nothing else;
  ``COMMANDS`` names the top-level commands it adds;
* a handler imports what it uses inside its body: the models (pydantic), the MCP
  server, tqdm (through :func:`yiji.cli.context.progress_bar`); the service is opened lazily by
  ``ctx.service``, which imports it on first use;
* a constant shown in ``--help`` is restated in the command module when its home is heavy, with a test
  that the two agree (see ``cli/resume.py``).

Commands from other packages. An installed package adds top-level commands through the entry-point
group :data:`PLUGIN_GROUP`; each entry point names a module that follows the same rule (``COMMANDS``,
``register``). The benchmarks come so, from the repository's ``yiji-bench`` package (``bench/``), which
the development environment installs and the product wheel leaves out; without it, ``yiji bench`` says
how to get it (:data:`ABSENT_COMMANDS`). Entry points are read (without ``importlib.metadata``) only for a
command that is not yiji's own, ``yiji --help`` and an unusual command line.

Below the CLI the same holds: httpx is imported where a provider sends a request, rjieba where CJK
text is first segmented.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import re
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from yiji import __version__
from yiji.cli.context import Context, add_common, utf8_arguments, utf8_output, utf8_process
from yiji.errors import InvalidInput, YijiError

__all__ = [
    "COMMAND_HOMES",
    "COMMAND_MODULES",
    "PLUGIN_GROUP",
    "build_parser",
    "closest_name",
    "command_module",
    "command_name",
    "main",
]

COMMAND_MODULES = (
    "events",
    "memory",
    "lifecycle",
    "recall",
    "checkpoints",
    "resume",
    "personas",
    "ops",
    "probe",
    "archive",
    "capture",
    "hook",
    "ui",
    "review",
)
"""The command modules under ``yiji.cli``, in the order ``yiji --help`` lists their commands."""

COMMAND_HOMES = {
    "event": "events",
    "memory": "memory",
    "remember": "memory",
    "extraction": "memory",
    "delete": "lifecycle",
    "emotion": "lifecycle",
    "recall": "recall",
    "reindex": "recall",
    "checkpoint": "checkpoints",
    "resume": "resume",
    "persona": "personas",
    "doctor": "ops",
    "scopes": "ops",
    "config": "ops",
    "serve": "ops",
    "demo": "ops",
    "probe": "probe",
    "export": "archive",
    "import": "archive",
    "backup": "archive",
    "restore": "archive",
    "host-ingest": "capture",
    "hook": "hook",
    "import-transcripts": "hook",
    "ui": "ui",
    "review": "review",
}
"""The module that registers each top-level command (its ``COMMANDS``; a test checks), so that a command
line imports only the module of its command."""


def command_module(name: str) -> ModuleType:
    """The command module ``yiji.cli.<name>``, imported on first use."""
    return importlib.import_module(f"yiji.cli.{name}")


PLUGIN_GROUP = "yiji.commands"
"""The entry-point group through which an installed package adds top-level commands: each entry point is
named after its command and names a command module (``COMMANDS`` and ``register(sub, common)``, as the
modules of :data:`COMMAND_MODULES`)."""

ABSENT_COMMANDS = {
    "bench": (
        "the benchmarks are not installed here: they are a development package of yiji's repository "
        "(bench/), which `uv run yiji bench ...` in a checkout installs with the development environment "
        "(see docs/benchmarks.md)"
    ),
}
"""Commands that a package of the repository adds, and what ``yiji <command>`` says where it is absent."""


@functools.cache
def plugin_commands() -> dict[str, str]:
    """Each command an installed package adds through :data:`PLUGIN_GROUP` -> the module that registers it.

    Read from the ``entry_points.txt`` of each ``*.dist-info`` folder on ``sys.path`` (the first one found
    wins, as for ``importlib.metadata``, which a test compares it with): importing ``importlib.metadata``
    and building its distribution objects costs more than the whole parser, and ``yiji --help`` pays it."""
    found: dict[str, str] = {}
    for folder in sys.path:
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                for command, module in _group(os.path.join(folder or ".", name, "entry_points.txt")):
                    found.setdefault(command, module)
    return found


def _group(path: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of the :data:`PLUGIN_GROUP` section of an ``entry_points.txt``."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except OSError:
        return []
    entries: list[tuple[str, str]] = []
    section = ""
    for raw in lines:
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == PLUGIN_GROUP and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            entries.append((name.strip(), value.strip()))
    return entries


def _absent(name: str) -> InvalidInput | None:
    """The error for ``yiji <name>`` when ``name`` is a command of a package that is not installed."""
    if name not in ABSENT_COMMANDS or name in plugin_commands():
        return None
    return InvalidInput("command", f"{name}: {ABSENT_COMMANDS[name]}")


def _register_absent(sub: argparse._SubParsersAction[_Parser]) -> None:
    """A line in ``yiji --help`` for each command whose package is not installed."""
    for name, said in ABSENT_COMMANDS.items():
        if name not in plugin_commands():
            sub.add_parser(name, help=said, add_help=False)


_QUOTED = re.compile(r": '[^']*'")
_ARGUMENT = re.compile(r"^argument ([^:\s]+)(?:/\S+)?: (.*)$")

# Commands that only read the database: on a path where no database exists they stop (exit 2) instead
# of creating one (so does any `--dry-run`). Writing commands, `serve` and `persona show` (an absent
# persona is initialized on read) create the database as usual; `host-ingest` answers a probe on a
# missing database without creating it, and `import`/`restore` check their source first.
READ_ONLY_COMMANDS = frozenset(
    {
        "event list",
        "event show",
        "memory list",
        "memory read",
        "review",
        "review list",
        "recall",
        "resume",
        "emotion",
        "checkpoint show",
        "doctor",
        "scopes",
        "export",
        "backup",
    }
)


def reads_only(args: argparse.Namespace) -> bool:
    """Whether the command line only reads: a command of :data:`READ_ONLY_COMMANDS`, or a ``--dry-run``."""
    return command_path(args) in READ_ONLY_COMMANDS or bool(getattr(args, "dry_run", False))


def command_path(args: argparse.Namespace) -> str:
    """``"event list"`` from the parsed ``command`` and ``<command>_command`` attributes."""
    command = str(getattr(args, "command", "") or "")
    sub = getattr(args, f"{command}_command", None)
    return f"{command} {sub}" if sub else command


def _flag_name(token: str) -> str:
    name = token.split("=", 1)[0]
    return name if len(name) <= 40 else name[:39] + "…"


def _long_flags(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--")]


def _edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn ``a`` into ``b``."""
    previous: list[int] | None = None
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if previous is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous[j - 2] + 1)
        previous, row = row, current
    return row[-1]


def closest_name(typed: str, known: Sequence[str]) -> str | None:
    """The known flag, command or choice ``typed`` most likely meant, or ``None``: the fewest edits of
    the name after its dashes, at most one per three letters (at least one), the first of ``known`` on a
    tie. The dashes every flag shares do not count, so ``--sesion`` means ``--session``, never ``--json``;
    ``recal`` means ``recall``."""
    name = typed.lstrip("-").lower()
    if not name:
        return None
    allowed = max(1, len(name) // 3)
    scored = [(_edit_distance(name, flag.lstrip("-").lower()), i, flag) for i, flag in enumerate(known)]
    close = min((s for s in scored if s[0] <= allowed), default=None)
    return None if close is None else close[2]


def _flag_elsewhere(typed: str) -> tuple[str, list[str]] | None:
    """A flag of other commands that ``typed`` most likely meant, with the commands that take it
    (builds the whole parser: only a mistyped flag pays for it)."""
    owners: dict[str, list[str]] = {}
    stack: list[argparse.ArgumentParser] = [build_parser()]
    while stack:
        parser = stack.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(p for p in action.choices.values() if isinstance(p, argparse.ArgumentParser))
        if parser.prog != "yiji":
            for flag in _long_flags(parser):
                owners.setdefault(flag, []).append(parser.prog)
    close = closest_name(typed, sorted(owners))
    if close is None:
        return None
    shown = sorted(owners[close])
    return close, shown[:3] + (["…"] if len(shown) > 3 else [])


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors name the argument and the rule, never the value typed.

    An unknown flag is named (never a value) with the closest known flag of the command, under the
    usage of the command that was meant (``yiji event submit``), not the top-level one. A mistyped
    command, subcommand or choice is answered with the closest one (``did you mean recall?``) instead of
    the list of every command.
    """

    json_errors = False  # set by main() when --json is on the command line

    def error(self, message: str) -> NoReturn:
        self._fail(_QUOTED.sub("", message))

    def _fail(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            match = _ARGUMENT.match(message)
            field, rule = (
                (match.group(1).lstrip("-").replace("-", "_"), match.group(2)) if match else ("", "")
            )
            problems = [{"field": field, "rule": rule}] if match else []
            error = {"error": "invalid_input", "message": message, "problems": problems}
            self.exit(2, json.dumps(error, ensure_ascii=False) + "\n")
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """A value outside the choices: the closest choice when one is close, else argparse's list."""
        known = [str(choice) for choice in action.choices or ()]
        missing = action.choices is not None and isinstance(value, str) and value not in known
        close = closest_name(value, known) if missing and isinstance(value, str) else None
        if close is None:
            super()._check_value(action, value)
            return
        if isinstance(action, argparse._SubParsersAction):
            rule = f"invalid choice (did you mean {close}?) (see {self.prog} --help)"
        else:
            listed = ", ".join(repr(choice) for choice in known)
            rule = f"invalid choice (did you mean {close}? choose from {listed})"
        raise argparse.ArgumentError(action, rule)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._unrecognized(parsed, extras)
        return parsed

    def _selected(self, parsed: argparse.Namespace) -> _Parser:
        """The innermost subcommand parser chosen on the command line."""
        parser: _Parser = self
        while True:
            actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if not actions:
                return parser
            chosen = getattr(parsed, actions[0].dest or "", None)
            child = actions[0].choices.get(chosen) if chosen else None
            if not isinstance(child, _Parser):
                return parser
            parser = child

    def _unrecognized(self, parsed: argparse.Namespace, extras: list[str]) -> NoReturn:
        from yiji.domain.wording import counted

        parser = self._selected(parsed)
        known = _long_flags(parser)
        positional = {a.dest for a in parser._actions if not a.option_strings}
        flags = [_flag_name(t) for t in extras if t.startswith("-") and t != "-"]
        parts: list[str] = []
        for flag in flags[:3]:
            name = flag.lstrip("-").replace("-", "_")
            if name in positional:  # `yiji event submit --text hi`: the text is an argument of its own
                parts.append(f"unrecognized flag {flag} ({parser.prog} takes the {name} without a flag)")
                continue
            close = closest_name(flag, known)
            if close is not None:
                parts.append(f"unrecognized flag {flag} (did you mean {close}?)")
                continue
            elsewhere = _flag_elsewhere(flag)
            if elsewhere is None:
                parts.append(f"unrecognized flag {flag}")
            else:
                other, owners = elsewhere
                meant = "" if other == flag else f"did you mean {other}? "
                takers = ", ".join(owners)
                rule = f"{parser.prog} has no such flag; {takers} take it"
                parts.append(f"unrecognized flag {flag} ({meant}{rule})")
        others = len(extras) - len(flags)
        if others:
            parts.append(f"{counted(others, 'unexpected argument')} (quote text that contains spaces)")
        parser._fail(f"{'; '.join(parts)} (see {parser.prog} --help)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of the module that registers ``command`` when one does.

    Building the whole parser costs more than some commands' own work (``host-ingest`` runs at every
    compaction of a host), so :func:`main` builds only what the command line names; ``yiji --help``, an
    unknown command and anything unusual before the command get the whole parser.
    """
    parser = _Parser(prog="yiji", description="yiji (忆迹): local, auditable long-term memory")
    parser.add_argument("--version", action="version", version=f"yiji {__version__}")
    add_common(parser, suppress=False)
    common = _Parser(add_help=False)
    add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    home = COMMAND_HOMES.get(command or "")
    if home:
        command_module(home).register(sub, common)
        return parser
    plugins = plugin_commands()
    if command in plugins:
        importlib.import_module(plugins[command]).register(sub, common)
        return parser
    for name in COMMAND_MODULES:
        command_module(name).register(sub, common)
    for module in dict.fromkeys(plugins.values()):
        importlib.import_module(module).register(sub, common)
    _register_absent(sub)
    return parser


_VALUED = ("--db", "--config", "--persona", "--project")


def command_name(argv: Sequence[str]) -> str | None:
    """The command on a command line whose options before it are the common ones, else ``None``."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if token in _VALUED:
            index += 2
        elif token == "--json" or token.startswith(tuple(f"{flag}=" for flag in _VALUED)):
            index += 1
        elif token.startswith("-"):
            return None
        else:
            return token
    return None


def _error_line(exc: YijiError) -> str:
    """A plain error line: ``yiji: <heading>: <message>``, the heading naming the kind of error once."""
    return f"yiji: {exc.heading}: {exc.message}" if exc.heading else f"yiji: {exc.message}"


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # a real command line: one UTF-8 rule for it, standard input and output
        utf8_process()
        utf8_output()
    words = sys.argv[1:] if argv is None else list(argv)
    _Parser.json_errors = "--json" in words
    try:
        utf8_arguments(words)
    except YijiError as exc:
        print(json.dumps(exc.to_dict()) if _Parser.json_errors else _error_line(exc), file=sys.stderr)
        return exc.exit_code
    name = command_name(words)
    absent = _absent(name) if name else None
    if absent is not None:
        print(json.dumps(absent.to_dict()) if _Parser.json_errors else _error_line(absent), file=sys.stderr)
        return absent.exit_code
    parser = build_parser(name)
    if not words:
        # A bare `yiji` asks what yiji can do: the help, and exit 0 as `pip`, `django-admin` and
        # `poetry` do with no arguments. Nothing was attempted, so nothing failed; a command line that
        # names something wrong is still a usage error (exit 2).
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help/--version exit 0
        return int(exc.code or 0)
    ctx = Context(args, read_only=reads_only(args))
    try:
        code = args.func(ctx, args)
        return int(code or 0)
    except YijiError as exc:
        if ctx.json:
            print(json.dumps(exc.to_dict(), ensure_ascii=False), file=sys.stderr)
        else:
            print(_error_line(exc), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("yiji: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a command that stopped reading (| head)
        return 0
    except Exception as exc:
        # An unexpected failure: name its type only, since its text may quote input values. Set
        # YIJI_DEBUG=1 to see the traceback.
        if os.environ.get("YIJI_DEBUG"):
            raise
        error = {"error": "internal", "message": f"unexpected {type(exc).__name__}; rerun with YIJI_DEBUG=1"}
        if ctx.json:
            print(json.dumps(error), file=sys.stderr)
        else:
            print(f"yiji: internal error: {error['message']}", file=sys.stderr)
        return 1
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
