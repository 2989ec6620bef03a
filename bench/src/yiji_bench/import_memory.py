"""``yiji bench import``: peak memory of ``yiji import`` (a separate process) for a large archive.

The archive is exported from a synthetic archive (built once and kept with ``--keep DIR``), in JSONL
and JSON; each is imported into a new database by ``yiji import`` in its own process, whose peak
resident set size is reported with the archive's size on disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji_bench.kept_archive import open_archive

__all__ = ["run_import_bench"]

_CHILD = """
import resource, sys
from yiji.cli import main
code = main(sys.argv[1:])
print("peak_rss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def run_import_bench(events: int = 300_000, keep: Path | None = None) -> dict[str, Any]:
    """Export a kept ``events``-event archive as JSONL and JSON, import each in a child process."""
    rows = []
    with ExitStack() as stack:
        folder = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        with tqdm(total=events, desc=f"archive of {events}", unit="event", disable=None, leave=False) as bar:
            archive = open_archive(folder / f"recall-{events}.db", events, progress=bar.update)
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=folder)))
        for fmt in ("jsonl", "json"):
            path = work / f"archive.{fmt}"
            archive.service.archive_export(path, fmt)
            target = work / f"import-{fmt}.db"
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, "--db", str(target), "--json", "import", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            seconds = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(f"yiji import failed: {done.stderr.strip()[-500:]}")
            peak = next(
                int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("peak_rss_kib")
            )
            counts = json.loads(done.stdout)["counts"]
            rows.append(
                {
                    "format": fmt,
                    "archive_mib": round(path.stat().st_size / 1024 / 1024, 1),
                    "rows": sum(counts.values()),
                    "seconds": round(seconds, 1),
                    "peak_rss_mib": round(peak / 1024, 1),
                }
            )
            path.unlink()
            target.unlink()
        archive.service.close()
    return {"events": events, "imports": rows}
