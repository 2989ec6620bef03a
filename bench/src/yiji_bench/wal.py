"""``yiji bench wal``: the WAL's largest size while one writer commits and readers recall without pause.

Readers run in their own processes (as MCP servers and CLI calls of other programs would) and recall
in a tight loop, so some read snapshot is almost always open; the writer commits events one by one
and in batches. The same load runs twice in fresh databases, first without yiji's WAL limit (the size
SQLite's automatic checkpoints alone allow), then with it.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Any

from yiji.config import Config
from yiji.db import WAL_LIMIT_BYTES, Database
from yiji.models import EventIn
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji_bench.synthetic import sentences
from yiji_bench.synthetic_archive import QUERIES

__all__ = ["run_wal_bench"]


def _reader(path: str, stop: EventType, counts: Any, index: int) -> None:
    service = MemoryService(Database(path), Config(db=Path(path)))
    done = errors = 0
    while not stop.is_set():
        try:
            service.memory_recall(RecallQuery(query=QUERIES[done % len(QUERIES)], persona="b", project="b"))
            done += 1
        except Exception:
            errors += 1
    service.close()
    counts[2 * index] = done
    counts[2 * index + 1] = errors


def _phase(folder: Path, name: str, seconds: float, readers: int, limit: int | None) -> dict[str, Any]:
    path = folder / f"{name}.db"
    db = Database(path, wal_limit_bytes=limit)
    service = MemoryService(db, Config(db=path))
    texts = sentences(2000, seed=7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    service.event_submit_many(
        [
            EventIn(
                id=f"seed-{i}", persona="b", project="b", session="s", role="user", text=t, occurred_at=start
            )
            for i, t in enumerate(texts)
        ]
    )
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    counts = ctx.Array("q", 2 * readers)
    procs = [ctx.Process(target=_reader, args=(str(path), stop, counts, i)) for i in range(readers)]
    for p in procs:
        p.start()
    time.sleep(3)  # the readers are up and recalling
    peak = 0
    sampling = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not sampling.wait(0.02):
            peak = max(peak, db.wal_bytes())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    written = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        batch = [
            EventIn(
                id=f"w-{written + i}",
                persona="b",
                project="b",
                session=f"s{written // 500}",
                role="user",
                text=texts[(written + i) % len(texts)],
                occurred_at=start + timedelta(seconds=written + i),
            )
            for i in range(500)
        ]
        service.event_submit_many(batch)
        written += len(batch)
        for i in range(20):
            service.event_submit(
                EventIn(
                    id=f"one-{written}",
                    persona="b",
                    project="b",
                    session="one",
                    role="user",
                    text=texts[i],
                    occurred_at=start,
                )
            )
            written += 1
    stop.set()
    for p in procs:
        p.join()
    sampling.set()
    sampler.join()
    peak = max(peak, db.wal_bytes())
    service.close()
    recalls = sum(counts[2 * i] for i in range(readers))
    errors = sum(counts[2 * i + 1] for i in range(readers))
    return {
        "wal_limit_bytes": limit,
        "events_written": written,
        "recalls": recalls,
        "reader_errors": errors,
        "peak_wal_mib": round(peak / 1024 / 1024, 1),
        "database_mib": round(path.stat().st_size / 1024 / 1024, 1),
    }


def run_wal_bench(seconds: float = 30.0, readers: int = 3) -> dict[str, Any]:
    """Run the load without, then with, the WAL limit; report each phase's peak WAL and reader errors."""
    with tempfile.TemporaryDirectory(prefix="yiji-wal-") as tmp:
        folder = Path(tmp)
        unlimited = _phase(folder, "unlimited", seconds, readers, None)
        limited = _phase(folder, "limited", seconds, readers, WAL_LIMIT_BYTES)
    return {"seconds": seconds, "readers": readers, "phases": [unlimited, limited]}
