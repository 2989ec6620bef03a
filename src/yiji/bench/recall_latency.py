"""``yiji bench recall``: recall latency and peak memory on a synthetic bilingual archive."""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji.bench.synthetic_archive import QUERIES, build_archive
from yiji.config import Config
from yiji.db import Database
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

__all__ = ["peak_rss_mib", "run_recall_bench"]


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def run_recall_bench(events: int = 100_000, rounds: int = 5, limit: int = 10) -> dict[str, Any]:
    """Build ``events`` events + as many memories, then time ``rounds`` passes over the query set."""
    with tempfile.TemporaryDirectory(prefix="yiji-recall-") as tmp:
        path = Path(tmp) / "recall.db"
        clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
        service = MemoryService(Database(path, synchronous="OFF"), Config(db=path), clock=clock)
        started = time.perf_counter()
        with tqdm(total=events, desc="building archive", unit="event", disable=None, leave=False) as bar:
            build_archive(service, events, progress=bar.update)
        build_seconds = time.perf_counter() - started
        rss_after_build = peak_rss_mib()
        latencies: list[float] = []
        hits = 0
        for _ in range(rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                result = service.memory_recall(
                    RecallQuery(query=query, persona="bench", project="bench", limit=limit)
                )
                latencies.append(time.perf_counter() - t0)
                hits += bool(result.items)
        service.close()
        size = sum(p.stat().st_size for p in Path(tmp).glob("recall.db*"))
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2)

    return {
        "events": events,
        "memories": events // 2 * 2,
        "queries": len(latencies),
        "queries_with_results": hits,
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "max_ms": round(latencies[-1] * 1000, 2),
        "build_seconds": round(build_seconds, 1),
        "database_mib": round(size / 1024 / 1024, 1),
        "peak_rss_mib_after_build": rss_after_build,
        "peak_rss_mib": peak_rss_mib(),
    }
