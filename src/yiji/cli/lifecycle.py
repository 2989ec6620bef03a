"""``yiji memory correct``, ``yiji delete`` and ``yiji emotion``.

``memory correct`` is for an error (the memory was never true); a change in the world is a new event
(``yiji event submit``). ``delete`` is permanent: without ``--yes`` it shows what would go and asks on a
terminal, and refuses when there is no terminal to ask.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, confirm, parse_flags, read_text_arg

if TYPE_CHECKING:
    from yiji.models.lifecycle import CorrectResult, DeleteResult, EmotionResult

__all__ = ["register", "register_memory_commands"]


def _correct(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.models.lifecycle import CorrectRequest

    raw: dict[str, Any] = {
        "memory_id": args.id,
        "statement": read_text_arg(args.statement, args.file, "statement", nonempty=True),
        "persona": ctx.persona,
        "project": ctx.project,
        "text": args.text,
        "quote": args.quote,
        "kind": args.kind,
        "basis": args.basis,
        "subject": args.subject,
        "fact_key": args.key,
        "valid_at": args.valid_at,
        "confidence": args.confidence,
        "gist": args.gist,
        "role": args.role,
        "session": args.session,
        "event_id": args.event_id,
        "occurred_at": args.occurred_at,
    }
    renamed = {"memory_id": "id", "statement": "statement", "fact_key": "--key"}
    request = parse_flags(CorrectRequest, {k: v for k, v in raw.items() if v is not None}, renamed)
    result = ctx.service.memory_correct(request)

    def human(r: CorrectResult) -> str:
        from yiji.domain.wording import counted

        state = "corrected" if r.created else "already corrected (unchanged)"
        return (
            f"{state}: {r.mistaken_memory_id} revoked, {r.corrected_memory_id} derived from correction "
            f"event {r.event.id}; event {r.amended_event_id} marked amended; "
            f"{counted(r.checkpoints_invalidated, 'checkpoint')} invalidated"
        )

    ctx.emit(result, human)


def _plan_text(r: DeleteResult) -> str:
    from yiji.domain.wording import counted

    head = "would delete" if r.dry_run else "deleted"
    verb = "would be invalidated" if r.dry_run else "invalidated"
    matched = []
    if r.matched_event_ids or r.matched_memory_ids or not (r.event_ids or r.memory_ids):
        matched = [
            f"matching: {counted(len(r.matched_event_ids), 'event')} and "
            f"{counted(len(r.matched_memory_ids), 'memory', 'memories')} hold the identifier"
            + ("" if r.event_ids or r.memory_ids else "; nothing to delete")
        ]
    return "\n".join(
        [
            *matched,
            f"{head}: {counted(len(r.event_ids), 'event')}, "
            f"{counted(len(r.memory_ids), 'memory', 'memories')}, {counted(r.relations, 'relation edge')}, "
            f"{counted(r.embeddings, 'vector')}, {counted(r.cues, 'cue')}; "
            f"{counted(r.checkpoints, 'checkpoint')} {verb}",
            "events: " + (", ".join(r.event_ids) or "-"),
            "memories: " + (", ".join(r.memory_ids) or "-"),
        ]
    )


def _delete(ctx: Context, args: argparse.Namespace) -> int:
    from yiji.models import parse
    from yiji.models.lifecycle import DeleteRequest

    raw = {
        "event_id": args.event,
        "memory_id": args.memory,
        "matching": args.matching,
        "persona": ctx.persona,
        "project": ctx.project,
    }
    raw = {k: v for k, v in raw.items() if v is not None}
    if args.dry_run:
        ctx.emit(ctx.service.memory_delete(parse(DeleteRequest, {**raw, "dry_run": True})), _plan_text)
        return 0

    def question() -> str:
        print(_plan_text(ctx.service.memory_delete(parse(DeleteRequest, {**raw, "dry_run": True}))))
        return "delete permanently? this cannot be undone"

    if not confirm(args.yes, "to delete permanently", question, hint=" (--dry-run shows what would go)"):
        print("cancelled: nothing was deleted")
        return 1
    ctx.emit(ctx.service.memory_delete(parse(DeleteRequest, raw)), _plan_text)
    return 0


def _emotion(ctx: Context, args: argparse.Namespace) -> None:
    result = ctx.service.current_emotion(ctx.persona, ctx.project)

    def human(r: EmotionResult) -> str:
        e = r.emotion
        if e is None:
            return "no current emotion"
        when = ctx.when(e.expressed_at)
        return (
            f"valence {e.valence:+.2f} arousal {e.arousal:.2f} (expressed {e.expressed_valence:+.2f}/"
            f"{e.expressed_arousal:.2f} at {when}; decay factor {e.factor:.3f}, half-life "
            f"{e.half_life_hours:g} h; memory {e.memory_id})"
        )

    ctx.emit(result, human)


def register_memory_commands(memory_sub: Any, common: argparse.ArgumentParser) -> None:
    """``memory correct``, added to the ``memory`` command group."""
    c = memory_sub.add_parser(
        "correct",
        parents=[common],
        help="correct a mistaken memory (an error; a change in the world is a new event)",
        description=(
            "Correct a memory that was never true: stores the corrected statement as a correction event, "
            "revokes the mistaken memory, derives the corrected one and marks the old event amended. "
            "For a change in the world (the user moved), submit a new event instead."
        ),
    )
    c.add_argument("id", help="the mistaken memory's id")
    c.add_argument("statement", nargs="?", help="the corrected statement (or --file, or stdin)")
    c.add_argument("--file", help="read the statement from a file ('-' for stdin)")
    c.add_argument("--text", help="the corrected memory's text (default: the statement)")
    c.add_argument("--quote", help="exact quote from the statement (default: the whole statement)")
    c.add_argument("--kind", help="default: the mistaken memory's kind")
    c.add_argument("--basis", help="default: from --role (user_statement for user)")
    c.add_argument("--subject", help="default: the mistaken memory's subject")
    c.add_argument("--key", help="fact key (default: the mistaken memory's)")
    c.add_argument("--valid-at", help="ISO 8601 with a timezone (default: the mistaken memory's start)")
    c.add_argument("--confidence", type=float)
    c.add_argument("--gist")
    c.add_argument("--role", help="who states the correction (default: user)")
    c.add_argument("--session", help="default: the mistaken memory's session")
    c.add_argument("--event-id", help="id for the correction event (a retry with it is idempotent)")
    c.add_argument("--occurred-at", help="when the correction was made (default: now)")
    c.set_defaults(func=_correct)


COMMANDS = ("delete", "emotion")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    d = sub.add_parser(
        "delete",
        parents=[common],
        help="permanently delete an event or memory with everything derived from it",
        description=(
            "Permanently delete an event or a memory (or every one holding an identifier, --matching), "
            "with every memory co-derived from the same event "
            "and the whole correction lineage, their search-index rows, vectors and relation edges. "
            "Checkpoints of the scope are invalidated. Without --yes, asks on a terminal."
        ),
    )
    start = d.add_mutually_exclusive_group(required=True)
    start.add_argument("--event", help="start from this event id")
    start.add_argument("--memory", help="start from this memory id")
    start.add_argument(
        "--matching",
        metavar="TEXT",
        help="start from every event and memory of the scope holding TEXT as one identifier, in any "
        "spelling (case, full-width characters, spaces and separators inside runs of digits or letters: "
        "123-45-6789, 123 45 6789 and 123456789 are one); longer identifiers that contain it are kept "
        "(project_2024_v2, project_2024.v2, xproject_2024 for project_2024)",
    )
    d.add_argument("--dry-run", action="store_true", help="list what would be deleted; write nothing")
    d.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    d.set_defaults(func=_delete)
    sub.add_parser(
        "emotion", parents=[common], help="the companion's current (decayed) emotion"
    ).set_defaults(func=_emotion)
