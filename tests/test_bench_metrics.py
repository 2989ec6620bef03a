"""The benchmark metrics, on small hand-computed rankings."""

from __future__ import annotations

import math

import pytest

from yiji_bench.metrics import (
    DEFAULT_LIMIT,
    LOCOMO_COLUMNS,
    ListPrecision,
    LocomoReport,
    approx_tokens,
    bm25_list,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
    paired,
    precision_line,
    sign_test,
)


@pytest.mark.parametrize(("text", "expected"), [("", 1), ("abc", 1), ("abcd", 1), ("a" * 9, 2)])
def test_approx_tokens(text: str, expected: int) -> None:
    assert approx_tokens(text) == expected


RANKED = ["D1:1", "D2:4", "D1:2", "D3:1", "D2:1"]
COST = {"D1:1": 300, "D2:4": 150, "D1:2": 100, "D3:1": 1000, "D2:1": 10}


def test_locomo_metrics_hand_computed() -> None:
    m = locomo_metrics(RANKED, ["D1:2", "D2:1", "D9:9"], COST)
    # first gold at rank index 2
    assert m["mrr"] == pytest.approx(1 / 3)
    assert m["recall@1"] == 0.0
    assert m["recall@5"] == pytest.approx(2 / 3)
    assert m["recall@10"] == pytest.approx(2 / 3)
    assert m["all@5"] == 0.0  # D9:9 is never ranked
    assert m["any@5"] == 1.0
    assert m["any@1"] == 0.0
    # sessions by best turn: D1, D2, D3; gold sessions D1, D2, D9
    assert m["sess_recall@1"] == pytest.approx(1 / 3)
    assert m["sess_recall@5"] == pytest.approx(2 / 3)
    # greedy packing stops at the first turn that does not fit: 300+150=450, +100 > 500
    assert m["recall@500tok"] == 0.0
    # 300+150+100=550 fits 1000; D3:1 (1000) does not, so D2:1 is never reached
    assert m["recall@1000tok"] == pytest.approx(1 / 3)
    assert m["recall@2000tok"] == pytest.approx(2 / 3)


def test_locomo_metrics_all_found_at_top() -> None:
    m = locomo_metrics(RANKED, ["D1:1", "D2:4"], COST)
    assert m["mrr"] == 1.0
    assert m["all@5"] == 1.0
    assert m["recall@1"] == 0.5
    assert m["sess_recall@1"] == 0.5


def test_locomo_metrics_nothing_ranked() -> None:
    m = locomo_metrics([], ["D1:1"], {})
    assert m["mrr"] == 0.0
    assert all(m[k] == 0.0 for k in m)


def test_locomo_metrics_need_gold() -> None:
    with pytest.raises(ValueError, match="gold"):
        locomo_metrics(RANKED, [], COST)


def test_madial_metrics_hand_computed() -> None:
    m = madial_metrics([5, 1, 7, 2], [1, 2, 3])
    assert m["recall@1"] == 0.0
    assert m["any@1"] == 0.0
    assert m["ndcg@1"] == 0.0
    assert m["recall@3"] == pytest.approx(1 / 3)
    assert m["recall@5"] == pytest.approx(2 / 3)
    ideal3 = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@3"] == pytest.approx((1 / math.log2(3)) / ideal3)
    dcg5 = 1 / math.log2(3) + 1 / math.log2(5)
    assert m["ndcg@5"] == pytest.approx(dcg5 / ideal3)  # ideal uses min(k, |gold|) = 3 hits
    assert m["recall@10"] == pytest.approx(2 / 3)


def test_madial_metrics_perfect() -> None:
    m = madial_metrics([3, 4], [4, 3])
    assert m["ndcg@10"] == pytest.approx(1.0)
    assert m["recall@1"] == 0.5
    assert m["ndcg@1"] == 1.0


def test_mean_metrics() -> None:
    assert mean_metrics([]) == {}
    assert mean_metrics([{"a": 1.0, "b": 0.0}, {"a": 0.0, "b": 0.5}]) == {"a": 0.5, "b": 0.25}


