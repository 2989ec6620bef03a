"""``yiji event submit|import|show|list``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import (
    Context,
    add_page_options,
    bounded_int,
    more_line,
    parse_flags,
    progress_bar,
    read_json_object,
    read_text_arg,
)
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from datetime import tzinfo

    from yiji.models import EventRecord, SubmitResult
    from yiji.models.events import EventPage, ImportSummary


def _event_line(e: EventRecord, zone: tzinfo | None) -> str:
    from yiji.timeutil import local_time

    text = e.text if len(e.text) <= 80 else e.text[:79] + "…"
    return f"#{e.seq} {e.id} {local_time(e.occurred_at, zone)} [{e.session}] {e.role}: {text}"


def _submit(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models import EventIn, parse

    if args.input is not None:
        raw = read_json_object(args.input)
    else:
        raw = {
            "id": args.id,
            "session": args.session,
            "role": args.role,
            "source": args.source,
            "category": args.category,
            "text": read_text_arg(args.text, args.file, "text", nonempty=True),
            "occurred_at": args.occurred_at,
        }
        if args.cue:
            raw["cues"] = [_cue(c) for c in args.cue]
        raw = {k: v for k, v in raw.items() if v is not None}
    raw.setdefault("persona", ctx.persona)
    raw.setdefault("project", ctx.project)
    raw = {k: v for k, v in raw.items() if v is not None}
    # a file's problems are named by their place in it, the flags' by the flag
    flags = {"text": "text", "cues": "--cue"}
    event = parse(EventIn, raw) if args.input is not None else parse_flags(EventIn, raw, flags)
    result = ctx.service.event_submit(event)

    def human(r: SubmitResult) -> str:
        if r.event is None:
            return f"not stored (it repeats a deletion)  scope={r.scope.persona}/{r.scope.project}"
        state = "stored" if r.created else "already stored (unchanged)"
        lines = [f"{state}: {_event_line(r.event, ctx.zone)}  scope={r.scope.persona}/{r.scope.project}"]
        if r.extraction is not None:
            lines.append(_extraction_line(r.extraction))
        return "\n".join(lines)

    for warning in result.warnings:
        ctx.notify(f"warning: {warning}")
    ctx.emit(result, human)


def _extraction_line(outcome: dict[str, object]) -> str:
    """The extraction outcome in one line: its state and, when it failed, the sanitized reason."""
    from yiji.domain.wording import counted
    from yiji.invocation import yiji_command

    state = str(outcome.get("state", "unknown"))
    ids = outcome.get("memory_ids") or []
    parts = [f"extraction: {state}"]
    if isinstance(ids, list) and ids:
        parts.append(f"{counted(len(ids), 'memory', 'memories')}: {', '.join(str(i) for i in ids)}")
    if outcome.get("rejected"):
        rules = outcome.get("rejected_rules")
        listed = ", ".join(map(str, rules)) if isinstance(rules, list) else ""
        parts.append(f"{counted(int(str(outcome['rejected'])), 'candidate')} rejected ({listed})")
    if outcome.get("message"):
        parts.append(f"reason: {outcome['message']} (retry later: {yiji_command('extraction retry')})")
    return "; ".join(parts)


def _cue(spec: str) -> dict[str, str]:
    kind, _, rest = spec.partition(":")
    identifier, _, label = rest.partition("=")
    if kind not in ("photo", "text") or not identifier:
        raise InvalidInput("cue", "must look like photo:ID=label or text:ID=label")
    return {"type": kind, "identifier": identifier, **({"label": label} if label else {})}


def _show(ctx: Context, args: argparse.Namespace) -> None:
    record = ctx.service.event_show(args.id, ctx.persona, ctx.project)
    ctx.emit(record, lambda e: _event_line(e, ctx.zone) + "\n\n" + e.text)


def _list(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models import EventFilter

    raw = {
        "persona": ctx.persona,
        "project": ctx.project,
        "session": args.session,
        "role": args.role,
        "category": args.category,
        "since": args.since,
        "until": args.until,
        "limit": args.limit,
        "offset": args.offset,
    }
    query = parse_flags(EventFilter, {k: v for k, v in raw.items() if v is not None})
    page = ctx.service.event_page(query)

    def human(p: EventPage) -> str:
        footer = more_line(p.total, p.offset, len(p.events), p.next_offset, "event", words=ctx.words)
        return "\n".join([*(_event_line(e, ctx.zone) for e in p.events), footer])

    ctx.emit(page, human)


def _import(ctx: Context, args: argparse.Namespace) -> int:
    summary = ctx.service.event_import(
        args.file,
        persona=ctx.persona,
        project=ctx.project,
        batch_size=args.batch_size,
        progress=progress_bar,
    )

    def human(r: ImportSummary) -> str:
        from yiji.domain.wording import counted

        lines = [r.committed_line()]
        lines += [f"  line {x.line}: {x.field}: {x.rule}" for x in r.rejections]
        if r.rejected > len(r.rejections):
            lines.append(f"  ... and {counted(r.rejected - len(r.rejections), 'more rejection')}")
        if r.stopped_at_line is not None:
            lines.append(f"reading stopped at line {r.stopped_at_line}; the rest of the file was not read")
        return "\n".join(lines)

    ctx.emit(summary, human)
    return 2 if summary.rejected else 0


COMMANDS = ("event",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("event", help="submit and inspect original events")
    es = p.add_subparsers(dest="event_command", required=True)
    s = es.add_parser("submit", parents=[common], help="commit one original event")
    s.add_argument("text", nargs="?", help="event text (or --file, or stdin)")
    s.add_argument("--file", help="read the text from a file ('-' for stdin)")
    s.add_argument("--input", help="a JSON object file with every field ('-' for stdin)")
    s.add_argument("--id", help="event id (generated when omitted)")
    s.add_argument("--session", help="session id")
    s.add_argument("--role", help="user, assistant, system or tool")
    s.add_argument("--source", help="free label such as chat or a host name (default chat)")
    s.add_argument("--category", help="conversation, reference, persona or correction")
    s.add_argument("--occurred-at", help="ISO 8601 time with a timezone (default now)")
    s.add_argument("--cue", action="append", help="photo:ID=label or text:ID=label (repeatable)")
    s.set_defaults(func=_submit)
    im = es.add_parser(
        "import",
        parents=[common],
        help="import many events from a JSON list or JSON Lines file (idempotent by id)",
        description=(
            "Import original events from FILE: a JSON list of event objects, or one object per line "
            "(JSON Lines). Each object has the fields of 'event submit --input'. Re-importing the same "
            "file stores nothing twice when the events carry ids. Exit 2 when any record was rejected."
        ),
    )
    im.add_argument("file", help="a .json (list) or .jsonl file")
    im.add_argument(
        "--batch-size",
        type=bounded_int(1, 100_000),
        default=2000,
        help="events per transaction (default 2000)",
    )
    im.set_defaults(func=_import)
    sh = es.add_parser("show", parents=[common], help="one event")
    sh.add_argument("id")
    sh.set_defaults(func=_show)
    ls = es.add_parser("list", parents=[common], help="events of the scope, oldest first")
    ls.add_argument("--session")
    ls.add_argument("--role")
    ls.add_argument("--category")
    ls.add_argument("--since", help="occurred at or after (ISO 8601 with timezone)")
    ls.add_argument("--until", help="occurred before (ISO 8601 with timezone)")
    add_page_options(ls, limit=50)
    ls.set_defaults(func=_list)
