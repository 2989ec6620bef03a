"""Table tests for the pure recall ranking: one evidence scale, uninformative words, hits then context."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from yiji.domain.ranking import (
    Candidate,
    Components,
    freshness,
    lexical,
    neighbour_credit,
    rank,
    score,
    session_strengths,
)
from yiji.domain.ranking_plan import (
    BASIS_FACTORS,
    DEFAULT_WEIGHTS,
    IndexStats,
    RankingPlan,
    Term,
    Weights,
    build_plan,
    is_long_query,
    named_speakers,
    term_weight,
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
    ("docs", "with_term", "expected"),
    [
        (100, 1, math.log(1 + 99.5 / 1.5)),
        (100, 50, math.log(1 + 50.5 / 50.5)),
        (100, 100, math.log(1 + 0.5 / 100.5)),  # in every document: almost nothing
        (0, 0, math.log(2.0)),
        (10, 20, math.log(1 + 0.5 / 20.5)),  # stale counts never make a weight negative
    ],
)
def test_term_weight(docs: int, with_term: int, expected: float) -> None:
    assert term_weight(docs, with_term) == pytest.approx(expected)


def test_rare_words_weigh_more() -> None:
    assert term_weight(1000, 1) > term_weight(1000, 10) > term_weight(1000, 500) > 0


MEMORIES = IndexStats(docs=10, tokens=100, doc_counts={"用户": 10, "上海": 1, "工作": 2, "猫": 1})
EVENTS = IndexStats(docs=20, tokens=400, doc_counts={"上海": 2, "工作": 1, "什么": 8})


@pytest.mark.parametrize(
    ("words", "informative"),
    [
        # "用户" is in every memory: it cannot be evidence while the query has something else
        ([("用户", ("用", "户"), False, 1), ("工作", ("工", "作"), False, 1)], {"用户": False, "工作": True}),
        # a stopword is never evidence
        ([("什么", ("什", "么"), True, 1), ("上海", ("上", "海"), False, 1)], {"什么": False, "上海": True}),
        # a query made only of frequent words: they are all it has, so they count
        ([("用户", ("用", "户"), False, 1)], {"用户": True}),
        # a query made only of stopwords has no evidence at all
        ([("什么", ("什", "么"), True, 1)], {"什么": False}),
    ],
)
def test_build_plan_marks_uninformative_words(
    words: list[tuple[str, tuple[str, ...], bool, int]], informative: dict[str, bool]
) -> None:
    plan = build_plan(words, {"memory": MEMORIES, "event": EVENTS})
    assert {t.word: t.informative for t in plan.terms} == informative
    assert plan.has_evidence == any(informative.values())


def test_build_plan_weighs_words_over_both_indexes() -> None:
    plan = build_plan([("上海", (), False, 1), ("猫", (), False, 1)], {"memory": MEMORIES, "event": EVENTS})
    weights = {t.word: t.weight for t in plan.terms}
    assert weights["上海"] == pytest.approx(term_weight(30, 3))
    assert weights["猫"] == pytest.approx(term_weight(30, 1))
    assert plan.average_length == {"memory": 10.0, "event": 20.0}


def test_a_word_said_again_weighs_more_but_saturates() -> None:
    once, twice, often = build_plan(
        [("猫", (), False, 1), ("狗", (), False, 2), ("鱼", (), False, 50)], {"memory": IndexStats(10, 100)}
    ).terms
    assert once.weight < twice.weight < often.weight < once.weight * (DEFAULT_WEIGHTS.k3 + 1.0)
    assert twice.weight == pytest.approx(once.weight * 2.5 * 2 / 3.5)


def test_small_indexes_judge_frequency_on_nothing() -> None:
    """Below ``common_min_docs`` documents a word is not judged common: one memory is not "every memory"."""
    tiny = IndexStats(docs=1, tokens=5, doc_counts={"上海": 1})
    plan = build_plan([("上海", (), False, 1), ("工作", (), False, 1)], {"memory": tiny})
    assert all(t.informative for t in plan.terms)


def plan_of(*terms: Term, weights: Weights = DEFAULT_WEIGHTS) -> RankingPlan:
    return RankingPlan(terms, {"memory": 4.0, "event": 4.0}, weights)


SHANGHAI = Term("上海", ("上", "海"), 2.0)
LIVE = Term("住", (), 1.0)
USER = Term("用户", ("用", "户"), 0.1, informative=False)


@pytest.mark.parametrize(
    ("tokens", "strength", "matched"),
    [
        # every query word once, in a document of average length: 1.0
        (["住", "上海", "上", "海"], 1.0, ("上海", "住")),
        (["住", "x", "y", "z"], 1 / 3, ("住",)),
        # 上海 must not be found through 早上 (one of its two characters)
        (["早上", "早", "上", "x"], 0.0, ()),
        # all of its characters apart (海上): half credit
        (["海上", "海", "上", "x"], 0.5 * 2 / 3, ("上海",)),
        ([], 0.0, ()),
    ],
)
def test_lexical_strength_is_measured_against_the_query(
    tokens: list[str], strength: float, matched: tuple[str, ...]
) -> None:
    found = lexical(plan_of(SHANGHAI, LIVE), tokens, "memory")
    assert found.strength == pytest.approx(strength)
    assert set(found.matched) == set(matched)


def test_a_weak_match_stays_weak_in_either_index() -> None:
    """The same document scores the same in both indexes (no best-of-each-index normalisation)."""
    plan = plan_of(SHANGHAI, LIVE)
    as_memory = lexical(plan, ["住", "a", "b", "c"], "memory")
    as_event = lexical(plan, ["住", "a", "b", "c"], "event")
    assert as_memory.strength == pytest.approx(as_event.strength) == pytest.approx(1 / 3)


def test_longer_documents_than_their_index_average_get_less() -> None:
    plan = plan_of(LIVE)
    short = lexical(plan, ["住", "a", "b", "c"], "memory").strength
    long = lexical(plan, ["住", *"abcdefghijklmno"], "memory").strength
    assert long < short


def test_uninformative_words_cannot_lift_an_item_alone() -> None:
    plan = plan_of(USER, Term("工作", ("工", "作"), 2.0))
    alone = lexical(plan, ["用户", "喜欢", "猫", "用"], "memory")
    assert alone.strength == 0.0 and alone.uninformative == ("用户",)
    both = lexical(plan, ["用户", "工作", "上海", "x"], "memory")
    assert both.strength > lexical(plan, ["工作", "x", "y", "z"], "memory").strength > 0


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


@pytest.mark.parametrize(
    ("neighbours", "sides", "expected"),
    [
        ([(-1, 0.8), (1, 0.8)], (2, 2), 1.6),  # a whole window: as without sides
        ([(1, 0.8)], (0, 2), 1.6),  # the first turn: its one side stands for both
        ([(1, 0.8)], (0, 1), 2.4),  # a session of two turns: one position of mass 3 exists
        ([(-1, 0.8), (1, 0.4)], (1, 2), 1.44),  # 1.2 over positions of mass 2.5, scaled to 3
        ([], (0, 0), 0.0),  # a session of one turn has no neighbours
        ([(1, 0.0)], (0, 2), 0.0),
    ],
)
def test_neighbour_credit_is_scaled_to_a_whole_window_at_a_conversations_edges(
    neighbours: list[tuple[int, float]], sides: tuple[int, int], expected: float
) -> None:
    assert neighbour_credit(neighbours, DEFAULT_WEIGHTS, sides) == pytest.approx(expected)


def test_session_strengths_keep_the_best_turn() -> None:
    pairs = [("s1", 0.2), ("s2", 1.0), ("s1", 0.7), ("s1", 0.1)]
    assert session_strengths(pairs) == {"s1": 0.7, "s2": 1.0}


NO_DECAY = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0, min_share=0.1))
# cut_share 0: the weak tier down to its own floor, apart from where the list ends (tested below)
ALL_CONTEXT = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0, min_share=0.1, cut_share=0.0))
DECAY = plan_of(weights=replace(DEFAULT_WEIGHTS, min_share=0.1))
RAW = BASIS_FACTORS["raw_user"]


@pytest.mark.parametrize(
    ("parts", "plan", "expected", "evidence"),
    [
        (Components(lexical=1.0, basis="raw_user"), NO_DECAY, RAW, True),
        (
            Components(lexical=0.5, neighbour=1.0, session=1.0, basis="raw_user"),
            NO_DECAY,
            (0.5 + 0.2 + 0.4) * RAW,
            True,
        ),
        (Components(lexical=1.0, basis="raw_assistant"), NO_DECAY, BASIS_FACTORS["raw_assistant"], True),
        # a user statement with full confidence
        (Components(lexical=1.0, basis="user_statement", confidence=1.0), NO_DECAY, 1.0, True),
        # confidence 0.5 costs 10% with the default confidence weight 0.2
        (Components(lexical=1.0, basis="user_statement", confidence=0.5), NO_DECAY, 0.9, True),
        (Components(lexical=1.0, basis="inference", confidence=1.0), NO_DECAY, 0.85, True),
        # one half-life old: freshness 0.5, weight 0.1 -> factor 0.95
        (Components(lexical=1.0, basis="user_statement", age_days=180.0), DECAY, 0.95, True),
        # very old evidence is demoted, never below 1 - w_freshness
        (Components(lexical=1.0, basis="user_statement", age_days=1e6), DECAY, 0.9, True),
        # own evidence besides lexical: a cue, a related link, cosine at the threshold
        (Components(cue=1.0, basis="user_statement"), NO_DECAY, 1.0, True),
        (Components(related=1.0, basis="user_statement"), NO_DECAY, 0.3, True),
        (Components(cosine=0.3, basis="user_statement"), NO_DECAY, 0.15, True),
        (Components(lexical=1.0, cosine=0.29, basis="user_statement"), NO_DECAY, 1.0, True),
        (Components(lexical=1.0, cosine=0.8, basis="user_statement"), NO_DECAY, 1.4, True),
        # an asked-for keyed fact is evidence of its own, whatever its words
        (Components(fact=1.0, basis="user_statement"), NO_DECAY, 1.0, True),
        # context alone scores, but is not evidence of its own
        (Components(session=1.0, basis="user_statement"), NO_DECAY, 0.4, False),
        (Components(neighbour=1.0, basis="user_statement"), NO_DECAY, 0.2, False),
        (Components(cosine=0.29, basis="user_statement"), NO_DECAY, 0.0, False),
        (Components(), NO_DECAY, 0.0, False),
    ],
)
def test_score(parts: Components, plan: RankingPlan, expected: float, evidence: bool) -> None:
    result = score(plan, parts)
    assert result.score == pytest.approx(expected)
    assert result.evidence is evidence


def test_score_explains_itself() -> None:
    result = score(
        DECAY, Components(lexical=0.5, neighbour=1.0, basis="user_statement", confidence=1.0, age_days=180.0)
    )
    assert result.contributions == pytest.approx(
        {
            "lexical": 0.5,
            "cue": 0.0,
            "fact": 0.0,
            "related": 0.0,
            "cosine": 0.0,
            "neighbour": 0.2,
            "session": 0.0,
        }
    )
    assert result.factors == pytest.approx({"basis": 1.0, "confidence": 1.0, "freshness": 0.95})
    relevance = sum(result.contributions.values())
    assert result.score == pytest.approx(relevance * math.prod(result.factors.values()))
    explained = result.explain()
    assert explained["evidence"] is True and "context_of" not in explained
    assert explained["score"] == pytest.approx(0.7 * 0.95)


def test_unknown_basis_gets_the_lowest_factor() -> None:
    result = score(NO_DECAY, Components(lexical=1.0, basis="something_else"))
    assert result.factors["basis"] == min(BASIS_FACTORS.values())


def test_a_user_statement_beats_an_assistant_guess_with_equal_evidence() -> None:
    ranked = rank(
        NO_DECAY,
        [
            Candidate("guess", Components(lexical=0.6, basis="raw_assistant")),
            Candidate("stated", Components(lexical=0.6, basis="user_statement", confidence=0.8)),
        ],
    )
    assert [r.key for r in ranked] == ["stated", "guess"]


def test_confidence_is_clamped() -> None:
    high = score(NO_DECAY, Components(lexical=1.0, confidence=7.0))
    low = score(NO_DECAY, Components(lexical=1.0, confidence=-1.0))
    assert high.factors["confidence"] == pytest.approx(1.0)
    assert low.factors["confidence"] == pytest.approx(0.8)


def tiers(plan: RankingPlan, *candidates: Candidate[str]) -> list[str]:
    return [r.tier for r in rank(plan, candidates)]


def test_tiers_hits_with_their_context_then_weak() -> None:
    plan = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0))  # floors 0.65 / 0.05
    ranked = rank(
        plan,
        [
            Candidate("weak", Components(lexical=0.5)),
            Candidate("hit", Components(lexical=1.0)),
            Candidate("context", Components(neighbour=2.0), near=("hit",)),
            Candidate("second", Components(lexical=0.7)),
        ],
    )
    assert [r.tier for r in ranked] == ["hit", "hit", "weak"]
    assert [(c.key, c.tier, c.context_of) for c in ranked[0].context] == [("context", "context", "hit")]


def keys(plan: RankingPlan, *candidates: Candidate[str]) -> list[tuple[str, tuple[str, ...]]]:
    """Each listed item with the keys of the context it carries."""
    return [(r.key, tuple(c.key for c in r.context)) for r in rank(plan, candidates)]


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        # hits best first, ties in the caller's order
        (
            [
                Candidate("tie-a", Components(lexical=0.5)),
                Candidate("strong", Components(lexical=1.0)),
                Candidate("tie-b", Components(lexical=0.5)),
            ],
            [("strong", ()), ("tie-a", ()), ("tie-b", ())],
        ),
        # context takes no slot, however strong its context, and travels with its hit
        (
            [
                Candidate("beside", Components(neighbour=3.0, session=1.0), near=("hit",)),
                Candidate("hit", Components(lexical=0.2)),
                Candidate("other", Components(lexical=0.3)),
            ],
            [("other", ()), ("hit", ("beside",))],
        ),
        # it travels with the best-ranked hit among its neighbours
        (
            [
                Candidate("a", Components(lexical=0.3)),
                Candidate("b", Components(lexical=0.9)),
                Candidate("between", Components(neighbour=1.0), near=("a", "b")),
            ],
            [("b", ("between",)), ("a", ())],
        ),
        # in the hit's order of its neighbours (conversation order)
        (
            [
                Candidate("hit", Components(lexical=1.0), near=("before", "after")),
                Candidate("after", Components(neighbour=1.0), near=("hit",)),
                Candidate("before", Components(neighbour=0.5), near=("hit",)),
            ],
            [("hit", ("before", "after"))],
        ),
        # context of no kept hit is not returned; nor is an item with nothing at all
        (
            [
                Candidate("hit", Components(lexical=1.0)),
                Candidate("stray", Components(session=1.0), near=("elsewhere",)),
                Candidate("nothing", Components()),
            ],
            [("hit", ())],
        ),
        # evidence below the floor (10% of the best hit) is not a hit: a weak match after the hits (near
        # one or not) down to 5% of the best hit, else gone; only an item with no evidence is context
        (
            [
                Candidate("best", Components(lexical=1.0)),
                Candidate("faint-alone", Components(lexical=0.06)),
                Candidate("faint", Components(lexical=0.05), near=("best",)),
                Candidate("fainter", Components(lexical=0.04)),
                Candidate("beside", Components(neighbour=0.5), near=("best",)),
            ],
            [("best", ("beside",)), ("faint-alone", ()), ("faint", ())],
        ),
        # no evidence anywhere: nothing, not even context
        (
            [
                Candidate("a", Components(session=1.0), near=("b",)),
                Candidate("b", Components(neighbour=1.0), near=("a",)),
            ],
            [],
        ),
        ([], []),
    ],
)
def test_rank(candidates: list[Candidate[str]], expected: list[tuple[str, tuple[str, ...]]]) -> None:
    assert keys(ALL_CONTEXT, *candidates) == expected


def test_rank_minimum_score_keeps_padding_out() -> None:
    plan = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0, min_share=0.0, min_score=0.05))
    assert keys(plan, Candidate("a", Components(lexical=0.5)), Candidate("b", Components(lexical=0.01))) == [
        ("a", ())
    ]


def test_rank_limit_counts_hits_not_context_and_labels_context() -> None:
    plan = replace(ALL_CONTEXT, limit=2)
    ranked = rank(
        plan,
        [
            Candidate("hit", Components(lexical=1.0)),
            Candidate("ctx", Components(neighbour=1.0), near=("hit",)),
            Candidate("hit2", Components(lexical=0.9)),
        ],
    )
    assert [r.key for r in ranked] == ["hit", "hit2"]
    context = ranked[0].context[0]
    assert context.scored.explain()["context_of"] == "hit" and context.scored.evidence is False


def test_diversity_prefers_a_new_session_when_scores_are_close() -> None:
    plan = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0, min_share=0.1, diversity=0.3))
    candidates = [
        Candidate("s1-a", Components(lexical=1.0), group="s1"),
        Candidate("s1-b", Components(lexical=0.95), group="s1"),
        Candidate("s2-a", Components(lexical=0.8), group="s2"),
        Candidate("s1-c", Components(lexical=0.9), group="s1"),
    ]
    ranked = rank(plan, candidates)
    assert [r.key for r in ranked] == ["s1-a", "s2-a", "s1-b", "s1-c"]
    # the demotion is part of the explanation, and the score shown is the one the list is ordered by
    second = ranked[2].scored
    assert second.factors["diversity"] == pytest.approx(0.7)
    assert second.score == pytest.approx(score(plan, candidates[1].parts).score * 0.7)
    # a clearly better second hit of a session still comes first
    weak_other = [*candidates[:2], Candidate("s2-a", Components(lexical=0.5), group="s2")]
    assert [r.key for r in rank(plan, weak_other)] == ["s1-a", "s1-b", "s2-a"]
    # off by default: score order
    assert [r.key for r in rank(ALL_CONTEXT, candidates)] == ["s1-a", "s1-b", "s1-c", "s2-a"]


def test_freshness_breaks_equal_relevance_toward_recent() -> None:
    ranked = rank(
        DECAY,
        [
            Candidate("old", Components(lexical=1.0, age_days=400.0)),
            Candidate("new", Components(lexical=1.0)),
        ],
    )
    assert [r.key for r in ranked] == ["new", "old"]


def test_freshness_does_not_beat_much_stronger_old_evidence() -> None:
    ranked = rank(
        DECAY,
        [
            Candidate("new", Components(lexical=0.5)),
            Candidate("old", Components(lexical=1.0, age_days=3650.0)),
        ],
    )
    assert [r.key for r in ranked] == ["old", "new"]


@pytest.mark.parametrize(
    "changes",
    [
        {"half_life_days": 0.0},
        {"freshness": 1.5},
        {"confidence": -0.1},
        {"neighbour_window": -1},
        {"neighbour_decay": 2.0},
        {"min_share": 1.5},
        {"diversity": -0.5},
        {"context_window": -1},
        {"weak_share": 2.0},
        {"min_score": -0.1},
    ],
)
def test_weights_are_validated(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        replace(DEFAULT_WEIGHTS, **changes)


def test_a_related_link_is_measured_against_a_link_to_the_best_hit() -> None:
    plan = plan_of(weights=replace(DEFAULT_WEIGHTS, freshness=0.0, min_share=0.5, cut_share=0.0))
    ranked = keys(
        plan,
        Candidate("best", Components(lexical=1.0)),
        Candidate("linked", Components(related=1.0)),  # 0.3 of the best: a link's full value
        Candidate("faint", Components(lexical=0.2)),  # 0.2 of the best: under the floor of 0.5, weak
        Candidate("faint-link", Components(related=0.1)),  # 0.03 of the best: under 0.5 * 0.3 and 0.05
    )
    assert ranked == [("best", ()), ("linked", ()), ("faint", ())]


WORK = ("工作", ("工", "作"), False, 1)
SHANGHAI_WORD = ("上海", ("上", "海"), False, 1)
CHARACTERS = [("上", 1), ("海", 1), ("工", 2), ("作", 1)]


@pytest.mark.parametrize(
    ("words", "long_query", "long"),
    [
        ([SHANGHAI_WORD, WORK], 2, True),
        ([SHANGHAI_WORD, WORK], 3, False),  # a question: the characters are ignored
        ([("什么", ("什", "么"), True, 1), SHANGHAI_WORD], 2, False),  # a stopword is not counted
        ([("用户", ("用", "户"), False, 1), SHANGHAI_WORD], 2, False),  # nor a word every memory has
    ],
)
def test_a_long_query_counts_its_characters_as_terms(
    words: list[tuple[str, tuple[str, ...], bool, int]], long_query: int, long: bool
) -> None:
    weights = Weights(long_query=long_query)
    plan = build_plan(words, {"memory": MEMORIES, "event": EVENTS}, weights, characters=CHARACTERS)
    assert plan.long is long
    assert is_long_query(sum(t.informative for t in plan.terms), weights) is long
    without = build_plan(words, {"memory": MEMORIES, "event": EVENTS}, weights)
    if long:
        # each character weighed like a word: rarity over both indexes, repeats in the query
        assert plan.char_weights == pytest.approx(
            {"上": term_weight(30, 0), "海": term_weight(30, 0), "工": term_weight(30, 0) * 2.5 * 2 / 3.5}
            | {"作": term_weight(30, 0)}
        )
        assert plan.ideal == pytest.approx(without.ideal)  # characters add to the words' ideal
    else:
        assert plan.char_weights == without.char_weights and not without.long


def char_credit(tf: int, relative_length: float) -> float:
    k1, b = DEFAULT_WEIGHTS.long_char_k1, DEFAULT_WEIGHTS.long_char_b
    return tf * (k1 + 1) / (tf + k1 * (1 - b + b * relative_length))


LONG = RankingPlan((SHANGHAI, LIVE), {"memory": 4.0}, DEFAULT_WEIGHTS, None, {"上": 1.0, "海": 1.0}, True)


@pytest.mark.parametrize(
    ("tokens", "strength", "matched"),
    [
        # the words (3 of 3) and both characters on top of them
        (["住", "上海", "上", "海"], (3 + 2 * char_credit(1, 1)) / 3, {"上海", "住", "上", "海"}),
        # in a long query one shared character is evidence (in a question 早上 finds nothing)
        (["早上", "早", "上", "x"], char_credit(1, 1) / 3, {"上"}),
        # a word found only through its characters gets no word credit: its characters count
        (["海上", "海", "上", "x"], 2 * char_credit(1, 1) / 3, {"上", "海"}),
        # a long document shares characters by chance: its length weighs more than for words
        (["早上", "早", "上", *"abcde"], char_credit(1, 2) / 3, {"上"}),
        (["x", "y", "z", "w"], 0.0, set()),
    ],
)
def test_long_query_lexical(tokens: list[str], strength: float, matched: set[str]) -> None:
    found = lexical(LONG, tokens, "memory")
    assert found.strength == pytest.approx(strength)
    assert set(found.matched) == matched
    assert lexical(replace(LONG, long=False), ["早上", "早", "上", "x"], "memory").strength == 0.0


def test_an_asked_for_fact_comes_first_whatever_its_score() -> None:
    plan = RankingPlan(terms=(), weights=NO_DECAY.weights)
    ranked = rank(
        plan,
        [
            Candidate("strong", Components(lexical=2.0, basis="user_statement")),
            Candidate("old value", Components(fact=0.5, basis="user_statement")),
            Candidate("value", Components(fact=1.0, basis="user_statement")),
        ],
    )
    assert [r.key for r in ranked] == ["value", "old value", "strong"]
    assert all(r.tier == "hit" for r in ranked)


def test_an_echoed_word_counts_for_the_turn_that_said_it_first() -> None:
    terms = (Term("red", (), 1.0), Term("bike", (), 2.0), Term("cost", (), 1.0))
    plan = plan_of(*terms, weights=replace(DEFAULT_WEIGHTS, echo=0.5))
    tokens = ["red", "bike", "cost"]
    said = lexical(plan, tokens, "event")
    assert said.strength > 0
    echoed = lexical(plan, tokens, "event", frozenset({"red", "bike", "cost", "other"}))
    assert echoed.strength == pytest.approx(said.strength * 0.5)
    assert echoed.matched == said.matched  # still a match, with half the credit
    partly = lexical(plan, tokens, "event", frozenset({"bike"}))
    assert echoed.strength < partly.strength < said.strength
    # off: an echo counts in full
    off = plan_of(*terms, weights=replace(DEFAULT_WEIGHTS, echo=0.0))
    assert lexical(off, tokens, "event", frozenset(tokens)).strength == lexical(off, tokens, "event").strength


def test_a_question_about_the_user_weighs_what_the_assistant_said_less() -> None:
    weights = replace(NO_DECAY.weights, speaker=0.5)
    said = Components(lexical=1.0, basis="raw_user")
    replied = Components(lexical=1.5, basis="raw_assistant")
    expressed = Components(lexical=1.5, basis="assistant_expression")
    about = RankingPlan(terms=(), weights=weights, about_user=True)
    assert score(about, replied).factors["speaker"] == pytest.approx(0.5)
    unfocused = score(replace(about, about_user=False), replied).score
    assert score(about, replied).score == pytest.approx(unfocused * 0.5)
    assert "speaker" not in score(about, said).factors
    candidates = [Candidate("reply", replied), Candidate("expressed", expressed), Candidate("said", said)]
    assert [r.key for r in rank(about, candidates)][0] == "said"
    # a question that addresses the assistant (or no one) ranks on the evidence alone
    neutral = replace(about, about_user=False)
    assert [r.key for r in rank(neutral, candidates)][-1] == "said"
    assert "speaker" not in score(neutral, replied).factors
    # off: no factor
    off = replace(about, weights=replace(weights, speaker=0.0))
    assert "speaker" not in score(off, replied).factors


def test_a_question_that_names_a_speaker_weighs_what_others_said_less() -> None:
    weights = replace(NO_DECAY.weights, speaker=0.5)
    caroline = Components(lexical=1.0, basis="raw_user", speaker="Caroline")
    melanie = Components(lexical=1.5, basis="raw_assistant", speaker="Melanie")
    unnamed = Components(lexical=1.2, basis="raw_assistant")
    named = RankingPlan(terms=(), weights=weights, speakers=frozenset({"Caroline"}))
    assert score(named, melanie).factors["speaker"] == pytest.approx(0.5)
    assert "speaker" not in score(named, caroline).factors
    # a turn whose host named no speaker is nobody's to discount
    assert "speaker" not in score(named, unnamed).factors
    candidates = [
        Candidate("melanie", melanie),
        Candidate("caroline", caroline),
        Candidate("unnamed", unnamed),
    ]
    assert [r.key for r in rank(named, candidates)] == ["unnamed", "caroline", "melanie"]
    # naming both speakers, or none, ranks on the evidence alone
    for plan in (
        replace(named, speakers=frozenset({"Caroline", "Melanie"})),
        replace(named, speakers=frozenset()),
    ):
        assert "speaker" not in score(plan, melanie).factors
        assert [r.key for r in rank(plan, candidates)][0] == "melanie"
    off = replace(named, weights=replace(weights, speaker=0.0))
    assert "speaker" not in score(off, melanie).factors


@pytest.mark.parametrize(
    ("words", "named"),
    [
        ({"what", "carolin", "research"}, {"Caroline"}),
        ({"carolin", "melani"}, {"Caroline", "Melanie"}),
        ({"john", "research"}, set()),  # one word of a two-word name is not the name
        ({"john", "smith"}, {"John Smith"}),
        (set(), set()),
    ],
)
def test_a_speaker_is_named_by_every_word_of_the_name(words: set[str], named: set[str]) -> None:
    names = {"Caroline": ["carolin"], "Melanie": ["melani"], "John Smith": ["john", "smith"], "Nobody": []}
    assert named_speakers(words, names) == named


def test_the_speaker_factor_orders_the_hits_and_does_not_pick_them() -> None:
    """The other speaker's question stays a hit, lower in the list, and its context (the named speaker's
    reply, which holds the answer in none of the question's words) travels with it."""
    weights = replace(NO_DECAY.weights, speaker=0.5, min_share=0.65, cut_share=0.0)
    answer = Components(lexical=1.0, basis="raw_user", speaker="Caroline")
    asked = Components(lexical=0.9, basis="raw_assistant", speaker="Melanie")
    reply = Components(basis="raw_user", speaker="Caroline")  # no word of the query
    candidates = [
        Candidate("answer", answer),
        Candidate("asked", asked, near=("reply",)),
        Candidate("reply", reply, near=("asked",)),
    ]
    named = RankingPlan(terms=(), weights=weights, speakers=frozenset({"Caroline"}))
    ranked = rank(named, candidates)
    assert [(r.key, r.tier) for r in ranked] == [("answer", "hit"), ("asked", "hit")]
    assert [c.key for c in ranked[1].context] == ["reply"]
    assert ranked[1].scored.factors["speaker"] == pytest.approx(0.5)
    assert ranked[1].scored.score < ranked[0].scored.score
    # under the floor on its evidence alone it is a weak match, as any other
    faint = replace(asked, lexical=0.5)
    ranked = rank(named, [Candidate("answer", answer), Candidate("asked", faint, near=("reply",))])
    assert [(r.key, r.tier) for r in ranked] == [("answer", "hit"), ("asked", "weak")]
    # a speaker factor of 1 leaves the other speaker's turn a hit with a score of 0
    silenced = rank(replace(named, weights=replace(weights, speaker=1.0)), candidates)
    assert [(r.key, r.scored.score) for r in silenced][1] == ("asked", 0.0)
    # an assistant's restatement of the user is judged with its factor: under the floor, a weak match
    about = RankingPlan(terms=(), weights=weights, about_user=True)
    ranked = rank(about, candidates)
    assert [(r.key, r.tier) for r in ranked] == [("answer", "hit"), ("asked", "weak")]
