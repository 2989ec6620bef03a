"""``yiji persona show|set|history|rollback``. No command edits or deletes a version."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import MAX_OFFSET, Context, bounded_int, read_text_arg

if TYPE_CHECKING:
    from yiji.models.personas import PersonaRecord


def _human(record: PersonaRecord) -> str:
    note = f" ({record.note})" if record.note else ""
    return f"persona {record.persona} v{record.version}{note}\n\n{record.text}"


def _show(ctx: Context, args: argparse.Namespace) -> None:
    ctx.emit(ctx.service.persona_get(ctx.persona), _human)


def _set(ctx: Context, args: argparse.Namespace) -> None:
    text = read_text_arg(args.text, args.file, "text")
    ctx.emit(ctx.service.persona_set(text, ctx.persona), _human)


def _history(ctx: Context, args: argparse.Namespace) -> None:
    records = ctx.service.persona_history(ctx.persona)

    def human(rs: list[PersonaRecord]) -> str:
        return "\n".join(f"v{r.version}  {ctx.when(r.created_at)}  {r.note or ''}".rstrip() for r in rs)

    ctx.emit(records, human)


def _rollback(ctx: Context, args: argparse.Namespace) -> None:
    ctx.emit(ctx.service.persona_rollback(args.to, ctx.persona), _human)


COMMANDS = ("persona",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("persona", help="show or change the persona (versions are immutable)")
    ps = p.add_subparsers(dest="persona_command", required=True)
    ps.add_parser("show", parents=[common], help="the latest version").set_defaults(func=_show)
    s = ps.add_parser("set", parents=[common], help="append a new version")
    s.add_argument("text", nargs="?", help="persona text (or --file, or stdin)")
    s.add_argument("--file", help="read the text from a file ('-' for stdin)")
    s.set_defaults(func=_set)
    ps.add_parser("history", parents=[common], help="every version").set_defaults(func=_history)
    r = ps.add_parser("rollback", parents=[common], help="append a copy of an earlier version")
    r.add_argument("--to", type=bounded_int(1, MAX_OFFSET), required=True, help="version number to restore")
    r.set_defaults(func=_rollback)
