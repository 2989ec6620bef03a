"""A Chinese companion conversation with expected top results.

User facts are derived as memories (each one starts with "用户", as extracted memories usually do);
assistant speculation, filler questions and small talk stay raw events. The memory the user told
yiji about comes first, and nothing unrelated comes with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.recall import RecalledItem
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service

# (id, session, role, text, memories derived from it: (text, quote, kind))
CONVERSATION: list[tuple[str, str, str, str, list[tuple[str, str, str]]]] = [
    (
        "u1",
        "s1",
        "user",
        "我现在住在上海，在一家设计公司工作。",
        [
            ("用户现在住在上海", "我现在住在上海", "fact"),
            ("用户在一家设计公司工作", "在一家设计公司工作", "fact"),
        ],
    ),
    ("a1", "s1", "assistant", "你应该住在北京吧？听口音像北方人。", []),
    ("u2", "s1", "user", "不是，我是苏州人，后来搬到上海的。", [("用户是苏州人", "我是苏州人", "fact")]),
    ("a2", "s1", "assistant", "有什么让你特别累的事吗？", []),
    ("u3", "s1", "user", "没什么，就是有点忙。", []),
    ("a3", "s2", "assistant", "早上好！今天也要加油哦。", []),
    (
        "u4",
        "s2",
        "user",
        "我妈妈下周生日，我还没想好送她什么。",
        [("用户的妈妈下周生日", "我妈妈下周生日", "episode")],
    ),
    ("a4", "s2", "assistant", "送一束花怎么样？你最近工作忙吗？", []),
    (
        "u5",
        "s2",
        "user",
        "还好。对了，我养了一只猫，叫团子。",
        [("用户养了一只猫，叫团子", "我养了一只猫，叫团子", "fact")],
    ),
    ("a5", "s3", "assistant", "团子一定很可爱！", []),
    ("u6", "s3", "user", "周末想去杭州看看西湖。", []),
    ("a6", "s3", "assistant", "杭州的秋天很美，记得带伞。", []),
    (
        "u7",
        "s3",
        "user",
        "我喜欢吃辣的，尤其是火锅。",
        [("用户喜欢吃辣，尤其是火锅", "我喜欢吃辣的，尤其是火锅", "preference")],
    ),
]


@pytest.fixture
def companion(tmp_path: Path) -> Iterator[MemoryService]:
    service = make_service(tmp_path / "companion.db", clock=FixedClock(datetime(2026, 3, 10, tzinfo=UTC)))
    for n, (eid, session, role, text, memories) in enumerate(CONVERSATION):
        service.event_submit(
            parse(
                EventIn,
                {
                    "id": eid,
                    "session": session,
                    "role": role,
                    "text": text,
                    "occurred_at": f"2026-03-0{1 + n // 5}T10:{n:02d}:00Z",
                },
            )
        )
        if memories:
            service.memory_derive(
                parse(
                    DeriveRequest,
                    {
                        "event_id": eid,
                        "memories": [
                            {"text": t, "quote": q, "kind": k, "basis": "user_statement"}
                            for t, q, k in memories
                        ],
                    },
                )
            )
    yield service
    service.close()


def recall(service: MemoryService, query: str, **kw: Any) -> list[RecalledItem]:
    return service.memory_recall(parse(RecallQuery, {"query": query, **kw})).items


def text(item: RecalledItem) -> str:
    if item.memory is not None:
        return item.memory.text
    assert item.event is not None
    return item.event.text


def hits(items: list[RecalledItem]) -> list[str]:
    return [text(i) for i in items if "context" not in i.matched_by]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        # a user-stated memory beats the assistant's raw guess ("你应该住在北京吧") with equal evidence
        ("住在哪里", "用户现在住在上海"),
        ("我住在哪里？", "用户现在住在上海"),
        # 什么 carries nothing: "有什么让你特别累的事吗？" must not compete
        ("我妈妈什么时候生日", "用户的妈妈下周生日"),
        ("用户在哪里工作", "用户在一家设计公司工作"),
        ("我在哪里工作？", "用户在一家设计公司工作"),
        ("我是哪里人", "用户是苏州人"),
        ("苏州", "用户是苏州人"),
        ("团子是谁", "用户养了一只猫，叫团子"),
        ("我的猫叫什么名字", "用户养了一只猫，叫团子"),
        ("我喜欢吃什么", "用户喜欢吃辣，尤其是火锅"),
        ("火锅", "用户喜欢吃辣，尤其是火锅"),
        ("西湖", "周末想去杭州看看西湖。"),
    ],
)
def test_the_memory_told_comes_first(companion: MemoryService, query: str, first: str) -> None:
    items = recall(companion, query)
    assert items, query
    assert text(items[0]) == first


@pytest.mark.parametrize(
    ("query", "absent"),
    [
        ("我妈妈什么时候生日", "有什么让你特别累的事吗？"),  # matched only on 什么
        ("上海", "早上好！今天也要加油哦。"),  # 上海 is not found through 早上
        ("苏州", "周末想去杭州看看西湖。"),  # 苏州 is not found through 杭州
        ("苏州", "杭州的秋天很美，记得带伞。"),
        ("用户在哪里工作", "用户养了一只猫，叫团子"),  # matched only on 用户, which every memory has
        ("用户在哪里工作", "用户喜欢吃辣，尤其是火锅"),
    ],
)
def test_nothing_unrelated_comes_along(companion: MemoryService, query: str, absent: str) -> None:
    assert absent not in [text(i) for i in recall(companion, query)]


@pytest.mark.parametrize("query", ["什么", "哪里？", "你好吗", "什么时候？", "quantum physics"])
def test_a_query_without_evidence_returns_nothing(companion: MemoryService, query: str) -> None:
    assert recall(companion, query) == []


@pytest.mark.parametrize("query", ["住在哪里", "用户在哪里工作", "我妈妈什么时候生日", "上海", "杭州"])
def test_hits_first_then_labelled_context_and_no_padding(companion: MemoryService, query: str) -> None:
    items = recall(companion, query, limit=20)
    order = {"hit": 0, "context": 1, "weak": 2}
    tiers = [
        "context" if "context" in i.matched_by else "weak" if "weak" in i.matched_by else "hit" for i in items
    ]
    assert tiers == sorted(tiers, key=order.__getitem__)  # hits, then context, then weak matches
    ids = {i.id for i in items}
    best = items[0].score
    for item, tier in zip(items, tiers, strict=True):
        assert item.score >= 0.05 * best and item.why["score"] == pytest.approx(item.score, abs=1e-6)
        if tier == "context":
            assert item.why["evidence"] is False and item.why["context_of"] in ids
        else:
            assert item.why["evidence"] is True
            assert item.why["contributions"]["lexical"] > 0 and item.why["matched"]
            assert (item.score >= 0.65 * best) is (tier == "hit")


def test_memories_get_session_context_through_their_source_event(companion: MemoryService) -> None:
    """A memory's source event sits in a session: the memory takes the same context a raw turn gets."""
    items = recall(companion, "上海")
    first = items[0]
    assert first.type == "memory" and text(first) == "用户现在住在上海"
    assert first.why["contributions"]["session"] > 0


