"""A question about a keyed property finds its value, whatever words the value's text uses."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, ExtractionConfig
from yiji.domain.fact_questions import about_user, asked_keys
from yiji.domain.recall import RecalledItem
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService, build_extractor
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import FakeProvider, chat_reply


@pytest.mark.parametrize(
    ("query", "keys"),
    [
        ("我住在哪里", ("home.city",)),
        ("你还记得我住在哪里吗？", ("home.city",)),
        ("我现在住哪儿", ("home.city",)),
        ("用户住在哪个城市", ("home.city",)),
        ("Where do I live?", ("home.city",)),
        ("which city am I living in now", ("home.city",)),
        ("do you remember where I moved?", ("home.city",)),
        ("我老家是哪里的", ("hometown",)),
        ("where did I grow up", ("hometown",)),
        ("我在哪个公司上班", ("job.employer",)),
        ("where do I work now", ("job.employer",)),
        ("what is my job", ("job.title",)),
        ("我的职业是什么", ("job.title",)),
        ("我在哪所大学读书", ("school",)),
        ("which school do I study at", ("school",)),
        ("我的生日是哪天", ("birthday",)),
        ("when is my birthday?", ("birthday",)),
        ("do you remember my birthday", ("birthday",)),
        ("我的猫叫什么名字", ("pet.cat.name",)),
        ("what's my cat's name", ("pet.cat.name",)),
        ("我家狗叫啥", ("pet.dog.name",)),
        ("what food do I hate", ("food.dislike",)),
        ("我不吃什么", ("food.dislike",)),
        ("我最喜欢吃什么", ("food.favorite",)),
        ("what's my favourite food", ("food.favorite",)),
        ("我平时喝什么", ("preference.drink",)),
        ("how do I take my coffee", ("preference.drink",)),
        # English words are matched by their stems: "working" is "work", "lived" is "live"
        ("where am I working these days", ("job.employer",)),
        ("which city was I living in last year", ("home.city",)),
        ("where am I employed", ("job.employer",)),
        ("I've forgotten where I live, where is it?", ("home.city",)),
        # a query that asks nothing and names only whose and what looks the key up
        ("我的生日", ("birthday",)),
        ("my birthday?", ("birthday",)),
        ("my home", ("home.city",)),
        ("用户的雇主", ("job.employer",)),
        # ... but not when it asks something else, or says something
        ("where was I born", ()),
        ("my birthday party was fun", ()),
        ("my home is too cold", ()),
        # another person of the user's is who the question is about
        ("where does my sister live", ()),
        ("我妈妈住在哪里", ()),
        ("what's my girlfriend's birthday", ()),
        ("which company does my dad work for", ()),
        # statements, questions about someone else, and questions about no keyed property ask nothing
        ("我住在杭州", ()),
        ("I live in Hangzhou now", ()),
        ("where does Tom live", ()),
        ("他住在哪里", ()),
        ("what did I work on yesterday", ()),
        ("我昨天做了什么", ()),
        ("明天天气怎么样", ()),
        ("", ()),
    ],
)
def test_asked_keys(query: str, keys: tuple[str, ...]) -> None:
    assert asked_keys(query) == keys


@pytest.mark.parametrize(
    ("query", "alone"),
    [
        ("What did I buy at the flea market?", True),
        ("how much was my red road bike", True),
        ("I'm trying to remember the name of the café", True),
        ("what is the user's favourite tea", True),
        ("我上个月去了哪些城市", True),
        ("用户的猫叫什么", True),
        # a request addresses the assistant only to ask: still about the user
        ("Can you remind me of the book I mentioned?", True),
        ("could you suggest a gift for my mother", True),
        ("你还记得我住在哪里吗", True),
        ("你能帮我想想我上周去了哪吗", True),
        # the assistant spoken of, or both speakers together: not the user alone
        ("What did you recommend for my trip?", False),
        ("Can you remind me what you said about my knee?", False),
        ("What did we decide about the budget?", False),
        ("你上次给我推荐的书叫什么", False),
        ("我们上次聊到哪了", False),
        ("您推荐的那家店叫什么", False),
        # about nobody in particular, or someone else
        ("where does Tom live", False),
        ("他住在哪里", False),
        ("", False),
    ],
)
def test_about_user(query: str, alone: bool) -> None:
    assert about_user(query) is alone


EVERYDAY = [
    "我每天早上沿着河边跑步",
    "我最近在学做蛋糕",
    "周末和朋友去看了电影",
    "我在准备一个演讲",
    "昨天下雨了，我在家看书",
    "我最近睡得不太好",
    "我打算明年去日本旅行",
    "我在学弹吉他",
    "今天加班到很晚",
    "我给妈妈买了一条围巾",
    "我最近迷上了拼图",
    "我们组新来了一个同事",
]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    svc = make_service(tmp_path / "facts.db", clock=FixedClock(datetime(2026, 6, 1, tzinfo=UTC)))

    def told(eid: str, session: str, text: str, at: str, memory: dict[str, Any]) -> None:
        svc.event_submit(
            parse(EventIn, {"id": eid, "session": session, "role": "user", "text": text, "occurred_at": at})
        )
        svc.memory_derive(
            parse(DeriveRequest, {"event_id": eid, "memories": [{"basis": "user_statement", **memory}]})
        )

    told(
        "old-city",
        "s0",
        "I live in Hangzhou",
        "2026-01-10T09:00:00Z",
        {
            "text": "The user lives in Hangzhou",
            "quote": "I live in Hangzhou",
            "kind": "fact",
            "subject": "user",
            "fact_key": "home.city",
        },
    )
    told(
        "new-city",
        "s1",
        "I moved to Shanghai last week",
        "2026-04-20T09:00:00Z",
        {
            "text": "The user moved to Shanghai",
            "quote": "I moved to Shanghai",
            "kind": "fact",
            "subject": "user",
            "fact_key": "home.city",
        },
    )
    told(
        "job",
        "s1",
        "I joined Acme Robotics as an engineer",
        "2026-04-21T09:00:00Z",
        {
            "text": "The user joined Acme Robotics",
            "quote": "I joined Acme Robotics",
            "kind": "fact",
            "subject": "user",
            "fact_key": "job.employer",
        },
    )
    for n, text in enumerate(EVERYDAY):
        # everyday memories in one busy session, the kind that session and neighbour context lift
        told(
            f"e{n}",
            "s2",
            text,
            f"2026-05-{10 + n:02d}T09:00:00Z",
            {"text": "用户" + text.removeprefix("我"), "quote": text, "kind": "episode"},
        )
    yield svc
    svc.close()


def recall(service: MemoryService, query: str, **kw: Any) -> list[RecalledItem]:
    return service.memory_recall(parse(RecallQuery, {"query": query, **kw})).items


@pytest.mark.parametrize(
    "query", ["我住在哪里", "你还记得我住在哪里吗？", "where do I live now?", "我现在住哪"]
)
def test_the_current_value_comes_first(service: MemoryService, query: str) -> None:
    items = recall(service, query)
    assert items and items[0].memory is not None
    assert items[0].memory.text == "The user moved to Shanghai"
    assert items[0].matched_by[:1] == ["fact"] or "fact" in items[0].matched_by
    assert items[0].why["contributions"]["fact"] > 0
    assert "The user lives in Hangzhou" not in [i.memory.text for i in items if i.memory is not None]


def test_as_of_gives_the_value_then(service: MemoryService) -> None:
    items = recall(service, "我住在哪里", as_of="2026-03-01T00:00:00Z")
    assert items[0].memory is not None and items[0].memory.text == "The user lives in Hangzhou"


def test_history_brings_every_value_newest_first(service: MemoryService) -> None:
    items = recall(service, "where do I live?", include_history=True)
    facts = [i.memory.text for i in items if i.memory is not None and "fact" in i.matched_by]
    assert facts == ["The user moved to Shanghai", "The user lives in Hangzhou"]


def test_another_key_and_no_key(service: MemoryService) -> None:
    assert recall(service, "where do I work now")[0].memory.text == "The user joined Acme Robotics"  # type: ignore[union-attr]
    assert recall(service, "where am I working these days")[0].memory.text == "The user joined Acme Robotics"  # type: ignore[union-attr]
    assert recall(service, "my home")[0].memory.text == "The user moved to Shanghai"  # type: ignore[union-attr]
    # a question about someone else's home does not bring the user's
    assert all("fact" not in i.matched_by for i in recall(service, "where does my sister live"))
    # a question about no keyed property is ranked on its words alone
    assert all("fact" not in i.matched_by for i in recall(service, "我最近在学什么"))


def test_a_proposed_keyed_fact_is_not_brought_by_a_question_until_accepted(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    config = Config(
        db=tmp_path / "review.db",
        extraction=ExtractionConfig(
            base_url=fake_provider.base_url, model="fake", timeout_seconds=5, review="facts"
        ),
    )
    moved = {
        "text": "The user moved to Shenzhen",
        "quote": "I moved to Shenzhen",
        "kind": "fact",
        "basis": "user_statement",
        "confidence": 0.9,
        "subject": "user",
        "fact_key": "home.city",
    }
    fake_provider.script_chat(chat_reply({"memories": [moved]}))
    with httpx.Client() as http:
        service = make_service(
            config.db,
            config,
            clock=FixedClock(datetime(2026, 6, 1, tzinfo=UTC)),
            extractor=build_extractor(config, http),
        )
        try:
            submitted = service.event_submit(
                parse(
                    EventIn,
                    {"id": "moved", "session": "s", "role": "user", "text": "I moved to Shenzhen last month"},
                )
            )
            [proposal] = submitted.extraction["proposed"]

            def brought() -> list[str]:
                return [
                    i.memory.id
                    for i in recall(service, "where do I live now?")
                    if i.memory is not None and "fact" in i.matched_by
                ]

            assert brought() == []  # waiting for a person: the question does not bring it
            service.memory_review(proposal, "accept", reviewer="tester")
            assert brought() == [proposal]
        finally:
            service.close()
