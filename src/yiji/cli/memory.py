"""``yiji memory derive|read|list``, ``yiji extraction check|run|retry`` (``memory correct``: lifecycle)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from yiji.cli import lifecycle
from yiji.cli.context import (
    MAX_OFFSET,
    Context,
    add_page_options,
    bounded_int,
    more_line,
    parse_flags,
    progress_bar,
    read_text_arg,
)
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from datetime import datetime, tzinfo

    from yiji.domain.wording import Words
    from yiji.models.memories import ListedMemory, MemoryPage, MemoryRecord


def memory_line(m: MemoryRecord, zone: tzinfo | None, words: Words | None = None) -> str:
    """One memory on a line; its validity dates are days in the display ``zone``, its state (revoked,
    proposed, rejected) in ``words`` (English by default)."""
    from yiji.domain.wording import words_for
    from yiji.timeutil import local_time

    say = words or words_for("en")

    def day(value: datetime) -> str:
        return local_time(value, zone)[:10]

    span = day(m.valid_at) + (f"..{day(m.invalid_at)}" if m.invalid_at else "..")
    key = f" [{m.subject}.{m.fact_key}]" if m.fact_key else ""
    revoked = f" {say['revoked'].upper()}" if m.revoked_at else ""
    state = m.review_state
    review = f" {say['review.' + state].upper()}" if state != "accepted" else ""
    return f"{m.id} {m.kind}/{m.basis}{key} {span}{revoked}{review}: {m.text}"


def listed_line(m: ListedMemory, zone: tzinfo | None, words: Words | None = None) -> str:
    """A listed memory as presented now: faded ones show their gist or labeled topic cues."""
    shown = m.presentation
    if not shown.faded:
        return memory_line(m, zone, words)
    return f"{m.id} {m.kind}/{m.basis} {shown.time_label} [{shown.label}]: {shown.text}"


DERIVE_FORMAT = """\
input (--input FILE, or '-' for stdin): a JSON list of memories, or an object {"memories": [...]};
up to 100 memories, stored all or nothing. Each memory:

  required
    text        the memory in your words (at most 500 characters)
    quote       an exact, verbatim copy of part of the event's text (the evidence)
    kind        fact | preference | episode | observation | emotion | agreement | growth
    basis       user_statement (a user event) | assistant_expression (an assistant event) | inference
  optional
    confidence  0..1, ranking metadata, not a probability (default 0.8)
    subject     whom a fact is about, e.g. "user"; required with fact_key
    fact_key    lowercase snake_case with dots, e.g. "home.city": a single-valued fact that changes over
                time (only user-stated facts and preferences); a new value closes the old interval
    valid_at    ISO 8601 with a timezone: when it became true (default: when the event occurred)
    valence     -1..1 and arousal 0..1: only on kind emotion from an assistant_expression
    gist        a short summary shown once the memory has faded (at most 400 characters)
    related     indexes of other memories in this list, or ids of stored memories

example (examples/memories.json in the source tree):

  [{"text": "用户住在杭州", "quote": "我住在杭州", "kind": "fact", "basis": "user_statement",
    "subject": "user", "fact_key": "home.city", "confidence": 0.95},
   {"text": "用户每天早上沿着西湖跑步", "quote": "每天早上沿着西湖跑步", "kind": "episode",
    "basis": "user_statement", "gist": "西湖晨跑", "related": [0]}]
"""


DERIVED_LINES = {
    ("accepted", False): "derived {id}",
    ("proposed", False): "proposed {id} (waiting for review)",
    ("accepted", True): "already remembered {id} (the same claim; nothing stored again)",
    ("proposed", True): "already proposed {id} (the same claim, waiting for review; nothing stored again)",
    ("rejected", True): "rejected {id} in review before (the same claim; not proposed again)",
}
"""A line of ``memory derive``'s plain output, by (review state, whether the memory was already stored)."""


