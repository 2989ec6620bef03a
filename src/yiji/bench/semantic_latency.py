"""``yiji bench semantic``: semantic and deep recall latency over a synthetic archive with vectors.

The archive is the bilingual synthetic one of ``yiji bench recall``: each user turn has two derived
memories and each assistant turn stays a raw event, so ``2n/3`` events give about ``n`` vectors.
``sample`` distinct texts are embedded with the real offline model (that is the reindex throughput
reported); when the archive is larger, the remaining memories reuse those vectors in turn,
each with a small random perturbation so no two rows are equal. The scan cost depends on the number and
dimension of vectors, not on what they say; recall quality is measured by ``yiji bench madial`` and
``yiji bench locomo``. Every timed recall embeds its query with the real model.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji.bench.recall_latency import peak_rss_mib
from yiji.bench.synthetic_archive import QUERIES, build_archive
from yiji.config import Config
from yiji.db import Database
from yiji.models.common import Scope
from yiji.models.recall import RecallMode, RecallQuery
from yiji.providers.embeddings import LocalEmbedder
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

__all__ = ["run_semantic_bench"]


def run_semantic_bench(
    vectors: int = 2000, mode: RecallMode = "semantic", rounds: int = 3, sample: int = 2000, limit: int = 10
) -> dict[str, Any]:
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="yiji-semantic-") as tmp:
        path = Path(tmp) / "semantic.db"
        clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC))
        embedder = LocalEmbedder()
        service = MemoryService(
            Database(path, synchronous="OFF"), Config(db=path), clock=clock, embedder=embedder
        )
        started = time.perf_counter()
        events = max(2, vectors * 2 // 3)
        with tqdm(total=events, desc="building archive", unit="event", disable=None, leave=False) as bar:
            build_archive(service, events, progress=bar.update)
        build_seconds = time.perf_counter() - started
        scope = Scope(persona="bench", project="bench")
        with service.db.read() as conn:
            sources = service._sources(conn, scope, None, None)
        keys = list(sources)
        distinct = [sources[k] for k in keys[: min(sample, len(keys))]]
        t0 = time.perf_counter()
        embedded = service._embed_matrix(embedder, distinct)
        embed_seconds = time.perf_counter() - t0
        rng = np.random.default_rng(7)
        rows = embedded[np.arange(len(keys)) % len(distinct)]
        if len(keys) > len(distinct):
            rows = rows + rng.normal(0.0, 0.01, rows.shape).astype(np.float32)
        service._commit_vectors(scope, embedder.fingerprint, sources, rows, replace_scope=True)
        t0 = time.perf_counter()
        service.memory_recall(RecallQuery(query=QUERIES[0], persona="bench", project="bench", mode=mode))
        first = time.perf_counter() - t0
        latencies: list[float] = []
        for _ in range(rounds):
            for query in QUERIES:
                t0 = time.perf_counter()
                service.memory_recall(
                    RecallQuery(query=query, persona="bench", project="bench", limit=limit, mode=mode)
                )
                latencies.append(time.perf_counter() - t0)
        scan_limit = service.config.recall.semantic_scan_limit
        service.close()
    latencies.sort()

    def pct(p: float) -> float:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000, 2)

    return {
        "vectors": len(keys),
        "mode": mode,
        "scan_limit": scan_limit,
        "sample": len(distinct),
        "vectors_per_second": round(len(distinct) / embed_seconds, 1),
        "build_seconds": round(build_seconds, 1),
        "first_ms": round(first * 1000, 1),
        "queries": len(latencies),
        "p50_ms": pct(0.50),
        "p95_ms": pct(0.95),
        "max_ms": round(latencies[-1] * 1000, 2),
        "peak_rss_mib": peak_rss_mib(),
    }
