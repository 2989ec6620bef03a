"""Table tests for yiji.domain.validation: a row per rule and per boundary, Chinese and English."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from yiji.domain import validation
from yiji.domain.validation import (
    MAX_FACT_KEY,
    MAX_GIST,
    MAX_QUOTE,
    MAX_SUBJECT,
    MAX_TEXT,
    RULE_WORDS,
    MemoryCandidate,
    Rule,
    SourceEvent,
    Violation,
    ensure_valid,
    raise_for,
    resolve_valid_at,
    validate_batch,
    validate_memory,
)
from yiji.errors import InvalidInput

USER_TEXT = {
    "en": "I moved from Hangzhou to Shanghai last March. I love green tea.",
    "zh": "我去年三月从杭州搬到了上海。我很喜欢喝绿茶。",
}
ASSISTANT_TEXT = {
    "en": "I'm so glad you told me! I'll remind you to drink water tomorrow.",
    "zh": "听到你这么说我真开心！明天我会提醒你喝水。",
}
USER_FACT = {
    "en": MemoryCandidate(
        text="The user lives in Shanghai",
        quote="I moved from Hangzhou to Shanghai",
        kind="fact",
        basis="user_statement",
        confidence=0.9,
        subject="user",
        fact_key="home.city",
    ),
    "zh": MemoryCandidate(
        text="用户住在上海",
        quote="从杭州搬到了上海",
        kind="fact",
        basis="user_statement",
        confidence=0.9,
        subject="user",
        fact_key="home.city",
    ),
}
ASSISTANT_EMOTION = {
    "en": MemoryCandidate(
        text="The assistant felt glad",
        quote="I'm so glad you told me!",
        kind="emotion",
        basis="assistant_expression",
        confidence=0.8,
        valence=0.8,
        arousal=0.5,
        gist="glad",
    ),
    "zh": MemoryCandidate(
        text="助手感到开心",
        quote="听到你这么说我真开心！",
        kind="emotion",
        basis="assistant_expression",
        confidence=0.8,
        valence=0.8,
        arousal=0.5,
        gist="开心",
    ),
}
INFERENCE = {
    "en": MemoryCandidate(
        text="The user seems to enjoy tea",
        quote="I love green tea.",
        kind="observation",
        basis="inference",
        confidence=0.5,
    ),
    "zh": MemoryCandidate(
        text="用户似乎爱喝茶",
        quote="我很喜欢喝绿茶。",
        kind="observation",
        basis="inference",
        confidence=0.5,
    ),
}
BASES: dict[str, tuple[dict[str, MemoryCandidate], str, dict[str, str]]] = {
    "fact": (USER_FACT, "user", USER_TEXT),
    "emotion": (ASSISTANT_EMOTION, "assistant", ASSISTANT_TEXT),
    "inference": (INFERENCE, "user", USER_TEXT),
}


def row(
    name: str,
    base: str,
    lang: str,
    expected: set[tuple[str, Rule]],
    source: dict[str, Any] | None = None,
    **changes: Any,
) -> Any:
    return pytest.param(base, lang, changes, source or {}, expected, id=f"{name}-{lang}")


def both(
    name: str,
    base: str,
    expected: set[tuple[str, Rule]],
    source: dict[str, Any] | None = None,
    **changes: Any,
) -> list[Any]:
    return [row(name, base, lang, expected, source, **changes) for lang in ("en", "zh")]


OK: set[tuple[str, Rule]] = set()
AWARE = datetime(2025, 3, 1, tzinfo=timezone(timedelta(hours=8)))

ACCEPTED = [
    *both("user fact", "fact", OK),
    *both("assistant emotion", "emotion", OK),
    *both("inference observation", "inference", OK),
    *both("preference with fact key", "fact", OK, kind="preference", fact_key="drink.favourite"),
    *both("confidence 0", "fact", OK, confidence=0.0),
    *both("confidence 1", "fact", OK, confidence=1.0),
    *both("integer confidence 1", "fact", OK, confidence=1),
    *both("valence -1", "emotion", OK, valence=-1.0),
    *both("valence 1", "emotion", OK, valence=1.0),
    *both("arousal 0", "emotion", OK, arousal=0.0),
    *both("arousal 1", "emotion", OK, arousal=1.0),
    row("text at max", "fact", "en", OK, text="Shanghai " + "x" * (MAX_TEXT - 9)),
    row("text at max", "fact", "zh", OK, text="上" * MAX_TEXT),
    row("quote at max", "fact", "zh", OK, {"text": "好" * MAX_QUOTE}, quote="好" * MAX_QUOTE, value="好"),
    row("gist at max", "emotion", "zh", OK, gist="迹" * MAX_GIST),
    row("subject at max", "fact", "en", OK, subject="s" * MAX_SUBJECT),
    row("fact key at max", "fact", "en", OK, fact_key="k" * MAX_FACT_KEY),
    row("dotted fact key", "fact", "zh", OK, fact_key="user_2.home.city"),
    *both("subject without fact key", "inference", OK, subject="user"),
    *both("aware valid_at", "fact", OK, valid_at=AWARE),
    *both("valid_at string with offset", "fact", OK, valid_at="2025-03-01T00:00:00+08:00"),
    *both("valid_at string with Z", "fact", OK, valid_at="2025-03-01T00:00:00Z"),
    *both("related memory id", "fact", OK, related=("mem_01",)),
    *both("correction event", "fact", OK, {"category": "correction"}),
    *both("inference from a tool event", "inference", OK, {"role": "tool"}),
    *both("inference from a system event", "inference", OK, {"role": "system"}),
    *both("user growth", "fact", OK, kind="growth", fact_key=None, subject=None),
    *both("assistant agreement", "emotion", OK, kind="agreement", valence=None, arousal=None),
    # "plan" as a noun names a thing that is so; only an intention's construction is no fact yet
    *(
        row(
            f"plan as a noun: {quote}",
            "fact",
            lang,
            OK,
            {"text": quote + end},
            quote=quote,
            value=value,
            text=text,
            fact_key="subscription.plan",
        )
        for lang, quote, end, value, text in (
            (
                "en",
                "I subscribed to the Pro plan on 2023-04-15",
                ".",
                "Pro plan",
                "The user has the Pro plan",
            ),
            ("en", "I purchased Plan A", ".", "Plan A", "The user purchased Plan A"),
            ("en", "My phone plan is the family plan", ".", "family plan", "The user has the family plan"),
            ("zh", "我订阅了专业版计划", "。", "专业版计划", "用户订阅了专业版计划"),
            ("zh", "我买了A计划", "。", "A计划", "用户买了A计划"),
            ("zh", "我的健身计划是每周三练", "。", "每周三练", "用户的健身计划是每周三练"),
        )
    ),
]

REJECTED = [
    # an intention by its construction (a modal, a future, a plan to do): not yet a keyed fact
    *(
        row(
            f"intention: {quote}",
            "fact",
            lang,
            {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
            {"text": quote + end},
            quote=quote,
            value=value,
        )
        for lang, quote, end, value in (
            ("en", "I plan to move to Shanghai", ".", "Shanghai"),
            ("en", "We're planning to move to Shanghai", ".", "Shanghai"),
            ("en", "I'm planning on moving to Shanghai", ".", "Shanghai"),
            ("en", "I will move to Shanghai", ".", "Shanghai"),
            ("zh", "我计划要搬到上海", "。", "上海"),
            ("zh", "我们计划明年搬到上海", "。", "上海"),
            ("zh", "我打算搬到上海", "。", "上海"),
        )
    ),
    *both(
        "credential shape in text",
        "fact",
        {("text", Rule.CREDENTIAL_IN_MEMORY)},
        text="上海 Shanghai sk-abcdefghijklmnopqrstu",
    ),
    row(
        "credential in gist",
        "emotion",
        "zh",
        {("gist", Rule.CREDENTIAL_IN_MEMORY)},
        gist="Bearer abcdefghijklmnopqrstuvwxyz",
    ),
    row("value missing from quote", "fact", "zh", {("value", Rule.FACT_VALUE_NOT_IN_QUOTE)}, value="北京"),
    row(
        "text value missing from quote",
        "fact",
        "zh",
        {("text", Rule.FACT_VALUE_NOT_IN_QUOTE)},
        text="用户住在北京",
    ),
    row(
        "text value missing from quote",
        "fact",
        "en",
        {("text", Rule.FACT_VALUE_NOT_IN_QUOTE)},
        text="The user lives in Beijing",
    ),
    row(
        "conditional fact",
        "fact",
        "zh",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "如果我住在上海的话，每天都去外滩。"},
        quote="我住在上海",
        value="上海",
    ),
    row(
        "conditional fact",
        "fact",
        "en",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "If I lived in Shanghai, I would walk the Bund."},
        quote="I lived in Shanghai",
        value="Shanghai",
    ),
    row(
        "question is not a fact",
        "fact",
        "zh",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "我是不是该搬到上海？"},
        quote="搬到上海",
        value="上海",
    ),
    row(
        "plan is not a keyed fact",
        "fact",
        "zh",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "我打算明年搬到上海。"},
        quote="我打算明年搬到上海",
        value="上海",
    ),
    row(
        "a move next month is not a keyed fact yet",
        "fact",
        "zh",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "我下个月要从广州搬到深圳。"},
        quote="我下个月要从广州搬到深圳",
        value="深圳",
    ),
    row(
        "a move next week is not a keyed fact yet",
        "fact",
        "en",
        {("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT)},
        {"text": "I'm going to move to Shanghai next week."},
        quote="I'm going to move to Shanghai next week",
        value="Shanghai",
    ),
    row(
        "kinship subject",
        "fact",
        "zh",
        {("subject", Rule.THIRD_PARTY_SUBJECT_FOR_USER)},
        {"text": "我妈妈住在上海。"},
        quote="我妈妈住在上海",
        value="上海",
    ),
    row(
        "third person subject",
        "fact",
        "en",
        {("subject", Rule.THIRD_PARTY_SUBJECT_FOR_USER)},
        {"text": "My sister lives in Shanghai."},
        quote="My sister lives in Shanghai",
        value="Shanghai",
    ),
    row(
        "placeholder copied",
        "fact",
        "zh",
        {("text", Rule.COPIES_PROMPT_EXAMPLE)},
        text="用户住在【城市B】上海",
    ),
    row(
        "example text copied",
        "emotion",
        "zh",
        {("text", Rule.COPIES_PROMPT_EXAMPLE)},
        text="助手为用户的【事情】感到高兴",
    ),
    *both("blank text", "fact", {("text", Rule.TEXT_EMPTY)}, text=" \n\t "),
    *both("empty text", "fact", {("text", Rule.TEXT_EMPTY)}, text=""),
    row("text too long", "fact", "en", {("text", Rule.TEXT_TOO_LONG)}, text="Shanghai " * 56),
    row("text too long", "fact", "zh", {("text", Rule.TEXT_TOO_LONG)}, text="上" * (MAX_TEXT + 1)),
    *both("blank quote", "fact", {("quote", Rule.QUOTE_EMPTY)}, quote="   "),
    row(
        "quote too long",
        "fact",
        "zh",
        {("quote", Rule.QUOTE_TOO_LONG)},
        {"text": "好" * (MAX_QUOTE + 1)},
        quote="好" * (MAX_QUOTE + 1),
        value="好",
    ),
    row(
        "paraphrased quote",
        "fact",
        "en",
        {("quote", Rule.QUOTE_NOT_IN_SOURCE)},
        quote="I moved to Shanghai",
    ),
    row(
        "paraphrased quote",
        "fact",
        "zh",
        {("quote", Rule.QUOTE_NOT_IN_SOURCE)},
        quote="我搬到了上海",
    ),
    row(
        "half-width punctuation",
        "inference",
        "zh",
        {("quote", Rule.QUOTE_NOT_IN_SOURCE)},
        quote="我很喜欢喝绿茶.",
    ),
    row(
        "different case",
        "inference",
        "en",
        {("quote", Rule.QUOTE_NOT_IN_SOURCE)},
        quote="i love green tea.",
    ),
    row(
        "surrounding whitespace",
        "inference",
        "en",
        {("quote", Rule.QUOTE_NOT_IN_SOURCE)},
        quote=" I love green tea. ",
    ),
    *both("unknown kind", "fact", {("kind", Rule.KIND_UNKNOWN)}, kind="memory"),
    *both("unknown basis", "fact", {("basis", Rule.BASIS_UNKNOWN)}, basis="hearsay"),
    *both("confidence -0.01", "fact", {("confidence", Rule.CONFIDENCE_OUT_OF_RANGE)}, confidence=-0.01),
    *both("confidence 1.01", "fact", {("confidence", Rule.CONFIDENCE_OUT_OF_RANGE)}, confidence=1.01),
    *both(
        "confidence NaN",
        "fact",
        {("confidence", Rule.CONFIDENCE_OUT_OF_RANGE)},
        confidence=math.nan,
    ),
    row(
        "confidence inf",
        "fact",
        "en",
        {("confidence", Rule.CONFIDENCE_OUT_OF_RANGE)},
        confidence=math.inf,
    ),
    row(
        "confidence bool",
        "fact",
        "en",
        {("confidence", Rule.CONFIDENCE_OUT_OF_RANGE)},
        confidence=True,
    ),
    *both("unknown role", "inference", {("role", Rule.ROLE_UNKNOWN)}, {"role": "robot"}),
    *both("unknown category", "inference", {("category", Rule.CATEGORY_UNKNOWN)}, {"category": "chat"}),
    *both(
        "reference material",
        "fact",
        {("category", Rule.SOURCE_ARCHIVED)},
        {"category": "reference"},
    ),
    *both("persona text", "emotion", {("category", Rule.SOURCE_ARCHIVED)}, {"category": "persona"}),
    *both(
        "user statement from an assistant event",
        "fact",
        {("basis", Rule.USER_STATEMENT_REQUIRES_USER_EVENT)},
        {"role": "assistant"},
    ),
    *both(
        "user statement from a tool event",
        "fact",
        {("basis", Rule.USER_STATEMENT_REQUIRES_USER_EVENT)},
        {"role": "tool"},
    ),
    *both(
        "assistant expression from a user event",
        "emotion",
        {("basis", Rule.ASSISTANT_EXPRESSION_REQUIRES_ASSISTANT_EVENT)},
        {"role": "user"},
    ),
    *both(
        "inference with fact key",
        "inference",
        {("fact_key", Rule.INFERENCE_CANNOT_HAVE_FACT_KEY)},
        kind="fact",
        subject="user",
        fact_key="drink.favourite",
    ),
    *both("inferred growth", "inference", {("kind", Rule.INFERENCE_CANNOT_BE_GROWTH)}, kind="growth"),
    *both(
        "assistant fact with fact key",
        "emotion",
        {("fact_key", Rule.FACT_KEY_REQUIRES_USER_STATEMENT)},
        kind="fact",
        valence=None,
        arousal=None,
        subject="assistant",
        fact_key="mood.current",
    ),
    *both(
        "episode with fact key",
        "fact",
        {("fact_key", Rule.FACT_KEY_REQUIRES_FACT_OR_PREFERENCE)},
        kind="episode",
    ),
    *both(
        "fact key without subject",
        "fact",
        {("subject", Rule.FACT_KEY_REQUIRES_SUBJECT)},
        subject=None,
    ),
    row(
        "fact key with spaces",
        "fact",
        "en",
        {("fact_key", Rule.FACT_KEY_FORMAT)},
        fact_key="Home City",
    ),
    row("Chinese fact key", "fact", "zh", {("fact_key", Rule.FACT_KEY_FORMAT)}, fact_key="居住城市"),
    row("empty fact key", "fact", "en", {("fact_key", Rule.FACT_KEY_FORMAT)}, fact_key=""),
    row(
        "double dot fact key",
        "fact",
        "en",
        {("fact_key", Rule.FACT_KEY_FORMAT)},
        fact_key="home..city",
    ),
    row("digit-first fact key", "fact", "en", {("fact_key", Rule.FACT_KEY_FORMAT)}, fact_key="1city"),
    row(
        "fact key too long",
        "fact",
        "en",
        {("fact_key", Rule.FACT_KEY_TOO_LONG)},
        fact_key="k" * (MAX_FACT_KEY + 1),
    ),
    *both("blank subject", "fact", {("subject", Rule.SUBJECT_EMPTY)}, subject="  "),
    row(
        "subject too long",
        "fact",
        "zh",
        {("subject", Rule.SUBJECT_TOO_LONG)},
        subject="我" * (MAX_SUBJECT + 1),
    ),
    *both(
        "user emotion",
        "emotion",
        {("basis", Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION)},
        {"role": "user"},
        basis="user_statement",
    ),
    *both(
        "inferred emotion",
        "emotion",
        {("basis", Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION)},
        basis="inference",
    ),
    *both(
        "valence on a user fact",
        "fact",
        {
            ("valence", Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION),
            ("valence", Rule.EMOTION_VALUES_REQUIRE_EMOTION_KIND),
        },
        valence=-0.5,
    ),
    *both(
        "arousal on an assistant agreement",
        "emotion",
        {("arousal", Rule.EMOTION_VALUES_REQUIRE_EMOTION_KIND)},
        kind="agreement",
        valence=None,
    ),
    *both(
        "emotion without valence",
        "emotion",
        {("valence", Rule.EMOTION_VALUES_REQUIRED)},
        valence=None,
    ),
    *both(
        "emotion without arousal",
        "emotion",
        {("arousal", Rule.EMOTION_VALUES_REQUIRED)},
        arousal=None,
    ),
    row(
        "emotion without values",
        "emotion",
        "zh",
        {("valence", Rule.EMOTION_VALUES_REQUIRED), ("arousal", Rule.EMOTION_VALUES_REQUIRED)},
        valence=None,
        arousal=None,
    ),
    *both("valence -1.01", "emotion", {("valence", Rule.VALENCE_OUT_OF_RANGE)}, valence=-1.01),
    *both("valence 1.01", "emotion", {("valence", Rule.VALENCE_OUT_OF_RANGE)}, valence=1.01),
    row("valence NaN", "emotion", "en", {("valence", Rule.VALENCE_OUT_OF_RANGE)}, valence=math.nan),
    *both("arousal -0.01", "emotion", {("arousal", Rule.AROUSAL_OUT_OF_RANGE)}, arousal=-0.01),
    *both("arousal 1.01", "emotion", {("arousal", Rule.AROUSAL_OUT_OF_RANGE)}, arousal=1.01),
    *both(
        "naive valid_at",
        "fact",
        {("valid_at", Rule.VALID_AT_INVALID)},
        valid_at=datetime(2025, 3, 1),  # naive on purpose
    ),
    row(
        "naive valid_at string",
        "fact",
        "en",
        {("valid_at", Rule.VALID_AT_INVALID)},
        valid_at="2025-03-01T08:00:00",
    ),
    row(
        "date-only valid_at",
        "fact",
        "en",
        {("valid_at", Rule.VALID_AT_INVALID)},
        valid_at="2025-03-01",
    ),
    row("prose valid_at", "fact", "zh", {("valid_at", Rule.VALID_AT_INVALID)}, valid_at="去年三月"),
    *both("blank gist", "emotion", {("gist", Rule.GIST_EMPTY)}, gist=" "),
    row("gist too long", "emotion", "zh", {("gist", Rule.GIST_TOO_LONG)}, gist="迹" * (MAX_GIST + 1)),
    row("negative related index", "fact", "en", {("related", Rule.RELATED_INVALID)}, related=(-1,)),
    row("boolean related index", "fact", "en", {("related", Rule.RELATED_INVALID)}, related=(True,)),
    row("blank related id", "fact", "zh", {("related", Rule.RELATED_INVALID)}, related=(" ",)),
    row(
        "related index outside",
        "fact",
        "en",
        {("related", Rule.RELATED_OUT_OF_RANGE)},
        related=(1,),
    ),
    row("related to itself", "fact", "zh", {("related", Rule.RELATED_SELF)}, related=(0,)),
]


def build(
    base: str, lang: str, changes: dict[str, Any], source: dict[str, Any]
) -> tuple[MemoryCandidate, SourceEvent]:
    candidates, role, texts = BASES[base]
    candidate = dataclasses.replace(candidates[lang], **changes)
    event = SourceEvent(role=role, category="conversation", text=texts[lang])
    return candidate, dataclasses.replace(event, **source)


@pytest.mark.parametrize(("base", "lang", "changes", "source", "expected"), ACCEPTED + REJECTED)
def test_rules(
    base: str,
    lang: str,
    changes: dict[str, Any],
    source: dict[str, Any],
    expected: set[tuple[str, Rule]],
) -> None:
    candidate, event = build(base, lang, changes, source)
    violations = validate_memory(candidate, event)
    assert {(v.field, v.rule) for v in violations} == expected
    assert len(violations) == len(expected)


def test_every_rule_has_a_rejecting_row() -> None:
    covered = {rule for param in REJECTED for _, rule in param.values[4]}
    # Duplicates, entailment, small talk, an assistant event's kinds and malformed items are decided by
    # the extraction flow (tests/test_grounding.py, tests/test_extraction_flow.py).
    flow = {
        Rule.DUPLICATE,
        Rule.ITEM_MALFORMED,
        Rule.NOT_ENTAILED,
        Rule.SMALL_TALK,
        Rule.KIND_NOT_FROM_ASSISTANT,
        Rule.EMOTION_NOT_EXPRESSED,
        Rule.GROWTH_NOT_STATED,
        Rule.AGREEMENT_NOT_STATED,
    }
    assert covered == set(Rule) - flow


def test_known_secret_values_are_refused_wherever_they_appear() -> None:
    secret = "local-key-0042"
    candidate, event = build("fact", "zh", {"text": f"用户住在上海 {secret}"}, {})
    assert {(v.field, v.rule) for v in validate_memory(candidate, event, secrets=[secret])} == {
        ("text", Rule.CREDENTIAL_IN_MEMORY)
    }
    assert validate_memory(candidate, event) == []


def test_a_statement_ending_in_shenme_is_not_a_question() -> None:
    source = SourceEvent(role="user", category="conversation", text="我妈妈下周生日，我还没想好送她什么。")
    candidate = MemoryCandidate(
        text="用户的妈妈下周生日",
        quote="我妈妈下周生日",
        kind="episode",
        basis="user_statement",
        confidence=0.8,
    )
    assert validate_memory(candidate, source) == []


def test_negated_preference_with_its_value_is_a_fact() -> None:
    source = SourceEvent(role="user", category="conversation", text="我不吃香菜，一点都不行。")
    candidate = MemoryCandidate(
        text="用户不吃香菜",
        quote="我不吃香菜",
        kind="preference",
        basis="user_statement",
        confidence=0.9,
        subject="user",
        fact_key="food.dislike",
        value="香菜",
    )
    assert validate_memory(candidate, source) == []


def test_rule_ids_are_stable_strings() -> None:
    assert Rule.QUOTE_NOT_IN_SOURCE == "quote_not_in_source"
    assert all(rule.value == rule.name.lower() for rule in Rule)


def test_archived_sources_reject_every_memory() -> None:
    for category in ("reference", "persona"):
        for base in BASES:
            for lang in ("en", "zh"):
                candidate, event = build(base, lang, {}, {"category": category})
                assert Violation("category", Rule.SOURCE_ARCHIVED) in validate_memory(candidate, event)


# -- batches and related links --------------------------------------------------------------------


def test_batch_links_point_at_other_items() -> None:
    fact, event = build("fact", "zh", {"related": (1,)}, {})
    tea = dataclasses.replace(INFERENCE["zh"], related=(0, "mem_existing"))
    assert validate_batch([fact, tea], event) == [[], []]


def test_batch_reports_each_item_separately() -> None:
    good, event = build("fact", "en", {}, {})
    bad = dataclasses.replace(good, quote="never said", related=(3,))
    self_link = dataclasses.replace(good, related=(2,))
    assert validate_batch([good, bad, self_link], event) == [
        [],
        [
            Violation("quote", Rule.QUOTE_NOT_IN_SOURCE),
            Violation("related", Rule.RELATED_OUT_OF_RANGE),
        ],
        [Violation("related", Rule.RELATED_SELF)],
    ]


def test_empty_batch() -> None:
    assert validate_batch([], SourceEvent("user", "conversation", "hi")) == []


# -- raising ---------------------------------------------------------------------------------------


def test_ensure_valid_names_field_and_rule_never_the_value() -> None:
    secret_quote = "我其实住在苏州 SECRET-QUOTE"
    candidate, event = build("fact", "zh", {"quote": secret_quote, "confidence": 7.5}, {})
    with pytest.raises(InvalidInput) as info:
        ensure_valid(candidate, event, prefix="memories[2].")
    error = info.value
    assert error.coded_problems == [
        ("memories[2].quote", "quote_not_in_source"),
        ("memories[2].confidence", "confidence_out_of_range"),
    ]
    assert error.problems == [
        ("memories[2].quote", "is not in the source event's text (copy part of it exactly)"),
        ("memories[2].confidence", "must be a number from 0 to 1"),
    ]
    assert (error.field, error.rule) == (
        "memories[2].quote",
        "is not in the source event's text (copy part of it exactly)",
    )
    for text in (str(error), repr(error), str(error.to_dict())):
        assert "SECRET-QUOTE" not in text
        assert "7.5" not in text
        assert candidate.text not in text
    assert "quote_not_in_source" not in str(error)  # words in the message, the id kept for machines
    assert error.to_dict()["problems"][0]["code"] == "quote_not_in_source"


def test_ensure_valid_accepts_a_valid_candidate() -> None:
    candidate, event = build("emotion", "en", {}, {})
    ensure_valid(candidate, event)
    raise_for([])


def test_violation_reads_as_field_and_rule() -> None:
    assert str(Violation("quote", Rule.QUOTE_NOT_IN_SOURCE)) == "quote: quote_not_in_source"
    assert Violation("quote", Rule.QUOTE_NOT_IN_SOURCE).words == (
        "is not in the source event's text (copy part of it exactly)"
    )
    assert Violation("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT).words == (
        "is a question, a condition or a plan, not a stated fact"
    )
    assert Violation("text", Rule.TEXT_TOO_LONG).words == f"is too long: at most {MAX_TEXT} characters"
    assert Violation("gist", Rule.GIST_TOO_LONG).words == f"is too long: at most {MAX_GIST} characters"


def test_every_rule_has_words_that_are_not_its_id() -> None:
    assert set(RULE_WORDS) == set(Rule)
    for rule, words in RULE_WORDS.items():
        assert words and words != str(rule) and "_not_" not in words, rule


# -- valid_at --------------------------------------------------------------------------------------

OCCURRED = datetime(2025, 6, 10, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("valid_at", "expected"),
    [
        (None, OCCURRED),
        ("2025-03-01T08:00:00+08:00", datetime(2025, 3, 1, 0, 0, tzinfo=UTC)),
        ("2025-03-01T00:00:00Z", datetime(2025, 3, 1, 0, 0, tzinfo=UTC)),
        (AWARE, datetime(2025, 2, 28, 16, 0, tzinfo=UTC)),
    ],
)
def test_resolve_valid_at(valid_at: datetime | str | None, expected: datetime) -> None:
    candidate = dataclasses.replace(USER_FACT["en"], valid_at=valid_at)
    resolved = resolve_valid_at(candidate, OCCURRED)
    assert resolved == expected
    assert resolved.tzinfo is UTC


def test_resolve_valid_at_rejects_invalid() -> None:
    candidate = dataclasses.replace(USER_FACT["en"], valid_at="last March")
    with pytest.raises(InvalidInput) as info:
        resolve_valid_at(candidate, OCCURRED)
    assert info.value.field == "valid_at"
    assert "last March" not in str(info.value)


def test_all_names_exist() -> None:
    for name in validation.__all__:
        assert hasattr(validation, name)
