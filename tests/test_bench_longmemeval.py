"""``yiji bench longmemeval`` on a tiny synthetic file shaped like LongMemEval_S (never the real data)."""

from __future__ import annotations

import json
import lzma
import math
import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from yiji_bench.longmemeval import (
    MIN_SPAN_DAYS,
    Bm25Index,
    bm25_ranking,
    bm25_scores,
    corpus,
    evaluate,
    load_longmemeval,
    outline_of,
    parse_lme_time,
    question_metrics,
    regex_tokens,
    scale_question,
    select,
    split_of,
    to_session,
)
from yiji_bench.longmemeval_run import longmemeval_events
from yiji_bench.planted import plant, planted_events

FILLER = [
    "Can you suggest a good recipe for dinner tonight?",
    "Try a simple pasta with tomatoes, garlic and basil; it takes twenty minutes.",
    "What is the weather usually like in Lisbon in autumn?",
    "Lisbon is mild in autumn, with some rain towards November.",
]


def _session(*turns: tuple[str, str, bool]) -> list[dict[str, Any]]:
    return [
        {"role": role, "content": text, **({"has_answer": True} if gold else {})}
        for role, text, gold in turns
    ]


def _filler() -> list[dict[str, Any]]:
    return _session(*((("user", "assistant")[i % 2], text, False) for i, text in enumerate(FILLER)))


def _question(qid: str, qtype: str, question: str, evidence: list[list[dict[str, Any]]]) -> dict[str, Any]:
    sessions = [_filler(), *evidence, _filler()]
    ids = ["sharegpt_f1_0", *(f"answer_{qid}_{i + 1}" for i in range(len(evidence))), "sharegpt_f2_0"]
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "question_date": "2023/05/30 (Tue) 10:18",
        "answer": "x",
        "answer_session_ids": ids[1:-1],
        "haystack_dates": [f"2023/05/{20 + i:02d} (Sat) 0{i}:47" for i in range(len(sessions))],
        "haystack_session_ids": ids,
        "haystack_sessions": sessions,
    }


def _data() -> list[dict[str, Any]]:
    """q3, q4, q5 fall in dev (sha256 starts with 5, 1, 2); q1 in test (c); q5_abs is an abstention."""
    beagle = _question(
        "q3",
        "single-session-user",
        "What is the name of my beagle?",
        [
            _session(
                ("user", "I adopted a beagle last spring and named him Rex.", True),
                ("assistant", "That sounds like a lovely companion!", False),
                ("user", "", False),  # an empty turn: in the corpus, never an event
            )
        ],
    )
    # the haystack lists a filler session twice (same turns, another date), as a few real ones do
    beagle["haystack_session_ids"].append("sharegpt_f1_0")
    beagle["haystack_dates"].append("2023/05/29 (Mon) 08:00")
    beagle["haystack_sessions"].append(_filler())
    return [
        _question(
            "q1",
            "temporal-reasoning",
            "When did I start learning the violin?",
            [_session(("user", "I started learning the violin in January.", True))],
        ),
        beagle,
        _question(
            "q4",
            "multi-session",
            "How many marathons did I run this year?",
            [
                _session(("user", "I ran the Boston marathon in April.", True)),
                _session(
                    ("user", "Any tips for recovery?", False),
                    ("assistant", "Rest well.", False),
                    ("user", "I also ran the Chicago marathon last week.", True),
                ),
            ],
        ),
        _question(
            "q5",
            "single-session-assistant",
            "Which pasta recipe did you suggest with basil?",
            [_session(("user", "Something quick?", False), ("assistant", "Pasta with basil pesto.", True))],
        ),
        _question(
            "q5_abs",
            "single-session-user",
            "What is my cat called?",
            [_session(("user", "I have no pets.", True))],
        ),
    ]


def _write(path: Path) -> Path:
    raw = json.dumps(_data()).encode()
    if path.suffix == ".xz":
        path.write_bytes(lzma.compress(raw))
    else:
        path.write_bytes(raw)
    return path


