"""memory_list (review filter) and memory_review through the MCP SDK client: a host asks its user
"you moved to Shanghai, right?" and settles the proposal in conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, ExtractionConfig
from yiji.service import MemoryService, open_service

from .fakeprovider import MOVED_TO_SHANGHAI, FakeProvider, chat_reply
from .mcp_helpers import error_text, memory_client, payload

pytestmark = pytest.mark.anyio
KEY = "YIJI_MCP_REVIEW_KEY"

MOVED = MOVED_TO_SHANGHAI
AGREED = {
    "text": "约好周日一起复盘",
    "quote": "周日一起复盘",
    "kind": "agreement",
    "basis": "user_statement",
    "confidence": 0.9,
}


@pytest.fixture
def factory(db_path: Path, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(KEY, "sk-local-mcp")
    config = Config(
        db=db_path,
        extraction=ExtractionConfig(
            base_url=fake_provider.base_url, model="fake", api_key_env=KEY, timeout_seconds=5, review="facts"
        ),
    )

    def build() -> MemoryService:
        return open_service(config)

    return build


async def _proposals(client: Any) -> list[dict[str, Any]]:
    page = payload(await client.call_tool("memory_list", {"review": "proposed", "view": "history"}))
    return list(page["memories"])


async def test_a_host_settles_proposals_in_conversation(
    db_path: Path, factory: Any, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(chat_reply({"memories": [MOVED]}), chat_reply({"memories": [AGREED]}))
    async with memory_client(db_path, factory) as client:
        first = payload(
            await client.call_tool(
                "event_submit", {"id": "e1", "session": "s", "role": "user", "text": "我最近搬到了上海。"}
            )
        )
        payload(
            await client.call_tool(
                "event_submit", {"id": "e2", "session": "s", "role": "user", "text": "那就周日一起复盘吧。"}
            )
        )
        waiting = await _proposals(client)
        assert [(m["kind"], m["quote"]) for m in waiting] == [
            ("fact", MOVED["quote"]),
            ("agreement", "那就周日一起复盘吧"),
        ]
        assert all(m["review_state"] == "proposed" for m in waiting)
        moved_id, agreed_id = (m["id"] for m in waiting)
        assert first["memory_ids"] == [moved_id]
        accepted = payload(await client.call_tool("memory_list", {}))
        assert accepted["memories"] == []  # nothing remembered yet
        recalled = payload(await client.call_tool("memory_recall", {"query": "上海"}))
        assert {i["type"] for i in recalled["items"]} == {"raw_event"} and recalled["items"][0]["id"] == "e1"

        # "you moved to Shanghai, right?" - "yes, in May"
        edited = payload(
            await client.call_tool(
                "memory_review",
                {
                    "memory_id": moved_id,
                    "action": "edit",
                    "valid_at": "2026-05-01T00:00:00+08:00",
                    "accept": True,
                    "note": "the user confirmed",
                },
            )
        )
        assert edited["memory"]["review_state"] == "accepted"
        assert edited["memory"]["reviewed_by"].startswith("mcp")
        assert edited["memory"]["valid_at"].startswith("2026-04-30T16:00")
        recalled = payload(await client.call_tool("memory_recall", {"query": "上海"}))
        assert recalled["items"][0]["id"] == moved_id

        unconfirmed = await client.call_tool("memory_review", {"memory_id": agreed_id, "action": "reject"})
        assert unconfirmed.isError and "confirm" in error_text(unconfirmed)
        again = await client.call_tool("memory_review", {"memory_id": moved_id, "action": "accept"})
        assert again.isError and "not proposed" in error_text(again)
        unknown = await client.call_tool("memory_review", {"memory_id": "mem_nope", "action": "accept"})
        assert unknown.isError and error_text(unknown).startswith("not_found: ")
        invalid = await client.call_tool(
            "memory_review", {"memory_id": agreed_id, "action": "edit", "kind": "emotion"}
        )
        assert invalid.isError and "an emotion and its values need basis assistant_expression" in error_text(
            invalid
        )
        assert [m["id"] for m in await _proposals(client)] == [agreed_id]  # nothing changed

        rejected = payload(
            await client.call_tool(
                "memory_review",
                {"memory_id": agreed_id, "action": "reject", "confirm": True, "note": "never agreed"},
            )
        )
        assert rejected["memory"]["review_state"] == "rejected"
        assert await _proposals(client) == []
        audit = payload(await client.call_tool("memory_list", {"review": "rejected", "view": "history"}))
        assert [(m["id"], m["review_note"]) for m in audit["memories"]] == [(agreed_id, "never agreed")]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "confirm" in tools["memory_review"].inputSchema["properties"]
        assert "review" in tools["memory_list"].inputSchema["properties"]


@pytest.mark.parametrize(
    ("action", "arguments", "named"),
    [
        ("accept", {"text": "改正后的文字"}, ["text"]),
        ("accept", {"valid_at": "2026-05-01T00:00:00+08:00", "kind": "preference"}, ["kind", "valid_at"]),
        ("accept", {"subject": "user", "fact_key": "home.city"}, ["fact_key", "subject"]),
        ("accept", {"drop_key": True}, ["drop_key"]),
        ("accept", {"accept": True}, ["accept"]),
        ("accept", {"confirm": True}, ["confirm"]),
        ("reject", {"confirm": True, "text": "改正后的文字"}, ["text"]),
        ("reject", {"confirm": True, "accept": True}, ["accept"]),
        ("edit", {"text": "用户搬到了杭州", "confirm": True}, ["confirm"]),
    ],
)
async def test_an_argument_that_means_nothing_for_the_action_is_refused_by_name(
    db_path: Path,
    factory: Any,
    fake_provider: FakeProvider,
    action: str,
    arguments: dict[str, Any],
    named: list[str],
) -> None:
    fake_provider.script_chat(chat_reply({"memories": [MOVED]}))
    async with memory_client(db_path, factory) as client:
        await client.call_tool(
            "event_submit", {"id": "e1", "session": "s", "role": "user", "text": "我最近搬到了上海。"}
        )
        [proposal] = await _proposals(client)
        refused = await client.call_tool(
            "memory_review", {"memory_id": proposal["id"], "action": action, **arguments}
        )
        assert refused.isError
        message = error_text(refused)
        assert message.startswith("invalid_input: ")
        assert [p.split(":")[0] for p in message.removeprefix("invalid_input: ").split("; ")] == named
        assert f"means nothing for action {action}" in message
        assert "改正后的文字" not in message and "杭州" not in message
        [unchanged] = await _proposals(client)  # nothing changed: still waiting, as it was
        assert unchanged == proposal
