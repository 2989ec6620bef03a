"""``yiji bench semantic``: semantic and deep recall latency over a synthetic archive with vectors.

The archive is the bilingual synthetic one of ``yiji bench recall``: each user turn has two derived
memories and each assistant turn stays a raw event, so ``2n/3`` events give about ``n`` vectors.
``sample`` distinct texts are embedded with the real offline model (that is the reindex throughput
reported); when the archive is larger, the remaining memories reuse those vectors in turn,
each with a small random perturbation so no two rows are equal. The scan cost depends on the number and
dimension of vectors, not on what they say; recall quality is measured by ``yiji bench madial`` and
``yiji bench locomo``. Every timed recall embeds its query with the real model.

The scan of the whole scope is timed apart, over the same queries: *load* reads the scope's packed
int8 vectors from SQLite into a process that holds none (as each CLI recall does; the MCP server keeps
them), beside *row load*, reading the float32 vectors of record one row per vector (what recall did
before the pack, and still does where no pack can be written); *scan* compares one query with every
vector and scores the best exactly (the int8 scan, the float32 rescoring and the eligibility checks of
a semantic recall). *Agreement* is the share of the
exhaustive float32 top 10 (cosines at or above the threshold, from the stored float32 vectors) that the
scan returns in its top 10; *int8 agreement* the same share for the int8 cosines alone, before the
exact rescoring.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji.config import Config
from yiji.db import Database
from yiji.models.common import Scope
from yiji.models.recall import RecallMode, RecallQuery
from yiji.providers.embeddings import LocalEmbedder
from yiji.service import MemoryService
from yiji.service.vectors import approximate_cosines
from yiji.timeutil import FixedClock
from yiji_bench.recall_latency import peak_rss_mib
from yiji_bench.synthetic_archive import QUERIES, build_archive

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
            sources = service.vector_index.sources(conn, scope, None, None)
        keys = list(sources)
        distinct = [sources[k] for k in keys[: min(sample, len(keys))]]
        t0 = time.perf_counter()
        embedded = service.vector_index.embed_matrix(embedder, distinct)
        embed_seconds = time.perf_counter() - t0
        rng = np.random.default_rng(7)
        rows = embedded[np.arange(len(keys)) % len(distinct)]
        if len(keys) > len(distinct):
            rows = rows + rng.normal(0.0, 0.01, rows.shape).astype(np.float32)
        service.vector_index.commit_vectors(scope, embedder.fingerprint, sources, rows, replace_scope=True)
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
        scan = _scan_figures(service, scope, embedder, rounds, limit)
        service.close()
    latencies.sort()

    def pct(p: float) -> float:
        return _pct(latencies, p)

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
        **scan,
    }


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)


def _scan_figures(
    service: MemoryService, scope: Scope, embedder: LocalEmbedder, rounds: int, limit: int
) -> dict[str, Any]:
    """Load and scan times of the whole scope (p50/p95) and top-``limit`` agreement with float32."""
    import numpy as np

    fingerprint = embedder.fingerprint
    queries = service.vector_index.embed_matrix(embedder, QUERIES)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    dim = int(queries.shape[1])
    threshold = service.vector_index.threshold(embedder)
    loads: list[float] = []
    scans: list[float] = []
    agreement: list[float] = []
    agreement_int8: list[float] = []
    row_loads: list[float] = []
    with service.db.read() as conn:
        for _ in range(max(rounds, 5)):  # the vectors of record, one row per vector (no pack)
            t0 = time.perf_counter()
            reference = service.vector_index.read_rows(conn, scope, fingerprint, dim)
            row_loads.append(time.perf_counter() - t0)
        for _ in range(max(rounds, 5)):
            service.vector_index.clear_cache()  # a process that holds no vectors yet
            t0 = time.perf_counter()
            cached = service.vector_index.scope_matrix(conn, scope, fingerprint, dim)
            loads.append(time.perf_counter() - t0)
        packed = cached.pack_through is not None
        for round_ in range(rounds):
            for query in queries:
                t0 = time.perf_counter()
                hits = service.vector_index.semantic_hits(
                    conn,
                    scope,
                    query,
                    embedder,
                    deep=False,
                    pool_size=2 * limit + 10,
                    lexical_keys=[],
                    valid_at_time=None,
                    occurred_before=None,
                    kinds=None,
                    since=None,
                    until=None,
                    include_raw=True,
                )
                scans.append(time.perf_counter() - t0)
                if round_:
                    continue
                exact = reference.matrix @ query
                order = [int(i) for i in np.argsort(-exact, kind="stable")[:limit] if exact[i] >= threshold]
                truth = {reference.keys[i] for i in order}
                if not truth:
                    continue
                found = sorted(hits.cosines, key=lambda k: -hits.cosines[k])[:limit]
                agreement.append(len(truth & set(found)) / len(truth))
                approx = approximate_cosines(cached.codes, cached.scales, query)
                best = np.argsort(-approx, kind="stable")[: len(truth)]
                agreement_int8.append(len(truth & {cached.keys[int(i)] for i in best}) / len(truth))
    return {
        "packed": packed,
        "row_load_p50_ms": _pct(row_loads, 0.50),
        "row_load_p95_ms": _pct(row_loads, 0.95),
        "load_p50_ms": _pct(loads, 0.50),
        "load_p95_ms": _pct(loads, 0.95),
        "scan_p50_ms": _pct(scans, 0.50),
        "scan_p95_ms": _pct(scans, 0.95),
        "top_k": limit,
        "agreement": round(sum(agreement) / len(agreement), 4) if agreement else None,
        "agreement_int8": round(sum(agreement_int8) / len(agreement_int8), 4) if agreement_int8 else None,
        "agreement_queries": len(agreement),
    }
