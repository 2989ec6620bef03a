"""Recall through the service, the CLI and the MCP client: evidence only, labeled raw fallback, filters."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.records import RAW_EXCERPT_CHARS
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service
from .mcp_helpers import memory_client, payload


def submit(
    service: MemoryService, eid: str, text: str, when: str = "2026-03-01T00:00:00Z", **kw: Any
) -> None:
    base = {"id": eid, "session": kw.pop("session", "s1"), "role": kw.pop("role", "user"), "text": text}
    service.event_submit(parse(EventIn, {**base, "occurred_at": when, **kw}))


def derive(service: MemoryService, eid: str, *items: dict[str, Any], **kw: Any) -> list[str]:
    return service.memory_derive(
        parse(DeriveRequest, {"event_id": eid, "memories": list(items), **kw})
    ).memory_ids


def fact(text: str, quote: str, **kw: Any) -> dict[str, Any]:
    return {"text": text, "quote": quote, "kind": "fact", "basis": "user_statement", **kw}


def recall(service: MemoryService, query: str, **kw: Any) -> list[Any]:
    return service.memory_recall(parse(RecallQuery, {"query": query, **kw})).items


def test_single_character_finds_compounds(service: MemoryService) -> None:
    submit(service, "e1", "我昨天读完了一本书，很感人。")
    derive(service, "e1", fact("用户读完了一本书", "我昨天读完了一本书"))
    items = recall(service, "书")
    assert [i.type for i in items] == ["memory"]
    assert items[0].memory.text == "用户读完了一本书"
    assert "lexical" in items[0].matched_by


def test_no_evidence_returns_nothing(service: MemoryService) -> None:
    submit(service, "e1", "I love hiking in the mountains.")
    derive(service, "e1", fact("loves hiking", "I love hiking"))
    assert recall(service, "quantum chromodynamics") == []
    assert recall(service, "？？！") == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"hiking',
        "hik*",
        "^hiking",
        "NEAR(hiking mountains)",
        "hiking AND OR NOT",
        "body:hiking",
        "{body}: hiking",
        "(hiking",
        "hiking)",
        "NEAR/2",
        "'; DROP TABLE memories; --",
    ],
)
def test_query_syntax_is_searched_as_text(service: MemoryService, query: str) -> None:
    submit(service, "e1", "I love hiking in the mountains.")
    derive(service, "e1", fact("loves hiking", "I love hiking"))
    items = recall(service, query)  # never raises, never executes query syntax
    assert all(i.type == "memory" for i in items)
    assert service.doctor()["tables"]["memories"] == 1


def test_raw_event_fallback_is_labeled_and_capped(service: MemoryService) -> None:
    long_text = "我们聊到了敦煌壁画。" + "细节" * 2000
    submit(service, "raw", long_text)
    items = recall(service, "敦煌壁画")
    assert [i.type for i in items] == ["raw_event"]
    raw = items[0].event
    assert raw.truncated and len(raw.text) == RAW_EXCERPT_CHARS and raw.total_chars == len(long_text)
    assert "raw event" in raw.label
    short = "I adopted a corgi named Biscuit."
    submit(service, "raw2", short, session="s2")
    items = recall(service, "corgi Biscuit")
    assert items[0].event.text == short and not items[0].event.truncated


def test_derived_events_leave_the_raw_fallback(service: MemoryService) -> None:
    submit(service, "e1", "我住在杭州，养了一只猫。")
    assert [i.type for i in recall(service, "杭州")] == ["raw_event"]
    derive(service, "e1", fact("用户住在杭州", "我住在杭州", subject="user", fact_key="home.city"))
    items = recall(service, "杭州")
    assert [i.type for i in items] == ["memory"]
    # the memory is found through its source text too (source-event keys)
    assert [i.memory.text for i in recall(service, "猫")] == ["用户住在杭州"]


def test_expired_facts_are_not_resurrected(service: MemoryService, clock: FixedClock) -> None:
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "m", "我住在杭州", "2026-03-01T00:00:00Z")
    derive(service, "m", fact("住在杭州", "我住在杭州", subject="user", fact_key="home.city"))
    submit(service, "j", "我搬到上海了，不在杭州了", "2026-06-01T00:00:00Z")
    derive(service, "j", fact("住在上海", "我搬到上海", subject="user", fact_key="home.city"))
    now = recall(service, "杭州")
    assert [i.memory.text for i in now] == ["住在上海"]  # found through its own source text only
    april = recall(service, "杭州", as_of="2026-04-01T00:00:00Z")
    assert [i.memory.text for i in april] == ["住在杭州"]
    history = recall(service, "杭州", include_history=True)
    assert {i.memory.text for i in history} == {"住在杭州", "住在上海"}
    assert all(i.type == "memory" for i in history)


def test_kinds_time_range_and_scope_filters(service: MemoryService) -> None:
    submit(service, "a", "I like green tea", "2026-01-01T00:00:00Z")
    derive(
        service,
        "a",
        {
            "text": "likes green tea",
            "quote": "I like green tea",
            "kind": "preference",
            "basis": "user_statement",
        },
    )
    submit(service, "b", "We drank tea in Kyoto", "2026-05-01T00:00:00Z")
    derive(
        service,
        "b",
        {
            "text": "drank tea in Kyoto",
            "quote": "We drank tea in Kyoto",
            "kind": "episode",
            "basis": "user_statement",
        },
    )
    submit(service, "c", "tea tea tea", project="other")
    assert {i.memory.kind for i in recall(service, "tea", kinds=["episode"])} == {"episode"}
    since = recall(service, "tea", since="2026-03-01T00:00:00Z")
    assert [i.memory.text for i in since] == ["drank tea in Kyoto"]
    assert all(i.type == "memory" for i in recall(service, "tea"))
    other = recall(service, "tea", project="other")
    assert [i.type for i in other] == ["raw_event"]


def test_related_one_hop_and_explanations(service: MemoryService) -> None:
    submit(service, "e1", "我的猫叫团子。团子最喜欢晒太阳。")
    first, second = derive(
        service,
        "e1",
        fact("用户的猫叫团子", "我的猫叫团子"),
        {
            "text": "喜欢晒太阳",
            "quote": "团子最喜欢晒太阳",
            "kind": "observation",
            "basis": "user_statement",
            "related": [0],
        },
    )
    submit(service, "e2", "Saturday plans: vet visit.", session="s2")
    derive(
        service,
        "e2",
        {
            "text": "vet visit on Saturday",
            "quote": "vet visit",
            "kind": "episode",
            "basis": "user_statement",
            "related": [first],
        },
    )
    items = recall(service, "vet visit")
    by_text = {i.memory.text: i for i in items}
    assert "用户的猫叫团子" in by_text and "related" in by_text["用户的猫叫团子"].matched_by
    explained = items[0].why
    assert set(explained) == {"score", "evidence", "contributions", "factors", "matched"}
    assert explained["contributions"]["lexical"] > 0
    assert second


def test_cue_identifier_and_label(service: MemoryService) -> None:
    submit(
        service,
        "p",
        "看这张照片！",
        cues=[{"type": "photo", "identifier": "IMG_0042.jpg", "label": "西湖日落"}],
    )
    by_id = recall(service, "IMG_0042.jpg")
    assert [i.id for i in by_id] == ["p"] and "cue" in by_id[0].matched_by
    by_label = recall(service, "日落")
    assert [i.id for i in by_label] == ["p"]


def test_other_scopes_cannot_crowd_out_results(tmp_path: Path) -> None:
    """Many matching memories in another scope still leave this scope's results complete."""
    path = tmp_path / "crowd.db"
    service = make_service(path, clock=FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    events = [
        EventIn(
            id=f"x{i}",
            project="busy",
            session="s",
            role="user",
            text=f"tea tea tea {i}",
            occurred_at=datetime(2025, 1, 1, tzinfo=UTC),
        )
        for i in range(400)
    ]
    service.event_submit_many(events)
    service.memory_derive_many(
        [
            DeriveRequest(
                event_id=f"x{i}",
                project="busy",
                memories=[
                    {"text": f"tea {i}", "quote": "tea tea tea", "kind": "episode", "basis": "user_statement"}
                ],
            )
            for i in range(400)
        ]  # type: ignore[list-item]
    )
    submit(service, "mine", "a cup of tea", "2025-06-01T00:00:00Z", project="quiet")
    derive(service, "mine", fact("had a cup of tea", "a cup of tea"), project="quiet")
    items = recall(service, "tea", project="quiet")
    assert [i.memory.text for i in items] == ["had a cup of tea"]
    service.close()


def test_reindex_and_segmenter_mismatch(service: MemoryService, cli: Any) -> None:
    submit(service, "e1", "我喜欢爬山")
    with service.db.write() as conn:
        conn.execute("UPDATE meta SET value = 'old segmenter' WHERE key = 'segmenter'")
    result = service.memory_recall(RecallQuery(query="爬山"))
    assert any("reindex" in w for w in result.warnings)
    assert any("reindex" in w for w in service.doctor()["warnings"])
    out = cli("--json", "reindex")
    assert out.code == 0 and out.json()["events"] == 1
    assert service.memory_recall(RecallQuery(query="爬山")).warnings == []


def test_cli_recall(cli: Any) -> None:
    assert cli("event", "submit", "--session", "s", "--role", "user", "我在学吉他").code == 0
    human = cli("recall", "吉他")
    assert human.code == 0 and "raw event" in human.out and "我在学吉他" in human.out
    data = cli("--json", "recall", "吉他", "--limit", "3").json()
    assert data["items"][0]["type"] == "raw_event"
    assert cli("recall", "冲浪").out.strip().startswith("(nothing recalled")
    bad = cli("recall", "吉他", "--as-of", "2026-01-01T00:00:00")
    assert (
        bad.code == 2
        and bad.err == "yiji: invalid input: --as-of: must include a timezone (for example Z or +08:00)\n"
    )


@pytest.mark.anyio
async def test_mcp_recall(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        payload(
            await client.call_tool(
                "event_submit",
                {"id": "z", "session": "s", "role": "user", "text": "I moved to Lisbon in May."},
            )
        )
        payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": "z",
                    "memories": [
                        {
                            "text": "lives in Lisbon",
                            "quote": "I moved to Lisbon",
                            "kind": "fact",
                            "basis": "user_statement",
                            "subject": "user",
                            "fact_key": "home.city",
                        }
                    ],
                },
            )
        )
        result = payload(await client.call_tool("memory_recall", {"query": "Lisbon"}))
        assert [i["text"] for i in result["items"]] == ["lives in Lisbon"]
        empty = payload(await client.call_tool("memory_recall", {"query": "Reykjavik"}))
        assert empty["items"] == []


