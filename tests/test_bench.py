"""Benchmarks run end to end on small sizes, so the commands recorded in docs/benchmarks.md keep working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from yiji_bench.resume import packed_ids

from .bench_helpers import tiny_locomo


def test_bench_resume_runs_on_a_small_archive(cli: Any) -> None:
    result = cli("--json", "bench", "resume", "--memories", "300", "--resumes", "6", "--budget", "20000")
    assert result.code == 0, result.err
    data = result.json()["latency"]
    assert data["memories"] == 300 and data["resumes"] == 6
    assert data["p50_ms"] > 0 and data["p95_ms"] >= data["p50_ms"]
    assert data["included"]["persona"] == 6 and data["included"]["checkpoint"] == 6
    assert data["included"]["agreements"] == 6


def test_bench_ingest_compares_yiji_with_the_raw_loop(cli: Any) -> None:
    result = cli("--json", "bench", "ingest", "--single", "41", "--batched", "60", "--imported", "30")
    assert result.code == 0, result.err
    data = result.json()
    assert data["synchronous"] == "FULL"
    for series, count in (("single", 41), ("batched", 60)):
        figures = data[series]
        assert figures["events"] == count
        assert figures["events_per_second"] > 0 and figures["raw_events_per_second"] > 0
        ratio = figures["events_per_second"] / figures["raw_events_per_second"]
        assert abs(figures["ratio"] - ratio) <= 0.006  # both rates are rounded before the ratio here
    assert data["batched"]["bytes_per_1000_events"] > 0
    assert data["imported"]["events"] == data["imported"]["inserted"] == 30


def test_bench_resume_locomo_pack_share(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    tiny_locomo(data)
    result = cli("--json", "bench", "resume", "--memories", "0", "--locomo", str(data))
    assert result.code == 0, result.err
    report = result.json()
    assert "latency" not in report
    locomo = report["locomo"]
    assert locomo["questions"] == 2 and locomo["counter"] == "quicktok:o200k_base"
    assert locomo["by_category"]["4"]["pack@2000"] == 1.0  # recalled
    assert locomo["by_category"]["2"]["pack@2000"] == 0.0  # no evidence for the question: not recalled
    assert "pack@1000" in locomo["table"]


def test_packed_ids_reads_recalled_items_their_context_and_recent_events() -> None:
    context = json.dumps(
        {
            "recalled_memories": {
                "note": "n",
                "items": [
                    {"memory_id": "m1"},
                    {"memory_id": "e7", "context": [{"event_id": "e6"}, {"event_id": "e8"}]},
                ],
            },
            "recent_events": {"note": "", "items": [{"event_id": "e9"}]},
        }
    )
    assert packed_ids(context) == {"m1", "e6", "e7", "e8", "e9"}
    assert packed_ids("") == set()


def test_host_ingest_bench_times_real_processes() -> None:
    from yiji_bench.host_ingest import run_host_ingest_bench

    result = run_host_ingest_bench(messages=3, runs=1, target_ms=1e9)
    assert result["messages"] == 3 and result["runs"] == 1
    for series in ("ingest", "probe", "in_process"):
        timings = result[series]
        assert 0 < timings["min_ms"] <= timings["median_ms"] <= timings["max_ms"]
    # A process start costs more than the same call made in-process.
    assert result["probe"]["min_ms"] > result["in_process"]["min_ms"]
    assert result["target_met"] is True
