"""The automatic extraction run after capture (``[extraction] auto``), as hosts run the hooks: the hook
starts it detached and returns; it sends what was captured to a real loopback endpoint under a lock, at
most one per database, bounded in events and time; an endpoint that is down loses nothing and the next run
catches up; it logs counts, never a text or a path."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from yiji.cli.autorun import NICENESS

from .fakeprovider import CHAT_PATH, FakeProvider, chat_reply, slow
from .hook_fixtures import cc_payload, cc_turns, write_lines

S1 = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
PAIRS = [
    ("我喜欢用 SQLite 做本地存储，别用 Postgres", "好的，本地存储就用 SQLite。"),
    ("下周三要交季度报告，提醒我准备图表", "记下了：下周三交季度报告，需要准备图表。"),
    ("I moved to Berlin last spring.", "Noted: you live in Berlin now."),
]
SQLITE = {
    "text": "用户喜欢用 SQLite 做本地存储",
    "quote": "我喜欢用 SQLite 做本地存储",
    "kind": "preference",
    "basis": "user_statement",
    "confidence": 0.9,
}


def _config(root: Path, provider_url: str, **extraction: object) -> Path:
    lines = [
        "[extraction]",
        f'base_url = "{provider_url}"',
        'model = "fake"',
        "timeout_seconds = 30",
        "auto = true",
        *(f"{k} = {json.dumps(v)}" for k, v in extraction.items()),
    ]
    path = root / "yiji.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def home(home: dict[str, Any]) -> dict[str, Any]:
    """The hooks' home (tests/conftest.py) with this process's environment under its own, and a transcript
    of :data:`PAIRS`."""
    transcript = home["root"] / "s1.jsonl"
    write_lines(transcript, cc_turns(S1, str(home["project"]), PAIRS))
    return home | {"env": {**os.environ, **home["env"]}, "transcript": transcript}


def _stop(home: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], float]:
    payload = cc_payload("Stop", S1, home["transcript"], home["project"], stop_hook_active=False)
    started = time.monotonic()
    done = subprocess.run(  # noqa: PLW1510 - the exit status is asserted
        [sys.executable, "-m", "yiji", "hook", "claude-code", "Stop"],
        input=json.dumps(payload, ensure_ascii=False),
        capture_output=True,
        text=True,
        env=home["env"],
        timeout=60,
    )
    return done, time.monotonic() - started


def _auto_run(home: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "yiji", "extraction", "run", "--auto"],
        env=home["env"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _lock(home: dict[str, Any]) -> Path:
    db: Path = home["db"]
    return db.with_name(db.name + "-extraction.lock")


def _wait_for_run(home: dict[str, Any], seconds: float = 60) -> None:
    """Until a started run took the lock and released it."""
    lock = _lock(home)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if lock.exists():
            with lock.open("rb") as file:
                try:
                    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    time.sleep(0.05)
                    continue
            log = home["root"] / "hooks.log"
            if log.exists() and "extraction run --auto" in log.read_text(encoding="utf-8"):
                return
        time.sleep(0.05)
    raise AssertionError("no automatic run ended in time")


def _states(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT role, text, extraction_state FROM events ORDER BY seq").fetchall()
    return {f"{r[0]}:{r[1][:12]}": r[2] for r in rows}


def _memories(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT m.quote, e.text FROM memories m JOIN events e ON e.id = m.event_id"
        ).fetchall()


def test_the_stop_hook_starts_a_detached_run_that_extracts_what_it_captured(
    home: dict[str, Any], fake_provider: FakeProvider
) -> None:
    home["env"]["YIJI_CONFIG"] = str(_config(home["root"], fake_provider.base_url))
    fake_provider.answer_chat(
        lambda request: (
            chat_reply({"memories": [SQLITE]})
            if "SQLite 做本地存储" in request["messages"][-1]["content"].split("\nEVENT (")[1]
            else None
        )
    )
    done, _ = _stop(home)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    _wait_for_run(home)
    assert len(fake_provider.requests_to(CHAT_PATH)) == 3  # the three user turns, once each
    states = _states(home["db"])
    assert [s for k, s in states.items() if k.startswith("user:")] == ["done"] * 3
    assert [s for k, s in states.items() if k.startswith("assistant:")] == ["none"] * 3
    assert [(q, q in t) for q, t in _memories(home["db"])] == [(SQLITE["quote"], True)]
    log = (home["root"] / "hooks.log").read_text(encoding="utf-8")
    assert "extraction run --auto: tried 3 events: completed 3, 1 memory stored" in log
    for private in ("SQLite", "Berlin", str(home["root"]), "fake"):
        assert private not in log

    # nothing new captured, nothing started; a new turn is sent once, the old ones never again
    assert _stop(home)[0].returncode == 0
    time.sleep(1.0)
    assert len(fake_provider.requests_to(CHAT_PATH)) == 3
    write_lines(
        home["transcript"], cc_turns(S1, str(home["project"]), [("我养了一只猫叫年糕", "好名字！")], first=3)
    )
    assert _stop(home)[0].returncode == 0
    deadline = time.monotonic() + 60
    while len(fake_provider.requests_to(CHAT_PATH)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    assert len(fake_provider.requests_to(CHAT_PATH)) == 4


def test_an_endpoint_that_is_down_loses_nothing_and_the_next_run_catches_up(
    home: dict[str, Any], fake_provider: FakeProvider, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    home["env"]["YIJI_CONFIG"] = str(_config(home["root"], dead))
    assert _stop(home)[0].returncode == 0
    _wait_for_run(home)
    log = (home["root"] / "hooks.log").read_text(encoding="utf-8")
    assert "tried 1 event: completed 0" in log and "the endpoint could not be reached" in log
    assert "not tried 2 (the endpoint failed)" in log
    assert set(_states(home["db"]).values()) <= {"none", "pending"}

    home["env"]["YIJI_CONFIG"] = str(_config(home["root"], fake_provider.base_url))
    run = _auto_run(home)
    assert (run.returncode, run.stdout) == (0, "")
    assert len(fake_provider.requests_to(CHAT_PATH)) == 3
    assert [s for k, s in _states(home["db"]).items() if k.startswith("user:")] == ["done"] * 3


def test_one_run_per_database_bounded_in_events_and_time(
    home: dict[str, Any], fake_provider: FakeProvider
) -> None:
    home["env"]["YIJI_CONFIG"] = str(
        _config(home["root"], fake_provider.base_url, auto_max_events=2, auto_time_limit_seconds=0.5)
    )
    lock = _lock(home)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a+b") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        done, _ = _stop(home)
        assert done.returncode == 0
        run = _auto_run(home)
        assert run.returncode == 0
    assert fake_provider.requests_to(CHAT_PATH) == []  # the lock was held: no run sent anything

    fake_provider.script_chat(slow(30))  # one call longer than the time limit
    started = time.monotonic()
    run = _auto_run(home)
    assert run.returncode == 0 and time.monotonic() - started < 15
    log = (home["root"] / "hooks.log").read_text(encoding="utf-8")
    assert "time limit of 0.5 s reached in a call" in log
    assert set(_states(home["db"]).values()) <= {"none"}  # the cut call left its event as it was

    # at most auto_max_events per run: the rest waits for the next run
    _config(home["root"], fake_provider.base_url, auto_max_events=2)
    assert _auto_run(home).returncode == 0
    assert len(fake_provider.requests_to(CHAT_PATH)) == 3
    log = (home["root"] / "hooks.log").read_text(encoding="utf-8")
    assert "tried 2 events: completed 2" in log and "not tried 1 (the limit was reached)" in log


def test_auto_off_starts_nothing(home: dict[str, Any], fake_provider: FakeProvider) -> None:
    config = _config(home["root"], fake_provider.base_url)
    config.write_text(
        config.read_text(encoding="utf-8").replace("auto = true", "auto = false"), encoding="utf-8"
    )
    home["env"]["YIJI_CONFIG"] = str(config)
    assert _stop(home)[0].returncode == 0
    time.sleep(1.5)
    assert fake_provider.requests_to(CHAT_PATH) == []
    assert not _lock(home).exists()


def test_the_stop_bench_measures_both_series_and_the_automatic_runs() -> None:
    from yiji_bench.hooks import run_stop_auto_bench

    result = run_stop_auto_bench(runs=2, lines=10, gap=0.1, delay=0.01, max_events=5)
    assert result["runs"] == 2
    assert result["off"]["p95_ms"] > 0 and result["on"]["p95_ms"] > 0
    assert result["automatic_runs_logged"] >= 1 and result["endpoint_calls"] >= 2
    assert result["target_met"] is (result["p95_ratio"] <= 1.1)


def test_host_ingest_starts_the_automatic_run_after_it_stored_something(
    home: dict[str, Any], fake_provider: FakeProvider
) -> None:
    home["env"]["YIJI_CONFIG"] = str(_config(home["root"], fake_provider.base_url))
    lines = [
        {
            "event_id": f"dsh:h1:s1:{seq}",
            "message_id": f"msg-{seq}",
            "session": "s1",
            "seq": seq,
            "role": "user" if seq % 2 == 0 else "assistant",
            "text": text,
            "occurred_at": f"2026-11-30T10:00:{seq:02d}+08:00",
        }
        for seq, text in enumerate(["我喜欢用 SQLite 做本地存储", "好的。"])
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "yiji",
            "host-ingest",
            "--instance",
            "h1",
            "--session",
            "s1",
            "--expect-cursor",
            "-1",
        ],
        input="\n".join(json.dumps(x, ensure_ascii=False) for x in lines),
        capture_output=True,
        text=True,
        env=home["env"],
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and json.loads(done.stdout) == {"ok": True, "cursor": 1}
    _wait_for_run(home)
    assert len(fake_provider.requests_to(CHAT_PATH)) == 1


def _auto_runs_of(db: Path) -> list[int]:
    """The ids of the automatic runs over ``db`` under way (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or one that just ended
            continue
        if str(db).encode() in words and b"--auto" in words:
            found.append(int(entry.name))
    return found


def test_the_started_run_gives_the_processor_to_the_host_first(
    home: dict[str, Any], fake_provider: FakeProvider
) -> None:
    """The detached run lowers its CPU priority (nice) before anything else, so that on a busy machine the
    host's next turn and its hooks run first; the hook itself keeps the priority it was started with."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("reads the priority of a process from /proc (Linux)")
    home["env"]["YIJI_CONFIG"] = str(_config(home["root"], fake_provider.base_url))
    fake_provider.script_chat(slow(3.0))  # the run waits on its first call: time to look at it
    done, _ = _stop(home)
    assert done.returncode == 0
    deadline = time.monotonic() + 60
    while not (runs := _auto_runs_of(home["db"])) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(runs) == 1, runs
    own = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[16])
    stat = Path(f"/proc/{runs[0]}/stat").read_text().rsplit(")", 1)[1].split()
    assert int(stat[16]) == min(19, own + NICENESS)
    _wait_for_run(home)


def _vectors(db: Path) -> tuple[int, int]:
    """Vectors stored for memories and for events."""
    with sqlite3.connect(db) as conn:
        memories = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        events = conn.execute("SELECT count(*) FROM event_embeddings").fetchone()[0]
    return memories, events


def test_the_automatic_run_leaves_the_offline_models_vectors_to_reindex(
    home: dict[str, Any], fake_provider: FakeProvider
) -> None:
    """Loading the offline model costs seconds of CPU beside the host's next turn: the automatic run
    stores memories without it, and `yiji reindex --vectors` embeds them."""
    config = _config(home["root"], fake_provider.base_url)
    config.write_text(config.read_text(encoding="utf-8") + '[embedding]\nprovider = "local"\n', "utf-8")
    home["env"]["YIJI_CONFIG"] = str(config)
    fake_provider.answer_chat(
        lambda request: (
            chat_reply({"memories": [SQLITE]})
            if "SQLite 做本地存储" in request["messages"][-1]["content"].split("\nEVENT (")[1]
            else None
        )
    )
    assert _stop(home)[0].returncode == 0
    _wait_for_run(home)
    assert [(q, q in t) for q, t in _memories(home["db"])] == [(SQLITE["quote"], True)]
    assert _vectors(home["db"]) == (0, 0)

    scopes = subprocess.run(
        [sys.executable, "-m", "yiji", "--json", "scopes"],
        env=home["env"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (scope,) = json.loads(scopes.stdout)["scopes"]
    reindex = subprocess.run(
        [sys.executable, "-m", "yiji", "reindex", "--vectors", "--project", scope["project"]],
        env=home["env"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert reindex.returncode == 0, reindex.stderr
    # the offline model was the embedder all along; the event with a memory is found through it
    assert _vectors(home["db"]) == (1, scope["events"] - 1)
