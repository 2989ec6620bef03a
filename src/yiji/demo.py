"""``yiji demo``: store a short bilingual conversation, derive grounded memories, and show the result.

The memories here are supplied the way a host's own chat model would supply them through
``memory_derive`` (no language model runs in the demo): each quotes its source event exactly.

The demo writes to its own project, ``demo`` (:data:`DEMO_PROJECT`; the persona is the configured one),
so the user's own default project stays empty: what the README shows next runs as written. ``--project``
before ``demo`` picks another project. ``yiji demo --remove`` deletes the demo's events, with everything
derived from them, through the ordinary deletion closure; nothing else in the database is touched.

The conversation is dated relative to today (about four months ago and last week, from the service's
clock), so recall and "what held then" work whatever the date. A second run reuses the dates stored by
the first, so it is idempotent on any later day.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, TextIO

from yiji.domain.recall import RecalledItem
from yiji.errors import NotFound
from yiji.invocation import yiji_command
from yiji.models import EventIn
from yiji.models.common import Scope
from yiji.models.lifecycle import DeleteRequest
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.models.recall import RecallQuery
from yiji.models.resume import ResumeRequest

if TYPE_CHECKING:
    from yiji.cli.context import Context

__all__ = ["DEMO_CONVERSATION", "DEMO_MEMORIES", "DEMO_PROJECT", "demo_scope", "remove_demo", "run_demo"]

DEMO_PROJECT = "demo"
"""The project the demo writes to unless ``--project`` names another."""

# (days before the recent session's day, time of day in UTC+8, role, text)
DEMO_CONVERSATION: list[tuple[int, str, str, str]] = [
    (105, "09:00:00", "user", "我住在杭州，每天早上沿着西湖跑步。"),
    (105, "09:00:30", "assistant", "听起来很惬意！西湖边的早晨一定很美。"),
    (0, "20:10:00", "user", "I moved to Shanghai last week for a new job."),
    (0, "20:10:40", "assistant", "Congratulations on the move! How is the new job?"),
    (0, "20:12:00", "user", "我更喜欢喝乌龙茶，不太喝咖啡。"),
]
RECENT_DAYS_AGO = 7
"""The recent session happened this many days before the first run; the earlier one 105 days before it."""
_CHINA = timezone(timedelta(hours=8))

DEMO_MEMORIES: dict[int, list[dict[str, Any]]] = {
    1: [
        {
            "text": "用户住在杭州",
            "quote": "我住在杭州",
            "kind": "fact",
            "basis": "user_statement",
            "subject": "user",
            "fact_key": "home.city",
            "confidence": 0.95,
        },
        {
            "text": "用户每天早上沿着西湖跑步",
            "quote": "每天早上沿着西湖跑步",
            "kind": "episode",
            "basis": "user_statement",
            "confidence": 0.8,
            "gist": "西湖晨跑",
        },
    ],
    3: [
        {
            "text": "The user moved to Shanghai for a new job",
            "quote": "I moved to Shanghai",
            "kind": "fact",
            "basis": "user_statement",
            "subject": "user",
            "fact_key": "home.city",
            "confidence": 0.95,
        },
    ],
    4: [
        {
            "text": "Glad about the user's move",
            "quote": "Congratulations on the move!",
            "kind": "emotion",
            "basis": "assistant_expression",
            "valence": 0.7,
            "arousal": 0.5,
            "confidence": 0.8,
        },
    ],
    5: [
        {
            "text": "用户更喜欢乌龙茶，不太喝咖啡",
            "quote": "我更喜欢喝乌龙茶，不太喝咖啡",
            "kind": "preference",
            "basis": "user_statement",
            "confidence": 0.9,
        },
    ],
}


def _recalled(item: RecalledItem) -> str:
    if item.memory is not None:
        return f"{item.memory.text} [{item.memory.kind}, score {item.score:.2f}]"
    assert item.event is not None
    return f"{item.event.text} [raw event, score {item.score:.2f}]"


def demo_scope(ctx: Context) -> Scope:
    """The configured persona and the demo's own project (``--project`` when given)."""
    return ctx.service.scope(ctx.persona, ctx.project or DEMO_PROJECT)


