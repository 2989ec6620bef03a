"""Durability: acknowledged commits survive SIGKILL; concurrent writers never see a lock error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from yiji.db import Database
from yiji.service import MemoryService

from .conftest import run_yiji

WRITER = textwrap.dedent(
    """
    import sys
    from yiji.config import Config
    from yiji.models import EventIn
    from yiji.service import open_service

    path, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    service = open_service(Config(db=path))
    for i in range(count):
        result = service.event_submit(
            EventIn(id=f"{prefix}-{i}", session="s", role="user", text=f"第{i}条 message {i}")
        )
        print(result.event.id, result.event.seq, flush=True)
    """
)


def test_sigkill_loses_no_acknowledged_event(tmp_path: Path) -> None:
    path = tmp_path / "kill.db"
    Database(path).close()
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), "k", "1000000"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acknowledged: list[str] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            acknowledged.append(line.split()[0])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged += [line.split()[0] for line in proc.stdout.read().splitlines() if line.strip()]
    proc.stdout.close()
    assert len(acknowledged) >= 300
    db = Database(path)
    with db.read() as conn:
        stored = {r[0] for r in conn.execute("SELECT id FROM events")}
    db.close()
    assert set(acknowledged) <= stored
    doctor = run_yiji("--db", str(path), "--json", "doctor")
    assert doctor.code == 0, doctor.err
    assert json.loads(doctor.out)["ok"] is True


def test_two_processes_write_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "concurrent.db"
    Database(path).close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), prefix, "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for prefix in ("a", "b")
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err and "busy" not in err
    service = MemoryService(Database(path))
    with service.db.read() as conn:
        rows = conn.execute("SELECT id, seq FROM events").fetchall()
    service.close()
    assert len(rows) == 2000
    assert len({r[1] for r in rows}) == 2000
    acknowledged = {line.split()[0] for out, _ in outputs for line in out.splitlines()}
    assert acknowledged == {r[0] for r in rows}
