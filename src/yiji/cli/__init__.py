"""The ``yiji`` command line: a thin adapter over :class:`yiji.service.MemoryService`.

Exit codes: 0 ok, 1 internal or storage error (or ``doctor`` found a problem), 2 invalid input,
3 conflict. Error messages name the field and the rule; they never echo input values or secrets. An
unexpected exception is reported by its type alone (``YIJI_DEBUG=1`` shows the traceback).

Start-up cost. Every command builds the whole parser, so ``yiji --help`` and every command pay for
what the command modules import. The rule for a command module (``tests/test_startup_imports.py``
guards it):

* at module level, import only the standard library, :mod:`yiji.cli.context` and :mod:`yiji.errors`;
  names used only in annotations go under ``if TYPE_CHECKING:``;
* ``register(sub, common)`` adds the subcommands and their options; it needs nothing else;
* a handler imports what it uses inside its body: the models (pydantic), ``yiji.bench``, the MCP
  server, tqdm (through :func:`yiji.cli.context.progress_bar`); the service is opened lazily by
  ``ctx.service``, which imports it on first use;
* a constant shown in ``--help`` is restated in the command module when its home is heavy, with a test
  that the two agree (see ``cli/resume.py``).

Below the CLI the same holds: httpx is imported where a provider sends a request, rjieba where CJK
text is first segmented.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from yiji import __version__
from yiji.cli import (
    archive,
    bench,
    capture,
    checkpoints,
    events,
    lifecycle,
    memory,
    ops,
    personas,
    probe,
    recall,
    resume,
    ui,
)
from yiji.cli.context import Context, add_common
from yiji.errors import YijiError

__all__ = ["build_parser", "main"]

COMMAND_MODULES = [
    events,
    memory,
    lifecycle,
    recall,
    checkpoints,
    resume,
    personas,
    ops,
    bench,
    probe,
    archive,
    capture,
    ui,
]


_QUOTED = re.compile(r": '[^']*'")


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors name the argument and the rule, never the value typed."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            message = "unrecognized arguments (see --help)"
        else:
            message = _QUOTED.sub("", message)
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="yiji", description="yiji (忆迹): local, auditable long-term memory")
    parser.add_argument("--version", action="version", version=f"yiji {__version__}")
    add_common(parser, suppress=False)
    common = _Parser(add_help=False)
    add_common(common, suppress=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: usage errors exit 2, --help/--version exit 0
        return int(exc.code or 0)
    ctx = Context(args)
    try:
        code = args.func(ctx, args)
        return int(code or 0)
    except YijiError as exc:
        if ctx.json:
            print(json.dumps(exc.to_dict(), ensure_ascii=False), file=sys.stderr)
        else:
            print(f"yiji: {exc.message}", file=sys.stderr)
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
