"""A time named in the question lifts what was said then; it never filters, and nothing else moves."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config, DisplayConfig
from yiji.domain.recall import RecalledItem
from yiji.models import EventIn, parse
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service

NOW = datetime(2026, 7, 16, 12, 0, tzinfo=UTC)
TURNS = [
    # (id, session, when, text): the same words, said at different times
    ("old", "s-old", "2025-06-20T10:00:00Z", "我和朋友去爬山了，风景很好"),
    ("june", "s-june", "2026-06-12T10:00:00Z", "我和朋友去爬山了，累坏了"),
    ("july", "s-july", "2026-07-14T10:00:00Z", "我和同事去爬山了"),
    ("march", "s-march", "2026-03-08T10:00:00Z", "We went hiking with friends in the hills"),
    ("may", "s-may", "2026-05-30T10:00:00Z", "We went hiking with friends again"),
    # everyday turns, so the words above are not in most of the index
    *(
        (f"other-{n}", f"s-other-{n}", f"2026-0{1 + n % 6}-0{1 + n}T09:00:00Z", text)
        for n, text in enumerate(
            [
                "今天加班到很晚",
                "我在学做蛋糕",
                "The cat knocked over a vase",
                "周末看了一场电影",
                "I bought new shoes",
            ]
        )
    ),
]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    svc = make_service(tmp_path / "time.db", clock=FixedClock(NOW))
    for eid, session, when, text in TURNS:
        svc.event_submit(
            parse(EventIn, {"id": eid, "session": session, "role": "user", "text": text, "occurred_at": when})
        )
    yield svc
    svc.close()


def recall(service: MemoryService, query: str, **kw: Any) -> list[RecalledItem]:
    return service.memory_recall(parse(RecallQuery, {"query": query, **kw})).items


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("上个月我去爬山了吗", "june"),
        ("去年夏天爬山", "old"),
        ("前天爬山", "july"),
        ("did we go hiking in March?", "march"),
        ("hiking with friends two months ago", "may"),
    ],
)
def test_what_was_said_then_comes_first(service: MemoryService, query: str, first: str) -> None:
    items = recall(service, query)
    assert items[0].id == first
    times = [i.why["factors"]["time"] for i in items]
    assert times[0] == max(times) and min(times) < times[0]
    # never a filter: every turn with the question's words is still there
    said = {"old", "june", "july"} if "爬山" in query else {"march", "may"}
    assert {i.id for i in items} >= said


def test_a_question_without_a_time_is_ranked_on_its_words_alone(service: MemoryService) -> None:
    items = recall(service, "爬山")
    assert all("time" not in i.why["factors"] for i in items)
    assert "time" not in recall(service, "May I ask about hiking")[0].why["factors"]


def test_a_stretch_of_conversation_is_not_asked_at_its_times(service: MemoryService) -> None:
    """A long query (a stretch of conversation, as a resume pack or a host sends) tells its times in
    passing: "上个月" there lifts nothing, while the same words as a question do."""
    question = recall(service, "上个月我去爬山了吗")
    assert question[0].why["factors"]["time"] == 1.0
    conversation = (
        "上个月我和朋友去爬山了，山顶风景很好，下山的时候下起了大雨，我们在农家乐躲雨吃了饭，"
        "老板做的土鸡汤特别香，后来雨停了我们坐大巴回城，晚上到家洗了个热水澡，第二天腿酸得走不动路"
    )
    items = recall(service, conversation)
    assert {"old", "june", "july"} <= {i.id for i in items}
    assert all("time" not in i.why["factors"] for i in items)


def test_the_statement_beats_the_reply_that_repeats_it(tmp_path: Path) -> None:
    """A long assistant reply that repeats the user's words does not outrank what the user said."""
    svc = make_service(tmp_path / "echo.db", clock=FixedClock(NOW))
    turns = [
        ("u1", "user", "I bought a red road bike for 300 dollars at the flea market"),
        (
            "a1",
            "assistant",
            "A red road bike for 300 dollars is a great find! A road bike from a flea market can be a "
            "bargain: check the road bike's frame, the bike chain and the brakes, and keep the receipt.",
        ),
        ("u2", "user", "Thanks, I will check the chain"),
        ("u3", "user", "The weather was nice for a walk"),
        ("u4", "user", "I cooked noodles for dinner"),
    ]
    for n, (eid, role, text) in enumerate(turns):
        when = f"2026-07-0{1 + n}T10:00:00Z" if eid in {"u3", "u4"} else "2026-07-01T10:00:00Z"
        session = "s1" if eid in {"u1", "a1", "u2"} else f"s-{eid}"
        svc.event_submit(
            parse(EventIn, {"id": eid, "session": session, "role": role, "text": text, "occurred_at": when})
        )
    items = recall(svc, "how much was my red road bike?")
    assert [i.id for i in items][:2] == ["u1", "a1"]
    # a question about the user alone weighs the assistant's words at half; one that asks what the
    # assistant said does not
    assert items[1].why["factors"]["speaker"] == 0.5
    assert "speaker" not in items[0].why["factors"]
    asked = recall(svc, "what did you tell me to look at on the bike, the frame and the brakes?")
    assert asked[0].id == "a1" and "speaker" not in asked[0].why["factors"]
    svc.close()


@pytest.mark.parametrize(
    ("zone", "first"), [("Asia/Shanghai", "shanghai-yesterday"), ("UTC", "utc-yesterday")]
)
def test_the_calendar_of_the_question_is_the_persons(tmp_path: Path, zone: str, first: str) -> None:
    """ "昨天" asked at 01:00 in Shanghai (17:00 UTC the day before) is the Shanghai day before."""
    now = datetime(2026, 7, 16, 17, 0, tzinfo=UTC)  # 2026-07-17 01:00 in Shanghai
    config = Config(db=tmp_path / "zone.db", display=DisplayConfig(timezone=zone))
    svc = make_service(config.db, config, clock=FixedClock(now))
    for eid, when in [
        ("shanghai-yesterday", "2026-07-16T03:00:00Z"),
        ("utc-yesterday", "2026-07-15T03:00:00Z"),
    ]:
        svc.event_submit(
            parse(
                EventIn,
                {"id": eid, "session": eid, "role": "user", "text": "我去游泳了", "occurred_at": when},
            )
        )
    for n in range(4):
        svc.event_submit(
            parse(EventIn, {"id": f"x{n}", "session": "x", "role": "user", "text": f"今天吃了面条{n}"})
        )
    assert recall(svc, "我昨天去游泳了吗")[0].id == first
    svc.close()
