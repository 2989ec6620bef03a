"""``yiji extraction run`` (and its MCP tool) over captured events, against a real loopback
OpenAI-compatible server: each event is sent once, a failure waits for the next run with its reason,
filters narrow what is sent, the session's earlier turns go along as context and every memory stored
quotes its own event."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, ExtractionConfig
from yiji.db import Database
from yiji.models import EventIn, parse
from yiji.service import MemoryService, open_service

from .fakeprovider import CHAT_PATH, MOVED_TO_SHANGHAI, FakeProvider, Reply, chat_reply, server_error, slow
from .mcp_helpers import memory_client, payload

SHANGHAI = "我住在杭州，最近搬到了上海。"
TEA = "我每天早上都喝绿茶，不喝咖啡。"
REPLY = "好的，记住了：你现在住在上海，每天早上喝绿茶。"
KNOWN: dict[str, dict[str, Any]] = {
    "最近搬到了上海": MOVED_TO_SHANGHAI,
    "每天早上都喝绿茶": {
        "text": "用户每天早上喝绿茶",
        "quote": "我每天早上都喝绿茶",
        "kind": "preference",
        "basis": "user_statement",
        "confidence": 0.8,
    },
}


def _event_part(request: Any) -> str:
    """The EVENT section of an extraction request (what is to be extracted, not the context)."""
    user = request["messages"][-1]["content"]
    return str(user.split("\nEVENT (", 1)[1])


def _context_part(request: Any) -> str:
    user = request["messages"][-1]["content"]
    return str(user.split("CONTEXT (", 1)[1].split("\nEVENT (", 1)[0])


def _answer(request: Any) -> Reply:
    """The memories the event's own text holds (by the phrases of ``KNOWN``)."""
    event = _event_part(request)
    return chat_reply({"memories": [m for phrase, m in KNOWN.items() if phrase in event]})


@pytest.fixture
def captured(service: MemoryService) -> MemoryService:
    """Two sessions stored without extraction (state none), as a capture hook stores them."""
    for eid, session, role, text, at in (
        ("a1", "s1", "user", SHANGHAI, "2026-05-01T09:00:00+08:00"),
        ("a2", "s1", "assistant", REPLY, "2026-05-01T09:00:05+08:00"),
        ("a3", "s1", "user", TEA, "2026-05-01T09:01:00+08:00"),
        ("b1", "s2", "user", "我最近搬到了上海，在学做饭。", "2026-05-03T20:00:00+08:00"),
    ):
        event = parse(EventIn, {"id": eid, "session": session, "role": role, "text": text, "occurred_at": at})
        assert service.event_submit(event).event.extraction_state == "none"
    return service


