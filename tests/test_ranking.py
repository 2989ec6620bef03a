"""Table tests for the pure recall score."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from yiji.domain.ranking import (
    BASIS_FACTORS,
    DEFAULT_WEIGHTS,
    Components,
    Weights,
    freshness,
    lexical_strengths,
    neighbour_credit,
    rank,
    score,
    session_strengths,
)


@pytest.mark.parametrize(
    ("age_days", "half_life", "expected"),
    [
        (0.0, 180.0, 1.0),
        (180.0, 180.0, 0.5),
        (360.0, 180.0, 0.25),
        (90.0, 180.0, 2**-0.5),
        (-30.0, 180.0, 1.0),  # a future time is not fresher than now
        (30.0, 30.0, 0.5),
        (3650.0, 180.0, 0.5 ** (3650 / 180)),
    ],
)
def test_freshness(age_days: float, half_life: float, expected: float) -> None:
    assert freshness(age_days, half_life) == pytest.approx(expected)


def test_freshness_default_half_life_is_180_days() -> None:
    assert freshness(180.0) == pytest.approx(0.5)
    assert DEFAULT_WEIGHTS.half_life_days == 180.0


@pytest.mark.parametrize("half_life", [0.0, -1.0])
def test_freshness_rejects_non_positive_half_life(half_life: float) -> None:
    with pytest.raises(ValueError, match="half_life_days"):
        freshness(1.0, half_life)


@pytest.mark.parametrize(
    ("bm25", "expected"),
    [
        ({}, {}),
        ({1: -4.0}, {1: 1.0}),
        ({1: -4.0, 2: -2.0, 3: -1.0}, {1: 1.0, 2: 0.5, 3: 0.25}),
        ({1: -4.0, 2: 0.0}, {1: 1.0, 2: 0.0}),
        ({1: 0.0, 2: 0.0}, {1: 0.0, 2: 0.0}),
    ],
)
def test_lexical_strengths(bm25: dict[int, float], expected: dict[int, float]) -> None:
    assert lexical_strengths(bm25) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("neighbours", "expected"),
    [
        ([], 0.0),
        ([(1, 0.8)], 0.8),
        ([(-1, 0.8), (1, 0.4)], 1.2),
        ([(2, 0.8)], 0.4),  # distance 2 counts half (decay 0.5)
        ([(3, 1.0)], 0.0),  # outside the window of 2
        ([(0, 1.0)], 0.0),  # the candidate itself is not its neighbour
        ([(-2, 1.0), (-1, 1.0), (1, 1.0), (2, 1.0)], 3.0),
    ],
)
def test_neighbour_credit(neighbours: list[tuple[int, float]], expected: float) -> None:
    assert neighbour_credit(neighbours) == pytest.approx(expected)


def test_neighbour_credit_follows_weights() -> None:
    wide = replace(DEFAULT_WEIGHTS, neighbour_window=3, neighbour_decay=1.0)
    assert neighbour_credit([(3, 0.5), (-2, 0.5)], wide) == pytest.approx(1.0)
    assert neighbour_credit([(1, 0.5)], replace(DEFAULT_WEIGHTS, neighbour_window=0)) == 0.0


def test_session_strengths_keep_the_best_turn() -> None:
    pairs = [("s1", 0.2), ("s2", 1.0), ("s1", 0.7), ("s1", 0.1)]
    assert session_strengths(pairs) == {"s1": 0.7, "s2": 1.0}


NO_DECAY = replace(DEFAULT_WEIGHTS, freshness=0.0)


@pytest.mark.parametrize(
    ("parts", "weights", "expected"),
    [
        # raw event, fresh, lexical only: 1.0 * raw_event basis 0.9
        (Components(lexical=1.0), NO_DECAY, 0.9),
        (Components(lexical=0.5, neighbour=1.0, session=1.0), NO_DECAY, (0.5 + 0.2 + 0.4) * 0.9),
        # a user statement with full confidence
        (Components(lexical=1.0, basis="user_statement", confidence=1.0), NO_DECAY, 1.0),
        # confidence 0.5 costs 10% with the default confidence weight 0.2
        (Components(lexical=1.0, basis="user_statement", confidence=0.5), NO_DECAY, 0.9),
        (Components(lexical=1.0, basis="inference", confidence=1.0), NO_DECAY, 0.85),
        # one half-life old: freshness 0.5, weight 0.1 -> factor 0.95
        (Components(lexical=1.0, basis="user_statement", age_days=180.0), DEFAULT_WEIGHTS, 0.95),
        # very old evidence is demoted, never below 1 - w_freshness
        (Components(lexical=1.0, basis="user_statement", age_days=1e6), DEFAULT_WEIGHTS, 0.9),
        # one-hop related credit alone is evidence
        (Components(related=1.0, basis="user_statement"), NO_DECAY, 0.3),
        # cosine at the threshold counts; below does not
        (Components(cosine=0.3, basis="user_statement"), NO_DECAY, 0.15),
        (Components(lexical=1.0, cosine=0.29, basis="user_statement"), NO_DECAY, 1.0),
        (Components(lexical=1.0, cosine=0.8, basis="user_statement"), NO_DECAY, 1.4),
        # no evidence: nothing else can surface a candidate
        (Components(), NO_DECAY, 0.0),
        (Components(session=1.0, basis="user_statement", confidence=1.0), NO_DECAY, 0.0),
        (Components(cosine=0.29, basis="user_statement"), NO_DECAY, 0.0),
    ],
)
def test_score(parts: Components, weights: Weights, expected: float) -> None:
    assert score(parts, weights).score == pytest.approx(expected)


def test_score_explains_itself() -> None:
    result = score(
        Components(lexical=0.5, neighbour=1.0, basis="user_statement", confidence=1.0, age_days=180.0)
    )
    assert result.evidence
    assert result.contributions == pytest.approx(
        {"lexical": 0.5, "neighbour": 0.2, "session": 0.0, "related": 0.0, "cosine": 0.0}
    )
    assert result.factors == pytest.approx({"basis": 1.0, "confidence": 1.0, "freshness": 0.95})
    relevance = sum(result.contributions.values())
    assert result.score == pytest.approx(relevance * math.prod(result.factors.values()))
    explained = result.explain()
    assert explained["evidence"] is True
    assert explained["score"] == pytest.approx(0.7 * 0.95)


def test_no_evidence_still_reports_parts() -> None:
    result = score(Components(session=1.0))
    assert not result.evidence
    assert result.score == 0.0
    assert result.contributions["session"] == pytest.approx(0.4)


def test_unknown_basis_gets_the_lowest_factor() -> None:
    result = score(Components(lexical=1.0, basis="something_else"), NO_DECAY)
    assert result.factors["basis"] == min(BASIS_FACTORS.values())


def test_confidence_is_clamped() -> None:
    high = score(Components(lexical=1.0, confidence=7.0), NO_DECAY)
    low = score(Components(lexical=1.0, confidence=-1.0), NO_DECAY)
    assert high.factors["confidence"] == pytest.approx(1.0)
    assert low.factors["confidence"] == pytest.approx(0.8)


def test_rank_orders_drops_no_evidence_and_keeps_ties_stable() -> None:
    ranked = rank(
        [
            ("weak", Components(lexical=0.2)),
            ("none", Components(session=1.0)),
            ("tie-a", Components(lexical=0.5)),
            ("strong", Components(lexical=1.0)),
            ("tie-b", Components(lexical=0.5)),
            ("via-neighbour", Components(neighbour=0.5)),
        ],
        NO_DECAY,
    )
    assert [key for key, _ in ranked] == ["strong", "tie-a", "tie-b", "weak", "via-neighbour"]


def test_freshness_breaks_equal_relevance_toward_recent() -> None:
    ranked = rank([("old", Components(lexical=1.0, age_days=400.0)), ("new", Components(lexical=1.0))])
    assert [key for key, _ in ranked] == ["new", "old"]


def test_freshness_does_not_beat_much_stronger_old_evidence() -> None:
    ranked = rank([("new", Components(lexical=0.5)), ("old", Components(lexical=1.0, age_days=3650.0))])
    assert [key for key, _ in ranked] == ["old", "new"]


@pytest.mark.parametrize(
    "changes",
    [
        {"half_life_days": 0.0},
        {"freshness": 1.5},
        {"confidence": -0.1},
        {"neighbour_window": -1},
        {"neighbour_decay": 2.0},
    ],
)
def test_weights_are_validated(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        replace(DEFAULT_WEIGHTS, **changes)
