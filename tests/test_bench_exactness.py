"""``yiji bench exactness``: recall's lists against scoring every match with the final ranking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from yiji_bench.exactness import Differing

from .bench_helpers import tiny_locomo


def test_a_list_differs_by_an_item_or_by_order() -> None:
    d = Differing("x")
    d.add(["a", "b"], ["a", "b"])
    d.add(["b", "a"], ["a", "b"])
    d.add(["a", "c"], ["a", "b"])
    assert d.as_dict() == {
        "data": "x",
        "queries": 3,
        "differ": 2,
        "share_differing": 0.6667,
        "differ_as_sets": 1,
        "share_differing_as_sets": 0.3333,
    }


def test_bench_exactness_compares_every_locomo_question(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    tiny_locomo(data)
    result = cli("--json", "bench", "exactness", "--locomo", str(data))
    assert result.code == 0, result.err
    [locomo] = result.json()
    assert locomo["data"] == "locomo"
    assert locomo["queries"] == 2
    assert locomo["differ"] == 0
    text = cli("bench", "exactness", "--locomo", str(data), "--limit", "3")
    assert text.code == 0, text.err
    assert "recall's top 3 against scoring every match" in text.out
    assert "locomo: 0 of 2 lists differ (0.0000)" in text.out
    missing = cli("bench", "exactness")
    assert missing.code != 0
    assert "--locomo" in missing.err