@pytest.fixture
def endpoint(fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    monkeypatch.setenv("YIJI_EXTRACTION_BASE_URL", fake_provider.base_url)
    monkeypatch.setenv("YIJI_EXTRACTION_MODEL", "fake")
    monkeypatch.setenv("YIJI_EXTRACTION_TIMEOUT_SECONDS", "5")
    fake_provider.answer_chat(_answer)
    return fake_provider


def _sent(provider: FakeProvider) -> list[str]:
    return [_event_part(r.json()) for r in provider.requests_to(CHAT_PATH)]


def _memories(db_path: Path) -> list[tuple[str, str, str]]:
    """(memory quote, its event's id, its event's text) of every memory."""
    db = Database(db_path)
    try:
        with db.read() as conn:
            rows = conn.execute(
                "SELECT m.quote, e.id, e.text FROM memories m "
                "JOIN events e ON e.id = m.event_id ORDER BY m.id"
            ).fetchall()
    finally:
        db.close()
    return [(r[0], r[1], r[2]) for r in rows]


def _states(db_path: Path) -> dict[str, str]:
    db = Database(db_path)
    try:
        with db.read() as conn:
            return dict(conn.execute("SELECT id, extraction_state FROM events").fetchall())
    finally:
        db.close()


def test_a_run_sends_each_user_turn_once_and_every_memory_quotes_its_event(
    captured: MemoryService, endpoint: FakeProvider, cli: Any, db_path: Path
) -> None:
    first = cli("--json", "extraction", "run")
    assert first.code == 0, first.err
    result = first.json()
    assert (result["tried"], result["completed"], result["memories"], result["still_pending"]) == (3, 3, 3, 0)
    assert result["roles"] == ["user"]
    sent = _sent(endpoint)
    assert len(sent) == 3 and not any(REPLY in s for s in sent)  # the assistant turn only as context
    stored = _memories(db_path)
    assert len(stored) == 3
    for quote, _, text in stored:
        assert quote in text
    assert {eid for _, eid, _ in stored} == {"a1", "a3", "b1"}
    assert _states(db_path) == {"a1": "done", "a2": "none", "a3": "done", "b1": "done"}

    again = cli("extraction", "run")
    assert again.code == 0
    assert "no user event waits for extraction" in again.out
    assert len(_sent(endpoint)) == 3  # nothing sent twice
    assert len(_memories(db_path)) == 3


def test_the_session_s_earlier_turns_go_as_context_and_a_quote_from_them_is_refused(
    captured: MemoryService, endpoint: FakeProvider, cli: Any, db_path: Path
) -> None:
    def from_context(request: Any) -> Reply:
        if TEA not in _event_part(request):
            return _answer(request)
        # the model quotes the assistant's earlier turn, not the event: never stored
        stolen = {
            "text": "用户住在上海",
            "quote": "你现在住在上海",
            "kind": "fact",
            "basis": "user_statement",
            "confidence": 0.9,
        }
        return chat_reply({"memories": [KNOWN["每天早上都喝绿茶"], stolen]})

    endpoint.answer_chat(from_context)
    result = cli("--json", "extraction", "run", "--session", "s1").json()
    requests = [r.json() for r in endpoint.requests_to(CHAT_PATH)]
    assert len(requests) == 2
    tea = next(r for r in requests if "每天早上都喝绿茶" in _event_part(r))
    context = _context_part(tea)
    assert SHANGHAI.rstrip("。") in context and REPLY.rstrip("。") in context
    assert result["memories"] == 2
    quotes = {q: eid for q, eid, _ in _memories(db_path)}
    assert quotes == {"最近搬到了上海": "a1", "我每天早上都喝绿茶": "a3"}


def test_a_failure_waits_for_the_next_run_with_its_reason(
    captured: MemoryService, endpoint: FakeProvider, cli: Any, db_path: Path
) -> None:
    endpoint.script_chat(server_error())
    first = cli("extraction", "run", "--session", "s1")
    assert first.code == 1
    assert "still pending 1" in first.out and "the endpoint answered HTTP 500" in first.out
    assert _states(db_path)["a1"] == "pending"
    assert _states(db_path)["a3"] == "done"

    second = cli("--json", "extraction", "run", "--session", "s1")
    assert second.code == 0
    assert second.json()["tried"] == 1 and second.json()["completed"] == 1
    assert _sent(endpoint)[-1].count("最近搬到了上海") == 1
    assert len(_sent(endpoint)) == 3
    assert _states(db_path)["a1"] == "done"


def test_an_unreachable_endpoint_stops_the_run_and_loses_nothing(
    captured: MemoryService, cli: Any, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("YIJI_EXTRACTION_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("YIJI_EXTRACTION_MODEL", "fake")
    run = cli("--json", "extraction", "run")
    assert run.code == 1
    result = run.json()
    assert (result["tried"], result["still_pending"], result["not_tried"]) == (1, 1, 2)
    assert result["stopped"] == "endpoint"
    assert result["failures"] == [{"reason": "unreachable", "events": 1}]
    plain = cli("extraction", "run")
    assert "the endpoint could not be reached" in plain.out and "not tried 2" in plain.out
    assert _memories(db_path) == []
    assert set(_states(db_path).values()) <= {"none", "pending"}


def test_session_and_time_filters_limit_and_dry_run(
    captured: MemoryService, endpoint: FakeProvider, cli: Any, db_path: Path
) -> None:
    dry = cli("--json", "extraction", "run", "--dry-run")
    assert dry.code == 0 and dry.json()["would_send"] == 3 and dry.json()["selected"] == 3
    assert cli("--json", "extraction", "run", "--dry-run", "--role", "assistant").json()["would_send"] == 1
    assert endpoint.requests_to(CHAT_PATH) == []

    later = cli("--json", "extraction", "run", "--since", "2026-05-02T00:00:00+08:00").json()
    assert later["tried"] == 1 and "学做饭" in _sent(endpoint)[0]
    early = cli("--json", "extraction", "run", "--until", "2026-05-01T09:00:30+08:00").json()
    assert early["tried"] == 1 and "最近搬到了上海" in _sent(endpoint)[1]
    assert cli("--json", "extraction", "run", "--session", "s9").json()["tried"] == 0
    limited = cli("--json", "extraction", "run", "--limit", "1", "--role", "user", "--role", "assistant")
    assert limited.json()["tried"] == 1 and limited.json()["not_tried"] == 1
    assert limited.json()["stopped"] == "limit"
    assert _states(db_path) == {"a1": "done", "a2": "done", "a3": "none", "b1": "done"}

    bad = cli("extraction", "run", "--since", "2026-05-02")
    assert bad.code == 2 and "since" in bad.err


def test_scopes_and_doctor_show_what_waits_for_extraction(
    captured: MemoryService, endpoint: FakeProvider, cli: Any
) -> None:
    listed = cli("scopes").out
    assert "to extract" in listed.splitlines()[0]
    header = listed.splitlines()[0].split("  ")
    row = next(line for line in listed.splitlines() if "default" in line).split()
    assert row[1:7] == ["default", "default", "4", "2", "0", "3"], (header, row)
    assert cli("--json", "scopes").json()["scopes"][0]["to_extract"] == 3
    doctor = cli("--json", "doctor").json()
    assert doctor["awaiting_extraction"] == 3
    assert "to extract      3 events without memories" in cli("doctor").out
    cli("extraction", "run")
    assert cli("--json", "scopes").json()["scopes"][0]["to_extract"] == 0
    assert cli("--json", "doctor").json()["awaiting_extraction"] == 0


@pytest.fixture
def extracting_service(
    db_path: Path, endpoint: FakeProvider, captured: MemoryService
) -> Iterator[MemoryService]:
    extraction = ExtractionConfig(base_url=endpoint.base_url, model="fake", timeout_seconds=5)
    service = open_service(Config(db=db_path, extraction=extraction))
    yield service
    service.close()


@pytest.mark.anyio
async def test_a_host_runs_extraction_over_mcp(
    extracting_service: MemoryService, endpoint: FakeProvider, db_path: Path
) -> None:
    async with memory_client(db_path, lambda: extracting_service) as client:
        dry = payload(await client.call_tool("extraction_run", {"dry_run": True}))
        assert dry["would_send"] == 3
        first = payload(await client.call_tool("extraction_run", {"session": "s1", "limit": 5}))
        assert (first["tried"], first["memories"]) == (2, 2)
        again = payload(await client.call_tool("extraction_run", {"session": "s1"}))
        assert again["tried"] == 0
        refused = await client.call_tool("extraction_run", {"roles": ["narrator"]})
        assert refused.isError
    assert len(_sent(endpoint)) == 2
    assert json.dumps(first, ensure_ascii=False).count("上海") == 0  # counts only, no text


def test_run_without_an_endpoint_is_refused_by_name(captured: MemoryService, cli: Any) -> None:
    run = cli("extraction", "run")
    assert run.code == 2 and "extraction" in run.err
    assert cli("--json", "extraction", "run", "--dry-run").json()["would_send"] == 3


def test_a_time_limit_stops_before_the_next_event(
    extracting_service: MemoryService, endpoint: FakeProvider, db_path: Path
) -> None:
    endpoint.script_chat(slow(0.5))
    result = extracting_service.extraction_run(time_limit=0.2)
    assert (result["tried"], result["completed"], result["not_tried"]) == (1, 1, 2)
    assert result["stopped"] == "time"
    assert len(endpoint.requests_to(CHAT_PATH)) == 1