@pytest.mark.parametrize("name", ["lme.json", "lme.json.xz"])
def test_load_skips_abstention_and_splits_by_hash(tmp_path: Path, name: str) -> None:
    data = load_longmemeval(_write(tmp_path / name))
    assert data.abstention == 1
    assert [q.question_id for q in data.questions] == ["q1", "q3", "q4", "q5"]
    assert [q.question_id for q in select(data.questions, "dev")] == ["q3", "q4", "q5"]
    assert [q.question_id for q in select(data.questions, "test")] == ["q1"]
    assert [q.question_id for q in select(data.questions, "all", limit=2)] == ["q1", "q3"]
    assert (split_of("q3"), split_of("q1"), split_of("q2")) == ("dev", "test", "test")
    with pytest.raises(ValueError, match="split"):
        select(data.questions, "train")


def test_turns_keep_session_dates_and_unique_event_ids(tmp_path: Path) -> None:
    beagle = load_longmemeval(_write(tmp_path / "lme.json")).questions[1]
    assert beagle.question_date == datetime(2023, 5, 30, 10, 18, tzinfo=UTC)
    assert parse_lme_time("2023/05/20 (Sat) 07:47") == datetime(2023, 5, 20, 7, 47, tzinfo=UTC)
    evidence = [t for t in beagle.turns if t.session_id.startswith("answer_")]
    assert [t.event_id for t in evidence] == ["answer_q3_1:1", "answer_q3_1:2", "answer_q3_1:3"]
    assert [t.baseline_id for t in evidence] == ["answer_q3_1_1", "answer_q3_1_2", "answer_q3_1_3"]
    assert evidence[0].occurred_at == datetime(2023, 5, 21, 1, 47, tzinfo=UTC)
    repeat = [t for t in beagle.turns if t.session == "sharegpt_f1_0.2"]
    assert [t.event_id for t in repeat][:2] == ["sharegpt_f1_0.2:1", "sharegpt_f1_0.2:2"]
    assert repeat[0].baseline_id == "sharegpt_f1_0_1"  # the reference script's id, shared with the original
    assert len({t.event_id for t in beagle.turns}) == len(beagle.turns)
    user = corpus(beagle, "user")
    assert {t.role for t in user} == {"user"} and [t.index for t in user][:2] == [0, 2]


def test_metrics_on_a_hand_checked_ranking() -> None:
    ids = ["ANS|a_1", "a_2", "b_1", "ANS|c_1"]
    ranking = [1, 0, 2, 3]
    ndcg2 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert evaluate(ranking, {"ANS|a_1", "ANS|c_1"}, ids, 2) == (1.0, 0.0, pytest.approx(ndcg2))
    assert evaluate(ranking, {"ANS|a_1", "ANS|c_1"}, ids, 4)[:2] == (1.0, 1.0)
    assert evaluate([2], {"ANS|a_1"}, ids, 1) == (0.0, 0.0, 0.0)
    assert evaluate(ranking, set(), ids, 1) == (0.0, 1.0, 0.0)  # an empty gold set, as the script scores it
    # sessions: a gold session's other turns are another session (a vs ANS|a), as upstream's noans ids
    assert to_session(ranking, {"ANS|a_1", "ANS|c_1"}, ids, 2)[:2] == (1.0, 0.0)
    assert to_session(ranking, {"ANS|a_1", "ANS|c_1"}, ids, 4)[:2] == (1.0, 1.0)
    # the prefix grows until it holds k distinct sessions
    ids = ["x_1", "x_2", "ANS|y_1"]
    assert evaluate([0, 1, 2], {"ANS|y_1"}, ids, 2)[1] == 0.0
    assert to_session([0, 1, 2], {"ANS|y_1"}, ids, 2) == (1.0, 1.0, pytest.approx(1 / math.log2(4)))


def test_question_metrics_name_every_level_and_cutoff(tmp_path: Path) -> None:
    q4 = load_longmemeval(_write(tmp_path / "lme.json")).questions[2]
    documents = corpus(q4, "both")
    gold = [i for i, t in enumerate(documents) if t.has_answer]
    perfect = question_metrics(gold + [i for i in range(len(documents)) if i not in gold], documents)
    assert perfect["turn:recall_all@5"] == perfect["turn:ndcg_any@10"] == 1.0
    assert perfect["session:recall_all@5"] == 1.0
    half = question_metrics(gold[:1], documents)
    assert (half["turn:recall_any@10"], half["turn:recall_all@10"]) == (1.0, 0.0)
    assert len(perfect) == 2 * 3 * 3


