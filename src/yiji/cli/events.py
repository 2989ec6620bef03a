"""``yiji event submit|show|list``."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context, int_range, read_json_object, read_text_arg
from yiji.errors import InvalidInput
from yiji.models import EventFilter, EventIn, EventRecord, SubmitResult, parse


def _event_line(e: EventRecord) -> str:
    text = e.text if len(e.text) <= 80 else e.text[:79] + "…"
    when = e.model_dump(mode="json")["occurred_at"]
    return f"#{e.seq} {e.id} {when} [{e.session}] {e.role}: {text}"


def _submit(ctx: Context, args: argparse.Namespace) -> None:
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
        lines = [f"{state}: {_event_line(r.event)}  scope={r.scope.persona}/{r.scope.project}"]
        if r.extraction is not None:
            lines.append(_extraction_line(r.extraction))
        return "\n".join(lines)

    for warning in result.warnings:
        ctx.notify(f"warning: {warning}")
    ctx.emit(result, human)


def _extraction_line(outcome: dict[str, object]) -> str:
    """The extraction outcome in one line: its state and, when it failed, the sanitized reason."""
    state = str(outcome.get("state", "unknown"))
    ids = outcome.get("memory_ids") or []
    parts = [f"extraction: {state}"]
    if isinstance(ids, list) and ids:
        parts.append(f"{len(ids)} memory(ies): {', '.join(str(i) for i in ids)}")
    if outcome.get("rejected"):
        rules = outcome.get("rejected_rules")
        listed = ", ".join(map(str, rules)) if isinstance(rules, list) else ""
        parts.append(f"{outcome['rejected']} candidate(s) rejected ({listed})")
    if outcome.get("message"):
        parts.append(f"reason: {outcome['message']} (retry later: yiji extraction retry)")
    return "; ".join(parts)


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
    ls.add_argument("--limit", type=int_range(1), default=50)
    ls.add_argument("--offset", type=int_range(0), default=0)
    ls.set_defaults(func=_list)
