"""``yiji bench startup``: wall time of whole ``yiji`` processes against ``python -c pass``.

Each command runs ``runs`` times, interleaved with the baseline, so that machine load affects all of
them alike; the ratio of medians is the figure to compare across machines. The commands run as on a
user's installation, with compiled bytecode (``PYTHONDONTWRITEBYTECODE`` is removed from their
environment, so the warm-up run writes it where it is missing).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji_bench.kept_archive import open_archive

__all__ = ["run_startup_bench", "user_environment", "yiji_command"]


def yiji_command() -> list[str]:
    """The installed ``yiji`` script next to this interpreter, or ``python -m yiji``."""
    script = Path(sys.executable).with_name("yiji")
    return [str(script)] if script.exists() else [sys.executable, "-m", "yiji"]


def user_environment() -> dict[str, str]:
    """The environment of a timed command, as on a user's installation: Python may keep compiled bytecode
    (the warm-up run writes it where it is missing), and no ``YIJI_`` variable of the caller changes what
    is measured."""
    return {
        k: v for k, v in os.environ.items() if not k.startswith("YIJI_") and k != "PYTHONDONTWRITEBYTECODE"
    }


def _wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def run_startup_bench(runs: int = 10, events: int = 100_000, keep: Path | None = None) -> dict[str, Any]:
    """Time ``python -c pass``, ``yiji --help`` and ``yiji recall`` on an ``events``-event archive."""
    with ExitStack() as stack:
        folder = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"recall-{events}.db"
        with tqdm(total=events, desc=f"archive of {events}", unit="event", disable=None, leave=False) as bar:
            archive = open_archive(path, events, progress=bar.update)
        archive.service.close()
        env = user_environment()
        yiji = yiji_command()
        scope = ["--persona", "bench", "--project", "bench"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "yiji --help": [*yiji, "--help"],
            "yiji recall (Chinese)": [*yiji, "--db", str(path), *scope, "recall", "在杭州喜欢什么"],
            "yiji recall (English)": [*yiji, "--db", str(path), *scope, "recall", "vintage camera"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the page cache once
            _wall(argv, env)
        for _ in range(runs):
            for name, argv in commands.items():
                times[name].append(_wall(argv, env))
    base = statistics.median(times["python -c pass"])
    rows = []
    for name, ts in times.items():
        row: dict[str, Any] = {
            "name": name,
            "median_ms": round(statistics.median(ts) * 1000, 1),
            "min_ms": round(min(ts) * 1000, 1),
        }
        if name != "python -c pass":
            row["ratio"] = round(statistics.median(ts) / base, 1)
        rows.append(row)
    return {"runs": runs, "events": events, "commands": rows}