def test_bm25_row_is_okapi_with_the_scripts_tokenizer() -> None:
    assert regex_tokens("I ran the Boston-Marathon, in 2023!") == ["ran", "boston", "marathon", "2023"]
    docs = [["cat", "dog"], ["cat"], ["fish"]]
    # "cat" is in 2 of 3 documents: its idf is negative, so it gets 0.25 x the mean idf (rank_bm25's floor)
    mean_idf = (math.log(1.5 / 2.5) + 2 * math.log(2.5 / 1.5)) / 3
    avgdl = 4 / 3

    def term(idf: float, tf: int, length: int) -> float:
        return idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / avgdl))

    expected = [term(0.25 * mean_idf, 1, 2), term(0.25 * mean_idf, 1, 1), 0.0]
    assert bm25_scores(docs, ["cat"]) == pytest.approx(expected)
    dog = term(math.log(2.5 / 1.5), 1, 2)
    assert bm25_scores(docs, ["dog", "cat", "dog"]) == pytest.approx(
        [2 * dog + expected[0], expected[1], 0.0]
    )
    ranking, _ = bm25_ranking("a cat", ["fish", "the cat", "cat cat", "fish", "bird"])
    assert ranking == [2, 1, 0, 3, 4]  # ties keep corpus order


def _run(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("--json", "bench", "longmemeval", *args)
    assert result.code == 0, result.err
    data: dict[str, Any] = result.json()
    return data


def test_bench_longmemeval_end_to_end(cli: Any, tmp_path: Path) -> None:
    data = str(_write(tmp_path / "lme.json.xz"))
    keep, dump = tmp_path / "keep", tmp_path / "dump.jsonl"
    first = _run(cli, "--data", data, "--keep", str(keep), "--dump", str(dump))
    assert (first["split"], first["protocol"], first["mode"]) == ("dev", "both", "fast")
    assert first["questions"] == 3 and first["abstention_skipped"] == 1
    assert first["databases"] == {"built": 3, "reused": 0, "kept_in": str(keep)}
    yiji, bm25 = first["figures"]["yiji"], first["figures"]["bm25"]
    assert set(yiji["by_type"]) == {"single-session-user", "multi-session", "single-session-assistant"}
    assert yiji["by_type"]["single-session-user"]["turn:recall_all@5"] == 1.0  # "beagle" finds Rex
    assert bm25["by_type"]["single-session-user"]["turn:recall_all@5"] == 1.0
    assert bm25["by_type"]["multi-session"]["turn:recall_all@10"] == 1.0
    assert "turn:recall_all@10" in first["table"]
    pairs = first["paired"]["turn:recall_all@10"]
    assert sum(pairs[k] for k in ("ours_only", "theirs_only", "both", "neither")) == 3
    assert pairs["both"] >= 1 and 0.0 < pairs["sign_test_p"] <= 1.0
    # precision of the list a recall returns at its default limit, beside BM25's first ten
    shares = first["precision"]
    assert shares["yiji"]["questions"] == shares["bm25"]["questions"] == 3
    assert 0.0 < shares["yiji"]["precision"] <= 1.0 and 0.0 < shares["yiji"]["length"] <= 10
    assert shares["bm25"]["length"] <= 10
    rows = [json.loads(line) for line in dump.read_text("utf-8").splitlines()]
    assert [r["question_id"] for r in rows] == ["q3", "q4", "q5"]
    beagle = rows[0]
    assert beagle["gold"] == ["answer_q3_1:1"] and beagle["question_date"] == "2023-05-30T10:18:00+00:00"
    found = next(item for item in beagle["yiji"] if item["gold"])
    assert found["event_id"] == "answer_q3_1:1"
    assert (found["role"], found["session"], found["type"]) == ("user", "answer_q3_1", "raw_event")
    assert "contributions" in found["why"] and found["score"] > 0
    assert len({item["event_id"] for item in beagle["yiji"]}) == len(beagle["yiji"])
    assert beagle["bm25"][0] == {
        "event_id": "answer_q3_1:1",
        "role": "user",
        "session": "answer_q3_1",
        "gold": True,
        "score": beagle["bm25"][0]["score"],
    }
    assert len(beagle["bm25"]) == 15  # the whole corpus: 20 at most
    # a second run reuses the kept databases and BM25 rankings, and reads the file's outline only
    assert json.loads((keep / "questions.json").read_text("utf-8"))["abstention"] == 1
    again_dump = tmp_path / "again.jsonl"
    again = _run(cli, "--data", data, "--keep", str(keep), "--dump", str(again_dump))
    assert again["databases"]["built"] == 0 and again["databases"]["reused"] == 3
    assert again["figures"] == first["figures"]
    assert again["precision"] == first["precision"]
    assert again["seconds"]["bm25"] == 0
    assert again_dump.read_text("utf-8") == dump.read_text("utf-8")
    # a marker written by another index is stale: that database is rebuilt
    marker = keep / "both" / "q4.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text("utf-8")), "fingerprint": "old"}), "utf-8")
    assert _run(cli, "--data", data, "--keep", str(keep))["databases"]["built"] == 1
    # the same file copied elsewhere (another path, another time) is the same data: nothing is rebuilt
    copy = tmp_path / "elsewhere" / "lme.json.xz"
    copy.parent.mkdir()
    copy.write_bytes(Path(data).read_bytes())
    assert _run(cli, "--data", str(copy), "--keep", str(keep))["databases"]["reused"] == 3
    # another data file: the outline and every database are built again
    changed = _data()
    changed[1]["question"] = "Which name did I give my beagle?"
    Path(data).write_bytes(lzma.compress(json.dumps(changed).encode()))
    third = _run(cli, "--data", data, "--keep", str(keep), "--dump", str(again_dump))
    assert third["databases"] == {"built": 3, "reused": 0, "kept_in": str(keep)}
    assert json.loads(again_dump.read_text("utf-8").splitlines()[0])["question"] == changed[1]["question"]


def test_bench_longmemeval_user_protocol_and_limit(cli: Any, tmp_path: Path) -> None:
    data = str(_write(tmp_path / "lme.json"))
    dump = tmp_path / "dump.jsonl"
    result = _run(
        cli, "--data", data, "--protocol", "user", "--split", "all", "--limit", "4", "--dump", str(dump)
    )
    assert result["questions"] == 4 and result["databases"]["built"] == 4
    assert result["without_gold_in_corpus"] == 1  # the assistant's answer is not indexed
    rows = [json.loads(line) for line in dump.read_text("utf-8").splitlines()]
    assert {item["role"] for r in rows for item in r["yiji"] + r["bm25"]} == {"user"}
    human = cli("bench", "longmemeval", "--data", data, "--limit", "1", "--split", "test")
    assert human.code == 0, human.err
    assert "bm25  overall" in human.out and "1 questions" in human.out


def test_bench_longmemeval_rejects_bad_arguments(cli: Any, tmp_path: Path) -> None:
    missing = cli("bench", "longmemeval", "--data", str(tmp_path / "none.json"))
    assert missing.code == 2 and "data" in missing.err
    zero = cli("bench", "longmemeval", "--data", str(tmp_path), "--limit", "0")
    assert zero.code == 2 and "--limit" in zero.err and "at least 1" in zero.err


TOPICS = [
    "a beagle puppy",
    "the Boston marathon",
    "basil pesto",
    "violin lessons",
    "a trip to Lisbon",
    "tax forms",
]


def _pool_session(i: int) -> list[dict[str, Any]]:
    """A filler session of four turns that mentions two of the topics (some share the questions' words)."""
    a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 7 + 3) % len(TOPICS)]
    return _session(
        ("user", f"Session {i}: can you tell me about {a}?", False),
        ("assistant", f"Here are a few notes on {a}, number {i}.", False),
        ("user", f"And what about {b}?", False),
        ("assistant", f"{b.capitalize()} is a topic of its own; see note {i * 3}.", False),
    )