def _event_ids() -> list[str]:
    return [f"demo-{i}" for i in range(1, len(DEMO_CONVERSATION) + 1)]


def _recent_day(ctx: Context) -> datetime:
    """Midnight (UTC+8) of the recent session: from the stored demo when there is one, else from now."""
    service = ctx.service
    scope = demo_scope(ctx)
    try:
        stored = service.event_show("demo-3", scope.persona, scope.project)
        anchor = stored.occurred_at.astimezone(_CHINA)
    except NotFound:
        anchor = (service.clock.now() - timedelta(days=RECENT_DAYS_AGO)).astimezone(_CHINA)
    return anchor.replace(hour=0, minute=0, second=0, microsecond=0)


def _when(day: datetime, days_before: int, clock_time: str) -> datetime:
    hour, minute, second = (int(part) for part in clock_time.split(":"))
    return (
        (day - timedelta(days=days_before)).replace(hour=hour, minute=minute, second=second).astimezone(UTC)
    )


def remove_demo(ctx: Context, out: TextIO) -> None:
    """Delete the demo's events from its scope, each with everything derived from it (the deletion
    closure of ``yiji delete``); events already gone are skipped."""
    service = ctx.service
    scope = demo_scope(ctx)
    removed: list[Any] = []
    for event_id in _event_ids():
        try:
            service.event_show(event_id, scope.persona, scope.project)
        except NotFound:  # never stored, or already deleted with an earlier one's lineage
            continue
        removed.append(
            service.memory_delete(
                DeleteRequest(event_id=event_id, persona=scope.persona, project=scope.project)
            )
        )
    events = sorted({e for r in removed for e in r.event_ids})
    memories = sorted({m for r in removed for m in r.memory_ids})
    if ctx.json:
        ctx.emit({"scope": scope, "deleted_event_ids": events, "deleted_memory_ids": memories})
        return
    where = f"persona={scope.persona} project={scope.project}"
    if not events:
        out.write(f"no demo data in {where}\n")
        return
    out.write(
        f"removed the demo from {where}: {len(events)} events and {len(memories)} memories "
        "derived from them\n"
    )


