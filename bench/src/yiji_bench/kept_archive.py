"""A synthetic recall archive that is built once and reused (``--keep PATH``).

Building a million-event archive takes minutes, so benchmarks that need one can keep it. A kept file
records how many events it was built with; asking for another size is refused instead of silently
timing a different archive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from yiji.config import Config
from yiji.db import Database
from yiji.errors import InvalidInput
from yiji.models import EventIn
from yiji.service import MemoryService
from yiji.timeutil import FixedClock
from yiji_bench.synthetic_archive import archive_end, build_archive

__all__ = ["KeptArchive", "open_archive", "open_planted"]

_MARKER = ".events"


def bench_clock(events: int) -> datetime:
    """ "Now" for a benchmark: the day after the archive's last event.

    A fixed date would leave the newest memories of a large archive in the future (a million events
    ten minutes apart span 19 years), where no recall may return them.
    """
    return max(datetime(2026, 1, 1, tzinfo=UTC), archive_end(events) + timedelta(days=1))


@dataclass(frozen=True)
class KeptArchive:
    service: MemoryService
    path: Path
    built: bool
    build_seconds: float | None
    plant_seconds: float | None = None
    """Seconds spent copying the archive and planting events into the copy in this run, if it was."""

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))


def _marker(path: Path) -> Path:
    return path.with_name(path.name + _MARKER)


def open_archive(path: Path, events: int, *, progress: Callable[[int], object] | None = None) -> KeptArchive:
    """Open the archive at ``path`` built with ``events`` events, building it first when absent."""
    marker = _marker(path)
    clock = FixedClock(bench_clock(events))
    if path.exists():
        if not marker.exists() or marker.read_text(encoding="utf-8").strip() != str(events):
            raise InvalidInput("keep", f"the file exists but is not a {events}-event benchmark archive")
        service = MemoryService(Database(path), Config(db=path), clock=clock)
        return KeptArchive(service, path, built=False, build_seconds=None)
    service = MemoryService(Database(path, synchronous="OFF"), Config(db=path), clock=clock)
    started = time.perf_counter()
    build_archive(service, events, progress=progress)
    service.db.checkpoint()
    seconds = time.perf_counter() - started
    marker.write_text(f"{events}\n", encoding="utf-8")
    return KeptArchive(service, path, built=True, build_seconds=seconds)


def open_planted(base: KeptArchive, events: int, planted: list[EventIn], stamp: str) -> KeptArchive:
    """A copy of the archive ``base`` with the ``planted`` events added in one transaction.

    ``base`` stays as it is (and is closed): the copy lies beside it (``<name>-planted.db``, made with
    the backup path), is reused while its marker holds ``stamp`` (what was planted), and is made again
    otherwise.
    """
    clock = FixedClock(bench_clock(events))
    path = base.path.with_name(f"{base.path.stem}-planted.db")
    marker = _marker(path)
    if path.exists() and marker.exists() and marker.read_text(encoding="utf-8").strip() == stamp:
        base.service.close()
        service = MemoryService(Database(path), Config(db=path), clock=clock)
        return replace(base, service=service, path=path)
    started = time.perf_counter()
    marker.unlink(missing_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    base.service.backup_create(path)
    base.service.close()
    service = MemoryService(Database(path, synchronous="OFF"), Config(db=path), clock=clock)
    service.event_submit_many(planted)
    service.db.checkpoint()
    marker.write_text(f"{stamp}\n", encoding="utf-8")
    return replace(base, service=service, path=path, plant_seconds=time.perf_counter() - started)
