"""Tiny data sets shaped like the benchmarks' real ones."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def tiny_locomo(path: Path) -> None:
    """One LoCoMo conversation of 37 turns and two questions: one about its last turn of session 1, one
    that shares no word with any turn."""
    conversation = {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": f"D1:{i}", "text": f"Filler turn number {i} about the weather."}
            for i in range(1, 30)
        ]
        + [{"speaker": "Ann", "dia_id": "D1:30", "text": "I painted a lake at sunrise."}],
        "session_2_date_time": "9:00 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": f"D2:{i}", "text": f"Later turn {i}, nothing special."}
            for i in range(1, 8)
        ],
    }
    qa = [
        {"question": "What did Ann paint?", "answer": "a lake", "evidence": ["D1:30"], "category": 4},
        {"question": "Anything about cars?", "answer": "no", "evidence": ["D1:3"], "category": 2},
    ]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conversation, "qa": qa}]), "utf-8")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as JSON Lines at ``path`` (folders made), as MADial-Bench ships its files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def madial_memory(event: str, day: str, user: int | None = None) -> dict[str, Any]:
    """A MADial-Bench memory record (the Chinese file names its user; the English one does not)."""
    value = {"time": day, "scene": "s", "emotion": "e", "event": event}
    return value if user is None else {**value, "user-id": user}