def _derive(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.memories import DeriveRequest

    try:
        raw = json.loads(read_text_arg(None, args.input, "--input"))
    except (json.JSONDecodeError, RecursionError):
        raise InvalidInput(
            "--input", "must be JSON: a list of memories or an object with 'memories'"
        ) from None
    if isinstance(raw, list):
        raw = {"memories": raw}
    if not isinstance(raw, dict):
        raise InvalidInput("--input", "must be JSON: a list of memories or an object with 'memories'")
    if raw.get("event_id") not in (None, args.event):
        raise InvalidInput("--event", "differs from event_id in the input")
    raw["event_id"] = args.event
    raw.setdefault("persona", ctx.persona)
    raw.setdefault("project", ctx.project)
    if args.propose:
        raw["propose"] = True
    request = parse_flags(
        DeriveRequest,
        {k: v for k, v in raw.items() if v is not None},
        {"event_id": "--event"},
        input_prefix="--input ",
    )
    result = ctx.service.memory_derive(request)

    def human(r: Any) -> str:
        from yiji.invocation import yiji_command

        lines = [
            DERIVED_LINES[(state, memory_id in r.existing_ids)].format(id=memory_id)
            for memory_id, state in zip(r.memory_ids, r.review_states, strict=True)
        ]
        if "proposed" in r.review_states:
            lines.append(f"decide: {yiji_command('review')} or the review page of {yiji_command('ui')}")
        return "\n".join(lines)

    ctx.emit(result, human)


def _read(ctx: Context, args: argparse.Namespace) -> None:
    result = ctx.service.memory_read(
        args.id, persona=ctx.persona, project=ctx.project, offset=args.offset, limit=args.limit
    )

    def human(r: dict[str, Any]) -> str:
        e, t = r["event"], r["text"]
        lines = [
            memory_line(r["memory"], ctx.zone, ctx.words),
            f"quote: {r['memory'].quote}",
            f"source: event {e['id']} #{e['seq']} {e['role']} {ctx.when(e['occurred_at'])} "
            f"session={e['session']}" + (" (amended)" if e["amended"] else ""),
            f"quote at characters {r['quote']['start']}..{r['quote']['end']} of {t['total_chars']}",
            "",
            t["content"] + (" …" if t["has_more"] else ""),
        ]
        if r["co_derived"]:
            lines += ["", "co-derived:"] + [
                f"  {memory_line(m, ctx.zone, ctx.words)}" for m in r["co_derived"]
            ]
        if r["relations"]:
            lines += ["", "relations:"] + [f"  {x.from_id} -{x.type}-> {x.to_id}" for x in r["relations"]]
        return "\n".join(lines)

    ctx.emit(result, human)


def _list(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.memories import MemoryQuery

    raw = {
        "persona": ctx.persona,
        "project": ctx.project,
        "kinds": args.kind,
        "bases": args.basis,
        "subject": args.subject,
        "fact_key": args.key,
        "text": args.text,
        "since": args.since,
        "until": args.until,
        "as_of": args.as_of,
        "view": "revoked" if args.only_revoked else ("history" if args.history else "current"),
        "include_revoked": args.revoked,
        "newest_first": args.newest_first,
        "review": args.review,
        "offset": args.offset,
        "limit": args.limit,
    }
    query = parse_flags(
        MemoryQuery,
        {k: v for k, v in raw.items() if v is not None},
        {"kinds": "--kind", "bases": "--basis", "fact_key": "--key", "include_revoked": "--revoked"},
    )
    page = ctx.service.memory_page(query)
    if args.ids:  # for scripts: MEMORY_ID=$(yiji memory list --key home.city --ids)
        for memory in page.memories:
            print(memory.id)
        return

    def human(p: MemoryPage) -> str:
        footer = more_line(p.total, p.offset, len(p.memories), p.next_offset, "memory", "memories", ctx.words)
        return "\n".join([*(listed_line(m, ctx.zone, ctx.words) for m in p.memories), footer])

    ctx.emit(page, human)


def _retry(ctx: Context, args: argparse.Namespace) -> int:
    """Exit 1 when the endpoint failed for an event tried (it stays pending), as any provider failure."""
    if args.all:
        if args.event:
            raise InvalidInput("all", "--all and --event exclude each other")
        done = ctx.service.extraction_retry_all(
            persona=ctx.persona, project=ctx.project, batch_size=args.batch_size, progress=progress_bar
        )
        ctx.emit(
            done,
            lambda r: (
                f"tried {r['tried']}: completed {r['completed']}, "
                f"still pending {r['still_pending']}{_why_pending(r['failures'])}"
            ),
        )
        return _retry_exit(done)
    result = ctx.service.extraction_retry(
        args.event, persona=ctx.persona, project=ctx.project, limit=args.limit
    )
    ctx.emit(
        result,
        lambda r: (
            "\n".join(f"{x['event_id']}: {x['state']}" for x in r["results"])
            + f"\ncompleted {r['completed']}, still pending {r['still_pending']}{_why_pending(r['failures'])}"
        ),
    )
    return _retry_exit(result)


def _run(ctx: Context, args: argparse.Namespace) -> int:
    """Exit 1 when the endpoint failed for an event tried (it stays pending), as ``extraction retry``."""
    if args.auto:
        from yiji.cli.autorun import run_auto

        return run_auto(ctx.service, ctx.config)
    result = ctx.service.extraction_run(
        persona=ctx.persona,
        project=ctx.project,
        session=args.session,
        since=args.since,
        until=args.until,
        roles=args.role,
        limit=args.limit,
        dry_run=args.dry_run,
        progress=progress_bar,
    )

    def human(r: dict[str, Any]) -> str:
        from yiji.cli.autorun import summary_words
        from yiji.domain.wording import counted

        roles = "/".join(r["roles"])
        if r["dry_run"]:
            return (
                f"would send {counted(r['would_send'], 'event')} of {r['selected']} without memories "
                f"({roles} turns; the session's other turns go as context); nothing was sent"
            )
        return summary_words(r) if r["tried"] or r["not_tried"] else f"no {roles} event waits for extraction"

    ctx.emit(result, human)
    return 0 if result["dry_run"] else _retry_exit(result)


def _why_pending(failures: list[dict[str, Any]]) -> str:
    """`` (the endpoint could not be reached)``: why events are still pending, by reason, most first."""
    from yiji.domain.endpoint_failures import describe

    if not failures:
        return ""
    said = [describe(f["reason"], f.get("status")) for f in failures]
    if len(failures) > 1:
        said = [f"{f['events']}: {words}" for f, words in zip(failures, said, strict=True)]
    return f" ({'; '.join(said)})"


def _retry_exit(result: Mapping[str, Any]) -> int:
    return 1 if result["failures"] else 0


def _check(ctx: Context, args: argparse.Namespace) -> int:
    from yiji.evaluation.extraction_check import run_extraction_check

    result = run_extraction_check(ctx.config)

    def mark(passed: bool | None) -> str:
        return "ok  " if passed else "n/a " if passed is None else "FAIL"

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value}"

    def human(r: dict[str, Any]) -> str:
        e, lat = r["endpoint"], r["latency_s"]
        measured = (
            f"answered turns that state something: {r['stating_turns']}, "
            f"of them proposed nothing: {r['silent_turns']}; "
            f"recall {share(r['recall'])}, precision {share(r['precision'])}; "
            f"stored from turns that hold nothing to remember: {r['stored_on_turns_without_memories']}"
            if r["answered"]
            else f"no call of {r['calls']} was answered: nothing about the model could be judged"
        )
        lines = [
            f"model {e['model']}, response_format {e['response_format']}, prompt {e['prompt']}",
            *(f"{mark(passed)} {name}" for name, passed in r["checks"].items()),
            measured,
            f"latency per turn: p50 {lat['p50']} s, max {lat['max']} s",
            *(f"fix: {fix}" for fix in r["fixes"]),
            f"verdict: {r['verdict']}",
        ]
        return "\n".join(lines)

    ctx.emit(result, human)
    return 0 if result["ok"] else 1


def _remember(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.memories import RememberRequest

    raw = {
        "text": read_text_arg(args.text, args.file, "text"),
        "persona": ctx.persona,
        "project": ctx.project,
        "session": args.session,
        "kind": args.kind,
        "subject": args.subject,
        "fact_key": args.fact_key,
        "occurred_at": args.occurred_at,
        "propose": args.propose or None,
    }
    request = parse_flags(RememberRequest, {k: v for k, v in raw.items() if v is not None})
    result = ctx.service.memory_remember(request)

    def human(r: Any) -> str:
        from yiji.invocation import yiji_command

        redacted = " (secrets redacted)" if r.event.redacted else ""
        if r.review_state == "proposed":
            return (
                f"proposed {r.memory_id} from event {r.event.id}{redacted} (waiting for review: "
                f"{yiji_command('review')})"
            )
        return f"remembered {r.memory_id} from event {r.event.id}{redacted}"

    ctx.emit(result, human)


COMMANDS = ("memory", "remember", "extraction")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("memory", help="derive, read and list memories")
    ms = p.add_subparsers(dest="memory_command", required=True)
    d = ms.add_parser(
        "derive",
        parents=[common],
        help="store memories you supply for one event",
        description="Store memories you (or your chat model) derived from one stored event. Every memory "
        "quotes the event verbatim; the batch is validated and stored all or nothing.",
        epilog=DERIVE_FORMAT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d.add_argument("--event", required=True, metavar="EVENT_ID", help="the source event's id")
    d.add_argument("--input", required=True, metavar="FILE", help="JSON memories, see below ('-' for stdin)")
    d.add_argument(
        "--propose",
        action="store_true",
        help="put them in the review queue as proposals (yiji review, or the ui's review page) instead "
        "of remembering them at once",
    )
    d.set_defaults(func=_derive)
    rm = sub.add_parser(
        "remember",
        parents=[common],
        help="remember a statement of yours: an event and a memory quoting it",
        description="Store TEXT as your own statement (a user event) and a memory grounded in all of it, "
        "under the rules of memory derive; recall finds it at once. Secrets in TEXT are redacted first.",
    )
    rm.add_argument("text", nargs="?", help="the statement (or --file, or stdin)")
    rm.add_argument("--file", help="read the statement from a file ('-' for stdin)")
    rm.add_argument("--kind", help="fact (default), preference, agreement, episode, observation or growth")
    rm.add_argument(
        "--fact-key", dest="fact_key", help="single-valued key such as home.city (facts, preferences)"
    )
    rm.add_argument("--subject", help="who the statement is about (default user)")
    rm.add_argument("--session", help="session id of the event (default remember)")
    rm.add_argument("--occurred-at", dest="occurred_at", help="ISO 8601 time with a timezone (default now)")
    rm.add_argument(
        "--propose", action="store_true", help="put the memory in the review queue instead of remembering it"
    )
    rm.set_defaults(func=_remember)
    r = ms.add_parser("read", parents=[common], help="a memory with its original evidence")
    r.add_argument("id")
    r.add_argument(
        "--offset", type=bounded_int(0, MAX_OFFSET), default=0, help="character offset into the source text"
    )
    r.add_argument(
        "--limit",
        type=bounded_int(1, 100_000),
        default=4000,
        help="characters of source text (default 4000)",
    )
    r.set_defaults(func=_read)
    ls = ms.add_parser(
        "list", parents=[common], help="memories valid now (or --as-of, --history, --only-revoked), paged"
    )
    ls.add_argument("--kind", action="append", help="filter by kind (repeatable)")
    ls.add_argument("--basis", action="append", help="filter by basis (repeatable)")
    ls.add_argument("--subject")
    ls.add_argument("--key", help="fact key, e.g. home.city")
    ls.add_argument("--text", help="a substring of the text, quote or gist")
    ls.add_argument("--since", help="validity starts at or after (ISO 8601 with timezone)")
    ls.add_argument("--until", help="validity starts before (ISO 8601 with timezone)")
    ls.add_argument("--as-of", help="ISO 8601 time with a timezone")
    ls.add_argument("--history", action="store_true", help="include expired and future facts")
    ls.add_argument("--revoked", action="store_true", help="include revoked memories")
    ls.add_argument("--only-revoked", action="store_true", help="only revoked (corrected) memories")
    ls.add_argument("--newest-first", action="store_true", help="newest validity start first")
    ls.add_argument(
        "--review",
        choices=("accepted", "proposed", "rejected"),
        help="review state (default accepted; proposals wait in yiji review, rejected ones stay for audit)",
    )
    ls.add_argument("--ids", action="store_true", help="print only the ids of the page, one a line")
    add_page_options(ls, limit=100)
    ls.set_defaults(func=_list)
    lifecycle.register_memory_commands(ms, common)
    x = sub.add_parser("extraction", help="automatic extraction")
    xs = x.add_subparsers(dest="extraction_command", required=True)
    ck = xs.add_parser(
        "check",
        parents=[common],
        help="send a few built-in turns through the configured endpoint and judge the answers",
        description="Send a few built-in turns (Chinese and English, with the memories they should give) "
        "through the configured extraction endpoint and settings, in a temporary database, and print a "
        "verdict: endpoint reachable, answers valid, not silent where something was said, grounded "
        "(nothing stored from turns that hold nothing to remember), latency; with the fix when a setting "
        "is the cause. Exit 0 when every check passes, 1 when one fails or cannot be judged.",
    )
    ck.set_defaults(func=_check)
    rt = xs.add_parser(
        "retry",
        parents=[common],
        help="resume pending extractions",
        description="Extract the pending events again through the configured endpoint. Exit 1 when the "
        "endpoint failed for an event tried (it stays pending; the output says why).",
    )
    rt.add_argument("--event", help="one event id (default: every pending event of the scope)")
    rt.add_argument(
        "--limit",
        type=bounded_int(1, MAX_OFFSET),
        default=100,
        help="at most this many events (without --all)",
    )
    rt.add_argument("--all", action="store_true", help="every pending event, in batches, with a progress bar")
    rt.add_argument(
        "--batch-size", type=bounded_int(1, 1000), default=50, help="events read per batch with --all"
    )
    rt.set_defaults(func=_retry)
    rn = xs.add_parser(
        "run",
        parents=[common],
        help="extract memories from the events that have none yet (captured sessions)",
        description="Send the conversation events of the scope that have no memories yet (captured by a "
        "hook, host-ingest or import-transcripts, or submitted without extraction) through the configured "
        "endpoint, oldest first; the session's earlier turns go along as context ([extraction] "
        "context_turns) and every memory quotes the one event it comes from. Only the roles of "
        "[extraction] run_roles (default: user) are sent. An event extracted once is never sent again; "
        "one that fails stays pending with its reason for the next run. A progress bar on a terminal, "
        "then a summary. Exit 1 when the endpoint failed for an event tried.",
    )
    rn.add_argument("--session", help="only this session's events")
    rn.add_argument("--since", help="events that occurred at or after (ISO 8601 with timezone)")
    rn.add_argument("--until", help="events that occurred before (ISO 8601 with timezone)")
    rn.add_argument(
        "--role",
        action="append",
        choices=("user", "assistant", "system", "tool"),
        help="send this role's turns (repeatable; default: [extraction] run_roles)",
    )
    rn.add_argument("--limit", type=bounded_int(1, 1_000_000), help="send at most this many events")
    rn.add_argument("--dry-run", action="store_true", help="count what would be sent; send nothing")
    rn.add_argument(
        "--auto",
        action="store_true",
        help="the automatic run after capture: every scope, bounded by [extraction] auto_max_events and "
        "auto_time_limit_seconds, at most one per database, logged to the hook log",
    )
    rn.set_defaults(func=_run)
