"""The recall query read once (:mod:`yiji.domain.query`), and the candidates stage run on its own."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from yiji.domain import fact_questions, query, ranking, ranking_plan, segment, timewindow
from yiji.models import EventIn, parse
from yiji.service import MemoryService
from yiji.service.recall import Candidates, RecallFilters
from yiji.timeutil import FixedClock, to_db

from .factory import make_service

NOW = datetime(2026, 7, 16, 12, 0, tzinfo=UTC)
LONG = (
    "我们今天聊了很多关于旅行的计划，比如去京都看寺庙，去杭州看西湖，还有买一台复古相机拍照，"
    "顺便去安静的书店看看小说，晚上吃火锅，周末骑红色的自行车去湖边，带上日本的茶壶和手工的围巾"
)
TEXTS = [
    "你还记得我住在哪里吗？",
    "where do I live",
    "what did I buy last weekend",
    "上周末买了什么",
    "的 了 是",
    "北京大学 photo-3 iPhone15",
    "what did you recommend",
    LONG,
]


@pytest.mark.parametrize("text", TEXTS)
def test_one_pass_gives_the_words_and_the_characters(text: str) -> None:
    units, characters = segment.read_query(text)
    assert units == segment.query_units(text)
    assert characters == segment.query_characters(text)
    assert [u.word for u in units] == list(dict.fromkeys(u.word for u in units))


def test_characters_count_the_words_that_use_them() -> None:
    units, characters = segment.read_query("上海的海上")
    assert [u.word for u in units] == ["上海", "海上"]
    assert dict(characters) == {"上": 2, "海": 2}


@pytest.mark.parametrize("text", TEXTS)
def test_one_reading_of_the_facts_asked(text: str) -> None:
    asked = fact_questions.read(text)
    assert asked == fact_questions.Asked(fact_questions.asked_keys(text), fact_questions.about_user(text))


def test_the_query_holds_what_each_stage_reads() -> None:
    q = query.parse("你还记得我上周住在哪里吗？ photo-3", NOW)
    assert q.asked_keys == ("home.city",)
    assert q.about_user is True  # 你 only inside a request (你还记得)
    assert q.window == timewindow.resolve_query_window(q.text, NOW)
    assert q.window is not None and q.window.kind == "week"
    assert "photo-3" in q.identifiers
    assert q.characters == ()
    assert set(q.terms) == set(segment.unit_terms(segment.query_units(q.text)))
    assert q.words == [(u.word, u.chars, u.stop, u.count) for u in q.units]


def test_a_long_query_searches_its_characters_and_no_time_weight_reads_no_time() -> None:
    q = query.parse(LONG + "，上周", NOW, replace(ranking_plan.DEFAULT_WEIGHTS, time=0.0))
    assert q.characters and q.window is None
    assert {c for c, _ in q.characters} <= set(q.terms)
    short = query.parse("上周的火锅", NOW)
    assert short.characters == () and short.window is not None


def test_identifiers_are_the_text_and_its_pieces_sorted_and_capped() -> None:
    text = " ".join(f"id{n:02d}" for n in range(30))
    q = query.parse(text, NOW)
    assert len(q.identifiers) == query.IDENTIFIERS
    assert list(q.identifiers) == sorted({text, *text.split()})[: query.IDENTIFIERS]


@pytest.fixture
def archive(tmp_path: Path) -> MemoryService:
    svc = make_service(tmp_path / "stages.db", clock=FixedClock(NOW))
    turns = [
        ("a1", "s1", "user", "我在杭州买了一台复古相机"),
        ("a2", "s1", "assistant", "复古相机拍出来的照片很有味道"),
        ("a3", "s1", "user", "下次带它去西湖"),
        ("b1", "s2", "user", "I bought a vintage camera in Kyoto"),
        ("b2", "s2", "assistant", "Kyoto has lovely temples"),
        ("c1", "s3", "user", "今天加班到很晚"),
    ]
    for n, (eid, session, role, text) in enumerate(turns):
        svc.event_submit(
            parse(
                EventIn,
                {
                    "id": eid,
                    "session": session,
                    "role": role,
                    "text": text,
                    "occurred_at": f"2026-07-0{n + 1}T10:00:00Z",
                },
            )
        )
    return svc


def test_the_candidates_stage_alone(archive: MemoryService) -> None:
    """Given a parsed query, the stage finds the matching turns and their context, and describes them
    for the ranking; ranking them is the ranking stage's work alone."""
    q = query.parse("复古相机", NOW)
    filters = RecallFilters("default", "default", to_db(NOW), None, None, None, None)
    try:
        with archive.db.read() as conn:
            stage = Candidates(
                conn, filters, q, ranking_plan.DEFAULT_WEIGHTS, 10, NOW, include_raw=True, candidates=30
            )
            found = {c.key: c for c in stage.collect()}
    finally:
        archive.close()
    lexical = {k for k, c in found.items() if c.parts.lexical > 0}
    assert len(lexical) == 2  # a1 and a2 say it; nothing in English or elsewhere does
    assert all(found[k].group == "s1" for k in lexical)
    assert all(c.parts.lexical == 0 for c in found.values() if c.group != "s1")
    assert stage.plan.terms and stage.plan.terms[0].word == "复古"
    ranked = ranking.rank(stage.plan, list(found.values()))
    assert {r.key for r in ranked} == lexical


def test_leaving_out_and_taking_change_no_item(tmp_path: Path) -> None:
    """What a caller shows already is left out after the ranking, and only the items taken are read:
    the rest of the list is the same, item for item, score for score."""
    from yiji.config import Config
    from yiji.db import Database
    from yiji.domain.recall import RecallRequest
    from yiji.models.memories import DeriveRequest, MemoryIn
    from yiji.service.recall import Recall

    svc = make_service(tmp_path / "take.db", clock=FixedClock(NOW))
    try:
        for n in range(12):
            text = f"第{n}次说起复古相机和西湖" if n % 2 == 0 else f"camera talk number {n}, 复古相机"
            eid = f"t{n}"
            svc.event_submit(
                parse(EventIn, {"id": eid, "session": f"s{n // 4}", "role": "user", "text": text})
            )
            if n % 3 == 0:
                svc.memory_derive(
                    DeriveRequest(
                        event_id=eid,
                        memories=[MemoryIn(text=text, quote=text, kind="episode", basis="user_statement")],
                    )
                )
    finally:
        svc.close()
    path = tmp_path / "take.db"
    recall = Recall(Database(path), Config(db=path), clock=FixedClock(NOW))
    try:
        request = RecallRequest("复古相机", limit=12)
        full = recall.recall(request).items
        memories = [i.id for i in full if i.type == "memory"]
        assert len(memories) >= 2 and len(full) > 4
        left = recall.recall(request, leave_out=frozenset(memories[:2]), take=3).items
    finally:
        recall.close()
    assert left == [i for i in full if i.id not in memories[:2]][:3]
