"""Automatic extraction end to end against a real loopback OpenAI-compatible server.

The event always commits first; every provider fault leaves it pending with a sanitized error; retry
(or re-submitting the same event) completes it once the server behaves.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, ExtractionConfig
from yiji.models import EventIn, parse
from yiji.service import MemoryService, build_extractor
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import (
    FAKE_SECRET,
    MOVED_TO_SHANGHAI,
    FakeProvider,
    Reply,
    chat_content,
    chat_reply,
    content_not_json,
    malformed_json,
    rate_limited,
    server_error,
    slow,
)
from .inprocess import run_cli

API_KEY = "sk-local-KEY-5551212"
EVENT_TEXT = "我住在杭州，最近搬到了上海。"

GOOD = {
    "memories": [
        MOVED_TO_SHANGHAI,
        {
            "text": "用户曾住在杭州",
            "quote": "我住在杭州",
            "kind": "episode",
            "basis": "user_statement",
            "confidence": 0.7,
            "gist": "住过杭州",
            "related": [0],
        },
    ]
}


@pytest.fixture
def extracting(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryService]:
    monkeypatch.setenv("YIJI_TEST_KEY", API_KEY)
    config = Config(
        db=db_path,
        extraction=ExtractionConfig(
            base_url=fake_provider.base_url, model="fake", api_key_env="YIJI_TEST_KEY", timeout_seconds=0.5
        ),
    )
    with httpx.Client() as http:
        service = make_service(db_path, config, clock=clock, extractor=build_extractor(config, http))
        yield service
        service.close()


def submit(service: MemoryService, eid: str = "e1", text: str = EVENT_TEXT, role: str = "user") -> Any:
    return service.event_submit(parse(EventIn, {"id": eid, "session": "s", "role": role, "text": text}))


def all_stored_text(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        chunks = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            chunks.extend(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
        return "\n".join(chunks)
    finally:
        conn.close()


def test_extraction_derives_grounded_memories(extracting: MemoryService, fake_provider: FakeProvider) -> None:
    fake_provider.script_chat(chat_reply(GOOD))
    result = submit(extracting)
    assert result.event.extraction_state == "done"
    assert len(result.memory_ids) == 2
    request = fake_provider.requests_to("/v1/chat/completions")[0]
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.json()["response_format"]["type"] == "json_schema"
    read = extracting.memory_read(result.memory_ids[1])
    assert read["memory"].gist == "住过杭州"
    assert [(r.from_id, r.to_id) for r in read["relations"]] == [(result.memory_ids[1], result.memory_ids[0])]
    again = submit(extracting)
    assert not again.created and again.memory_ids == result.memory_ids
    assert len(fake_provider.requests_to("/v1/chat/completions")) == 1


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (slow(2.0), "provider_transient"),
        (rate_limited(), "provider_transient"),
        (server_error(), "provider_transient"),
        (malformed_json(), "provider_permanent"),
        (content_not_json(), "provider_permanent"),
        (chat_reply({"items": "not the expected shape"}), "provider_permanent"),
    ],
)
def test_faults_keep_event_pending_and_retry_completes(
    extracting: MemoryService, fake_provider: FakeProvider, db_path: Path, fault: Reply, code: str
) -> None:
    fake_provider.script_chat(fault)
    result = submit(extracting)
    assert result.created
    assert result.event.extraction_state == "pending"
    assert result.extraction is not None and result.extraction["error"] == code
    stored = extracting.event_show("e1")
    assert stored.text == EVENT_TEXT and stored.extraction_state == "pending"
    assert stored.extraction_error
    everything = all_stored_text(db_path) + json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
    assert FAKE_SECRET not in everything and API_KEY not in everything
    assert EVENT_TEXT not in (stored.extraction_error or "")
    assert extracting.doctor()["pending_extractions"] == 1
    fake_provider.script_chat(chat_reply(GOOD))
    retried = extracting.extraction_retry()
    assert retried["completed"] == 1 and retried["still_pending"] == 0
    assert extracting.event_show("e1").extraction_state == "done"
    assert extracting.doctor()["pending_extractions"] == 0


def test_resubmitting_resumes_pending(extracting: MemoryService, fake_provider: FakeProvider) -> None:
    fake_provider.script_chat(server_error(), chat_reply(GOOD))
    assert submit(extracting).event.extraction_state == "pending"
    resumed = submit(extracting)
    assert not resumed.created
    assert resumed.event.extraction_state == "done" and len(resumed.memory_ids) == 2


def test_rule_breaking_items_are_rejected_individually(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    answer = {
        "memories": [
            GOOD["memories"][0],
            {
                "text": "absent",
                "quote": "这句话不在原文里",
                "kind": "fact",
                "basis": "user_statement",
                "confidence": 0.5,
            },
            {
                "text": "claimed assistant",
                "quote": "我住在杭州",
                "kind": "observation",
                "basis": "assistant_expression",
                "confidence": 0.5,
            },
        ]
    }
    fake_provider.script_chat(chat_reply(answer))
    result = submit(extracting)
    # The basis follows the event's role: the user said "我住在杭州", whatever the model claimed.
    assert len(result.memory_ids) == 2
    assert extracting.memory_read(result.memory_ids[1])["memory"].basis == "user_statement"
    assert result.extraction["rejected"] == 1
    assert result.extraction["rejected_rules"] == ["quote_not_in_source"]


def test_a_malformed_item_is_refused_alone(extracting: MemoryService, fake_provider: FakeProvider) -> None:
    # a stray string and a number where text belongs, as a small local model sometimes answers
    answer = {"memories": [{"text": "t", "kind": "fact", "value": -0.5}, GOOD["memories"][0], "value"]}
    fake_provider.script_chat(chat_reply(answer))
    result = submit(extracting)
    assert result.event.extraction_state == "done"
    assert [extracting.memory_read(m)["memory"].text for m in result.memory_ids] == [
        GOOD["memories"][0]["text"]
    ]
    assert result.extraction["rejected"] == 2
    assert result.extraction["rejected_rules"] == ["item_malformed"]


@pytest.mark.parametrize(("finish_reason", "state"), [("length", "done"), ("stop", "pending")])
def test_an_answer_broken_before_its_end_keeps_its_whole_items_only_when_cut_off(
    extracting: MemoryService, fake_provider: FakeProvider, finish_reason: str, state: str
) -> None:
    # Qwen3 models sometimes write invalid \u escapes in Chinese text: only finish_reason "length"
    # says the answer was cut off by max_tokens; one that ended malformed is a provider failure
    whole = json.dumps(GOOD["memories"][0], ensure_ascii=False)
    broken = '{"memories": [' + whole + ', {"text": "用户住在\\u676\\uZZZZ", "clause": 1, "kind": "fact"}]}'
    fake_provider.script_chat(chat_content(broken, finish_reason=finish_reason))
    result = submit(extracting)
    assert result.event.extraction_state == state
    if state == "done":
        assert len(result.memory_ids) == 1 and result.extraction["rejected_rules"] == ["item_malformed"]
        return
    assert result.memory_ids == [] and result.extraction["error"] == "provider_permanent"
    assert result.event.extraction_error == "extraction answer content is not JSON"
    fake_provider.script_chat(chat_reply(GOOD))
    retried = extracting.extraction_retry(result.event.id)
    assert retried["completed"] == 1 and retried["results"][0]["memory_ids"]


def test_assistant_event_claimed_as_user_statement(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    {
                        "text": "用户住在上海",
                        "quote": "你住在上海",
                        "kind": "fact",
                        "basis": "user_statement",
                        "confidence": 0.9,
                        "subject": "user",
                        "fact_key": "home.city",
                        "value": "上海",
                    },
                    {"text": "助手记住了用户的城市", "clause": 2, "kind": "observation"},
                    {"text": "助手会记住用户的城市", "clause": 3, "kind": "agreement"},
                ]
            }
        )
    )
    result = submit(extracting, text="好的，你住在上海，以后我都记着。", role="assistant")
    # What the assistant said is an assistant expression, never the user's keyed fact; of an
    # assistant event only its emotion, agreements and growth are kept.
    # The observation's clause sits in the agreement's sentence: the same words twice, one kept.
    assert result.extraction["rejected_rules"] == [
        "duplicate",
        "fact_key_requires_user_statement",
        "kind_not_from_assistant",
    ]
    assert result.extraction["rejected"] == 2
    (kept,) = [extracting.memory_read(m)["memory"] for m in result.memory_ids]
    # The agreement's text says more than its clause: it keeps the assistant's whole sentence.
    assert (kept.kind, kept.basis, kept.quote, kept.fact_key) == (
        "agreement",
        "assistant_expression",
        "好的，你住在上海，以后我都记着",
        None,
    )
    assert result.event.extraction_state == "done"


def test_reference_events_are_not_sent(extracting: MemoryService, fake_provider: FakeProvider) -> None:
    result = extracting.event_submit(
        parse(
            EventIn, {"session": "s", "role": "user", "category": "reference", "text": "一篇关于杭州的文章"}
        )
    )
    assert result.event.extraction_state == "skipped"
    assert fake_provider.requests_to("/v1/chat/completions") == []


def test_cli_extraction_with_a_real_endpoint(tmp_path: Path, fake_provider: FakeProvider) -> None:
    db = str(tmp_path / "cli.db")
    env = {
        "YIJI_EXTRACTION_BASE_URL": fake_provider.base_url,
        "YIJI_EXTRACTION_MODEL": "fake",
        "YIJI_EXTRACTION_API_KEY_ENV": "YIJI_TEST_KEY",
        "YIJI_TEST_KEY": API_KEY,
    }
    fake_provider.script_chat(server_error())
    first = run_cli(
        "--db",
        db,
        "--json",
        "event",
        "submit",
        "--id",
        "c1",
        "--session",
        "s",
        "--role",
        "user",
        EVENT_TEXT,
        env=env,
    )
    assert first.code == 0, first.err
    assert json.loads(first.out)["event"]["extraction_state"] == "pending"
    assert FAKE_SECRET not in first.out + first.err
    fake_provider.script_chat(chat_reply(GOOD))
    retry = run_cli("--db", db, "--json", "extraction", "retry", env=env)
    assert retry.code == 0, retry.err
    assert json.loads(retry.out)["completed"] == 1
    listed = run_cli("--db", db, "--json", "memory", "list", env=env)
    assert {m["text"] for m in json.loads(listed.out)["memories"]} == {"用户搬到了上海", "用户曾住在杭州"}