def test_recall_presents_old_episodes_by_their_gist(service: MemoryService, clock: FixedClock) -> None:
    clock.set(datetime(2026, 6, 1, tzinfo=UTC))
    submit(service, "old", "2024年春天我们去了敦煌，看了莫高窟的壁画。", "2024-04-01T00:00:00Z")
    derive(
        service,
        "old",
        {
            "text": "去敦煌看了莫高窟壁画",
            "quote": "看了莫高窟的壁画",
            "kind": "episode",
            "basis": "user_statement",
            "gist": "敦煌之行",
        },
    )
    submit(service, "new", "我对莫高窟的壁画很感兴趣。", "2026-05-01T00:00:00Z")
    derive(
        service,
        "new",
        {
            "text": "对莫高窟壁画感兴趣",
            "quote": "我对莫高窟的壁画很感兴趣",
            "kind": "preference",
            "basis": "user_statement",
        },
    )
    items = {i.memory.kind: i for i in recall(service, "莫高窟")}
    old = items["episode"].presentation
    assert old is not None and old.mode == "gist" and old.text == "敦煌之行" and old.faded
    assert items["episode"].memory.text == "去敦煌看了莫高窟壁画"  # the record itself is intact
    fresh = items["preference"].presentation
    assert fresh is not None and fresh.mode == "detailed"


