"""memory_derive / memory_read through the MCP SDK client, in Chinese and English."""

from __future__ import annotations

from pathlib import Path

import pytest

from .mcp_helpers import error_text, memory_client, payload

pytestmark = pytest.mark.anyio


async def test_derive_and_read_over_mcp(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        for eid, text, when in [
            ("zh-1", "我住在杭州。", "2026-03-01T09:00:00+08:00"),
            ("en-1", "I moved to Shanghai in June.", "2026-06-01T09:00:00+08:00"),
        ]:
            payload(
                await client.call_tool(
                    "event_submit",
                    {"id": eid, "session": "s", "role": "user", "text": text, "occurred_at": when},
                )
            )
        first = payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": "zh-1",
                    "memories": [
                        {
                            "text": "住在杭州",
                            "quote": "我住在杭州",
                            "kind": "fact",
                            "basis": "user_statement",
                            "subject": "user",
                            "fact_key": "home.city",
                            "confidence": 0.9,
                        }
                    ],
                },
            )
        )
        second = payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": "en-1",
                    "memories": [
                        {
                            "text": "lives in Shanghai",
                            "quote": "I moved to Shanghai",
                            "kind": "fact",
                            "basis": "user_statement",
                            "subject": "user",
                            "fact_key": "home.city",
                        }
                    ],
                },
            )
        )
        assert first["scope"] == {"persona": "default", "project": "default"}
        read = payload(await client.call_tool("memory_read", {"memory_id": first["memory_ids"][0]}))
        assert read["memory"]["invalid_at"] == "2026-06-01T01:00:00.000000Z"
        assert read["text"]["content"] == "我住在杭州。"
        assert read["quote"] == {"start": 0, "end": 5}
        later = payload(await client.call_tool("memory_read", {"memory_id": second["memory_ids"][0]}))
        assert "invalid_at" not in later["memory"]  # nulls are left out of MCP results
        refused = await client.call_tool(
            "memory_derive",
            {
                "event_id": "en-1",
                "memories": [
                    {"text": "x", "quote": "not there", "kind": "fact", "basis": "assistant_expression"}
                ],
            },
        )
        assert refused.isError
        text = error_text(refused)
        assert "memories.0.quote: is not in the source event's text" in text
        assert "memories.0.basis: assistant_expression needs an assistant event as its source" in text
        assert "not there" not in text
