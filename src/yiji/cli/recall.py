"""``yiji recall`` and ``yiji reindex``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import MAX_OFFSET, Context, bounded_int, progress_bar
from yiji.cli.memory import memory_line

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import tzinfo

    from yiji.domain.recall import Recalled, RecalledItem
    from yiji.domain.wording import Words


def item_line(item: RecalledItem, zone: tzinfo | None, words: Words | None = None) -> str:
    """An item on one line, then each turn of its context on an indented line of its own."""
    from yiji.domain.wording import words_for

    say = words or words_for("en")
    if item.memory is not None:
        line = f"{item.score:.3f}  {memory_line(item.memory, zone, say)}"
    else:
        line = f"{item.score:.3f}  {_raw(item, zone, say)}"
    context = (
        f"       ↳ {say['how.context']} {_raw(c, zone, say)}" for c in item.context if c.event is not None
    )
    return "\n".join([line, *context])


def tiered_lines(items: Sequence[RecalledItem], zone: tzinfo | None, words: Words | None = None) -> list[str]:
    """The items under a heading per group (asked-for facts, good matches, weaker matches):
    scores fall within a group, so a group that starts higher than the last one ended says why."""
    from yiji.domain.wording import words_for

    say = words or words_for("en")
    lines: list[str] = []
    tier = None
    for item in items:
        if item.tier != tier:
            tier = item.tier
            label = say[f"recall.tier.{tier}"]  # the review UI's heading, as a line's start
            lines.append(f"── {label[:1].lower()}{label[1:]}")
        lines.append(item_line(item, zone, words))
    return lines


def _raw(item: RecalledItem, zone: tzinfo | None, words: Words) -> str:
    from yiji.timeutil import local_time

    assert item.event is not None
    e = item.event
    cut = f" …{words['cli.truncated']}" if e.truncated else ""
    return f"[{words['cli.raw_event']} {e.id} {local_time(e.occurred_at, zone)} {e.role}] {e.text}{cut}"


def _recall(ctx: Context, args: argparse.Namespace) -> None:
    """A lexical recall (the default) runs the recall use case alone, without pydantic or the rest of the
    service; plainly valid input is checked without the boundary model (see :mod:`yiji.domain.recall`)."""
    from yiji.domain.recall import plain_request

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
        "limit": args.limit or ctx.config.recall.default_limit,
        "mode": args.mode or ctx.config.recall.default_mode,
    }
    raw = {k: v for k, v in raw.items() if v is not None}
    request = plain_request(raw)
    if request is None:  # the boundary model converts what it may, or names the field and the rule
        from yiji.cli.context import parse_flags
        from yiji.models.recall import RecallQuery

        flags = {
            "query": "query",
            "kinds": "--kind",
            "include_history": "--history",
            "include_raw": "--no-raw",
        }
        request = parse_flags(RecallQuery, raw, flags).request()
    if request.mode == "fast":
        from yiji.service.recall import open_recall

        # the plain listing shows stored records only: their presentation is computed for JSON alone
        result = ctx.use_case(open_recall).recall(request, presentations=ctx.json)
    else:  # the query is embedded with the configured embedder, which the whole service builds
        result = ctx.service.recall(request)

    def human(r: Recalled) -> str:
        from yiji.invocation import yiji_command

        say = ctx.words
        scope = f"{r.persona}/{r.project}"
        nothing = say["cli.recall.nothing"].format(scope=scope, command=yiji_command("scopes"))
        lines = tiered_lines(r.items, ctx.zone, say) or [nothing]
        return "\n".join([*lines, *(f"{say['cli.warning']}: {w}" for w in r.warnings)])

    ctx.emit(result, human)


def _reindex(ctx: Context, args: argparse.Namespace) -> None:
    if args.vectors:
        built = ctx.service.vectors_reindex(ctx.persona, ctx.project, progress_bar)

        def vectors_line(r: dict[str, Any]) -> str:
            from yiji.domain.wording import counted

            rate = f", {r['vectors_per_second']} vectors/s" if r["vectors_per_second"] else ""
            changed = (
                f"; {r['skipped_changed']} changed while embedding (run again)"
                if r["skipped_changed"]
                else ""
            )
            separated = (
                f"its conversations are separated by {r['separation']}"
                if r["separation"] is not None
                else "no separation of conversations to measure"
            )
            what = f"{counted(r['memories'], 'memory', 'memories')}, {counted(r['events'], 'raw event')}"
            return (
                f"embedded {counted(r['vectors'], 'vector')} ({what}) "
                f"for {r['scope'].persona}/{r['scope'].project} in {r['seconds']} s{rate}{changed}\n"
                f"in semantic recall a match by meaning counts at most {r['cosine_weight']:.2f} of a match "
                f"by words ({separated})"
            )

        ctx.emit(built, vectors_line)
        return
    result = ctx.service.reindex(progress_bar)

    def reindexed(r: dict[str, Any]) -> str:
        from yiji.domain.wording import counted

        events, memories = counted(r["events"], "event"), counted(r["memories"], "memory", "memories")
        return f"reindexed {events} and {memories} ({r['segmenter']})"

    ctx.emit(result, reindexed)


COMMANDS = ("recall", "reindex")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    r = sub.add_parser("recall", parents=[common], help="recall memories (and raw events) for a query")
    r.add_argument("query", nargs="+")
    r.add_argument("--kind", action="append", help="only these kinds (repeatable)")
    r.add_argument("--since", help="valid/occurred at or after (ISO 8601 with timezone)")
    r.add_argument("--until", help="valid/occurred before (ISO 8601 with timezone)")
    r.add_argument("--as-of", help="what held at this time (ISO 8601 with timezone)")
    r.add_argument("--history", action="store_true", help="include expired and future facts")
    r.add_argument("--no-raw", action="store_true", help="memories only, no raw-event fallback")
    r.add_argument(
        "--limit",
        type=bounded_int(1, MAX_OFFSET),
        help="most items to return (default: [recall] default_limit, 10)",
    )
    r.add_argument(
        "--mode",
        choices=["fast", "semantic", "deep"],
        help="fast: lexical only; semantic: add cosine over the scope's vectors (at most [recall] "
        "semantic_scan_limit most recent); deep: over all of them (default: [recall] default_mode, fast)",
    )
    r.set_defaults(func=_recall)
    ri = sub.add_parser(
        "reindex", parents=[common], help="rebuild the lexical index (or, with --vectors, vectors)"
    )
    ri.add_argument(
        "--vectors",
        action="store_true",
        help="rebuild the scope's vectors for semantic recall with the configured embedder",
    )
    ri.set_defaults(func=_reindex)
