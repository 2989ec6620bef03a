"""``yiji review``: the queue of proposed memories, and the decisions on them.

``yiji review`` (or ``review list``) lists the proposals waiting, oldest first; ``review accept|reject
ID`` decides one; ``review edit ID`` changes one before it is accepted (``--accept`` accepts it in the
same step); ``review accept|reject --all`` decides every waiting proposal of the scope: without ``--yes``
it shows how many and asks on a terminal, and refuses when there is no terminal to ask.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, bounded_int, confirm, parse_flags
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from datetime import tzinfo

    from yiji.domain.wording import Words
    from yiji.models.memories import MemoryRecord, ReviewResult

COMMANDS = ("review",)
"""The top-level commands :func:`register` adds."""

DEFAULT_REVIEWER = "cli"


def proposal_lines(m: MemoryRecord, zone: tzinfo | None, words: Words) -> list[str]:
    from yiji.cli.memory import memory_line

    return [
        memory_line(m, zone, words),
        f"  {words['quote'].lower()}: {m.quote}",
        f"  {words['source'].lower()}: {m.event_id}",
    ]


def _list(ctx: Context, args: argparse.Namespace) -> None:
    queue = ctx.service.review_queue(
        persona=ctx.persona, project=ctx.project, limit=args.limit, after=args.after
    )

    def human(q: dict[str, Any]) -> str:
        from yiji.invocation import yiji_command

        say = ctx.words
        if not q["proposals"]:
            return say["cli.review.empty"]
        lines = [line for m in q["proposals"] for line in proposal_lines(m, ctx.zone, say)]
        shown = len(q["proposals"])
        oldest = say["cli.review.oldest"].format(shown=shown) if shown < q["waiting"] else ""
        lines.append(say["review.waiting"].format(n=q["waiting"]) + oldest)
        lines.append(
            "   ".join(
                f"{say['review.' + action].lower()}: {yiji_command(f'review {action} ID')}"
                for action in ("accept", "reject", "edit")
            )
        )
        return "\n".join(lines)

    ctx.emit(queue, human)


def _decided(r: ReviewResult, zone: tzinfo | None) -> str:
    from yiji.cli.memory import memory_line

    return f"{r.memory.review_state}: {memory_line(r.memory, zone)}"


def _bulk(ctx: Context, args: argparse.Namespace, action: str) -> int:
    from yiji.domain.wording import counted

    if args.id is not None:
        raise InvalidInput("all", "--all and an ID exclude each other")

    def question() -> str:
        waiting = ctx.service.review_counts(ctx.persona, ctx.project)["proposed"]
        return f"{action} all {counted(waiting, 'waiting proposal')} of this scope?"

    if not confirm(args.yes, f"to {action} every proposal", question):
        print("cancelled: nothing was changed")
        return 1
    done = ctx.service.memory_review_all(
        "accept" if action == "accept" else "reject",
        persona=ctx.persona,
        project=ctx.project,
        reviewer=args.by,
        note=args.note,
    )
    ctx.emit(done, lambda r: f"{counted(len(r['memory_ids']), 'proposal')} {action}ed")
    return 0


def _decide(ctx: Context, args: argparse.Namespace) -> int:
    action = args.review_command
    if args.all:
        return _bulk(ctx, args, action)
    if args.id is None:
        raise InvalidInput("id", "is required (or --all for every waiting proposal)")
    result = ctx.service.memory_review(
        args.id, action, persona=ctx.persona, project=ctx.project, reviewer=args.by, note=args.note
    )
    ctx.emit(result, lambda r: _decided(r, ctx.zone))
    return 0


def _edit(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.memories import ReviewEdit

    given = (("text", args.text), ("kind", args.kind), ("subject", args.subject), ("fact_key", args.key))
    raw: dict[str, Any] = {name: value for name, value in given if value is not None}
    if args.no_key:
        if args.key is not None or args.subject is not None:
            raise InvalidInput("no_key", "--no-key excludes --key and --subject")
        raw.update(fact_key=None, subject=None)
    if args.valid_at is not None:
        raw["valid_at"] = args.valid_at
    edit = parse_flags(ReviewEdit, raw, {"fact_key": "--key"})
    result = ctx.service.memory_review(
        args.id,
        "edit",
        persona=ctx.persona,
        project=ctx.project,
        reviewer=args.by,
        note=args.note,
        edit=edit,
        accept=args.accept,
    )
    ctx.emit(result, lambda r: _decided(r, ctx.zone))


def _who(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--by", default=DEFAULT_REVIEWER, help=f"who decides (recorded; default {DEFAULT_REVIEWER})"
    )
    p.add_argument("--note", help="why (recorded with the decision)")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "review",
        parents=[common],
        help="proposed memories waiting for review: list, accept, reject, edit",
        description='Memories extraction proposed ([extraction] review = "facts" or "all") wait here; '
        "they are not recalled until accepted. Without a subcommand, lists the waiting ones, oldest first.",
    )
    p.add_argument("--limit", type=bounded_int(1, 10_000), default=50, help="at most this many (default 50)")
    p.add_argument("--after", metavar="ID", help="list the proposals after this one")
    p.set_defaults(func=_list)
    rs = p.add_subparsers(dest="review_command", required=False)
    ls = rs.add_parser("list", parents=[common], help="proposals waiting, oldest first")
    ls.add_argument("--limit", type=bounded_int(1, 10_000), default=50, help="at most this many (default 50)")
    ls.add_argument("--after", metavar="ID", help="list the proposals after this one")
    ls.set_defaults(func=_list)
    for action, text in (
        ("accept", "remember a proposal as if it had just been derived"),
        ("reject", "keep a proposal out of memory (kept for audit with who, when and why)"),
    ):
        a = rs.add_parser(action, parents=[common], help=text)
        a.add_argument("id", nargs="?", help="the proposal's memory id")
        a.add_argument("--all", action="store_true", help=f"{action} every waiting proposal of the scope")
        a.add_argument("--yes", action="store_true", help="with --all: do not ask for confirmation")
        _who(a)
        a.set_defaults(func=_decide)
    e = rs.add_parser(
        "edit",
        parents=[common],
        help="change a proposal before accepting it (checked like memory derive)",
    )
    e.add_argument("id", help="the proposal's memory id")
    e.add_argument("--text", help="the memory in other words")
    e.add_argument("--kind", help="fact | preference | episode | observation | emotion | agreement | growth")
    e.add_argument("--subject", help="whom a keyed fact is about, e.g. user")
    e.add_argument("--key", help="fact key, e.g. home.city")
    e.add_argument("--no-key", action="store_true", help="drop the subject and fact key")
    e.add_argument("--valid-at", help="when it became true (ISO 8601 with a timezone)")
    e.add_argument("--accept", action="store_true", help="accept it once changed")
    _who(e)
    e.set_defaults(func=_edit)