def test_an_unfinished_index_is_never_stamped_current(service: MemoryService, cli: Any) -> None:
    """A database whose index was never completed (say an import whose rebuild was interrupted) keeps
    saying so, even after new events arrive, until `yiji reindex` runs."""
    submit(service, "e1", "我喜欢喝红茶")
    derive(service, "e1", fact("喜欢红茶", "我喜欢喝红茶"))
    with service.db.write() as conn:  # the state an interrupted rebuild leaves behind
        conn.execute("DELETE FROM meta")
        conn.execute("DELETE FROM memory_fts")
        conn.execute("DELETE FROM event_fts")
    fresh = make_service(service.db, service.config, clock=service.clock)
    submit(fresh, "e2", "今天下雨了", session="s2")
    result = fresh.memory_recall(RecallQuery(query="红茶"))
    assert result.items == []
    assert any("yiji reindex" in w for w in result.warnings)
    assert any("yiji reindex" in w for w in fresh.doctor()["warnings"])
    assert cli("reindex").code == 0
    healed = fresh.memory_recall(RecallQuery(query="红茶"))
    assert [i.memory.text for i in healed.items] == ["喜欢红茶"] and healed.warnings == []
    assert fresh.doctor()["warnings"] == []


def test_a_new_database_is_stamped_by_its_first_event(service: MemoryService) -> None:
    submit(service, "first", "hello there")
    assert service.index_status()["current"] is True
    assert service.memory_recall(RecallQuery(query="hello")).warnings == []


