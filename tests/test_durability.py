"""Durability: acknowledged commits survive SIGKILL; concurrent writers never see a lock error."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from yiji.db import Database

from .conftest import run_yiji
from .factory import make_service

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
    service = make_service(path)
    with service.db.read() as conn:
        rows = conn.execute("SELECT id, seq FROM events").fetchall()
    service.close()
    assert len(rows) == 2000
    assert len({r[1] for r in rows}) == 2000
    acknowledged = {line.split()[0] for out, _ in outputs for line in out.splitlines()}
    assert acknowledged == {r[0] for r in rows}


def _indexed(path: Path) -> tuple[int, int]:
    """(events, events in the lexical index) of a database file, read without yiji (0, 0 before its
    tables exist)."""
    if not path.exists():
        return 0, 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        indexed = conn.execute("SELECT count(*) FROM event_fts").fetchone()[0]
    except sqlite3.OperationalError:  # created, not yet migrated
        return 0, 0
    finally:
        conn.close()
    return int(events), int(indexed)


def _kill_restore(backup: Path, target: Path, *, after: float | None) -> None:
    """SIGKILL a restore ``after`` seconds, or (``None``) the moment any restored row is visible."""
    proc = subprocess.Popen([sys.executable, "-m", "yiji", "--db", str(target), "restore", str(backup)])
    if after is not None:
        time.sleep(after)
    else:
        deadline = time.monotonic() + 120
        while _indexed(target)[0] == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_killed_restore_leaves_nothing_or_every_row_indexed(tmp_path: Path) -> None:
    count = 3000
    history = tmp_path / "history.jsonl"
    rows = [
        {"id": f"h-{i}", "session": f"s{i // 50}", "role": "user", "text": f"第{i}条：我们聊到了西湖和断桥"}
        for i in range(count)
    ]
    history.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    source = tmp_path / "source.db"
    assert run_yiji("--db", str(source), "event", "import", str(history)).code == 0
    backup = tmp_path / "backup.db"
    assert run_yiji("--db", str(source), "backup", str(backup)).code == 0
    started = time.monotonic()
    assert run_yiji("--db", str(tmp_path / "timed.db"), "restore", str(backup)).code == 0
    whole = time.monotonic() - started
    outcomes = []
    # at a third and two thirds of a whole restore, and the moment its rows become visible
    for step, after in enumerate([whole / 3, whole * 2 / 3, None]):
        folder = tmp_path / f"kill-{step}"
        folder.mkdir()
        target = folder / "restored.db"
        _kill_restore(backup, target, after=after)
        events, indexed = _indexed(target)
        assert (events, indexed) in ((0, 0), (count, count)), (step, events, indexed)
        outcomes.append(events)
        if events == 0:  # the next restore does the job and removes the dead run's private copy
            again = run_yiji("--db", str(target), "restore", str(backup))
            assert again.code == 0, again.err
            assert _indexed(target) == (count, count)
        else:  # killed between the commit and removing its private copy: doctor --clean removes it
            assert run_yiji("--db", str(target), "doctor", "--clean").code == 0
        assert [p.name for p in folder.iterdir() if ".part" in p.name] == []
        recalled = run_yiji("--db", str(target), "--json", "recall", "断桥", "--limit", "1").json()
        assert recalled["items"], step
    assert 0 in outcomes  # at least one kill landed during the restore
