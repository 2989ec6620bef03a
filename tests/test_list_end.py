"""Where a recalled list ends: the cut as a pure rule (properties and table), in the ranking, and
through the service (weak padding left out, a weak match with evidence of its own kept)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yiji.domain.list_end import Listed, kept_positions
from yiji.domain.ranking import Candidate, Components, rank
from yiji.domain.ranking_plan import DEFAULT_WEIGHTS, RankingPlan, Term
from yiji.domain.recall import Recalled
from yiji.models import EventIn, parse
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service

WORDS = st.frozensets(st.sampled_from("abcdef"), max_size=3)
ITEMS = st.lists(
    st.builds(Listed, st.floats(min_value=0.0, max_value=10.0), WORDS, st.booleans()), max_size=12
)
SHARES = st.floats(min_value=0.0, max_value=1.0)


@given(ITEMS, SHARES)
def test_every_kept_item_has_a_reason_and_every_dropped_one_has_none(
    items: list[Listed], share: float
) -> None:
    kept = kept_positions(items, share)
    assert kept == sorted(set(kept))
    floor = share * max((i.score for i in items), default=0.0)
    for position, item in enumerate(items):
        before = set().union(*(items[k].words for k in kept if k < position))
        reason = item.strong or item.score >= floor or not item.words <= before
        assert (position in kept) is reason


@given(ITEMS, SHARES)
def test_the_best_item_and_every_strong_one_stay(items: list[Listed], share: float) -> None:
    kept = kept_positions(items, share)
    assert all(p in kept for p, item in enumerate(items) if item.strong)
    if items:
        best = max(range(len(items)), key=lambda p: items[p].score)
        assert best in kept


@given(ITEMS, SHARES, SHARES)
def test_a_higher_share_keeps_a_subset(items: list[Listed], a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert set(kept_positions(items, high)) <= set(kept_positions(items, low))


@given(ITEMS, SHARES, st.integers(min_value=0, max_value=12))
def test_a_limit_and_the_cut_commute(items: list[Listed], share: float, limit: int) -> None:
    """Cutting the first ``limit`` items keeps what the cut of the whole list keeps among them, when the
    best item is among them (the floor is relative to the best item of what is cut)."""
    best = max((i.score for i in items), default=0.0)
    if any(i.score == best for i in items[:limit]):
        whole = [p for p in kept_positions(items, share) if p < limit]
        assert kept_positions(items[:limit], share) == whole


def test_share_zero_keeps_everything_and_share_is_checked() -> None:
    items = [Listed(1.0, frozenset("a")), Listed(0.0, frozenset("a"))]
    assert kept_positions(items, 0.0) == [0, 1]
    assert kept_positions([], 0.5) == []
    with pytest.raises(ValueError, match="share must be within"):
        kept_positions(items, 1.5)


@pytest.mark.parametrize(
    ("items", "kept"),
    [
        # a partial word at a tenth of the best answer, with the answer's own word: padding
        ([Listed(1.26, frozenset({"use", "sqlite"}), True), Listed(0.07, frozenset({"use"}))], [0]),
        # the only item naming a second thing the question asks about: evidence the others lack
        ([Listed(1.0, frozenset({"sqlite"}), True), Listed(0.1, frozenset({"postgres"}))], [0, 1]),
        # ... once: a second item naming it again is padding
        (
            [
                Listed(1.0, frozenset({"sqlite"}), True),
                Listed(0.1, frozenset({"postgres"})),
                Listed(0.09, frozenset({"postgres"})),
            ],
            [0, 1],
        ),
        # over the floor, a weak match stays whatever it names
        ([Listed(1.0, frozenset({"a"}), True), Listed(0.5, frozenset({"a"}))], [0, 1]),
        # an item without words (a cue, a vector) stays only over the floor
        ([Listed(1.0, frozenset({"a"}), True), Listed(0.2), Listed(0.4)], [0, 2]),
    ],
)
def test_where_the_list_ends(items: list[Listed], kept: list[int]) -> None:
    assert kept_positions(items, 0.35) == kept


def plan(*words: str) -> RankingPlan:
    terms = tuple(Term(w, (), 1.0) for w in words)
    return RankingPlan(terms, {"memory": 4.0, "event": 4.0}, replace(DEFAULT_WEIGHTS, freshness=0.0))


def test_the_ranking_ends_its_list_where_the_evidence_ends() -> None:
    query = plan("tool", "use", "sqlite", "postgres")
    ranked = rank(
        query,
        [
            Candidate("answer", Components(lexical=1.0), words=frozenset({"tool", "use", "sqlite"})),
            Candidate("use", Components(lexical=0.1), words=frozenset({"use"})),
            Candidate("postgres", Components(lexical=0.2), words=frozenset({"postgres"})),
            Candidate("again", Components(lexical=0.15), words=frozenset({"postgres"})),
            Candidate("near", Components(lexical=0.4), words=frozenset({"tool"})),
        ],
    )
    assert [(r.key, r.tier) for r in ranked] == [("answer", "hit"), ("near", "weak"), ("postgres", "weak")]
    # a word the query does not search is no evidence the list lacks
    ranked = rank(
        query,
        [
            Candidate("answer", Components(lexical=1.0)),
            Candidate("x", Components(lexical=0.1), words=frozenset({"x"})),
        ],
    )
    assert [r.key for r in ranked] == ["answer"]
    # a limit caps what the cut leaves, never fills it
    assert [
        r.key
        for r in rank(
            replace(query, limit=10),
            [Candidate("a", Components(lexical=1.0)), Candidate("b", Components(lexical=0.2))],
        )
    ] == ["a"]


TURNS = [
    "The ledger tool uses SQLite for its storage.",
    "I will use the train to get to work tomorrow.",
    "We talked about the weather and the garden.",
    "Postgres came up once in the meeting.",
    "My sister visited last weekend with her kids.",
    "Lunch was a bowl of noodles and some tea.",
    "The meeting moved to Thursday afternoon.",
    "I bought a new pair of running shoes.",
    "You can use my umbrella if it rains.",
    "The kids use the park every afternoon.",
    "We use less sugar in the cake now.",
    "The library closes early on Sundays.",
]


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[MemoryService]:
    service = make_service(tmp_path / "notes.db", clock=FixedClock(datetime(2026, 3, 10, tzinfo=UTC)))
    for n, text in enumerate(TURNS):
        event = {
            "id": f"t{n}",
            "session": f"s{n}",
            "role": "user",
            "text": text,
            "persona": "p",
            "project": "notes",
            "occurred_at": f"2026-03-0{1 + n % 9}T10:00:00Z",
        }
        service.event_submit(parse(EventIn, event))
    yield service
    service.close()


def recall(service: MemoryService, query: str, limit: int = 10) -> Recalled:
    return service.memory_recall(RecallQuery(query=query, persona="p", project="notes", limit=limit))


def test_a_weak_partial_word_beside_a_strong_answer_is_not_returned(notes: MemoryService) -> None:
    """ "use" for "uses" in four turns, each far under the answer: no padding, however large the limit."""
    for limit in (10, 200):
        result = recall(notes, "Which tool uses SQLite?", limit)
        assert [(i.id, i.tier) for i in result.items] == [("t0", "hit")]


def test_a_weak_match_naming_what_no_stronger_item_names_is_kept(notes: MemoryService) -> None:
    result = recall(notes, "Which ledger tool uses SQLite and Postgres?")
    assert [(i.id, i.tier) for i in result.items] == [("t0", "hit"), ("t3", "weak")]
    best, postgres = result.items[0].score, result.items[1].score
    assert postgres < DEFAULT_WEIGHTS.cut_share * best  # under the floor: kept for its word alone
    assert result.items[1].why["matched"] == ["postgr"]


def test_a_semantic_match_is_not_cut_by_a_floor_measured_on_words() -> None:
    query = plan("sqlite")
    ranked = rank(
        query,
        [
            Candidate("answer", Components(lexical=1.0, cosine=0.9), words=frozenset({"sqlite"})),
            Candidate("paraphrase", Components(cosine=0.4)),  # no word of the query, 0.2 of the best
            Candidate("again", Components(lexical=0.1), words=frozenset({"sqlite"})),
        ],
    )
    assert [(r.key, r.tier) for r in ranked] == [("answer", "hit"), ("paraphrase", "weak")]


def test_the_prompt_hook_gets_the_same_list(notes: MemoryService, tmp_path: Path) -> None:
    """The memories a prompt hook injects are recall's list: the answer, without the "use" padding."""
    from yiji.config import Config
    from yiji.service.hooks import prompt_context

    text = prompt_context(
        Config(db=tmp_path / "notes.db"), persona="p", project="notes", prompt="Which tool uses SQLite?"
    )
    assert text is not None
    lines = [line for line in text.splitlines() if line.startswith("- [")]
    assert len(lines) == 1 and lines[0].endswith(TURNS[0])
