"""``yiji bench ingest``: events per second, committed one by one and in one batch, and size per 1,000."""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yiji.config import Config
from yiji.models import EventIn
from yiji.service import open_service
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


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


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
    with tempfile.TemporaryDirectory(prefix="yiji-bench-") as tmp:
        clock = FixedClock(datetime(2026, 6, 1, tzinfo=UTC), timedelta(milliseconds=1))
        one = Path(tmp) / "single.db"
        service = open_service(Config(db=one, synchronous=synchronous), clock=clock)  # type: ignore[arg-type]
        events = _events(sentences(single), "one")
        t0 = time.perf_counter()
        for event in events:
            service.event_submit(event)
        elapsed = time.perf_counter() - t0
        service.close()
        results["single"] = {
            "events": single,
            "seconds": round(elapsed, 3),
            "events_per_second": round(single / elapsed, 1),
        }
        many = Path(tmp) / "batched.db"
        service = open_service(Config(db=many, synchronous=synchronous), clock=clock)  # type: ignore[arg-type]
        events = _events(sentences(batched, seed=11), "batch")
        t0 = time.perf_counter()
        service.event_submit_many(events)
        elapsed = time.perf_counter() - t0
        service.db.checkpoint()
        service.close()
        results["batched"] = {
            "events": batched,
            "seconds": round(elapsed, 3),
            "events_per_second": round(batched / elapsed, 1),
            "bytes_per_1000_events": round(_size(many) / batched * 1000),
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