def test_locomo_report_groups_categories_like_the_baseline() -> None:
    report = LocomoReport()
    report.add(1, locomo_metrics(RANKED, ["D1:1"], COST))  # mrr 1
    report.add(4, locomo_metrics(RANKED, ["D1:2"], COST))  # mrr 1/3
    report.add(5, locomo_metrics(RANKED, ["D2:1"], COST))  # mrr 1/5, adversarial
    assert report.count((1, 2, 3, 4)) == 2
    assert report.overall()["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert report.mean((1, 2, 3, 4, 5))["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 5) / 3)
    lines = report.table().splitlines()
    assert lines[0].split() == ["category", "n", *LOCOMO_COLUMNS]
    assert [line.split()[0] for line in lines[1:]] == ["1", "4", "5", "overall", "all"]
    assert lines[-2].startswith("overall (cat 1-4)")
    assert lines[-2].split()[3] == "2"  # n


def test_locomo_context_at_10_counts_what_the_top_items_carry() -> None:
    ranked = [f"D1:{i}" for i in range(1, 13)]
    carried = {"D1:3": ["D2:7"], "D1:11": ["D2:8"]}
    m = locomo_metrics(ranked, ["D2:7", "D2:8", "D1:2"], dict.fromkeys(ranked, 1), carried)
    # D1:2 is ranked, D2:7 rides with the 3rd item; D2:8 rides with the 11th, outside the top 10
    assert m["context@10"] == pytest.approx(2 / 3)
    assert m["recall@10"] == pytest.approx(1 / 3)
    assert "context@10" not in locomo_metrics(ranked, ["D1:1"], dict.fromkeys(ranked, 1))


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [(0, 0, 1.0), (3, 3, 1.0), (5, 2, 58 / 128), (10, 0, 2 / 1024), (0, 6, 2 / 64), (1, 4, 12 / 32)],
)
def test_sign_test_exact_binomial(wins: int, losses: int, expected: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(expected)


def test_paired_counts_each_question_once() -> None:
    # partial recall (0.5) is not a success: all@k is 0/1, anything under 1 counts as a miss
    out = paired([1, 0, 1, 0.5, 1, 0], [0, 1, 1, 0, 0, 0])
    assert out == {"ours_only": 2, "theirs_only": 1, "both": 1, "neither": 2, "sign_test_p": 1.0}
    with pytest.raises(ValueError, match="same questions"):
        paired([1, 0], [1])


def test_precision_of_the_returned_list_per_question_averaged() -> None:
    shares = ListPrecision()
    shares.add("yiji", ["D1:1", "D1:2", "D1:1"], ["D1:1"])  # a repeat counted once: 1 of 2
    shares.add("yiji", [], ["D1:1"])  # an empty list counts 0
    shares.add("yiji", ["D2:1"], ["D2:1", "D2:2"])  # 1 of 1, whatever recall is
    shares.add("bm25", ["D1:1", "D1:3", "D1:4", "D1:5"], ["D1:1"])
    assert shares.as_dict() == {
        "yiji": {"precision": 0.5, "length": 1.0, "questions": 3},
        "bm25": {"precision": 0.25, "length": 4.0, "questions": 1},
    }
    assert precision_line(shares.as_dict()) == (
        f"precision of the returned list (default limit {DEFAULT_LIMIT}): yiji 0.5000 (1.0 items), "
        "plain BM25 0.2500 (4.0 items)"
    )


def test_bm25_returns_its_first_turns_with_a_positive_score() -> None:
    ranking = [f"D1:{i}" for i in range(1, 15)]
    assert bm25_list(ranking, [3.0] * 14) == ranking[:DEFAULT_LIMIT] and DEFAULT_LIMIT == 10
    assert bm25_list(ranking, [3.0, 1.0, 0.0, 0.0]) == ["D1:1", "D1:2"]
