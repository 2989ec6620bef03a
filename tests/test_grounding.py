"""Grounding of extracted items: quote snapping, basis from the role, links, duplicates, dates, and
the extraction flow's refusals (credentials, oversized answers) against a loopback provider."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.config import Config, ExtractionConfig
from yiji.db import Database
from yiji.domain.grounding import (
    basis_for_role,
    clean_related,
    ground,
    mark_duplicates,
    resolve_relative_time,
    snap_quote,
)
from yiji.domain.validation import MemoryCandidate, Rule, Violation
from yiji.models import EventIn, parse
from yiji.service import MemoryService, build_extractor
from yiji.timeutil import FixedClock

from .fakeprovider import FakeProvider, chat_reply, huge

SOURCE = "我上个月从杭州搬到了上海，现在每天骑车上班。"


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("搬到了上海", "搬到了上海"),
        ("搬到了上海,现在", "搬到了上海，现在"),  # punctuation width
        ("搬到了 上海", "搬到了上海"),  # whitespace
        ("我上个月从杭州搬到上海", "我上个月从杭州搬到了上海"),  # one character left out
        ("我三月搬到了北京", None),  # too different
        ("上海", "上海"),
        ("  ", None),
    ],
)
def test_snap_quote(quote: str, expected: str | None) -> None:
    snapped = snap_quote(quote, SOURCE)
    assert snapped == expected
    if snapped is not None:
        assert snapped in SOURCE


def test_snap_quote_in_english_ignores_case_and_spacing() -> None:
    assert snap_quote("i moved to  shanghai", "Last year I moved to Shanghai.") == "I moved to Shanghai"


@pytest.mark.parametrize(
    ("basis", "role", "expected"),
    [
        ("assistant_expression", "user", "user_statement"),
        ("user_statement", "assistant", "assistant_expression"),
        ("inference", "user", "inference"),
        ("user_statement", "tool", "inference"),
        ("nonsense", "user", "user_statement"),
    ],
)
def test_basis_follows_the_role(basis: str, role: str, expected: str) -> None:
    assert basis_for_role(basis, role) == expected


def test_invalid_links_are_dropped() -> None:
    assert clean_related((1, 0, 5, -1, True, "mem_x", 1), 0, 3) == (1,)


LOCAL = datetime(2025, 6, 10, 21, 30, tzinfo=timezone(timedelta(hours=8)))


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("我昨天去爬山了", datetime(2025, 6, 9)),
        ("前天下雨", datetime(2025, 6, 8)),
        ("三天前我生病了", datetime(2025, 6, 7)),
        ("我三月搬到了杭州", datetime(2025, 3, 1)),
        ("十二月我去了哈尔滨", datetime(2024, 12, 1)),  # December has not come yet this year
        ("上个月换了工作", datetime(2025, 5, 1)),
        ("上周去了医院", datetime(2025, 6, 2)),
        ("去年夏天", datetime(2024, 1, 1)),
        ("2019年8月毕业", datetime(2019, 8, 1)),
        ("I moved here last week", datetime(2025, 6, 2)),
        ("We met in March", datetime(2025, 3, 1)),
        ("明天要考试", None),
        ("我住在上海", None),
        ("下个月搬家", None),
    ],
)
def test_relative_dates_resolve_against_local_time(sentence: str, expected: datetime | None) -> None:
    resolved = resolve_relative_time(sentence, LOCAL)
    assert resolved == (expected.replace(tzinfo=LOCAL.tzinfo) if expected else None)


def candidate(text: str, quote: str, **kw: Any) -> MemoryCandidate:
    base: dict[str, Any] = {"kind": "episode", "basis": "user_statement", "confidence": 0.8}
    return MemoryCandidate(text=text, quote=quote, **{**base, **kw})


def test_ground_never_trusts_the_model_valid_at() -> None:
    items = [
        candidate("用户搬到上海", "上个月从杭州搬到上海", valid_at="2025-05-01T00:00:00Z", related=(0, 1)),
        candidate("用户骑车上班", "每天骑车上班", valid_at="2020-01-01T00:00:00Z"),
    ]
    grounded = ground(items, role="user", source=SOURCE, local_time=LOCAL)
    assert grounded[0].quote == "上个月从杭州搬到了上海"
    assert grounded[0].valid_at == datetime(2025, 5, 1, tzinfo=LOCAL.tzinfo)  # "上个月" in its sentence
    assert grounded[0].related == (1,)
    assert grounded[1].valid_at == grounded[0].valid_at  # the same sentence dates both clauses
    (plain,) = ground(
        [candidate("用户骑车上班", "每天骑车上班", valid_at="2020-01-01T00:00:00Z")],
        role="user",
        source="我每天骑车上班。",
        local_time=LOCAL,
    )
    assert plain.valid_at is None


def test_duplicates_within_a_batch_and_against_existing() -> None:
    items = [
        candidate("用户搬到了上海", "搬到了上海"),
        candidate("用户搬到了上海。", "搬到了上海"),
        candidate("用户每天骑车上班", "每天骑车上班"),
        candidate("bad", "不在原文"),
    ]
    verdicts: list[list[Violation]] = [[], [], [], [Violation("quote", Rule.QUOTE_NOT_IN_SOURCE)]]
    marked = mark_duplicates(items, verdicts, [("用户每天骑车上班", "episode")])
    assert [[v.rule for v in vs] for vs in marked] == [
        [],
        [Rule.DUPLICATE],
        [Rule.DUPLICATE],
        [Rule.QUOTE_NOT_IN_SOURCE],
    ]


# -- the extraction flow ---------------------------------------------------------------------------

API_KEY = "local-test-key-77aa"


@pytest.fixture
def extracting(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MemoryService]:
    monkeypatch.setenv("YIJI_TEST_KEY", API_KEY)
    config = Config(
        db=db_path,
        timezone="Asia/Shanghai",
        extraction=ExtractionConfig(
            base_url=fake_provider.base_url, model="fake", api_key_env="YIJI_TEST_KEY", timeout_seconds=5
        ),
    )
    with httpx.Client() as http:
        service = MemoryService(
            Database(db_path), config, clock=clock, extractor=build_extractor(config, http)
        )
        yield service
        service.close()


def submit(service: MemoryService, text: str, role: str = "user") -> Any:
    event = {"session": "s1", "role": role, "text": text, "occurred_at": "2025-06-10T13:30:00Z"}
    return service.event_submit(parse(EventIn, event))


def item(text: str, quote: str, **kw: Any) -> dict[str, Any]:
    return {
        "text": text,
        "quote": quote,
        "kind": "episode",
        "basis": "user_statement",
        "confidence": 0.8,
        **kw,
    }


def test_a_memory_holding_the_configured_key_is_refused(
    extracting: MemoryService, fake_provider: FakeProvider, db_path: Path
) -> None:
    text = f"我的新钥匙是 {API_KEY}，昨天去爬山了。"
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    item(f"用户的钥匙是{API_KEY}", f"我的新钥匙是 {API_KEY}"),
                    item("用户去爬山", "昨天去爬山了", gist=f"爬山 {API_KEY}"),
                    item("用户昨天去爬山了", "昨天去爬山了"),
                ]
            }
        )
    )
    result = submit(extracting, text)
    assert result.extraction["rejected_rules"] == ["credential_in_memory"]
    assert result.extraction["rejected"] == 2
    (kept,) = result.memory_ids
    memory = extracting.memory_read(kept)["memory"]
    assert memory.text == "用户昨天去爬山了"
    assert memory.valid_at == datetime(2025, 6, 8, 16, 0, tzinfo=UTC)  # local 2025-06-09 00:00 +08:00


def test_an_oversized_answer_leaves_the_event_pending(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(huge(2_000_000, send_length=False))
    result = submit(extracting, "我昨天去爬山了。")
    assert result.event.extraction_state == "pending"
    assert result.extraction == {
        "state": "pending",
        "error": "provider_permanent",
        "message": "extraction answer is larger than the 1000000-byte limit",
    }


def test_duplicates_and_bad_links_are_dropped_memories_kept(
    extracting: MemoryService, fake_provider: FakeProvider
) -> None:
    fake_provider.script_chat(
        chat_reply(
            {
                "memories": [
                    item("用户去爬山", "我昨天去爬山了", related=[7, 1]),
                    item("用户去爬山", "我昨天去爬山了"),
                    item("用户觉得很累", "有点累", related=[0]),
                ]
            }
        )
    )
    result = submit(extracting, "我昨天去爬山了，有点累。")
    assert len(result.memory_ids) == 2
    assert result.extraction["rejected_rules"] == ["duplicate"]
    relations = extracting.memory_read(result.memory_ids[1])["relations"]
    assert [(r.from_id, r.to_id) for r in relations] == [(result.memory_ids[1], result.memory_ids[0])]


def test_entailment_check_refuses_what_the_quote_does_not_state(
    db_path: Path, clock: FixedClock, fake_provider: FakeProvider
) -> None:
    config = Config(
        db=db_path,
        extraction=ExtractionConfig(base_url=fake_provider.base_url, model="fake", entailment_check=True),
    )
    fake_provider.script_chat(
        chat_reply({"memories": [item("用户爬了山", "我昨天去爬山了"), item("用户很喜欢爬山", "有点累")]}),
        chat_reply({"entailed": True}),
        chat_reply({"entailed": False}),
    )
    with httpx.Client() as http:
        service = MemoryService(
            Database(db_path), config, clock=clock, extractor=build_extractor(config, http)
        )
        result = submit(service, "我昨天去爬山了，有点累。")
        service.close()
    assert len(result.memory_ids) == 1
    assert result.extraction["rejected_rules"] == ["not_entailed"]
    checks = [r.json() for r in fake_provider.requests[1:]]
    assert [c["response_format"]["json_schema"]["name"] for c in checks] == ["verdict", "verdict"]
