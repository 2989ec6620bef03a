"""The plain BM25 rows printed beside yiji by ``yiji bench locomo``, ``yiji bench madial`` and the LoCoMo
resume packs: the reference scripts' tokens and scores, on tiny data sets shaped like the real ones."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from yiji_bench.baselines import LocomoBm25, MadialBm25, locomo_tokens, madial_tokens
from yiji_bench.evidence import run_madial
from yiji_bench.metrics import compared

from .bench_helpers import madial_memory, tiny_locomo, write_jsonl


def test_locomo_tokens_keep_contractions_and_drop_the_scripts_stopwords() -> None:
    assert locomo_tokens("Caroline: I'm at the LGBTQ support group, it's 2023!") == [
        "caroline",
        "i'm",
        "lgbtq",
        "support",
        "group",
        "it's",
        "2023",
    ]


def test_locomo_bm25_is_okapi_with_lucenes_idf_and_ranks_every_turn() -> None:
    texts = ["Ann: I painted a lake.", "Bo: Nice lake!", "Ann: Weather talk today.", "Bo: Nothing."]
    engine = LocomoBm25(texts)
    docs = [locomo_tokens(t) for t in texts]
    average = sum(map(len, docs)) / len(docs)

    def part(term: str, doc: list[str]) -> float:
        n = sum(term in d for d in docs)
        idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
        f = doc.count(term)
        return idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(doc) / average))

    expected = [sum(part(t, d) for t in ("lake", "ann") if t in d) for d in docs]
    assert engine.scores("Ann lake?") == pytest.approx(expected)
    assert engine.ranking("Ann lake?") == [0, 1, 2, 3]
    # no word in common: every turn ties at 0 and keeps its place
    assert engine.ranking("cars") == [0, 1, 2, 3]


def test_madial_tokens_are_jiebas_search_words_without_punctuation() -> None:
    # jieba.lcut_for_search gives 2023 - 05 - 01 for the date; blanks and punctuation are dropped
    assert madial_tokens("2023-05-01 Bart在圣诞节晚会上跳舞，感觉非常开心。", "zh") == [
        "2023",
        "05",
        "01",
        "Bart",
        "在",
        "圣诞",
        "圣诞节",
        "晚会",
        "上",
        "跳舞",
        "感觉",
        "非常",
        "开心",
    ]
    assert madial_tokens("2023-05-01 Bart danced, at the Party!", "en") == [
        "2023",
        "05",
        "01",
        "bart",
        "danced",
        "at",
        "the",
        "party",
    ]


def test_madial_ranking_breaks_ties_by_position() -> None:
    documents = [
        "2023-01-01 放风筝",
        "2023-02-01 跳舞",
        "2023-03-01 游泳",
        "2023-04-01 跳舞 跳舞",
        "2023-05-01 画画",
    ]
    engine = MadialBm25(documents, "zh")
    assert engine.ranking("我想跳舞") == [3, 1, 0, 2, 4]
    assert engine.ranking("唱歌") == [0, 1, 2, 3, 4]


def test_compared_counts_questions_each_way() -> None:
    assert compared([1.0, 0.5, 0.0, 0.5], [0.5, 0.5, 1.0, 0.0]) == {
        "higher": 2,
        "lower": 1,
        "same": 1,
        "sign_test_p": 1.0,
    }
    with pytest.raises(ValueError, match="same questions"):
        compared([1.0], [])


def test_bench_locomo_prints_bm25_over_the_same_turns(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    tiny_locomo(data)
    result = cli("--json", "bench", "locomo", "--data", str(data))
    assert result.code == 0, result.err
    report = result.json()
    # "Anything about cars?" shares no word with any turn: yiji returns nothing, while BM25 ranks every
    # turn, the ties in turn order, so its third turn (the gold one) is in its top 10
    assert report["overall"]["recall@10"] == 0.5
    assert report["bm25"]["overall"]["recall@10"] == 1.0
    assert report["compared"]["recall@10"] == {"higher": 0, "lower": 1, "same": 1, "sign_test_p": 1.0}
    assert "overall (cat 1-4)" in report["bm25"]["table"]
    # precision of the returned list: yiji's "What did Ann paint?" is its gold turn alone, its "cars"
    # list is empty (0); BM25 gives ten turns (Ann's name is on all of hers) and none for "cars"
    assert report["precision"] == {
        "yiji": {"precision": 0.5, "length": 0.5, "questions": 2},
        "bm25": {"precision": 0.05, "length": 5.0, "questions": 2},
    }
    text = cli("bench", "locomo", "--data", str(data))
    assert text.code == 0, text.err
    assert "plain BM25 on the same turns: recall@10=1.0000" in text.out
    assert "yiji higher 0, BM25 higher 1, the same 1" in text.out
    assert "precision of the returned list (default limit 10): yiji 0.5000 (0.5 items)" in text.out


def _madial(root: Path) -> None:
    def dialogue(text: str, relevant: list[int], number: int) -> dict[str, Any]:
        turns = ["<BOD>\n", f'<Bart>: "{text}"\n', '<Assistant>: "好"\n']
        return {"dialogue": turns, "test-turn": [2], "relevant-id": relevant, "user-id": 1, "id": number}

    zh = ["Bart在公园放风筝。", "Bart在晚会上跳舞。", "Bart在河里游泳。"]
    en = ["Bart flew a kite in the park.", "Bart danced at the party.", "Bart went swimming."]
    days = ["2023-05-01", "2023-06-01", "2023-07-01"]
    write_jsonl(
        root / "data/ch/MADial-Bench-zh-memory.json",
        [{str(i + 1): madial_memory(e, d, 1)} for i, (e, d) in enumerate(zip(zh, days, strict=True))],
    )
    write_jsonl(
        root / "data/en/MADial-Bench-en-memory.json",
        [{str(i + 1): madial_memory(e, d)} for i, (e, d) in enumerate(zip(en, days, strict=True))],
    )
    write_jsonl(root / "data/ch/MADial-Bench-zh-dialogue.json", [dialogue("我今天又去跳舞了", [2], 0)])
    write_jsonl(root / "data/en/MADial-Bench-en-dialogue.json", [dialogue("I danced again today", [2], 0)])


def test_bench_madial_prints_bm25_over_the_same_memories(tmp_path: Path) -> None:
    _madial(tmp_path)
    for lang in ("zh", "en"):
        result = run_madial(tmp_path, lang, progress=False)
        assert result["bm25"]["recall@1"] == 1.0  # the memory that says 跳舞 / danced comes first
        assert result["compared"]["recall@10"]["same"] == 1
        # both lists hold the one memory that answers, and nothing else
        one = {"precision": 1.0, "length": 1.0, "questions": 1}
        assert result["precision"] == {"yiji": one, "bm25": one}
    cross = run_madial(tmp_path, "en", progress=False, cross=True)
    assert cross["bm25"] is None and cross["compared"] is None  # no word shared between languages
    assert cross["precision"] == {"yiji": {"precision": 0.0, "length": 0.0, "questions": 1}}


def test_resume_packs_print_bm25_packed_into_the_same_budget(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    tiny_locomo(data)
    result = cli("--json", "bench", "resume", "--memories", "0", "--locomo", str(data))
    assert result.code == 0, result.err
    by_category = result.json()["locomo"]["by_category"]
    # BM25 packs its ranking of every turn: the gold turn of a question it shares no word with still fits
    assert by_category["2"] == {"pack@1000": 0.0, "pack@2000": 0.0, "bm25@1000": 1.0, "bm25@2000": 1.0}
    assert by_category["4"]["bm25@2000"] == 1.0
