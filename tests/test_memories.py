"""Manual derivation, temporal single-valued facts and memory_read, through the service and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import InvalidInput, NotFound
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock


def submit(service: MemoryService, eid: str, text: str, when: str, role: str = "user", **kw: Any) -> None:
    service.event_submit(
        parse(EventIn, {"id": eid, "session": "s1", "role": role, "text": text, "occurred_at": when, **kw})
    )


def derive(service: MemoryService, eid: str, *memories: dict[str, Any], **kw: Any) -> list[str]:
    request = parse(DeriveRequest, {"event_id": eid, "memories": list(memories), **kw})
    return service.memory_derive(request).memory_ids


def home(text: str, quote: str, **kw: Any) -> dict[str, Any]:
    return {
        "text": text,
        "quote": quote,
        "kind": "fact",
        "basis": "user_statement",
        "subject": "user",
        "fact_key": "home.city",
        **kw,
    }


def current_city(service: MemoryService, **kw: Any) -> list[str]:
    _, rows = service.memory_list(subject="user", fact_key="home.city", **kw)
    return [m.text for m in rows]


@pytest.fixture
def moved(service: MemoryService, clock: FixedClock) -> MemoryService:
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "march", "我住在杭州", "2026-03-01T09:00:00+08:00")
    derive(service, "march", home("住在杭州", "我住在杭州"))
    submit(service, "june", "我搬到上海了", "2026-06-01T09:00:00+08:00")
    derive(service, "june", home("住在上海", "我搬到上海"))
    return service


def test_move_closes_the_earlier_interval(moved: MemoryService) -> None:
    assert current_city(moved) == ["住在上海"]
    assert current_city(moved, as_of=datetime(2026, 4, 1, tzinfo=UTC)) == ["住在杭州"]
    assert current_city(moved, include_history=True) == ["住在杭州", "住在上海"]
    _, rows = moved.memory_list(subject="user", fact_key="home.city", include_history=True)
    assert rows[0].invalid_at == rows[1].valid_at == datetime(2026, 6, 1, 1, 0, tzinfo=UTC)
    assert rows[1].invalid_at is None


def test_half_open_boundary(moved: MemoryService) -> None:
    switch = datetime(2026, 6, 1, 1, 0, tzinfo=UTC)
    assert current_city(moved, as_of=switch) == ["住在上海"]
    assert current_city(moved, as_of=switch - timedelta(microseconds=1)) == ["住在杭州"]


def test_late_historical_insert_slots_in(moved: MemoryService) -> None:
    submit(moved, "jan", "I lived in Beijing in January", "2026-07-01T00:00:00Z")
    derive(moved, "jan", home("lived in Beijing", "I lived in Beijing", valid_at="2026-01-01T00:00:00Z"))
    _, rows = moved.memory_list(subject="user", fact_key="home.city", include_history=True)
    assert [m.text for m in rows] == ["lived in Beijing", "住在杭州", "住在上海"]
    assert rows[0].invalid_at == rows[1].valid_at
    assert current_city(moved) == ["住在上海"]
    assert current_city(moved, as_of=datetime(2026, 2, 1, tzinfo=UTC)) == ["lived in Beijing"]


def test_future_fact_is_not_current(service: MemoryService, clock: FixedClock) -> None:
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "now", "我住在上海", "2026-06-30T00:00:00Z")
    derive(service, "now", home("住在上海", "我住在上海"))
    submit(service, "plan", "下周起我住在深圳", "2026-07-01T00:00:00Z")
    derive(service, "plan", home("下周起住在深圳", "下周起我住在深圳", valid_at="2026-07-08T00:00:00Z"))
    assert current_city(service) == ["住在上海"]
    assert current_city(service, as_of=datetime(2026, 7, 9, tzinfo=UTC)) == ["下周起住在深圳"]


def test_equal_starts_later_insertion_wins(service: MemoryService) -> None:
    submit(service, "a", "I live in Paris. Actually I live in Rome.", "2026-01-01T00:00:00Z")
    derive(service, "a", home("lives in Paris", "I live in Paris"))
    derive(service, "a", home("lives in Rome", "I live in Rome"))
    assert current_city(service) == ["lives in Rome"]


def test_derive_is_all_or_nothing_and_names_rules(service: MemoryService) -> None:
    submit(service, "u", "我喜欢喝乌龙茶", "2026-01-01T00:00:00Z")
    with pytest.raises(InvalidInput) as info:
        derive(
            service,
            "u",
            {
                "text": "likes oolong",
                "quote": "我喜欢喝乌龙茶",
                "kind": "preference",
                "basis": "user_statement",
            },
            {
                "text": "likes coffee",
                "quote": "我喜欢喝咖啡",
                "kind": "preference",
                "basis": "user_statement",
            },
        )
    assert ("memories.1.quote", "quote_not_in_source") in info.value.coded_problems
    assert (
        "memories.1.quote",
        "is not in the source event's text (copy part of it exactly)",
    ) in info.value.problems
    assert service.memory_list()[1] == []


@pytest.mark.parametrize(
    ("role", "category", "memory", "rule"),
    [
        ("assistant", "conversation", {"basis": "user_statement"}, "user_statement_requires_user_event"),
        (
            "user",
            "conversation",
            {"basis": "assistant_expression"},
            "assistant_expression_requires_assistant_event",
        ),
        ("user", "reference", {"basis": "user_statement"}, "source_archived"),
        ("user", "persona", {"basis": "user_statement"}, "source_archived"),
        (
            "user",
            "conversation",
            {"basis": "inference", "subject": "user", "fact_key": "home.city"},
            "inference_cannot_have_fact_key",
        ),
        ("user", "conversation", {"basis": "inference", "kind": "growth"}, "inference_cannot_be_growth"),
        (
            "user",
            "conversation",
            {"basis": "user_statement", "kind": "emotion", "valence": 0.5, "arousal": 0.5},
            "emotion_requires_assistant_expression",
        ),
    ],
)
def test_grounding_rules(
    service: MemoryService, role: str, category: str, memory: dict[str, Any], rule: str
) -> None:
    submit(service, "e", "今天很开心", "2026-01-01T00:00:00Z", role=role, category=category)
    item = {"text": "t", "quote": "很开心", "kind": "observation", **memory}
    with pytest.raises(InvalidInput) as info:
        derive(service, "e", item)
    assert rule in {r for _, r in info.value.coded_problems}


def test_derive_unknown_event_or_other_scope(service: MemoryService) -> None:
    submit(service, "p", "hello", "2026-01-01T00:00:00Z", project="elsewhere")
    item = {"text": "t", "quote": "hello", "kind": "episode", "basis": "user_statement"}
    with pytest.raises(NotFound):
        derive(service, "missing", item)
    with pytest.raises(NotFound):
        derive(service, "p", item)
    assert derive(service, "p", item, project="elsewhere")


def test_memory_read_pages_evidence_and_links(service: MemoryService) -> None:
    text = "前言。" * 3000 + "我养了一只叫团子的猫。" + "后记。" * 10
    submit(service, "long", text, "2026-01-01T00:00:00Z")
    ids = derive(
        service,
        "long",
        {
            "text": "养了一只猫叫团子",
            "quote": "我养了一只叫团子的猫",
            "kind": "fact",
            "basis": "user_statement",
            "gist": "猫团子",
        },
        {"text": "喜欢猫", "quote": "猫", "kind": "preference", "basis": "inference", "related": [0]},
    )
    read = service.memory_read(ids[0])
    assert read["text"]["total_chars"] == len(text)
    assert len(read["text"]["content"]) == 4000 and read["text"]["has_more"]
    start = read["quote"]["start"]
    assert text[start : read["quote"]["end"]] == "我养了一只叫团子的猫"
    page = service.memory_read(ids[0], offset=start, limit=10)
    assert page["text"]["content"] == "我养了一只叫团子的猫"
    assert [m.id for m in read["co_derived"]] == [ids[1]]
    assert [(r.from_id, r.to_id, r.type) for r in read["relations"]] == [(ids[1], ids[0], "related")]
    assert read["memory"].gist == "猫团子"
    assert service.event_show("long").text == text


def test_cli_temporal_scenario(cli: Any, tmp_path: Path) -> None:
    def sub(eid: str, text: str, when: str) -> None:
        r = cli(
            "event", "submit", "--id", eid, "--session", "s", "--role", "user", "--occurred-at", when, text
        )
        assert r.code == 0, r.err

    def der(eid: str, item: dict[str, Any]) -> None:
        f = tmp_path / f"{eid}.json"
        f.write_text(json.dumps([item], ensure_ascii=False), encoding="utf-8")
        r = cli("memory", "derive", "--event", eid, "--input", str(f))
        assert r.code == 0, r.err

    sub("m", "我住在杭州", "2026-03-01T09:00:00+08:00")
    der("m", home("住在杭州", "我住在杭州"))
    sub("j", "我搬到上海了", "2026-06-01T09:00:00+08:00")
    der("j", home("住在上海", "我搬到上海"))
    now = cli("--json", "memory", "list", "--subject", "user", "--key", "home.city").json()
    assert [m["text"] for m in now["memories"]] == ["住在上海"]
    april = cli("--json", "memory", "list", "--key", "home.city", "--as-of", "2026-04-01T00:00:00Z").json()
    assert [m["text"] for m in april["memories"]] == ["住在杭州"]
    history = cli("--json", "memory", "list", "--key", "home.city", "--history").json()
    assert [m["text"] for m in history["memories"]] == ["住在杭州", "住在上海"]
    mid = history["memories"][0]["id"]
    read = cli("memory", "read", mid)
    assert read.code == 0 and "我住在杭州" in read.out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([home("x", "SECRET-QUOTE-1")]), encoding="utf-8")
    refused = cli("memory", "derive", "--event", "m", "--input", str(bad))
    assert refused.code == 2
    assert (
        refused.err == "yiji: invalid input: memories.0.quote: is not in the source event's text "
        "(copy part of it exactly)\n"
    )
    as_json = json.loads(cli("--json", "memory", "derive", "--event", "m", "--input", str(bad)).err)
    assert as_json["problems"] == [
        {
            "field": "memories.0.quote",
            "rule": "is not in the source event's text (copy part of it exactly)",
            "code": "quote_not_in_source",
        }
    ]
    assert "SECRET-QUOTE-1" not in refused.err


def test_derive_many_is_all_or_nothing(service: MemoryService) -> None:
    submit(service, "b1", "我住在杭州", "2026-03-01T09:00:00+08:00")
    submit(service, "b2", "I like green tea", "2026-03-02T09:00:00+08:00")
    good = parse(DeriveRequest, {"event_id": "b1", "memories": [home("住在杭州", "我住在杭州")]})
    bad = parse(
        DeriveRequest,
        {
            "event_id": "b2",
            "memories": [{"text": "x", "quote": "coffee", "kind": "preference", "basis": "user_statement"}],
        },
    )
    with pytest.raises(InvalidInput) as caught:
        service.memory_derive_many([good, bad])
    assert caught.value.field == "memories.0.quote"
    assert service.memory_list(include_history=True)[1] == []
    missing = parse(DeriveRequest, {"event_id": "nope", "memories": [home("住在杭州", "我住在杭州")]})
    with pytest.raises(NotFound) as absent:
        service.memory_derive_many([good, missing])
    assert absent.value.field == "event_id"
    results = service.memory_derive_many([good])
    assert len(results) == 1 and len(results[0].memory_ids) == 1


def test_list_refuses_unknown_kinds(service: MemoryService, cli: Any, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as info:
        service.memory_list(kinds=["fact", "SECRET-KIND"])
    assert info.value.field == "kinds" and "SECRET-KIND" not in info.value.message
    missing = cli("memory", "derive", "--event", "e", "--input", str(tmp_path / "nope.json"))
    assert missing.code == 2 and "does not exist" in missing.err


def test_deriving_the_same_memory_twice_returns_the_existing_id(service: MemoryService) -> None:
    submit(service, "twice", "我住在杭州", "2026-03-01T09:00:00+08:00")
    first = derive(service, "twice", home("住在杭州", "我住在杭州"))
    second = derive(service, "twice", home("住在杭州", "我住在杭州"))
    assert second == first
    _, rows = service.memory_list(subject="user", fact_key="home.city", include_history=True)
    assert [(m.id, m.invalid_at) for m in rows] == [(first[0], None)]
    # A different basis, kind or quote is a different memory.
    other = derive(service, "twice", home("住在杭州", "住在杭州"))
    assert other != first


def test_derive_refuses_a_memory_holding_a_configured_key(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert service.config.extraction.api_key_env is None
    submit(service, "k", "我的密钥是 sk-abcdefghijklmnopqrstuvwx", "2026-03-01T09:00:00Z")
    with pytest.raises(InvalidInput) as info:
        derive(
            service,
            "k",
            {
                "text": "用户的密钥 sk-abcdefghijklmnopqrstuvwx",
                "quote": "我的密钥是",
                "kind": "observation",
                "basis": "user_statement",
            },
        )
    assert info.value.coded_problems[0] == ("memories.0.text", "credential_in_memory")
    assert "sk-abc" not in str(info.value)
