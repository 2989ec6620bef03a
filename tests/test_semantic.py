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
    ("terms", "expected"),
    [(0, 0.05), (3, 0.05), (8, 0.05), (16, None), (24, 0.3), (200, 0.3)],
)
def test_cosine_weight_grows_with_query_length(terms: int, expected: float | None) -> None:
    weight = semantic.cosine_weight(terms)
    if expected is None:
        assert semantic.cosine_weight(8) < weight < semantic.cosine_weight(24)
    else:
        assert weight == pytest.approx(expected)


@pytest.mark.parametrize(("terms", "expected"), [(0, False), (3, False), (8, False), (9, True), (60, True)])
def test_cosine_reorders_lexical_finds_only_in_longer_queries(terms: int, expected: bool) -> None:
    """A short question: cosine orders only what lexical recall did not find."""
    assert semantic.orders_lexical_finds(terms) is expected