def _scaled_data() -> list[dict[str, Any]]:
    """:func:`_data` and an abstention question whose haystack holds the filler pool: 200 sessions, one
    gold-marked session that no question lists as evidence (never filler) and its own evidence."""
    pool = _question(
        "q9_abs", "single-session-user", "Do I own a bicycle?", [_session(("user", "No.", True))]
    )
    stray = _session(("user", "I once mentioned my beagle by name.", True), ("assistant", "Noted.", False))
    extra = [(f"ultrachat_{i}", "2023/04/01 (Sat) 09:00", _pool_session(i)) for i in range(200)]
    extra.append(("stray_gold", "2023/04/02 (Sun) 09:00", stray))
    for session_id, date, session in extra:
        pool["haystack_session_ids"].append(session_id)
        pool["haystack_dates"].append(date)
        pool["haystack_sessions"].append(session)
    return [*_data(), pool]


def _write_scaled(path: Path) -> Path:
    path.write_bytes(json.dumps(_scaled_data()).encode())
    return path


@pytest.mark.parametrize("scale", [10, 40])
def test_scaled_archive_is_deterministic_clean_and_spread(tmp_path: Path, scale: int) -> None:
    data = load_longmemeval(_write_scaled(tmp_path / "lme.json"))
    evidence = {sid for e in _scaled_data() for sid in e["answer_session_ids"]}
    assert {f.session_id for f in data.filler} == {"sharegpt_f1_0", "sharegpt_f2_0"} | {
        f"ultrachat_{i}" for i in range(200)
    }
    for q in select(data.questions, "dev"):
        scaled = scale_question(q, data.filler, scale)
        assert outline_of(scaled) == outline_of(scale_question(q, data.filler, scale))
        own = [t for t in scaled.turns if t.session in {o.session for o in q.turns}]
        filler = [t for t in scaled.turns if t.session not in {o.session for o in q.turns}]
        # the haystack is all there, turn for turn; the filler is other sessions, never evidence or gold
        original = {t.event_id: (t.text, t.has_answer) for t in q.turns}
        assert {t.event_id: (t.text, t.has_answer) for t in own} == original and len(own) == len(original)
        assert not any(t.has_answer for t in filler)
        assert not {t.session_id for t in filler} & ({t.session_id for t in q.turns} | evidence)
        assert {t.session_id for t in filler} <= {f.session_id for f in data.filler}
        assert len({t.event_id for t in scaled.turns}) == len(scaled.turns)
        # N times the haystack's turns (the last filler session may overshoot by less than a session)
        assert scale * len(q.turns) <= len(scaled.turns) < scale * len(q.turns) + 4
        # sessions keep their turn order and one date each; dates spread over N times the span, before
        # the question, and the sessions are in date order
        sessions: dict[str, list[Any]] = {}
        for t in scaled.turns:
            sessions.setdefault(t.session, []).append(t)
        assert all([t.index for t in s] == list(range(len(s))) for s in sessions.values())
        assert all(len({t.occurred_at for t in s}) == 1 for s in sessions.values())
        dates = [t.occurred_at for t in scaled.turns]
        assert dates == sorted(dates) and max(dates) <= q.question_date
        own_span = max(t.occurred_at for t in q.turns) - min(t.occurred_at for t in q.turns)
        span = scale * max(own_span, timedelta(days=MIN_SPAN_DAYS))
        assert max(dates) - min(dates) > span / 2
        assert {t.occurred_at for t in own} != {t.occurred_at for t in q.turns}
    q3 = select(data.questions, "dev")[0]
    assert scale_question(q3, data.filler, 1) is q3
    assert outline_of(scale_question(q3, data.filler, 20)) != outline_of(scale_question(q3, data.filler, 40))
    with pytest.raises(ValueError, match="scale"):
        scale_question(q3, data.filler, 3)