def run_demo(ctx: Context, out: TextIO) -> None:
    service = ctx.service
    scope = demo_scope(ctx)
    day = _recent_day(ctx)
    events = [
        EventIn(
            id=f"demo-{i + 1}",
            persona=scope.persona,
            project=scope.project,
            session="demo-earlier" if days_before else "demo-recent",
            role=role,  # type: ignore[arg-type]
            source="demo",
            text=text,
            occurred_at=_when(day, days_before, clock_time),
        )
        for i, (days_before, clock_time, role, text) in enumerate(DEMO_CONVERSATION)
    ]
    results = [service.event_submit(e) for e in events]
    derived = []
    for number, items in DEMO_MEMORIES.items():
        if results[number - 1].created:
            request = DeriveRequest(
                event_id=f"demo-{number}",
                persona=scope.persona,
                project=scope.project,
                memories=[MemoryIn.model_validate(item) for item in items],
            )
            derived.append(service.memory_derive(request))
    persona = service.persona_get(scope.persona)
    _, now_city = service.memory_list(persona=scope.persona, project=scope.project, fact_key="home.city")
    between = _when(day, 60, "12:00:00")  # after the earlier session, before the move
    _, april_city = service.memory_list(
        persona=scope.persona, project=scope.project, fact_key="home.city", as_of=between
    )
    if ctx.json:
        ctx.emit(
            {
                "database": str(service.db.path),
                "scope": scope,
                "persona": persona,
                "events": results,
                "derived": derived,
                "home_city_now": now_city,
                "home_city_then": {"as_of": between.isoformat(), "memories": april_city},
            }
        )
        return
    out.write(f"database: {service.db.path}\n")
    out.write(f"scope: persona={scope.persona} project={scope.project}\n")
    out.write(f"persona v{persona.version}: {persona.text.splitlines()[0]}\n\n")
    out.write("events (committed to SQLite before anything else):\n")
    for r in results:
        e = r.event
        if e is None:  # repeats a deletion: not stored
            continue
        state = "new" if r.created else "already stored"
        out.write(f"  #{e.seq} {e.id} {ctx.when(e.occurred_at)} {e.role:9} {e.text}  [{state}]\n")
    _, memories = service.memory_list(persona=scope.persona, project=scope.project, include_history=True)
    out.write("\nmemories (each quotes its source exactly):\n")
    for m in memories:
        until = f" until {ctx.when(m.invalid_at)[:10]}" if m.invalid_at else ""
        since = ctx.when(m.valid_at)[:10]
        out.write(f'  {m.kind:10} {m.text}  <- "{m.quote}" ({m.event_id}, from {since}{until})\n')
    out.write("\nwhere does the user live?\n")
    out.write(f"  now:        {', '.join(m.text for m in now_city) or '(unknown)'}\n")
    out.write(f"  {ctx.when(between)[:10]}: {', '.join(m.text for m in april_city) or '(unknown)'}\n")
    out.write("\nrecall (no language model, no network):\n")
    for query, history in (("咖啡", False), ("Shanghai job", False), ("杭州", False), ("杭州", True)):
        result = service.memory_recall(
            RecallQuery(
                query=query, persona=scope.persona, project=scope.project, include_history=history, limit=3
            )
        )
        label = f"{query} (with history)" if history else query
        found = "; ".join(_recalled(i) for i in result.items) or "(nothing: no evidence)"
        out.write(f"  {label}: {found}\n")
    pack = service.session_resume(
        ResumeRequest(persona=scope.persona, project=scope.project, session="demo-recent")
    )
    meta = pack.metadata
    out.write(
        f"\nsession_resume (budget {meta.budget} {meta.counter}): used {meta.used}; "
        f"included {', '.join(meta.included)}"
        + (f"; left out {', '.join(o.component for o in meta.omitted)}" if meta.omitted else "")
        + "\n"
    )
    report = service.doctor()
    out.write(f"\ndoctor: {'ok' if report['ok'] else 'NOT OK'}; tables: ")
    out.write(", ".join(f"{k}={v}" for k, v in report["tables"].items() if v) + "\n")
    out.write("  (event_fts holds only the events without a derived memory: recall's raw-event fallback)\n")
    out.write(_next_steps(ctx, str(service.db.path), scope))


def _next_steps(ctx: Context, path: str, scope: Scope) -> str:
    """What to try next in the demo's scope, and how to take the demo out again."""
    db = f" --db {shlex.quote(path)}" if getattr(ctx.args, "db", None) else ""
    persona = f" --persona {shlex.quote(scope.persona)}" if ctx.persona else ""
    where = f"{db}{persona} --project {shlex.quote(scope.project)}"

    tries = [
        ("recall 乌龙茶", "your own question, Chinese or English"),
        ("memory list --history", "every memory with its validity interval"),
        ("resume --session demo-recent", "the context pack a chat model would get"),
        ("ui", "review and fix memories in the browser"),
    ]
    commands = [yiji_command(f"{where.strip()} {words}") for words, _ in tries]
    width = max(_width(c) for c in commands)
    lines = [
        f"  {c}{' ' * (width - _width(c))}  # {why}\n" for c, (_, why) in zip(commands, tries, strict=True)
    ]
    return (
        f"\ntry next (the demo is in project {scope.project}; your own memories go to project "
        f"{_default_project(ctx)}, which the demo leaves alone):\n"
        + "".join(lines)
        + "  connect an MCP client (Claude Desktop, Cursor, ...): docs/clients.md gives each client's\n"
        "  configuration to copy\n"
        "\nremove the demo data (permanently, with everything derived from it; nothing else):\n"
        f"  {yiji_command(f'{where.strip()} demo --remove')}\n"
    )


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal (wide CJK characters take two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _default_project(ctx: Context) -> str:
    """The project a command uses when none is named (the configured default)."""
    return ctx.service.scope(ctx.persona, None).project
