"""``yiji demo``: store a short bilingual conversation and show what was stored."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, TextIO

from yiji.models import EventIn

if TYPE_CHECKING:
    from yiji.cli.context import Context

__all__ = ["DEMO_CONVERSATION", "run_demo"]

DEMO_CONVERSATION: list[tuple[str, str, str]] = [
    ("2026-03-02T09:00:00+08:00", "user", "我住在杭州，每天早上沿着西湖跑步。"),
    ("2026-03-02T09:00:30+08:00", "assistant", "听起来很惬意！西湖边的早晨一定很美。"),
    ("2026-06-15T20:10:00+08:00", "user", "I moved to Shanghai last week for a new job."),
    ("2026-06-15T20:10:40+08:00", "assistant", "Congratulations on the move! How is the new job?"),
    ("2026-06-15T20:12:00+08:00", "user", "我更喜欢喝乌龙茶，不太喝咖啡。"),
]


def run_demo(ctx: Context, out: TextIO) -> None:
    service = ctx.service
    scope = service.scope(ctx.persona, ctx.project)
    events = [
        EventIn(
            id=f"demo-{i + 1}",
            persona=scope.persona,
            project=scope.project,
            session="demo-2026-03" if when.startswith("2026-03") else "demo-2026-06",
            role=role,  # type: ignore[arg-type]
            source="demo",
            text=text,
            occurred_at=datetime.fromisoformat(when).astimezone(UTC),
        )
        for i, (when, role, text) in enumerate(DEMO_CONVERSATION)
    ]
    results = [service.event_submit(e) for e in events]
    persona = service.persona_get(scope.persona)
    if ctx.json:
        ctx.emit({"database": str(service.db.path), "persona": persona, "events": results})
        return
    out.write(f"database: {service.db.path}\n")
    out.write(f"scope: persona={scope.persona} project={scope.project}\n")
    out.write(f"persona v{persona.version}: {persona.text.splitlines()[0]}\n\n")
    out.write("events (committed to SQLite before anything else):\n")
    for r in results:
        e = r.event
        state = "new" if r.created else "already stored"
        when = e.model_dump(mode="json")["occurred_at"]
        out.write(f"  #{e.seq} {e.id} {when} {e.role:9} {e.text}  [{state}]\n")
    report = service.doctor()
    out.write(f"\ndoctor: {'ok' if report['ok'] else 'NOT OK'}; tables: ")
    out.write(", ".join(f"{k}={v}" for k, v in report["tables"].items() if v) + "\n")
