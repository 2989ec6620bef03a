"""Paginated listing of memories and events: service, CLI (plain and --json) and the MCP memory_list tool."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import InvalidInput
from yiji.models import parse
from yiji.models.lifecycle import CorrectRequest
from yiji.models.memories import MemoryQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .lifecycle_helpers import derive, fact, note, submit
from .mcp_helpers import error_text, memory_client, payload

HUGE = "9223372036854775808"


@pytest.fixture
def archive(service: MemoryService, clock: FixedClock) -> MemoryService:
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "e-hz", "我住在杭州，喜欢龙井茶。", "2026-03-01T09:00:00+08:00")
    derive(
        service, "e-hz", fact("住在杭州", "我住在杭州"), note("喜欢龙井茶", "喜欢龙井茶", kind="preference")
    )
    submit(service, "e-sh", "我搬到上海了", "2026-06-01T09:00:00+08:00")
    derive(service, "e-sh", fact("住在上海", "我搬到上海"))
    for i in range(5):
        submit(service, f"e-{i}", f"第{i}次去爬山", f"2026-05-0{i + 1}T09:00:00+08:00")
        derive(service, f"e-{i}", note(f"第{i}次爬山", f"第{i}次去爬山"))
    return service


def page(service: MemoryService, **kw: Any) -> Any:
    return service.memory_page(parse(MemoryQuery, kw))


def test_pages_cover_everything_once(archive: MemoryService) -> None:
    first = page(archive, view="history", limit=3)
    assert (first.total, first.next_offset, len(first.memories)) == (8, 3, 3)
    seen = [m.id for m in first.memories]
    offset = first.next_offset
    while offset is not None:
        nxt = page(archive, view="history", limit=3, offset=offset)
        seen += [m.id for m in nxt.memories]
        offset = nxt.next_offset
    assert len(seen) == len(set(seen)) == 8


def test_filters_and_views(archive: MemoryService) -> None:
    assert [m.text for m in page(archive, fact_key="home.city").memories] == ["住在上海"]
    assert [m.text for m in page(archive, fact_key="home.city", view="history").memories] == [
        "住在杭州",
        "住在上海",
    ]
    assert [m.text for m in page(archive, text="龙井").memories] == ["喜欢龙井茶"]
    assert page(archive, kinds=["episode"]).total == 5
    assert page(archive, bases=["inference"]).total == 0
    window = page(archive, since="2026-05-02T00:00:00Z", until="2026-05-04T00:00:00Z")
    assert [m.text for m in window.memories] == ["第1次爬山", "第2次爬山"]
    newest = page(archive, view="history", newest_first=True, limit=1)
    assert newest.memories[0].text == "住在上海"
    assert page(archive, view="revoked").total == 0
    mistaken = page(archive, text="龙井").memories[0]
    archive.memory_correct(CorrectRequest(memory_id=mistaken.id, statement="我喜欢碧螺春"))
    revoked = page(archive, view="revoked")
    assert [m.id for m in revoked.memories] == [mistaken.id]
    assert page(archive, text="龙井", include_revoked=True).total == 1


@pytest.mark.parametrize(
    ("field", "value"), [("offset", -1), ("offset", int(HUGE)), ("limit", 0), ("limit", 10_001)]
)
def test_out_of_range_numbers_are_invalid_input(archive: MemoryService, field: str, value: int) -> None:
    with pytest.raises(InvalidInput) as err:
        page(archive, **{field: value})
    assert err.value.field == field


def test_cli_memory_list_pages(archive: MemoryService, cli: Any) -> None:
    archive.close()
    plain = cli("memory", "list", "--history", "--limit", "3")
    assert plain.code == 0
    assert plain.out.strip().splitlines()[-1] == "1-3 of 8 memories; 5 more: --offset 3"
    last = cli("memory", "list", "--history", "--limit", "3", "--offset", "6")
    assert last.out.strip().splitlines()[-1] == "7-8 of 8 memories"
    data_last = cli("memory", "list", "--history", "--limit", "3", "--offset", "6", "--json").json()
    assert (data_last["total"], data_last["next_offset"], len(data_last["memories"])) == (8, None, 2)
    data = cli("memory", "list", "--history", "--limit", "3", "--json").json()
    assert data["next_offset"] == 3
    ids = cli("memory", "list", "--history", "--limit", "3", "--offset", "6", "--ids")
    assert ids.code == 0 and ids.out.splitlines() == [m["id"] for m in data_last["memories"]]


def test_cli_event_list_pages(archive: MemoryService, cli: Any) -> None:
    archive.close()
    plain = cli("event", "list", "--limit", "4")
    assert plain.out.strip().splitlines()[-1] == "1-4 of 7 events; 3 more: --offset 4"
    data = cli("event", "list", "--limit", "4", "--offset", "4", "--json").json()
    assert (data["total"], data["offset"], data["next_offset"], len(data["events"])) == (7, 4, None, 3)
    assert cli("event", "list", "--offset", "100").out.strip() == "(no events at offset 100; 7 in all)"


@pytest.mark.parametrize("command", [["memory", "list"], ["event", "list"]])
@pytest.mark.parametrize(
    ("flag", "value"),
    [("--offset", HUGE), ("--offset", "-1"), ("--limit", "0"), ("--limit", HUGE), ("--limit", "ten")],
)
def test_cli_refuses_bad_integers_naming_the_flag(
    cli: Any, command: list[str], flag: str, value: str
) -> None:
    result = cli(*command, flag, value)
    assert result.code == 2
    bounds = "0 to 1000000000000" if flag == "--offset" else "1 to 10000"
    last = result.err.strip().splitlines()[-1]
    assert last == f"yiji {' '.join(command)}: error: argument {flag}: must be a whole number from {bounds}"
    assert "Traceback" not in result.err


@pytest.mark.anyio
async def test_mcp_memory_list_is_compact_and_paged(archive: MemoryService, db_path: Path) -> None:
    archive.close()
    async with memory_client(db_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "review" in (tools["memory_list"].description or "")
        result = await client.call_tool("memory_list", {"view": "history", "limit": 3})
        data = payload(result)
        assert (data["total"], data["next_offset"], len(data["memories"])) == (8, 3, 3)
        text = result.content[0].text  # type: ignore[union-attr]
        assert "\n" not in text and ": " not in text and "null" not in text
        assert json.loads(text) == data
        assert all(
            "persona" not in m and "invalid_at" not in m for m in data["memories"] if m["kind"] != "fact"
        )
        last = payload(await client.call_tool("memory_list", {"view": "history", "limit": 3, "offset": 6}))
        assert "next_offset" not in last and len(last["memories"]) == 2
        keyed = payload(await client.call_tool("memory_list", {"fact_key": "home.city", "view": "history"}))
        assert [m["text"] for m in keyed["memories"]] == ["住在杭州", "住在上海"]
        assert keyed["memories"][0]["invalid_at"].startswith("2026-06-01")
        bad = await client.call_tool("memory_list", {"offset": int(HUGE)})
        assert bad.isError and "offset" in error_text(bad) and HUGE not in error_text(bad)
