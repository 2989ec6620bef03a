"""MCP results an agent can afford, measured through the official SDK client.

Sizes are the JSON the client receives (what a host forwards to its model): the tool list with every
schema, and whole ``CallToolResult`` objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from .mcp_helpers import memory_client, payload

# Typical companion memories: a user's statements, each derived as one memory about 上海.
STATEMENTS = [
    "我在上海住了五年了，之前在苏州。",
    "我下个月要去上海出差，大概一周。",
    "周六和朋友去上海博物馆看了展览。",
    "上海最近降温了，早晚特别冷。",
    "我妹妹也在上海工作，做会计。",
    "我不太喜欢上海的地铁，早高峰太挤了。",
    "我想在上海找一家好吃的火锅店。",
    "上海的房租太贵了，我在考虑搬家。",
    "我在上海学会了做本帮菜，红烧肉最拿手。",
    "我妈妈下个月来上海看我，要住两周。",
    "在上海养猫的人好多，我也想养一只。",
    "我每天坐十号线去上海的公司上班。",
]


def wire_size(value: Any) -> int:
    """Bytes of a protocol object as JSON on the wire (UTF-8)."""
    return len(value.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8"))


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def walk(value: Any) -> list[Any]:
    """Every value nested in ``value`` (itself included)."""
    out = [value]
    if isinstance(value, dict):
        for v in value.values():
            out += walk(v)
    elif isinstance(value, list):
        for v in value:
            out += walk(v)
    return out


async def fill(client: ClientSession) -> None:
    for n, text in enumerate(STATEMENTS):
        payload(
            await client.call_tool(
                "event_submit", {"id": f"e{n}", "session": "s1", "role": "user", "text": text}
            )
        )
        payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": f"e{n}",
                    "memories": [
                        {
                            "text": "用户" + text[1:] if text[0] == "我" else text,
                            "quote": text,
                            "kind": "fact",
                            "basis": "user_statement",
                        }
                    ],
                },
            )
        )


@pytest.mark.anyio
async def test_tool_list_is_small(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        tools = await client.list_tools()
        # every tool carries annotations and a description of every parameter (25,331 bytes for 12 tools
        # measured when they were added, from 19,059 without them; pydantic's repeated titles are left out);
        # memory_remember and extraction_run made 14 tools and 29,567 bytes: the same 2,112 bytes a tool
        size = wire_size(tools)
        assert size < 30_000 and size / len(tools.tools) < 2_150
        assert all(tool.outputSchema is None for tool in tools.tools)
        recall = next(t for t in tools.tools if t.name == "memory_recall")
        assert "explain" in recall.inputSchema["properties"]


@pytest.mark.anyio
async def test_ten_item_recall_is_compact(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        await fill(client)
        result = await client.call_tool("memory_recall", {"query": "上海", "limit": 10})
        data = payload(result)
        assert len(data["items"]) == 10
        # about 400 bytes an item, texts included: which ten of the sixteen statements come back follows the
        # ranking (3,917 bytes measured, then 4,039 once the statement that opens the session ranked first)
        assert wire_size(result) < 4_200
        text = text_of(result)
        assert "\n" not in text and ": " not in text  # no indentation, no padding
        assert result.structuredContent is None  # said once, as text
        assert None not in walk(data)
        first = data["items"][0]
        assert list(first)[:8] == ["id", "type", "text", "quote", "time", "kind", "basis", "score"]
        assert data["scope"] == {"persona": "default", "project": "default"}
        assert all("scope" not in item and "persona" not in item for item in data["items"])
        for item in data["items"]:
            contributions = {k: v for k, v in item["why"].items() if k != "matched"}
            assert contributions and all(v != 0 for v in contributions.values())
            assert item["why"]["matched"] == ["上海"]


@pytest.mark.anyio
async def test_explain_gives_the_full_explanation(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        await fill(client)
        brief = payload(await client.call_tool("memory_recall", {"query": "博物馆", "limit": 1}))
        full = payload(
            await client.call_tool("memory_recall", {"query": "博物馆", "limit": 1, "explain": True})
        )
        assert "factors" not in brief["items"][0]["why"]
        why = full["items"][0]["why"]
        assert why["evidence"] is True and set(why["factors"]) == {"basis", "confidence", "freshness"}
        assert why["contributions"]["lexical"] > 0 and full["items"][0]["event_id"] == "e2"


@pytest.mark.anyio
async def test_raw_events_are_labelled_once(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        for n in range(3):
            payload(
                await client.call_tool(
                    "event_submit",
                    {"id": f"r{n}", "session": "s", "role": "user", "text": f"吉他课第{n + 1}节"},
                )
            )
        data = payload(await client.call_tool("memory_recall", {"query": "吉他"}))
        assert [i["type"] for i in data["items"]] == ["raw_event"] * 3
        assert "not checked facts" in data["note"]
        assert all("label" not in i for i in data["items"])


@pytest.mark.anyio
async def test_session_resume_metadata_is_compact(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        await fill(client)
        result = await client.call_tool("session_resume", {"session": "s1", "query": "上海", "budget": 4000})
        data = payload(result)
        meta = data["metadata"]
        assert None not in walk(meta) and [] not in walk(meta)
        assert len(json.dumps(meta, ensure_ascii=False).encode()) < 600
        assert "recalled_memories" in meta["included"]
        context = json.dumps(data["context"], ensure_ascii=False, separators=(",", ":"))
        overhead = len(text_of(result).encode()) - len(context.encode())
        assert overhead < 700  # everything besides the context itself
        assert "\n  " not in text_of(result)


def test_cli_json_keeps_the_full_form(cli: Any) -> None:
    assert cli("event", "submit", "--session", "s", "--role", "user", "我在学吉他").code == 0
    data = cli("--json", "recall", "吉他").json()
    item = data["items"][0]
    assert item["event"]["label"] and "contributions" in item["why"] and "factors" in item["why"]
