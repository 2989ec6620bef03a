"""``yiji bench recall``: recall latency and peak memory on synthetic bilingual archives.

Several sizes can be timed in one run (``--events`` repeated); their query rounds are interleaved so
that a change in machine load hits every size alike. ``--keep DIR`` keeps the archives in ``DIR``
(``recall-<events>.db``) and reuses them on the next run.

With ``data`` (``--data``, LongMemEval_S), quality is measured too: LongMemEval haystacks are planted in
a copy of each archive (``recall-<events>-planted.db``, see :mod:`yiji_bench.planted`), the latency
rounds run on that copy, and the planted questions' recall is printed beside it with the exact BM25 row
over the same events. Loading the data file raises the peak RSS: measure memory without ``--data``.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji.models.recall import RecallQuery
from yiji_bench.kept_archive import KeptArchive, open_archive, open_planted
from yiji_bench.synthetic_archive import QUERIES, START, archive_end

__all__ = ["peak_rss_mib", "run_recall_bench"]


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def _pct(latencies: list[float], p: float) -> float:
    ordered = sorted(latencies)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)


def run_recall_bench(
    events: int | Sequence[int] = 100_000,
    rounds: int = 5,
    limit: int = 10,
    keep: Path | None = None,
    data: Path | None = None,
) -> dict[str, Any]:
    """Open (or build) one archive per size, then time ``rounds`` interleaved passes over the queries.

    Returns one result per size under ``archives`` (and, for a single size, its fields at the top
    level as well) plus the slowest queries of the largest archive.
    """
    sizes = [events] if isinstance(events, int) else list(dict.fromkeys(events))
    planting = _Planting(data) if data is not None else None
    with ExitStack() as stack:
        folder = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        archives: list[KeptArchive] = []
        for size in sizes:
            with tqdm(total=size, desc=f"archive of {size}", unit="event", disable=None, leave=False) as bar:
                archive = open_archive(folder / f"recall-{size}.db", size, progress=bar.update)
            if planting is not None:
                archive = open_planted(archive, size, planting.events(size), planting.stamp(size))
            stack.callback(archive.service.close)
            archives.append(archive)
        rss_after_build = peak_rss_mib()
        latencies: list[list[float]] = [[] for _ in sizes]
        per_query: list[dict[str, list[float]]] = [{q: [] for q in QUERIES} for _ in sizes]
        hits = [0 for _ in sizes]
        for query in QUERIES:  # warm the page cache and the segmenter once
            for archive in archives:
                archive.service.memory_recall(
                    RecallQuery(query=query, persona="bench", project="bench", limit=limit)
                )
        for _ in range(rounds):
            for k, archive in enumerate(archives):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    found = archive.service.memory_recall(
                        RecallQuery(query=query, persona="bench", project="bench", limit=limit)
                    )
                    elapsed = time.perf_counter() - t0
                    latencies[k].append(elapsed)
                    per_query[k][query].append(elapsed)
                    hits[k] += bool(found.items)
        rows: list[dict[str, Any]] = []
        for k, archive in enumerate(archives):
            rows.append(
                {
                    "events": sizes[k],
                    "memories": sizes[k] // 2 * 2,
                    "queries": len(latencies[k]),
                    "queries_with_results": hits[k],
                    "p50_ms": _pct(latencies[k], 0.50),
                    "p95_ms": _pct(latencies[k], 0.95),
                    "max_ms": round(max(latencies[k]) * 1000, 2),
                    "built_now": archive.built,
                    "build_seconds": None
                    if archive.build_seconds is None
                    else round(archive.build_seconds, 1),
                    "database_mib": round(archive.size_bytes() / 1024 / 1024, 1),
                    "plant_seconds": None
                    if archive.plant_seconds is None
                    else round(archive.plant_seconds, 1),
                }
            )
        quality = (
            []
            if planting is None
            else [planting.quality(a, size) for a, size in zip(archives, sizes, strict=True)]
        )
        slowest = sorted(((q, min(ts)) for q, ts in per_query[-1].items()), key=lambda x: x[1], reverse=True)[
            :5
        ]
    result: dict[str, Any] = {
        "archives": rows,
        "rounds": rounds,
        "slowest_queries_largest": [{"query": q, "best_ms": round(t * 1000, 2)} for q, t in slowest],
        "peak_rss_mib_after_build": rss_after_build,
        "peak_rss_mib": peak_rss_mib(),
        "quality": quality or None,
    }
    if len(rows) > 1:
        result["p95_ratio_largest_to_smallest"] = round(rows[-1]["p95_ms"] / rows[0]["p95_ms"], 2)
    if len(rows) == 1:
        result.update(rows[0])
    return result


class _Planting:
    """The LongMemEval haystacks planted in each archive (read from the data file once)."""

    def __init__(self, data: Path) -> None:
        from yiji_bench.longmemeval import load_longmemeval

        self.data = load_longmemeval(data)
        self._planted: dict[int, Any] = {}

    def planted(self, size: int) -> Any:
        from yiji_bench.planted import plant

        if size not in self._planted:
            self._planted[size] = plant(self.data, START, archive_end(size))
        return self._planted[size]

    def events(self, size: int) -> Any:
        from yiji_bench.planted import planted_events

        return planted_events(self.planted(size), "bench", "bench")

    def stamp(self, size: int) -> str:
        """What is planted in the archive of ``size`` events: a digest of every planted event."""
        import hashlib

        digest = hashlib.sha256()
        for e in self.events(size):
            digest.update(f"{e.id}|{e.occurred_at.isoformat()}|{e.role}|{e.text}\n".encode())
        return digest.hexdigest()[:32]

    def quality(self, archive: KeptArchive, size: int) -> dict[str, Any]:
        from yiji_bench.planted import planted_quality
        from yiji_bench.synthetic import sentences

        result = planted_quality(
            archive.service, self.planted(size), sentences(size, seed=3), "bench", "bench"
        )
        result["table"] = result.pop("report").table()
        return {"events": size, **result}
