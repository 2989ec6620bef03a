"""``yiji bench ingest``: events per second, committed one by one and in one batch, and size per 1,000.

The same run also stores the same texts with the raw loop of :mod:`yiji.store.ingest_baseline` (SQLite
in WAL mode at the same ``synchronous`` level, one event row and one FTS row each, the same
segmentation) and reports each yiji figure as a ratio of it. The two are interleaved (single commits
event by event, batches alternately on fresh files, best of two) so that machine load affects both alike.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yiji.config import Config
from yiji.domain.segment import document_body
from yiji.models import EventIn
from yiji.service import open_service
from yiji.store.ingest_baseline import RawIngest, RawRow
from yiji.timeutil import FixedClock

from .synthetic import sentences

__all__ = ["run_ingest_bench"]


def _events(texts: list[str], prefix: str) -> list[EventIn]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        EventIn(
            id=f"{prefix}-{i}",
            session=f"s{i // 50}",
            role="user" if i % 2 == 0 else "assistant",
            text=text,
            occurred_at=start + timedelta(seconds=i),
        )
        for i, text in enumerate(texts)
    ]


def _raw_rows(events: list[EventIn]) -> list[RawRow]:
    return [(e.id or "", e.session, e.role, e.text, str(e.occurred_at)) for e in events]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def _figures(count: int, seconds: float, raw_seconds: float) -> dict[str, Any]:
    return {
        "events": count,
        "seconds": round(seconds, 3),
        "events_per_second": round(count / seconds, 1),
        "raw_events_per_second": round(count / raw_seconds, 1),
        "ratio": round(raw_seconds / seconds, 2),
    }


def _write_jsonl(path: Path, events: list[EventIn]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for event in events:
            out.write(event.model_dump_json(exclude_none=True) + "\n")


def run_ingest_bench(
    single: int = 2000, batched: int = 20000, synchronous: str = "FULL", imported: int = 100_000
) -> dict[str, Any]:
    """Measure ingestion into fresh database files in a temporary folder (removed afterwards).

    With ``imported`` > 0, also write that many events to a JSON Lines file and time ``event_import`` of
    it (reading, validation and the batched transactions), reported beside the batch rate as a ratio."""
    results: dict[str, Any] = {"synchronous": synchronous}
    clock = FixedClock(datetime(2026, 6, 1, tzinfo=UTC), timedelta(milliseconds=1))
    document_body("预热")  # rjieba builds its dictionary before any timing
    with tempfile.TemporaryDirectory(prefix="yiji-bench-") as tmp:
        events = _events(sentences(single), "one")
        raw = RawIngest(Path(tmp) / "raw-single.db", synchronous)
        service = open_service(Config(db=Path(tmp) / "single.db", synchronous=synchronous), clock=clock)  # type: ignore[arg-type]
        elapsed = raw_elapsed = 0.0
        # One event each in turn, the raw loop first on even events and second on odd ones: the disk's
        # sync time drifts from second to second, and each side stores its event from caches the other
        # side just used, as a host's single submit arrives after other work.
        for number, (event, row) in enumerate(zip(events, _raw_rows(events), strict=True)):
            if number % 2 == 0:
                raw_elapsed += raw.store((row,), batched=False)
            t0 = time.perf_counter()
            service.event_submit(event)
            elapsed += time.perf_counter() - t0
            if number % 2 == 1:
                raw_elapsed += raw.store((row,), batched=False)
        raw.close()
        service.close()
        results["single"] = _figures(single, elapsed, raw_elapsed)

        events = _events(sentences(batched, seed=11), "batch")
        rows = _raw_rows(events)
        best = best_raw = float("inf")
        size = 0
        for attempt in range(2):
            raw = RawIngest(Path(tmp) / f"raw-batched-{attempt}.db", synchronous)
            best_raw = min(best_raw, raw.store(rows, batched=True))
            raw.close()
            many = Path(tmp) / f"batched-{attempt}.db"
            service = open_service(Config(db=many, synchronous=synchronous), clock=clock)  # type: ignore[arg-type]
            t0 = time.perf_counter()
            service.event_submit_many(events)
            best = min(best, time.perf_counter() - t0)
            service.db.checkpoint()
            service.close()
            size = _size(many)
        results["batched"] = _figures(batched, best, best_raw) | {
            "bytes_per_1000_events": round(size / batched * 1000)
        }
        if imported:
            source = Path(tmp) / "events.jsonl"
            _write_jsonl(source, _events(sentences(imported, seed=13), "import"))
            target = Path(tmp) / "imported.db"
            service = open_service(Config(db=target, synchronous=synchronous), clock=clock)  # type: ignore[arg-type]
            t0 = time.perf_counter()
            summary = service.event_import(source)
            elapsed = time.perf_counter() - t0
            service.close()
            rate = imported / elapsed
            results["imported"] = {
                "events": imported,
                "inserted": summary.inserted,
                "file_bytes": source.stat().st_size,
                "seconds": round(elapsed, 3),
                "events_per_second": round(rate, 1),
                "ratio_to_batched": round(rate / results["batched"]["events_per_second"], 3),
            }
    return results
