"""Task checkpoints through the service, the CLI and the MCP SDK client: history, coverage, invalidation."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import InvalidInput
from yiji.models import EventIn, parse
from yiji.models.checkpoints import MAX_STEP, MAX_STEPS, CheckpointIn
from yiji.models.lifecycle import CorrectRequest, DeleteRequest
from yiji.models.memories import DeriveRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .mcp_helpers import error_text, memory_client, payload

RULE = "must name an event of the same scope and session"


def submit(service: MemoryService, eid: str, text: str, session: str = "s1", **kw: Any) -> int:
    event = parse(EventIn, {"id": eid, "session": session, "role": "user", "text": text, **kw})
    return service.event_submit(event).event.seq


def save(service: MemoryService, **fields: Any) -> Any:
    return service.checkpoint_save(parse(CheckpointIn, {"session": "s1", "goal": "整理旅行照片", **fields}))


def home_memory(service: MemoryService, eid: str) -> str:
    """A user-stated fact in the default scope, to correct or delete."""
    submit(service, eid, "我住在杭州")
    request = parse(
        DeriveRequest,
        {
            "event_id": eid,
            "memories": [
                {"text": "住在杭州", "quote": "我住在杭州", "kind": "fact", "basis": "user_statement"}
            ],
        },
    )
    return service.memory_derive(request).memory_ids[0]


def test_save_keeps_history_and_the_newest_is_used(service: MemoryService) -> None:
    seq = submit(service, "e1", "帮我整理照片")
    first = save(service, pending=["按日期分组"], covered_seq=seq)
    assert first.scope.persona == "default" and first.scope.project == "default"
    second = save(
        service,
        completed=["按日期分组"],
        pending=["挑选封面", "写说明"],
        constraints=["不要删除原图"],
        next_action="挑选封面",
        covered_seq=seq,
    )
    view = service.checkpoint_show("s1", history=True)
    assert view.state == "valid"
    assert view.checkpoint is not None and view.checkpoint.id == second.checkpoint.id
    assert view.checkpoint.pending == ["挑选封面", "写说明"]
    assert view.checkpoint.constraints == ["不要删除原图"]
    assert view.checkpoint.next_action == "挑选封面"
    assert view.checkpoint.covered_seq == seq
    assert [c.id for c in view.history or []] == [second.checkpoint.id, first.checkpoint.id]
    assert view.history is not None and view.history[1].pending == ["按日期分组"]


def test_checkpoints_are_per_session_and_scope(service: MemoryService) -> None:
    save(service, goal="one")
    save(service, session="s2", goal="two")
    save(service, project="other", goal="three")
    assert service.checkpoint_show("s1").checkpoint.goal == "one"  # type: ignore[union-attr]
    assert service.checkpoint_show("s2").checkpoint.goal == "two"  # type: ignore[union-attr]
    assert service.checkpoint_show("s1", project="other").checkpoint.goal == "three"  # type: ignore[union-attr]
    empty = service.checkpoint_show("s3")
    assert empty.state == "none" and empty.checkpoint is None and empty.history is None


def test_two_saves_in_one_clock_tick_keep_insertion_order(service: MemoryService, clock: FixedClock) -> None:
    clock.set(datetime(2026, 8, 1, tzinfo=UTC))
    save(service, goal="first")
    clock.set(datetime(2026, 8, 1, tzinfo=UTC))
    save(service, goal="second")
    assert service.checkpoint_show("s1").checkpoint.goal == "second"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "case",
    ["other_session", "other_project", "other_persona", "nonexistent"],
)
def test_covered_seq_must_name_an_event_of_the_same_scope_and_session(
    service: MemoryService, case: str
) -> None:
    own = submit(service, "mine", "我的会话")
    seqs = {
        "other_session": submit(service, "s2-event", "另一个会话", session="s2"),
        "other_project": submit(service, "p-event", "另一个项目", project="other"),
        "other_persona": submit(service, "q-event", "另一个人格", persona="other"),
        "nonexistent": own + 1000,
    }
    with pytest.raises(InvalidInput) as caught:
        save(service, covered_seq=seqs[case])
    assert caught.value.field == "covered_seq"
    assert caught.value.rule == RULE
    assert service.checkpoint_show("s1").state == "none"  # nothing was stored
    assert save(service, covered_seq=own).checkpoint.covered_seq == own


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"goal": ""}, "goal"),
        ({"goal": "   "}, "goal"),
        ({"goal": "x" * 2001}, "goal"),
        ({"pending": ["x" * (MAX_STEP + 1)]}, "pending.0"),
        ({"completed": ["ok", " "]}, "completed.1"),
        ({"constraints": ["c"] * (MAX_STEPS + 1)}, "constraints"),
        ({"next_action": "x" * 1001}, "next_action"),
        ({"covered_seq": 0}, "covered_seq"),
        ({"session": "bad session"}, "session"),
        ({"extra": "field"}, "extra"),
    ],
)
def test_shape_is_validated_naming_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse(CheckpointIn, {"session": "s1", "goal": "g", **fields})
    assert caught.value.field == field
    assert "x" * 10 not in caught.value.message  # the value is never echoed


def test_correction_and_deletion_invalidate_the_scope(service: MemoryService) -> None:
    mistaken = home_memory(service, "home")
    save(service, goal="old plan")
    save(service, session="s2", goal="other session")
    save(service, project="elsewhere", goal="untouched scope")
    corrected = service.memory_correct(
        parse(CorrectRequest, {"memory_id": mistaken, "statement": "我住在苏州"})
    )
    assert corrected.checkpoints_invalidated == 2
    view = service.checkpoint_show("s1", history=True)
    assert view.state == "invalidated"
    assert view.checkpoint is not None and view.checkpoint.invalid_reason == "correction"
    assert view.checkpoint.invalidated_at is not None
    assert service.checkpoint_show("s2").state == "invalidated"
    assert service.checkpoint_show("s1", project="elsewhere").state == "valid"
    fresh = save(service, goal="new plan")
    after = service.checkpoint_show("s1", history=True)
    assert after.state == "valid" and after.checkpoint is not None
    assert after.checkpoint.id == fresh.checkpoint.id
    assert [c.valid for c in after.history or []] == [True, False]
    # a deletion invalidates the new one; the earlier rows keep their first reason
    service.memory_delete(parse(DeleteRequest, {"memory_id": corrected.corrected_memory_id}))
    final = service.checkpoint_show("s1", history=True)
    assert final.state == "invalidated"
    assert [c.invalid_reason for c in final.history or []] == ["deletion", "correction"]


def test_show_validates_session_and_limit(service: MemoryService) -> None:
    with pytest.raises(InvalidInput) as caught:
        service.checkpoint_show("bad\nsession")
    assert caught.value.field == "session"
    with pytest.raises(InvalidInput) as caught:
        service.checkpoint_show("s1", history=True, limit=0)
    assert caught.value.field == "limit"


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_save_and_show(cli: Any, tmp_path: Path) -> None:
    sub = cli("--json", "event", "submit", "--session", "s1", "--role", "user", "帮我整理照片")
    seq = sub.json()["event"]["seq"]
    saved = cli(
        "--json",
        "checkpoint",
        "save",
        "--session",
        "s1",
        "--goal",
        "整理旅行照片",
        "--done",
        "按日期分组",
        "--pending",
        "挑选封面",
        "--pending",
        "写说明",
        "--constraint",
        "不要删除原图",
        "--next",
        "挑选封面",
        "--covered-seq",
        str(seq),
    )
    assert saved.code == 0, saved.err
    assert saved.json()["checkpoint"]["pending"] == ["挑选封面", "写说明"]
    spec = tmp_path / "cp.json"
    spec.write_text(json.dumps({"session": "s1", "goal": "第二版", "pending": ["写说明"]}), encoding="utf-8")
    assert cli("checkpoint", "save", "--input", str(spec)).code == 0
    shown = cli("checkpoint", "show", "--session", "s1", "--history")
    assert shown.code == 0
    assert "state: valid" in shown.out
    assert shown.out.index("第二版") < shown.out.index("整理旅行照片")
    refused = cli("--json", "checkpoint", "save", "--session", "s1", "--goal", "g", "--covered-seq", "999")
    assert refused.code == 2
    assert json.loads(refused.err)["problems"] == [{"field": "covered_seq", "rule": RULE}]
    missing = cli("checkpoint", "save", "--session", "s1")
    assert missing.code == 2 and "goal" in missing.err


# -- MCP ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_checkpoint_save(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        event = payload(
            await client.call_tool("event_submit", {"session": "s1", "role": "user", "text": "开始吧"})
        )
        seq = event["event"]["seq"]
        saved = payload(
            await client.call_tool(
                "checkpoint_save",
                {
                    "session": "s1",
                    "goal": "Sort the trip photos",
                    "completed": ["group by date"],
                    "pending": ["pick a cover"],
                    "next_action": "pick a cover",
                    "covered_seq": seq,
                },
            )
        )
        assert saved["scope"] == {"persona": "default", "project": "default"}
        assert saved["checkpoint"]["covered_seq"] == seq
        assert "invalidated_at" not in saved["checkpoint"]  # nulls are left out of MCP results
        refused = await client.call_tool(
            "checkpoint_save", {"session": "s2", "goal": "g", "covered_seq": seq}
        )
        assert refused.isError
        assert f"covered_seq: {RULE}" in error_text(refused)
        secret = "SECRET-GOAL-" + "x" * 3000
        too_long = await client.call_tool("checkpoint_save", {"session": "s1", "goal": secret})
        assert too_long.isError and "goal" in error_text(too_long)
        assert "SECRET-GOAL" not in error_text(too_long)


def test_saved_at_uses_the_injected_clock(service: MemoryService, clock: FixedClock) -> None:
    clock.set(datetime(2026, 8, 1, 9, 30, tzinfo=UTC))
    record = save(service).checkpoint
    assert record.created_at == datetime(2026, 8, 1, 9, 30, tzinfo=UTC)
