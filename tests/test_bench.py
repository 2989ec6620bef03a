"""Benchmarks run end to end on small sizes, so the commands recorded in docs/benchmarks.md keep working."""

from __future__ import annotations

from typing import Any


def test_bench_resume_runs_on_a_small_archive(cli: Any) -> None:
    result = cli("--json", "bench", "resume", "--memories", "300", "--resumes", "6", "--budget", "20000")
    assert result.code == 0, result.err
    data = result.json()
    assert data["memories"] == 300 and data["resumes"] == 6
    assert data["p50_ms"] > 0 and data["p95_ms"] >= data["p50_ms"]
    assert data["included"]["persona"] == 6 and data["included"]["checkpoint"] == 6
    assert data["included"]["agreements"] == 6