def test_scaled_bm25_row_ranks_the_documents_the_scope_holds(tmp_path: Path) -> None:
    data = load_longmemeval(_write_scaled(tmp_path / "lme.json"))
    q3 = select(data.questions, "dev")[0]
    scaled = scale_question(q3, data.filler, 10)
    for protocol in ("both", "user"):
        documents = corpus(scaled, protocol)
        events = longmemeval_events(scaled, protocol)
        assert [e.id for e in events] == [t.event_id for t in documents if t.text.strip()]
        ranking, _ = bm25_ranking(scaled.question, [t.text for t in documents])
        assert sorted(ranking) == list(range(len(documents)))
        # filler turns that share the question's words compete for the top places
        ids = [t.baseline_id for t in documents]
        top = [ids[i] for i in ranking[:10]]
        assert any(i.startswith("ultrachat_") for i in top)


def test_bench_longmemeval_scale_end_to_end(cli: Any, tmp_path: Path) -> None:
    data = str(_write_scaled(tmp_path / "lme.json"))
    keep = tmp_path / "keep"
    one = _run(cli, "--data", data, "--keep", str(keep))
    ten = _run(cli, "--data", data, "--keep", str(keep), "--scale", "10")
    assert (one["scale"], ten["scale"], ten["questions"]) == (1, 10, 3)
    assert ten["events_per_scope"]["mean"] >= 10 * one["events_per_scope"]["mean"]
    assert ten["databases"]["built"] == 3 and one["databases"]["built"] == 3  # apart from 1x's
    assert set(ten["resume_ms"]) == set(ten["recall_ms"]) == {"p50", "p95"}
    marker = json.loads((keep / "x10" / "both" / "q3.json").read_text("utf-8"))
    # BM25 ranks exactly the scope's events, and the empty turn (no event) as the reference script does
    assert len(marker["bm25"]["ranking"]) == marker["events"] + 1
    again = _run(cli, "--data", data, "--keep", str(keep), "--scale", "10")
    assert again["databases"] == {"built": 0, "reused": 3, "kept_in": str(keep)}
    assert again["figures"] == ten["figures"]
    human = cli("bench", "longmemeval", "--data", data, "--keep", str(keep), "--scale", "10")
    assert human.code == 0, human.err
    for column in ("turn:recall_all@10", "turn:recall_any@10", "session:recall_any@5", "bm25  overall"):
        assert column in human.out
    assert "scale 10x" in human.out and "events per scope: mean" in human.out
    assert "recall p50" in human.out and "session_resume p50" in human.out
    assert "recall warnings: none" in human.out
    bad = cli("bench", "longmemeval", "--data", data, "--scale", "3")
    assert bad.code == 2 and "--scale" in bad.err
    # several sizes in one run: each run as alone, then a grid of quality beside BM25's and latency
    grid = _run(cli, "--data", data, "--keep", str(keep), "--scale", "1", "--scale", "10")
    assert [r["scale"] for r in grid["runs"]] == [1, 10]
    assert grid["runs"][1]["figures"] == ten["figures"]
    assert [row["scale"] for row in grid["grid"]] == [1, 10]
    row = grid["grid"][1]
    assert row["yiji"]["turn:recall_all@10"] == ten["figures"]["yiji"]["overall"]["turn:recall_all@10"]
    assert row["bm25"]["turn:recall_any@10"] == ten["figures"]["bm25"]["overall"]["turn:recall_any@10"]
    assert row["events_per_scope"] == ten["events_per_scope"]["mean"] and set(row["recall_ms"]) == {
        "p50",
        "p95",
    }
    text = cli("bench", "longmemeval", "--data", data, "--keep", str(keep), "--scale", "1", "--scale", "10")
    assert text.code == 0, text.err
    assert "scale 1x" in text.out and "scale 10x" in text.out and "session any@5" in text.out
    assert text.out.rstrip().splitlines()[-1].lstrip().startswith("10x")
    dumped = cli("bench", "longmemeval", "--data", data, "--scale", "1", "--scale", "10", "--dump", "x.jsonl")
    assert dumped.code == 2 and "dump" in dumped.err and "--scale" in dumped.err