def test_reindex_streams_every_row_past_its_chunk_size(service: MemoryService) -> None:
    count = 1003  # more than one chunk of rows read and indexed at a time
    service.event_submit_many(
        [
            parse(EventIn, {"id": f"n-{i}", "session": "s", "role": "user", "text": f"笔记{i}号 word{i}"})
            for i in range(count)
        ]
    )
    submit(service, "e-last", "我在学吉他")
    derive(service, "e-last", fact("用户在学吉他", "我在学吉他"))
    with service.db.write() as conn:
        conn.execute("DELETE FROM event_fts")
        conn.execute("DELETE FROM memory_fts")
    assert recall(service, "word1002") == []
    assert service.reindex() == {
        "events": count,
        "memories": 1,
        "segmenter": service.index_status()["segmenter"],
    }
    assert recall(service, "word1002")[0].event.id == "n-1002"
    assert recall(service, "word0")[0].event.id == "n-0"
    assert [i.memory.text for i in recall(service, "吉他")] == ["用户在学吉他"]


def test_a_conversations_first_turn_gets_the_neighbour_credit_of_a_turn_in_the_middle(
    service: MemoryService,
) -> None:
    # the same statement opens one conversation and sits in the middle of another; the turns that
    # match the rest of the question are alike, one beside the first and one on each side of the second
    plan, reply, other = "我打算周末去西湖边跑步。", "跑步之前记得喝一杯咖啡。", "好的，我记住了。"
    for i, text in enumerate([plan, reply, other]):
        submit(service, f"a{i}", text, f"2026-03-01T00:0{i}:00Z", session="a")
    for i, text in enumerate([other, reply, plan, reply, other]):
        submit(service, f"b{i}", text, f"2026-03-02T00:0{i}:00Z", session="b")
    items = {i.id: i for i in recall(service, "西湖 跑步 咖啡", limit=20)}
    first, middle = items["a0"].why["contributions"], items["b2"].why["contributions"]
    assert first["lexical"] == pytest.approx(middle["lexical"]) and middle["neighbour"] > 0
    assert first["neighbour"] == pytest.approx(middle["neighbour"])
