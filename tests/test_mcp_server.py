"""The MCP server through the official SDK client: in memory and as a real stdio subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest

from .mcp_helpers import error_text, memory_client, payload, stdio_client_session

pytestmark = pytest.mark.anyio

SECRET = "SECRET-VALUE-77c1"


async def test_tools_are_listed_with_docstrings(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"persona_get", "event_submit"} <= set(tools)
    assert "read-only" in (tools["persona_get"].description or "")
    schema = tools["event_submit"].inputSchema
    assert set(schema["required"]) == {"session", "role", "text"}


async def test_submit_and_persona_in_memory(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        persona = payload(await client.call_tool("persona_get", {}))
        assert persona["version"] == 1
        result = payload(
            await client.call_tool(
                "event_submit",
                {
                    "id": "m-1",
                    "session": "s",
                    "role": "user",
                    "text": "我搬到上海了",
                    "occurred_at": "2026-06-01T10:00:00+08:00",
                    "cues": [{"type": "photo", "identifier": "IMG_9", "label": "外滩"}],
                },
            )
        )
        assert result["created"] is True
        assert result["scope"] == {"persona": "default", "project": "default"}
        assert result["event"]["occurred_at"] == "2026-06-01T02:00:00.000000Z"
        again = payload(
            await client.call_tool(
                "event_submit",
                {
                    "id": "m-1",
                    "session": "s",
                    "role": "user",
                    "text": "我搬到上海了",
                    "occurred_at": "2026-06-01T10:00:00+08:00",
                    "cues": [{"type": "photo", "identifier": "IMG_9", "label": "外滩"}],
                },
            )
        )
        assert again["created"] is False


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"session": "s", "role": "user", "text": "x", "occurred_at": f"{SECRET}T00:00"}, "occurred_at"),
        ({"session": "s", "role": SECRET, "text": "x"}, "role"),
        ({"session": "s", "role": "user", "text": 12345}, "text"),
        ({"session": "s", "role": "user", "text": "   "}, "text"),
        ({"session": f"bad {SECRET}", "role": "user", "text": "x"}, "session"),
    ],
)
async def test_invalid_arguments_name_field_without_value(
    db_path: Path, args: dict[str, object], field: str
) -> None:
    async with memory_client(db_path) as client:
        result = await client.call_tool("event_submit", args)
        assert result.isError
        text = error_text(result)
        assert field in text
        assert SECRET not in text and "12345" not in text
        persona = payload(await client.call_tool("persona_get", {}))
    assert persona["version"] == 1


async def test_conflict_is_a_tool_error(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        base = {"id": "c", "session": "s", "role": "user", "text": "a"}
        payload(await client.call_tool("event_submit", base))
        result = await client.call_tool("event_submit", {**base, "text": f"b {SECRET}"})
    assert result.isError
    assert "conflict" in error_text(result) and SECRET not in error_text(result)


async def test_stdio_subprocess(db_path: Path) -> None:
    async with stdio_client_session(db_path) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert "event_submit" in tools
        result = payload(
            await client.call_tool(
                "event_submit", {"session": "s", "role": "assistant", "text": "Nice to meet you."}
            )
        )
        assert result["event"]["role"] == "assistant"
        persona = payload(await client.call_tool("persona_get", {"persona": "companion"}))
        assert persona["persona"] == "companion"


async def test_stdio_serve_honours_persona_and_project_flags(db_path: Path) -> None:
    """``yiji serve --persona P --project Q`` is the default scope of every tool call that names none, as
    for host-ingest and ui; a call that names its scope keeps it."""
    async with stdio_client_session(db_path, serve_args=("--persona", "miso", "--project", "work")) as client:
        stored = payload(
            await client.call_tool(
                "event_submit", {"session": "s", "role": "user", "text": "The quarterly plan uses kanban."}
            )
        )
        assert stored["scope"] == {"persona": "miso", "project": "work"}
        recalled = payload(await client.call_tool("memory_recall", {"query": "kanban"}))
        assert recalled["scope"] == {"persona": "miso", "project": "work"}
        assert recalled["items"], recalled
        elsewhere = payload(
            await client.call_tool("memory_recall", {"query": "kanban", "project": "default"})
        )
        assert elsewhere["scope"] == {"persona": "miso", "project": "default"}
        assert not elsewhere["items"]
        persona = payload(await client.call_tool("persona_get", {}))
        assert persona["persona"] == "miso"


async def test_unknown_arguments_are_refused(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        result = await client.call_tool(
            "event_submit", {"session": "s", "role": "user", "text": "hi", "colour": "blue"}
        )
        assert result.isError and "colour: unknown field" in error_text(result)
        assert "blue" not in error_text(result)
        persona = payload(await client.call_tool("persona_get", {}))
    assert persona["version"] == 1
    from yiji.db import Database

    db = Database(db_path)
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    db.close()