def test_bench_longmemeval_semantic_scale_embeds_each_text_once(cli: Any, tmp_path: Path) -> None:
    data = str(_write_scaled(tmp_path / "lme.json"))
    keep = tmp_path / "keep"
    first = _run(
        cli, "--data", data, "--keep", str(keep), "--scale", "10", "--mode", "semantic", "--limit", "2"
    )
    assert first["mode"] == "semantic" and first["seconds"]["vectors"] > 0
    assert first["recall_warnings"] == {}  # every scope's vectors built, the whole scope compared
    cache = first["vectors_cache"]
    assert cache["embedded"] > 0 and cache["reused"] > 0  # the two archives share filler sessions
    # the user's turns of the same archives were all embedded already, in this run's cache folder
    user = _run(
        cli,
        "--data",
        data,
        "--keep",
        str(keep),
        "--scale",
        "10",
        "--mode",
        "semantic",
        "--limit",
        "2",
        "--protocol",
        "user",
    )
    assert user["vectors_cache"]["embedded"] == 0 and user["vectors_cache"]["reused"] > 0
    assert user["figures"]["yiji"]["overall"]["turn:recall_any@10"] == 1.0
    # a kept database that lost some vectors: its recall warns, and the report counts it
    kept = sorted((keep / "x10" / "both").glob("*.db"))[0]
    conn = sqlite3.connect(kept)
    with conn:
        conn.execute(
            "DELETE FROM event_embeddings WHERE rowid IN (SELECT rowid FROM event_embeddings LIMIT 3)"
        )
    conn.close()
    again = _run(
        cli, "--data", data, "--keep", str(keep), "--scale", "10", "--mode", "semantic", "--limit", "2"
    )
    assert again["recall_warnings"] == {"vector coverage is incomplete": 1}


