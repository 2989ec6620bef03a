from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from yiji.domain.emotion import (
    EMOTION_HALF_LIFE_HOURS,
    EMOTION_OMIT_BELOW,
    CurrentEmotion,
    EmotionExpression,
    current_emotion,
    decay_factor,
    expression_from_memory,
    most_recent,
)

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
# elapsed time at which the default factor is exactly 0.01: 6 h * log2(100)
OMIT_BOUNDARY = timedelta(hours=EMOTION_HALF_LIFE_HOURS * math.log2(1 / EMOTION_OMIT_BELOW))


@pytest.mark.parametrize(
    ("elapsed", "half_life", "expected"),
    [
        (timedelta(0), 6.0, 1.0),
        (-HOUR, 6.0, 1.0),
        (3 * HOUR, 6.0, 0.5**0.5),
        (6 * HOUR, 6.0, 0.5),
        (12 * HOUR, 6.0, 0.25),
        (HOUR, 1.0, 0.5),
    ],
)
def test_decay_factor(elapsed: timedelta, half_life: float, expected: float) -> None:
    assert math.isclose(decay_factor(elapsed, half_life), expected, rel_tol=1e-12)


@pytest.mark.parametrize("half_life", [0.0, -6.0, math.nan])
def test_decay_factor_rejects_non_positive_half_life(half_life: float) -> None:
    with pytest.raises(ValueError, match="half_life_hours"):
        decay_factor(HOUR, half_life)


# (name, elapsed since expression, expected factor or None when omitted)
CURRENT_CASES = [
    ("just expressed", timedelta(0), 1.0),
    ("one half-life", 6 * HOUR, 0.5),
    ("two half-lives", 12 * HOUR, 0.25),
    ("future expression counts as now", -5 * HOUR, 1.0),
    ("at the omission boundary", OMIT_BOUNDARY, 0.01),
    ("one second before the boundary", OMIT_BOUNDARY - timedelta(seconds=1), 0.01),
    ("one second past the boundary", OMIT_BOUNDARY + timedelta(seconds=1), None),
    ("days later", 72 * HOUR, None),
]


@pytest.mark.parametrize(
    ("elapsed", "factor"),
    [case[1:] for case in CURRENT_CASES],
    ids=[case[0] for case in CURRENT_CASES],
)
def test_current_emotion(elapsed: timedelta, factor: float | None) -> None:
    expression = EmotionExpression(valence=-0.8, arousal=0.6, expressed_at=T0, memory_id="m1")
    current = current_emotion(expression, T0 + elapsed)
    if factor is None:
        assert current is None
        return
    assert current is not None
    assert math.isclose(current.factor, factor, rel_tol=1e-4)
    assert math.isclose(current.valence, -0.8 * current.factor, rel_tol=1e-12)
    assert math.isclose(current.arousal, 0.6 * current.factor, rel_tol=1e-12)
    assert current.expressed_at == T0
    assert current.memory_id == "m1"


def test_exactly_the_threshold_is_kept_and_just_below_is_omitted() -> None:
    # with a threshold that is a power of two the boundary factor is exact in floating point
    expression = EmotionExpression(valence=1.0, arousal=1.0, expressed_at=T0)
    kept = current_emotion(expression, T0 + 12 * HOUR, omit_below=0.25)
    assert kept == CurrentEmotion(valence=0.25, arousal=0.25, factor=0.25, expressed_at=T0)
    assert current_emotion(expression, T0 + 12 * HOUR + timedelta(microseconds=1), omit_below=0.25) is None


def test_half_life_is_configurable() -> None:
    expression = EmotionExpression(valence=0.5, arousal=0.5, expressed_at=T0)
    current = current_emotion(expression, T0 + HOUR, half_life_hours=1.0)
    assert current is not None
    assert current.factor == 0.5
    assert current.valence == 0.25


def test_no_expression_means_no_current_emotion() -> None:
    assert current_emotion(None, T0) is None


def test_current_emotion_normalizes_times_to_utc() -> None:
    local = T0.astimezone(timezone(timedelta(hours=8)))
    current = current_emotion(EmotionExpression(0.2, 0.2, local), T0 + 6 * HOUR)
    assert current is not None
    assert current.factor == 0.5
    assert current.expressed_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("valence", "arousal", "message"),
    [
        (1.5, 0.5, "valence"),
        (-1.01, 0.5, "valence"),
        (math.nan, 0.5, "valence"),
        (0.0, -0.1, "arousal"),
        (0.0, 1.1, "arousal"),
    ],
)
def test_expression_rejects_out_of_range_values(valence: float, arousal: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EmotionExpression(valence=valence, arousal=arousal, expressed_at=T0)


def test_expression_rejects_naive_time() -> None:
    with pytest.raises(ValueError, match="naive"):
        EmotionExpression(valence=0.0, arousal=0.0, expressed_at=datetime(2026, 3, 1))


def test_most_recent() -> None:
    old = EmotionExpression(0.1, 0.1, T0, "old")
    new = EmotionExpression(0.2, 0.2, T0 + HOUR, "new")
    same_time_later = EmotionExpression(0.3, 0.3, T0 + HOUR, "tie")
    assert most_recent([]) is None
    assert most_recent([old]) is old
    assert most_recent([new, old]) is new
    assert most_recent([old, new]) is new
    assert most_recent([old, new, same_time_later]) is same_time_later
    assert most_recent(iter([new, old])) is new


@pytest.mark.parametrize(
    ("basis", "valence", "arousal", "is_role_emotion"),
    [
        ("assistant_expression", 0.4, 0.3, True),
        ("user_statement", 0.4, 0.3, False),
        ("inference", 0.4, 0.3, False),
        ("assistant_expression", None, 0.3, False),
        ("assistant_expression", 0.4, None, False),
    ],
)
def test_expression_from_memory(
    basis: str, valence: float | None, arousal: float | None, is_role_emotion: bool
) -> None:
    expression = expression_from_memory(basis, valence, arousal, T0, "m9")
    if not is_role_emotion:
        assert expression is None
        return
    assert expression == EmotionExpression(valence=0.4, arousal=0.3, expressed_at=T0, memory_id="m9")
