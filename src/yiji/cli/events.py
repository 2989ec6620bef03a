"""``yiji event submit|show|list``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, read_json_object, read_text_arg
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from yiji.models import EventRecord, SubmitResult


def _event_line(e: EventRecord) -> str:
    text = e.text if len(e.text) <= 80 else e.text[:79] + "…"
    when = e.model_dump(mode="json")["occurred_at"]
    return f"#{e.seq} {e.id} {when} [{e.session}] {e.role}: {text}"


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
            "text": read_text_arg(args.text, args.file, "text"),
            "occurred_at": args.occurred_at,
        }
        if args.cue:
            raw["cues"] = [_cue(c) for c in args.cue]
        raw = {k: v for k, v in raw.items() if v is not None}
    raw.setdefault("persona", ctx.persona)
    raw.setdefault("project", ctx.project)
    raw = {k: v for k, v in raw.items() if v is not None}
    result = ctx.service.event_submit(parse(EventIn, raw))

    def human(r: SubmitResult) -> str:
        state = "stored" if r.created else "already stored (unchanged)"
        return f"{state}: {_event_line(r.event)}  scope={r.scope.persona}/{r.scope.project}"

    ctx.emit(result, human)


def _cue(spec: str) -> dict[str, str]:
    kind, _, rest = spec.partition(":")
    identifier, _, label = rest.partition("=")
    if kind not in ("photo", "text") or not identifier:
        raise InvalidInput("cue", "must look like photo:ID=label or text:ID=label")
    return {"type": kind, "identifier": identifier, **({"label": label} if label else {})}


def _show(ctx: Context, args: argparse.Namespace) -> None:
    record = ctx.service.event_show(args.id, ctx.persona, ctx.project)
    ctx.emit(record, lambda e: _event_line(e) + "\n\n" + e.text)


def _list(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models import EventFilter, parse

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
    query = parse(EventFilter, {k: v for k, v in raw.items() if v is not None})
    scope, records = ctx.service.event_list(query)
    ctx.emit(
        {"scope": scope, "events": records},
        lambda r: "\n".join(_event_line(e) for e in r["events"]) or "(no events)",
    )


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
    sh = es.add_parser("show", parents=[common], help="one event")
    sh.add_argument("id")
    sh.set_defaults(func=_show)
    ls = es.add_parser("list", parents=[common], help="events of the scope, oldest first")
    ls.add_argument("--session")
    ls.add_argument("--role")
    ls.add_argument("--category")
    ls.add_argument("--since", help="occurred at or after (ISO 8601 with timezone)")
    ls.add_argument("--until", help="occurred before (ISO 8601 with timezone)")
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--offset", type=int, default=0)
    ls.set_defaults(func=_list)
