"""``yiji recall`` and ``yiji reindex``."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context, bounded_int, progress_bar
from yiji.cli.memory import memory_line
from yiji.models import parse
from yiji.models.common import MAX_OFFSET
from yiji.models.recall import RecallItem, RecallQuery, RecallResult


def item_line(item: RecallItem) -> str:
    if item.memory is not None:
        return f"{item.score:.3f}  {memory_line(item.memory)}"
    assert item.event is not None
    e = item.event
    when = e.model_dump(mode="json")["occurred_at"]
    cut = " …[truncated]" if e.truncated else ""
    return f"{item.score:.3f}  [raw event {e.id} {when} {e.role}] {e.text}{cut}"


def _recall(ctx: Context, args: argparse.Namespace) -> None:
    raw: dict[str, Any] = {
        "query": " ".join(args.query),
        "persona": ctx.persona,
        "project": ctx.project,
        "kinds": args.kind,
        "since": args.since,
        "until": args.until,
        "as_of": args.as_of,
        "include_history": args.history or None,
        "include_raw": False if args.no_raw else None,
        "limit": args.limit,
    }
    result = ctx.service.memory_recall(parse(RecallQuery, {k: v for k, v in raw.items() if v is not None}))

    def human(r: RecallResult) -> str:
        lines = [item_line(i) for i in r.items] or ["(nothing recalled: no evidence for this query)"]
        return "\n".join([*lines, *(f"warning: {w}" for w in r.warnings)])

    ctx.emit(result, human)


def _reindex(ctx: Context, args: argparse.Namespace) -> None:
    result = ctx.service.reindex(progress_bar)
    ctx.emit(
        result, lambda r: f"reindexed {r['events']} events and {r['memories']} memories ({r['segmenter']})"
    )


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    r = sub.add_parser("recall", parents=[common], help="recall memories (and raw events) for a query")
    r.add_argument("query", nargs="+")
    r.add_argument("--kind", action="append", help="only these kinds (repeatable)")
    r.add_argument("--since", help="valid/occurred at or after (ISO 8601 with timezone)")
    r.add_argument("--until", help="valid/occurred before (ISO 8601 with timezone)")
    r.add_argument("--as-of", help="what held at this time (ISO 8601 with timezone)")
    r.add_argument("--history", action="store_true", help="include expired and future facts")
    r.add_argument("--no-raw", action="store_true", help="memories only, no raw-event fallback")
    r.add_argument("--limit", type=bounded_int(1, MAX_OFFSET), default=10)
    r.set_defaults(func=_recall)
    sub.add_parser("reindex", parents=[common], help="rebuild the lexical index").set_defaults(func=_reindex)
