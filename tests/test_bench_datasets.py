"""Benchmark loaders, on tiny synthetic files shaped like LoCoMo and MADial-Bench."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji_bench.datasets import (
    baseline_memory_text,
    baseline_turn_text,
    load_locomo,
    load_madial,
    load_madial_embedding_rankings,
    normalize_evidence,
    parse_locomo_time,
)


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["D1:3"], ["D1:3"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),
        (["D:11:26"], ["D11:26"]),
        (["D30:05"], ["D30:5"]),
        (["D1:3", "D1:3", " D2:1 "], ["D1:3", "D2:1"]),
        (["", "nonsense"], []),
    ],
)
def test_normalize_evidence(ids: list[str], expected: list[str]) -> None:
    assert normalize_evidence(ids) == expected


def test_parse_locomo_time() -> None:
    assert parse_locomo_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_time("12:06 am on 11 November, 2022").hour == 0


def _locomo() -> list[dict[str, Any]]:
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_2_date_time": "9:00 am on 2 June, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I painted a lake."},
            {
                "speaker": "Bo",
                "dia_id": "D1:2",
                "text": "Look!",
                "img_url": ["https://example.invalid/x.jpg"],
                "blip_caption": "a photo of a dog",
            },
        ],
    }
    qa = [
        {
            "question": "What did Ann paint?",
            "answer": "a lake",
            "evidence": ["D1:1"],
            "category": 4,
        },
        {"question": "When?", "answer": 2022, "evidence": ["D1:02; D2:1"], "category": 2},
        {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
        {"question": "Trick", "adversarial_answer": "y", "evidence": ["D1:2"], "category": 5},
    ]
    return [{"sample_id": "conv-x", "conversation": conversation, "qa": qa}]


def test_load_locomo(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_locomo()), encoding="utf-8")
    [conv] = load_locomo(path)
    assert conv.sample_id == "conv-x"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]  # sessions in number order
    first, photo, later = conv.turns
    assert first.occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert later.session_key == "D2"
    assert photo.captions == ("a photo of a dog",)
    assert photo.image_urls == ("https://example.invalid/x.jpg",)
    assert conv.last_time == datetime(2023, 6, 2, 9, 0, tzinfo=UTC)
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:2", "D2:1"), ("D1:2",)]
    assert conv.questions[1].answer == "2022"
    assert conv.questions[2].answer is None
    assert conv.skipped == {3: 1}
    assert conv.corrected == 0
    assert conv.unknown_evidence == 0
    assert baseline_turn_text(photo) == "Bo: Look! [shares a photo of a photo of a dog]"
    assert baseline_turn_text(photo, captions=False, speaker=False) == "Look!"


def test_load_locomo_with_errata(tmp_path: Path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(_locomo()), encoding="utf-8")
    errata = tmp_path / "errors.json"
    entries = [
        # applied: evidence differs and the question matches
        {
            "question_id": "locomo_0_qa0",
            "question": "What did Ann paint?",
            "cited_evidence": ["D1:1"],
            "correct_evidence": ["D1:2"],
        },
        # ignored: the question text does not match
        {
            "question_id": "locomo_0_qa1",
            "question": "Something else",
            "cited_evidence": ["D1:2"],
            "correct_evidence": ["D1:1"],
        },
        # ignored: no change
        {
            "question_id": "locomo_0_qa3",
            "question": "Trick",
            "cited_evidence": ["D1:2"],
            "correct_evidence": ["D1:2"],
        },
    ]
    errata.write_text(json.dumps(entries), encoding="utf-8")
    [conv] = load_locomo(path, errata)
    assert [q.evidence for q in conv.questions] == [("D1:2",), ("D1:2", "D2:1"), ("D1:2",)]
    assert conv.corrected == 1


def test_evidence_naming_no_turn_is_counted(tmp_path: Path) -> None:
    data = _locomo()
    data[0]["qa"][0]["evidence"] = ["D1:1", "D7:7"]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [conv] = load_locomo(path)
    assert conv.unknown_evidence == 1


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", "utf-8")


def _madial(root: Path) -> None:
    zh = [
        {
            "2": {
                "time": "2023-05-01",
                "scene": "活动类",
                "emotion": "开心",
                "event": "跳舞",
                "user-id": 1,
            }
        },
        {
            "1": {
                "time": "2024-01-02",
                "scene": "喜好类",
                "emotion": "开心",
                "event": "吃冰淇淋",
                "user-id": 1,
            }
        },
        {
            "3": {
                "time": "2022-03-04",
                "scene": "活动类",
                "emotion": "难过",
                "event": "丢了风筝",
                "user-id": 2,
            }
        },
    ]
    _jsonl(root / "data/ch/MADial-Bench-zh-memory.json", zh)
    dialogue = {
        "dialogue": ["<BOD>\n", '<Bart>:"我想跳舞"\n', '<Assistant>:"好"\n', '<Bart>:"测试"\n'],
        "test-turn": [3, 5],
        "relevant-id": [2],
        "user-id": 1,
        "id": 0,
    }
    _jsonl(root / "data/ch/MADial-Bench-zh-dialogue.json", [dialogue])
    en = [{"2": {"time": "2023-05-01", "scene": "Activity", "emotion": "Happy", "event": "danced"}}]
    _jsonl(root / "data/en/MADial-Bench-en-memory.json", en)
    en_dialogue = {k: v for k, v in dialogue.items() if k != "id"}
    _jsonl(root / "data/en/MADial-Bench-en-dialogue.json", [en_dialogue])
    ranking = {"id": 0, "user-id": 1, "top_20_ids": [1, 2], "relevant_id": [2]}
    _jsonl(root / "embeddings/ch/Demo_zh_top_20_ids.json", [ranking])


def test_load_madial_zh(tmp_path: Path) -> None:
    _madial(tmp_path)
    data = load_madial(tmp_path, "zh")
    assert [m.id for m in data.candidates(1)] == [1, 2]  # one user's archive, by id
    assert [m.id for m in data.candidates(2)] == [3]
    assert data.last_time == datetime(2024, 1, 2, tzinfo=UTC)
    [dialogue] = data.dialogues
    assert dialogue.relevant == (2,)
    # history before the first test turn, tags removed
    assert "我想跳舞" in dialogue.query and "好" in dialogue.query
    assert "测试" not in dialogue.query and "<" not in dialogue.query
    memory = data.candidates(1)[1]
    assert baseline_memory_text(memory) == "2023-05-01 跳舞"


def test_load_madial_en_takes_users_from_zh(tmp_path: Path) -> None:
    _madial(tmp_path)
    data = load_madial(tmp_path, "en")
    assert [(m.id, m.user_id, m.event) for m in data.memories] == [(2, 1, "danced")]
    assert data.dialogues[0].id == 0  # position when the file has no id


def test_load_madial_rejects_unknown_language(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lang"):
        load_madial(tmp_path, "fr")


def test_load_madial_embedding_rankings(tmp_path: Path) -> None:
    _madial(tmp_path)
    assert load_madial_embedding_rankings(tmp_path) == {"Demo": [([1, 2], frozenset({2}))]}