def test_bm25_index_top_equals_the_full_bm25_ranking() -> None:
    rng = random.Random(7)
    words = ["cat", "dog", "note", "red", "blue", "tea", "run", "shoe", "lake", "2023"]
    for _ in range(40):
        documents = [
            " ".join(rng.choice(words[: rng.randint(2, 10)]) for _ in range(rng.randint(0, 8)))
            for _ in range(rng.randint(1, 60))
        ]
        query = " ".join(rng.choice([*words, "absent", "the"]) for _ in range(rng.randint(1, 5)))
        full, scores = bm25_ranking(query, documents)
        index = Bm25Index(documents)
        for k in (1, 5, len(documents)):
            top, top_scores = index.top(query, k)
            assert top == full[:k]
            assert top_scores == [scores[i] for i in full[:k]]  # the same floats, not just the order


def test_plant_moves_each_haystack_whole_into_the_archive_span(tmp_path: Path) -> None:
    data = load_longmemeval(_write_scaled(tmp_path / "lme.json"))
    start, end = datetime(2024, 1, 1, tzinfo=UTC), datetime(2030, 1, 1, tzinfo=UTC)
    planted = plant(data, start, end)
    assert [p.question.question_id for p in planted] == ["q3", "q4", "q5"]  # the dev half, fewer than 20
    assert [p.question for p in plant(data, start, end)] == [p.question for p in planted]
    originals = {q.question_id: q for q in data.questions}
    for p in planted:
        before = originals[p.question.question_id].turns
        shifts = {t.occurred_at - o.occurred_at for t, o in zip(p.question.turns, before, strict=True)}
        assert len(shifts) == 1 and shifts != {timedelta(0)}  # relative dates kept, the block moved
        assert all(start <= t.occurred_at <= end for t in p.question.turns)
    events = planted_events(planted, "bench", "bench")
    assert len({e.id for e in events}) == len(events) == sum(len(p.turns) for p in planted)
    assert events[0].id == "lme-q3:sharegpt_f1_0:1" and all(e.text.strip() for e in events)


def test_bench_recall_plants_haystacks_and_scores_them(cli: Any, tmp_path: Path) -> None:
    data = str(_write_scaled(tmp_path / "lme.json"))
    keep = tmp_path / "keep"
    args = ("--json", "bench", "recall", "--events", "400", "--rounds", "1", "--keep", str(keep))
    first = cli(*args, "--data", data)
    assert first.code == 0, first.err
    result = first.json()
    (quality,) = result["quality"]
    assert (quality["events"], quality["questions"]) == (400, 3)
    planted = sum(len(p.turns) for p in plant(load_longmemeval(data), datetime.now(UTC), datetime.now(UTC)))
    assert quality["events_planted"] == planted
    assert result["archives"][0]["built_now"] and (keep / "recall-400-planted.db").exists()
    assert result["archives"][0]["plant_seconds"] is not None
    yiji, bm25 = quality["figures"]["yiji"]["overall"], quality["figures"]["bm25"]["overall"]
    assert yiji["turn:recall_any@10"] > 0 and bm25["turn:recall_any@10"] > 0
    assert {k: v["questions"] for k, v in quality["precision"].items()} == {"yiji": 3, "bm25": 3}
    assert quality["precision"]["yiji"]["precision"] > 0
    again = cli(*args, "--data", data).json()
    assert not again["archives"][0]["built_now"]  # the archive and its planted copy are kept
    assert again["archives"][0]["plant_seconds"] is None
    assert again["quality"][0]["figures"] == quality["figures"]
    plain = cli("bench", "recall", "--events", "400", "--rounds", "1", "--keep", str(keep))
    assert plain.code == 0, plain.err
    assert "quality: skipped" in plain.out and "p95" in plain.out
    human = cli("bench", "recall", "--events", "400", "--rounds", "1", "--keep", str(keep), "--data", data)
    assert "quality at 400 events: 3 LongMemEval_S dev questions" in human.out
    assert "turn:recall_all@10" in human.out and "bm25  overall" in human.out
    assert "precision of the returned list (default limit 10): yiji " in human.out