def test_the_assistant_guess_ranks_below_the_statement(companion: MemoryService) -> None:
    """Equal evidence (住): the user's statement first, the assistant's raw guess after it, labelled."""
    items = recall(companion, "住在哪里")
    texts = [text(i) for i in items]
    guess = items[texts.index("你应该住在北京吧？听口音像北方人。")]
    assert texts.index("用户现在住在上海") < texts.index(guess.event.text if guess.event else "")
    assert guess.type == "raw_event" and guess.why["factors"]["basis"] < items[0].why["factors"]["basis"]


# a stretch of conversation (43 informative words) about a pet cat that never says 猫 as a word
LONG_TALK = (
    "今天下班回家，一开门就看见小猫咪趴在门口等我，毛茸茸的一团，喵喵叫着要吃罐头。它最近胖了不少，"
    "每天晚上都要钻进被窝里睡觉，早晨还会用爪子拍我的脸叫我起床，真拿它没办法，不过有它陪着，心情总会好起来。"
)


def test_a_long_conversation_finds_a_memory_through_its_characters(companion: MemoryService) -> None:
    """A long query's characters are terms of their own (猫 of 小猫咪); a question keeps the whole-word
    rule, so 猫咪 alone does not find 猫, as 上海 does not find 早上."""
    items = recall(companion, LONG_TALK)
    assert text(items[0]) == "用户养了一只猫，叫团子"
    assert "猫" in items[0].why["matched"]
    assert "用户养了一只猫，叫团子" not in [text(i) for i in recall(companion, "猫咪")]


def test_a_question_that_names_a_speaker_finds_what_that_speaker_said(tmp_path: Path) -> None:
    """Two friends, each turn named by a ``speaker:`` cue; each name is on half the turns and in the
    other's replies, so within the conversation it is no evidence, yet it says whose words answer."""
    service = make_service(tmp_path / "friends.db", clock=FixedClock(datetime(2026, 3, 10, tzinfo=UTC)))
    turns = [
        ("Caroline", "I painted a lake at sunrise: painting is what I love, I paint every day."),
        ("Melanie", "That sounds lovely! I painted my kitchen wall blue last weekend."),
        ("Caroline", "Melanie, I also started reading about adoption agencies."),
        ("Melanie", "Good luck Caroline, my kids would love a new friend."),
        ("Caroline", "Thanks Melanie, see you soon."),
        ("Melanie", "Bye Caroline!"),
    ]
    for n, (speaker, said) in enumerate(turns):
        service.event_submit(
            parse(
                EventIn,
                {
                    "id": f"t{n}",
                    "session": "s1",
                    "role": "user" if speaker == "Caroline" else "assistant",
                    "text": said,
                    "occurred_at": f"2026-03-01T10:0{n}:00Z",
                    "cues": [{"type": "text", "identifier": f"speaker:{speaker}", "label": speaker}],
                },
            )
        )
    try:
        caroline = recall(service, "What did Caroline paint?", limit=2)
        assert text(caroline[0]).startswith("I painted a lake")
        assert caroline[0].why is not None and "speaker" not in caroline[0].why["factors"]
        melanie = recall(service, "What did Melanie paint?", limit=2)
        assert text(melanie[0]).startswith("That sounds lovely")
        # with no name, no one's words are discounted
        anyone = recall(service, "What was painted?", limit=4)
        assert len(hits(anyone)) >= 2
        assert all(i.why is None or "speaker" not in i.why["factors"] for i in anyone)
    finally:
        service.close()
