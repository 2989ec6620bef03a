"""Tiny data sets shaped like the benchmarks' real ones."""

from __future__ import annotations

import json
from pathlib import Path


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
