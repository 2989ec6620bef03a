"""memory_correct / memory_delete through the MCP SDK client (in memory and over stdio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from .lifecycle_helpers import tables_holding
from .mcp_helpers import error_text, memory_client, payload, stdio_client_session

pytestmark = pytest.mark.anyio

SECRET = "我的秘密是紫罗兰潜水艇计划"


async def call(client: ClientSession, tool: str, **arguments: Any) -> Any:
    return payload(await client.call_tool(tool, arguments))


async def seed(client: ClientSession) -> dict[str, str]:
    await call(
        client,
        "event_submit",
        id="mar",
        session="s",
        role="user",
        text="我不住在杭州，我住在苏州",
        occurred_at="2026-03-01T09:00:00+08:00",
    )
    await call(client, "event_submit", id="secret", session="s", role="user", text=SECRET)
    wrong = await call(
        client,
        "memory_derive",
        event_id="mar",
        memories=[
            {
                "text": "住在杭州",
                "quote": "住在杭州",
                "kind": "fact",
                "basis": "user_statement",
                "subject": "user",
                "fact_key": "home.city",
            }
        ],
    )
    plan = await call(
        client,
        "memory_derive",
        event_id="secret",
        memories=[
            {
                "text": "紫罗兰潜水艇计划",
                "quote": "紫罗兰潜水艇计划",
                "kind": "episode",
                "basis": "user_statement",
            }
        ],
    )
    return {"wrong": wrong["memory_ids"][0], "plan": plan["memory_ids"][0]}


async def test_correct_over_mcp_keeps_lineage_and_start(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        ids = await seed(client)
        fixed = await call(
            client, "memory_correct", memory_id=ids["wrong"], statement="我住在苏州", text="住在苏州"
        )
        assert fixed["scope"] == {"persona": "default", "project": "default"}
        assert fixed["event"]["category"] == "correction" and fixed["event"]["session"] == "s"
        assert fixed["amended_event_id"] == "mar" and fixed["created"] is True
        read = await call(client, "memory_read", memory_id=ids["wrong"])
        assert read["memory"]["revoked_reason"] == "corrected"
        assert read["event"]["amended"] is True
        assert read["relations"] == [
            {
                "from_id": fixed["corrected_memory_id"],
                "to_id": ids["wrong"],
                "type": "corrects",
                "created_at": read["relations"][0]["created_at"],
            }
        ]
        corrected = await call(client, "memory_read", memory_id=fixed["corrected_memory_id"])
        assert corrected["memory"]["valid_at"] == "2026-03-01T01:00:00.000000Z"
        assert corrected["memory"]["quote"] == "我住在苏州" and corrected["quote"] == {"start": 0, "end": 5}
        again = await client.call_tool(
            "memory_correct", {"memory_id": ids["wrong"], "statement": "我住在苏州"}
        )
        assert again.isError and error_text(again).startswith("conflict:")
        bad = await client.call_tool(
            "memory_correct",
            {"memory_id": fixed["corrected_memory_id"], "statement": "x", "quote": "SECRET-Q"},
        )
        assert bad.isError and "SECRET-Q" not in error_text(bad)
        assert error_text(bad) == (
            "invalid_input: quote: is not in the source event's text (copy part of it exactly)"
        )


async def test_delete_over_mcp_requires_confirm(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        ids = await seed(client)
        refused = await client.call_tool("memory_delete", {"memory_id": ids["plan"]})
        assert refused.isError and "confirm" in error_text(refused)
        refused = await client.call_tool("memory_delete", {"memory_id": ids["plan"], "confirm": False})
        assert refused.isError
        both = await client.call_tool(
            "memory_delete", {"memory_id": ids["plan"], "event_id": "secret", "confirm": True}
        )
        assert both.isError and "exactly one" in error_text(both)
        assert (await call(client, "memory_read", memory_id=ids["plan"]))["memory"]["id"] == ids["plan"]

        dry = await call(client, "memory_delete", memory_id=ids["plan"], dry_run=True)
        assert (
            dry["dry_run"] is True and dry["event_ids"] == ["secret"] and dry["memory_ids"] == [ids["plan"]]
        )
        assert tables_holding(db_path, "紫罗兰潜水艇") != []
        done = await call(client, "memory_delete", memory_id=ids["plan"], confirm=True)
        assert {k: v for k, v in done.items() if k != "dry_run"} == {
            k: v for k, v in dry.items() if k != "dry_run"
        }
        gone = await client.call_tool("memory_read", {"memory_id": ids["plan"]})
        assert gone.isError and error_text(gone).startswith("not_found:")
    assert tables_holding(db_path, "紫罗兰潜水艇") == []
    assert tables_holding(db_path, ids["plan"]) == []


async def test_delete_over_stdio_refuses_without_confirm(db_path: Path) -> None:
    async with stdio_client_session(db_path) as client:
        await call(client, "event_submit", id="secret", session="s", role="user", text=SECRET)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"memory_correct", "memory_delete"} <= set(tools)
        assert "confirm" in tools["memory_delete"].inputSchema["properties"]
        refused = await client.call_tool("memory_delete", {"event_id": "secret"})
        assert refused.isError and "confirm" in error_text(refused)
        done = await call(client, "memory_delete", event_id="secret", confirm=True)
        assert done["event_ids"] == ["secret"]
    assert tables_holding(db_path, "紫罗兰潜水艇") == []
