"""``yiji resume``: the budgeted context pack for a resuming session."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import MAX_OFFSET, Context, bounded_int, parse_flags

if TYPE_CHECKING:
    from yiji.models.resume import ResumeResult

DEFAULT_BUDGET = 4000
"""Shown in ``--help``; equal to ``yiji.models.resume.DEFAULT_BUDGET`` (a test checks), kept here so that
building the parser does not import the models."""


def _human(r: ResumeResult) -> str:
    m = r.metadata
    unit = "tokens" if m.exact else "units"
    lines = [
        f"status {m.status}  scope={r.scope.persona}/{r.scope.project}"
        + (f"  session={r.session}" if r.session else ""),
        f"used {m.used} of {m.budget} {unit} ({m.counter})",
        "included: " + (", ".join(m.included) or "(nothing)"),
    ]
    lines += [f"omitted: {o.component} ({o.size} {unit}, {o.reason})" for o in m.omitted]
    if m.empty:
        lines.append("nothing to show: " + ", ".join(m.empty))
    lines.append(f"checkpoint: {m.checkpoint.state}")
    lines.append(f"recall query: {m.recall.query}, {m.recall.found} found")
    lines += [f"note: {n}" for n in (m.counter_note, *m.recall.warnings) if n]
    return "\n".join([*lines, "", r.context]) if r.context else "\n".join(lines)


def _resume(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.resume import ResumeRequest

    raw = {
        "persona": ctx.persona,
        "project": ctx.project,
        "session": args.session,
        "budget": args.budget,
        "model": args.model,
        "query": args.query,
    }
    request = parse_flags(ResumeRequest, {k: v for k, v in raw.items() if v is not None})
    result = ctx.service.session_resume(request)
    if result.metadata.model_warning:
        ctx.notify(f"warning: {result.metadata.model_warning}")
    if args.context_only:
        print(result.context)
        return
    ctx.emit(result, _human)


COMMANDS = ("resume",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    r = sub.add_parser("resume", parents=[common], help="the budgeted context pack for a resuming session")
    r.add_argument("--session", help="session id (checkpoint and recent events of this session)")
    r.add_argument(
        "--budget",
        type=bounded_int(1, MAX_OFFSET),
        default=DEFAULT_BUDGET,
        help=f"context budget in the model's tokens, or UTF-8 bytes (default {DEFAULT_BUDGET})",
    )
    r.add_argument("--model", help="chat model name; picks an exact tokenizer when one is installed")
    r.add_argument("--query", help="what to recall (default: built from the checkpoint and recent events)")
    r.add_argument("--context-only", action="store_true", help="print only the context string")
    r.set_defaults(func=_resume)
