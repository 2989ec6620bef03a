"""What an MCP client sees of yiji, through the official SDK client over stdio (a real ``yiji serve``):
annotations on every tool, a description on every parameter, enums where the values are closed,
descriptions without docstring indentation, only the capabilities that serve something (tools and the
``resume`` prompt), and nothing on stderr per call at the default log level. A host model can also
propose a memory for its user to approve (``memory_derive`` with ``propose``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent

from .mcp_helpers import memory_client, payload

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
READ_ONLY = {"persona_get", "memory_recall", "memory_list", "memory_read", "session_resume"}
DESTRUCTIVE = {"memory_correct", "memory_review", "memory_delete"}


def _schemas(schema: Any) -> list[dict[str, Any]]:
    """Every property schema in a JSON schema, nested models' fields included."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found += [v for v in value.values() if isinstance(v, dict)]
            found += _schemas(value)
    elif isinstance(schema, list):
        for item in schema:
            found += _schemas(item)
    return found


@pytest.mark.anyio
async def test_a_client_sees_annotations_descriptions_and_enums(tmp_path: Path) -> None:
    errors = tmp_path / "stderr.txt"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "yiji", "--db", str(tmp_path / "m.db"), "serve"],
        env={**os.environ},
    )
    with errors.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            tools = (await client.list_tools()).tools
            prompts = (await client.list_prompts()).prompts
            for _ in range(3):
                result = await client.call_tool("memory_recall", {"query": "杭州"})
                assert not result.isError
            resumed = await client.get_prompt("resume", {"session": "s1"})

    caps = init.capabilities
    assert caps.tools is not None and caps.prompts is not None
    assert caps.resources is None  # nothing to offer, nothing advertised
    assert [p.name for p in prompts] == ["resume"]
    assert all(a.description for p in prompts for a in p.arguments or [])
    block = resumed.messages[0].content
    assert isinstance(block, TextContent) and '"persona"' in block.text

    assert len(tools) == 14
    for tool in tools:
        assert tool.annotations is not None, tool.name
        hints = tool.annotations.model_dump()
        assert all(isinstance(hints[h], bool) for h in HINTS), tool.name
        assert hints["openWorldHint"] is False
        assert hints["readOnlyHint"] is (tool.name in READ_ONLY), tool.name
        assert hints["destructiveHint"] is (tool.name in DESTRUCTIVE), tool.name
        assert tool.description and "\n    " not in tool.description and not tool.description.startswith(" ")
        properties = tool.inputSchema["properties"]
        undescribed = [n for n, s in properties.items() if not s.get("description")]
        assert undescribed == [], (tool.name, undescribed)
        assert all("title" not in s for s in _schemas(tool.inputSchema)), tool.name

    by_name = {t.name: t for t in tools}
    recall = by_name["memory_recall"].inputSchema["properties"]
    # omitted: the operator's configured default mode
    assert ["fast", "semantic", "deep"] in [
        o.get("enum") for o in recall["mode"].get("anyOf", [recall["mode"]])
    ]
    assert "fact" in recall["kinds"]["anyOf"][0]["items"]["enum"]
    assert by_name["memory_review"].inputSchema["properties"]["action"]["enum"] == [
        "accept",
        "reject",
        "edit",
    ]
    assert "propose" in by_name["memory_derive"].inputSchema["properties"]
    run = by_name["extraction_run"].inputSchema["properties"]
    assert set(run) == {"session", "since", "until", "roles", "limit", "dry_run", "persona", "project"}
    assert run["roles"]["anyOf"][0]["items"]["enum"] == ["user", "assistant", "system", "tool"]

    assert "Processing request" not in errors.read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_a_closed_value_outside_the_enum_is_refused_by_name(tmp_path: Path) -> None:
    async with memory_client(tmp_path / "m.db") as client:
        result = await client.call_tool("memory_recall", {"query": "杭州", "mode": "quick"})
    assert result.isError
    text = " ".join(b.text for b in result.content if isinstance(b, TextContent))
    assert "mode" in text and "quick" not in text


@pytest.mark.anyio
async def test_a_host_model_proposes_a_memory_for_its_user(tmp_path: Path) -> None:
    async with memory_client(tmp_path / "m.db") as client:
        submitted = payload(
            await client.call_tool(
                "event_submit", {"session": "s1", "role": "user", "text": "我养了一只柯基叫豆豆", "id": "e1"}
            )
        )
        assert submitted["created"] is True
        derived = payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": "e1",
                    "memories": [
                        {
                            "text": "用户养了一只柯基叫豆豆",
                            "quote": "我养了一只柯基叫豆豆",
                            "kind": "fact",
                            "basis": "user_statement",
                        }
                    ],
                    "propose": True,
                },
            )
        )
        assert derived["review_state"] == "proposed"
        waiting = payload(await client.call_tool("memory_list", {"review": "proposed"}))
        assert [m["id"] for m in waiting["memories"]] == derived["memory_ids"]
        remembered = payload(await client.call_tool("memory_list", {}))
        assert remembered["memories"] == []
        accepted = payload(
            await client.call_tool(
                "memory_review", {"memory_id": derived["memory_ids"][0], "action": "accept"}
            )
        )
        assert json.dumps(accepted)
        now = payload(await client.call_tool("memory_list", {}))
        assert [m["id"] for m in now["memories"]] == derived["memory_ids"]
