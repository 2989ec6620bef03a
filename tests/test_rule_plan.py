"""The switch for extraction's word rules (yiji.domain.rule_plan): one rule off, all else as before."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from yiji.domain.cues import extraction_rules
from yiji.domain.grounding import ground, mark_duplicates
from yiji.domain.rule_plan import ALL_ON, SWITCHABLE, RulePlan
from yiji.domain.validation import MemoryCandidate, Rule, SourceEvent, validate_batch
from yiji.errors import InvalidInput

NOW = datetime(2025, 6, 10, 12, tzinfo=UTC)


def candidate(text: str, quote: str, **kw: Any) -> MemoryCandidate:
    base: dict[str, Any] = {"kind": "observation", "basis": "user_statement", "confidence": 0.8}
    return MemoryCandidate(text=text, quote=quote, **{**base, **kw})


def test_only_known_rules_can_be_switched_off() -> None:
    assert ALL_ON.on("small_talk") and not RulePlan.without("small_talk").on("small_talk")
    with pytest.raises(InvalidInput) as caught:
        RulePlan.without("quote_not_in_source")  # a rule of the contract is never switchable
    assert caught.value.field == "rules"
    assert len(SWITCHABLE) == len(set(SWITCHABLE))


@pytest.mark.parametrize(
    ("rule", "role", "source", "item"),
    [
        ("small_talk", "user", "谢谢你！", candidate("用户说谢谢", "谢谢你")),
        ("kind_not_from_assistant", "assistant", "你今天去哪了？", candidate("问去哪", "你今天去哪了？")),
        (
            "emotion_not_expressed",
            "assistant",
            "晚上好呀",
            candidate(
                "晚上好", "晚上好呀", kind="emotion", basis="assistant_expression", valence=0.5, arousal=0.3
            ),
        ),
        ("growth_not_stated", "assistant", "你说得真好", candidate("夸奖", "你说得真好", kind="growth")),
        (
            "agreement_not_stated",
            "user",
            "不过你已经很努力了",
            candidate("努力", "不过你已经很努力了", kind="agreement"),
        ),
        ("conditional_or_question_not_fact", "user", "如果我很开心呢", candidate("开心", "如果我很开心呢")),
    ],
)
def test_a_refusal_switched_off_refuses_nothing(
    rule: str, role: str, source: str, item: MemoryCandidate
) -> None:
    on = {v.rule for v in extraction_rules([item], role, source)[0]}
    off = {v.rule for v in extraction_rules([item], role, source, RulePlan.without(rule))[0]}
    assert rule in on and rule not in off
    assert off == on - {rule}  # the other rules still run


@pytest.mark.parametrize(
    ("rule", "item", "source"),
    [
        (
            "conditional_or_question_not_fact",
            candidate(
                "用户住在北京", "如果我住在北京的话", kind="fact", subject="user", fact_key="home.city"
            ),
            "如果我住在北京的话就好了",
        ),
        (
            "third_party_subject_for_user",
            candidate("用户住在成都", "我妈妈住在成都", kind="fact", subject="user", fact_key="home.city"),
            "我妈妈住在成都",
        ),
        (
            "fact_value_not_in_quote",
            candidate("用户住在广州", "我住在上海", kind="fact", subject="user", fact_key="home.city"),
            "我住在上海",
        ),
    ],
)
def test_validation_word_rules_switch_off(rule: str, item: MemoryCandidate, source: str) -> None:
    event = SourceEvent("user", "conversation", source)
    assert Rule(rule) in {v.rule for v in validate_batch([item], event)[0]}
    assert Rule(rule) not in {v.rule for v in validate_batch([item], event, plan=RulePlan.without(rule))[0]}


def test_duplicates_switch_off() -> None:
    items = [candidate("用户住在杭州", "住在杭州"), candidate("用户住在杭州。", "住在杭州")]
    assert mark_duplicates(items, [[], []])[1] != []
    assert mark_duplicates(items, [[], []], plan=RulePlan.without("duplicate")) == [[], []]


@pytest.mark.parametrize(
    ("rule", "role", "source", "item", "field", "on", "off"),
    [
        (
            "user_feeling_observation",
            "user",
            "我好开心",
            candidate("开心", "我好开心", kind="emotion"),
            "kind",
            "observation",
            "emotion",
        ),
        (
            "kind_by_words",
            "user",
            "我打算明年去留学",
            candidate("用户打算去留学", "我打算明年去留学", kind="fact"),
            "kind",
            "observation",
            "fact",
        ),
        (
            "speaker_words",
            "user",
            "前天我去体检",
            candidate("用户昨天去体检", "前天我去体检", kind="episode"),
            "text",
            "用户说：“前天我去体检”",
            "用户昨天去体检",
        ),
    ],
)
def test_a_grounding_step_switched_off_leaves_the_item(
    rule: str, role: str, source: str, item: MemoryCandidate, field: str, on: str, off: str
) -> None:
    with_rule = ground([item], role=role, source=source, local_time=NOW)[0]
    without = ground([item], role=role, source=source, local_time=NOW, plan=RulePlan.without(rule))[0]
    assert (getattr(with_rule, field), getattr(without, field)) == (on, off)
