"""``yiji checkpoint save|show``: host-reported task state, appended and never edited."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import MAX_OFFSET, Context, bounded_int, parse_flags, read_json_object

if TYPE_CHECKING:
    from datetime import tzinfo

    from yiji.models.checkpoints import CheckpointRecord, CheckpointResult, CheckpointView


def checkpoint_lines(c: CheckpointRecord, zone: tzinfo | None) -> list[str]:
    from yiji.timeutil import local_time

    lines = [f"{c.id}  saved {local_time(c.created_at, zone)}  session={c.session}"]
    if c.invalidated_at is not None:
        reason = c.invalid_reason or "no reason recorded"
        lines.append(f"INVALIDATED {local_time(c.invalidated_at, zone)}: {reason}")
    lines.append(f"goal: {c.goal}")
    lines += [f"  done: {s}" for s in c.completed]
    lines += [f"  pending: {s}" for s in c.pending]
    lines += [f"  constraint: {s}" for s in c.constraints]
    if c.next_action is not None:
        lines.append(f"next: {c.next_action}")
    if c.covered_seq is not None:
        lines.append(f"covers events up to #{c.covered_seq}")
    return lines


def _save(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models import parse
    from yiji.models.checkpoints import CheckpointIn

    if args.input is not None:
        raw = read_json_object(args.input)
    else:
        raw = {
            "session": args.session,
            "goal": args.goal,
            "completed": args.done,
            "pending": args.pending,
            "constraints": args.constraint,
            "next_action": args.next,
            "covered_seq": args.covered_seq,
        }
        raw = {k: v for k, v in raw.items() if v is not None}
    raw.setdefault("session", args.session)
    raw.setdefault("persona", ctx.persona)
    raw.setdefault("project", ctx.project)
    raw = {k: v for k, v in raw.items() if v is not None}
    flags = {"completed": "--done", "constraints": "--constraint", "next_action": "--next"}
    # a file's problems are named by their place in it, the flags' by the flag
    request = parse(CheckpointIn, raw) if args.input is not None else parse_flags(CheckpointIn, raw, flags)
    result = ctx.service.checkpoint_save(request)

    def human(r: CheckpointResult) -> str:
        return "\n".join(
            [
                f"saved checkpoint  scope={r.scope.persona}/{r.scope.project}",
                *checkpoint_lines(r.checkpoint, ctx.zone),
            ]
        )

    ctx.emit(result, human)


def _show(ctx: Context, args: argparse.Namespace) -> None:
    view = ctx.service.checkpoint_show(
        args.session, persona=ctx.persona, project=ctx.project, history=args.history, limit=args.limit
    )

    def human(v: CheckpointView) -> str:
        lines = [f"session {v.session}  scope={v.scope.persona}/{v.scope.project}  state: {v.state}"]
        if v.history is not None:
            for record in v.history:
                lines += ["", *checkpoint_lines(record, ctx.zone)]
        elif v.checkpoint is not None:
            lines += ["", *checkpoint_lines(v.checkpoint, ctx.zone)]
        return "\n".join(lines)

    ctx.emit(view, human)


COMMANDS = ("checkpoint",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("checkpoint", help="save and show host-reported task checkpoints")
    cs = p.add_subparsers(dest="checkpoint_command", required=True)
    s = cs.add_parser("save", parents=[common], help="append a task checkpoint for a session")
    s.add_argument("--session", help="session id")
    s.add_argument("--goal", help="what the task is for")
    s.add_argument("--done", action="append", help="a completed step (repeatable)")
    s.add_argument("--pending", action="append", help="a pending step (repeatable)")
    s.add_argument("--constraint", action="append", help="a constraint to respect (repeatable)")
    s.add_argument("--next", help="the next action")
    s.add_argument(
        "--covered-seq", type=bounded_int(1, MAX_OFFSET), help="seq of the last event this checkpoint covers"
    )
    s.add_argument("--input", help="a JSON object file with every field ('-' for stdin)")
    s.set_defaults(func=_save)
    sh = cs.add_parser("show", parents=[common], help="the checkpoint state of a session")
    sh.add_argument("--session", required=True, help="session id")
    sh.add_argument("--history", action="store_true", help="every checkpoint of the session, newest first")
    sh.add_argument(
        "--limit", type=bounded_int(1, MAX_OFFSET), default=100, help="most checkpoints shown with --history"
    )
    sh.set_defaults(func=_show)
