"""``yiji bench host-ingest``: wall time of one ``yiji host-ingest`` process, start-up included.

A host runs the command at every compaction (twice) and after new messages, so what it waits for is a whole
process: interpreter start, imports, opening the database, the transaction and the acknowledgement. Each run
spawns the installed ``yiji host-ingest`` (as ``yiji bench startup`` does, with the environment of a user's
installation) with a batch of bilingual messages for a fresh session of a temporary database; a second series
sends an empty batch (the cursor probe), which is start-up and one read. A third series makes the same call
in this process (capture use case already imported), which is the work without start-up.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from .startup import user_environment, yiji_command
from .synthetic import sentences

__all__ = ["run_host_ingest_bench"]


def _batch(session: str, messages: int, texts: list[str]) -> str:
    lines = [
        {
            "event_id": f"dsh:bench:{session}:{seq}",
            "message_id": f"m-{session}-{seq}",
            "session": session,
            "seq": seq,
            "role": "user" if seq % 2 == 0 else "assistant",
            "text": texts[seq % len(texts)],
            "occurred_at": f"2026-11-30T10:{seq // 60:02d}:{seq % 60:02d}Z",
        }
        for seq in range(messages)
    ]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _time(command: list[str], stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"host-ingest exited {proc.returncode}")
    return elapsed * 1000


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "min_ms": round(ordered[0], 1),
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(ordered[-1], 1),
    }


def _in_process(db: str, runs: int, messages: int, texts: list[str]) -> list[float]:
    from yiji.config import Config
    from yiji.domain.capture import plain_batch
    from yiji.service.capture import open_capture

    samples = []
    capture = open_capture(Config(db=Path(db)))
    try:
        for run in range(runs):
            session = f"in-process-{run}"
            lines = [json.loads(x) for x in _batch(session, messages, texts).splitlines()]
            start = time.perf_counter()
            batch = plain_batch(
                {"instance": "bench", "session": session, "expect_cursor": -1, "lines": lines}
            )
            assert batch is not None
            result = capture.ingest(batch)
            samples.append((time.perf_counter() - start) * 1000)
            if not result.ok:
                raise RuntimeError("in-process host_ingest was refused")
    finally:
        capture.close()
    return samples


def run_host_ingest_bench(messages: int = 50, runs: int = 10, target_ms: float = 300.0) -> dict[str, Any]:
    texts = sentences(max(messages, 1))
    with tempfile.TemporaryDirectory(prefix="yiji-bench-host-") as tmp:
        db = str(Path(tmp) / "bench.db")
        base = [*yiji_command(), "--db", db, "host-ingest", "--instance", "bench"]
        env = user_environment()
        _time([*base, "--session", "warm-up", "--expect-cursor", "-1"], _batch("warm-up", 2, texts), env)
        ingest = [
            _time(
                [*base, "--session", f"s{run}", "--expect-cursor", "-1", "--reason", "pre-summarize"],
                _batch(f"s{run}", messages, texts),
                env,
            )
            for run in range(runs)
        ]
        probe = [_time([*base, "--session", f"s{run}"], "", env) for run in range(runs)]
        work = _in_process(db, runs, messages, texts)
    timings = _summary(ingest)
    return {
        "messages": messages,
        "runs": runs,
        "ingest": timings,
        "probe": _summary(probe),
        "in_process": _summary(work),
        "target_ms": target_ms,
        "target_met": timings["median_ms"] <= target_ms,
    }
