"""``yiji bench hooks``: wall time of the Claude Code hooks as the host runs them, start-up included.

A host starts one process per hook and waits for it under a timeout, so what counts is the whole process:
interpreter start, imports, the database, the work, the output. Every run spawns the installed ``yiji hook
claude-code EVENT`` with the host's JSON payload on standard input and the environment of a user's
installation (bytecode kept; one warm-up run first). Wall time is what the host waits for; the processes'
CPU time (user + system) is reported beside it, since on a busy machine the two part.

- ``SessionStart`` (``source`` startup, a new session) on a project scope of ``events`` stored events
  (bilingual, committed through the capture path): the session-start pack it prints, and its size as the
  host sends it on (JSON-escaped; at most 8,000 characters).
- ``Stop`` on a Claude Code transcript of ``lines`` lines (per turn: the prompt, a thinking block, a tool
  call, its result and the reply): the first run captures the whole transcript; each incremental run
  follows one more turn appended to it.
- ``UserPromptSubmit --recall`` after them: each prompt (Chinese and English in turn, words of the stored
  turns) recalled from the scope and printed for the model, as a host that asks for recall on every prompt
  runs it.
- ``Stop`` with ``[extraction] auto`` off and on (:func:`run_stop_auto_bench`): the same incremental runs,
  a person's pause apart, while the detached automatic run the hook starts works against a loopback
  endpoint.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yiji.domain.host_pack import HOST_CONTEXT_CHARS, sent_size

from .host_ingest import _summary
from .startup import user_environment, yiji_command
from .synthetic import sentences

__all__ = ["run_hooks_bench", "run_stop_auto_bench"]

LINES_PER_TURN = 5
SESSION_START_TARGET_MS = 300
"""p95 wall time of SessionStart on the reference machine at load 1."""


def _turn(session: str, cwd: str, n: int, texts: list[str]) -> list[dict[str, Any]]:
    at = datetime(2026, 11, 30, tzinfo=UTC) + timedelta(seconds=n * 10)
    common = {
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.0.30",
    }
    blocks: list[tuple[str, Any]] = [
        ("user", texts[(2 * n) % len(texts)]),
        ("assistant", [{"type": "thinking", "thinking": "Checking.", "signature": "s"}]),
        ("assistant", [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": "ls"}}]),
        ("user", [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "README.md"}]),
        ("assistant", [{"type": "text", "text": texts[(2 * n + 1) % len(texts)]}]),
    ]
    return [
        {
            **common,
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": f"{n:08x}-{k:04x}-4000-8000-{session[-12:]}",
            "timestamp": (at + timedelta(seconds=k)).isoformat().replace("+00:00", "Z"),
        }
        for k, (kind, content) in enumerate(blocks)
    ]


def _append(path: Path, lines: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _stop_transcript(
    root: Path, work: Path, session: str, lines: int, texts: list[str]
) -> tuple[Path, int, dict[str, Any]]:
    """Write ``session``'s transcript of about ``lines`` lines under ``root``: its path, its number of
    turns and the ``Stop`` hook's payload for it."""
    transcript = root / f"{session}.jsonl"
    turns = max(1, lines // LINES_PER_TURN)
    _append(transcript, [x for n in range(turns) for x in _turn(session, str(work), n, texts)])
    stop = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(work),
        "hook_event_name": "Stop",
    }
    return transcript, turns, stop


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(argv: list[str], payload: dict[str, Any], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU time (user + system) of one hook process in ms, and what it printed."""
    cpu = _cpu()
    start = time.perf_counter()
    proc = subprocess.run(
        argv, input=json.dumps(payload), capture_output=True, text=True, env=env, check=False
    )
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"the hook exited {proc.returncode}")
    return elapsed, (_cpu() - cpu) * 1000, proc.stdout


def _fill_scope(db: Path, project: str, events: int, texts: list[str]) -> None:
    """``events`` conversation events in the project, committed through the capture path."""
    from yiji.config import Config
    from yiji.domain.capture import CaptureBatch, CaptureLine
    from yiji.service.capture import open_capture
    from yiji.timeutil import parse_time

    capture = open_capture(Config(db=db))
    start = parse_time("2026-09-01T00:00:00Z", "start")
    try:
        lines = tuple(
            CaptureLine(
                f"claude-code:history:{seq}",
                str(seq),
                "history",
                seq,
                "user" if seq % 2 == 0 else "assistant",
                texts[seq % len(texts)],
                start + timedelta(minutes=seq),
            )
            for seq in range(events)
        )
        result = capture.ingest(CaptureBatch("claude-code", "history", -1, "backfill", None, project, lines))
        if not result.ok:
            raise RuntimeError("the history was refused")
    finally:
        capture.close()


def run_hooks_bench(
    events: int = 10_000, runs: int = 20, lines: int = 2_000, incremental_runs: int = 10
) -> dict[str, Any]:
    from yiji.domain.transcripts import scope_project

    texts = sentences(400)
    with tempfile.TemporaryDirectory(prefix="yiji-bench-hooks-") as tmp:
        root = Path(tmp)
        work = root / "atlas"
        (work / ".git").mkdir(parents=True)
        db = root / "bench.db"
        env = {**user_environment(), "YIJI_DB": str(db), "YIJI_HOOK_LOG": str(root / "hooks.log")}
        project = scope_project(str(work), "git-root", "default")
        _fill_scope(db, project, events, texts)
        hook = [*yiji_command(), "hook", "claude-code"]

        def start_payload(run: int) -> dict[str, Any]:
            return {
                "session_id": f"start-{run}",
                "transcript_path": str(root / f"start-{run}.jsonl"),
                "cwd": str(work),
                "hook_event_name": "SessionStart",
                "source": "startup",
            }

        _run([*hook, "SessionStart"], start_payload(-1), env)  # warm-up: bytecode written
        starts = [_run([*hook, "SessionStart"], start_payload(run), env) for run in range(runs)]
        if not all(out.strip() for _, _, out in starts):
            raise RuntimeError("SessionStart printed no context")
        printed = max(len(out) for _, _, out in starts)
        sent = max(sent_size(out) for _, _, out in starts)

        session = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
        transcript, turns, stop = _stop_transcript(root, work, session, lines, texts)
        first, first_cpu, _ = _run([*hook, "Stop"], stop, env)
        incremental = []
        for n in range(turns, turns + incremental_runs):
            _append(transcript, _turn(session, str(work), n, texts))
            incremental.append(_run([*hook, "Stop"], stop, env))
        prompts = texts[:incremental_runs]  # sentences() alternates Chinese and English

        def prompt_payload(prompt: str) -> dict[str, Any]:
            return {**stop, "hook_event_name": "UserPromptSubmit", "prompt": prompt}

        recalls = [_run([*hook, "UserPromptSubmit", "--recall"], prompt_payload(p), env) for p in prompts]
        if not all(out.strip() for _, _, out in recalls):
            raise RuntimeError("UserPromptSubmit --recall printed no memories")
        if (root / "hooks.log").exists():
            raise RuntimeError("a hook logged a failure during the benchmark")
    start_summary = _summary([wall for wall, _, _ in starts])
    start_cpu = _summary([cpu for _, cpu, _ in starts])
    incremental_summary = _summary([wall for wall, _, _ in incremental])
    incremental_cpu = _summary([cpu for _, cpu, _ in incremental])
    return {
        "session_start": {
            "events": events,
            "runs": runs,
            "printed_chars": printed,
            "sent_chars": sent,
            "sent_limit": HOST_CONTEXT_CHARS,
            **start_summary,
            "cpu": start_cpu,
            "target_p95_ms": SESSION_START_TARGET_MS,
            "target_met": start_summary["p95_ms"] < SESSION_START_TARGET_MS and sent <= HOST_CONTEXT_CHARS,
        },
        "stop": {
            "lines": turns * LINES_PER_TURN,
            "messages": turns * 2,
            "first_ms": round(first, 1),
            "first_cpu_ms": round(first_cpu, 1),
            "first_target_ms": 3000,
            "incremental_runs": incremental_runs,
            "incremental": incremental_summary,
            "incremental_cpu": incremental_cpu,
            "incremental_target_ms": 500,
            "target_met": first < 3000 and incremental_summary["p95_ms"] < 500,
        },
        "prompt_recall": {
            "runs": len(recalls),
            **_summary([wall for wall, _, _ in recalls]),
            "cpu": _summary([cpu for _, cpu, _ in recalls]),
        },
    }


class _QuietEndpoint:
    """A loopback OpenAI-compatible chat-completions endpoint that answers no memories after ``delay``
    seconds (a model's time per event), for the automatic run the ``Stop`` hook starts."""

    def __init__(self, delay: float) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        answer = json.dumps(
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": '{"memories": []}'},
                    }
                ]
            }
        ).encode()
        calls = [0]

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                calls[0] += 1
                time.sleep(delay)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.calls = calls
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def _wait_unlocked(lock: Path, seconds: float) -> None:
    """Wait until no automatic run holds ``lock`` (or ``seconds`` passed)."""
    import fcntl

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not lock.exists():
            return
        with lock.open("rb") as file:
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                time.sleep(0.05)


def _auto_home(
    root: Path, base_url: str, auto: bool, max_events: int, lines: int, texts: list[str]
) -> dict[str, Any]:
    """A user's installation in ``root``: a git checkout, a configuration with an extraction endpoint (the
    automatic run on or off), and a ``lines``-line transcript already captured by one ``Stop``."""
    work = root / "atlas"
    (work / ".git").mkdir(parents=True)
    db = root / "bench.db"
    config = root / "yiji.toml"
    config.write_text(
        "[extraction]\n"
        f'base_url = "{base_url}"\nmodel = "bench"\ntimeout_seconds = 30\n'
        f"auto = {'true' if auto else 'false'}\nauto_max_events = {max_events}\n"
        "auto_time_limit_seconds = 60\n",
        encoding="utf-8",
    )
    log = root / "hooks.log"
    env = {**user_environment(), "YIJI_DB": str(db), "YIJI_CONFIG": str(config), "YIJI_HOOK_LOG": str(log)}
    session = "5f0c1e2a-8b7d-4c3e-9f10-a1b2c3d4e5f6"
    transcript, turns, stop = _stop_transcript(root, work, session, lines, texts)
    home = {"env": env, "stop": stop, "transcript": transcript, "work": work, "session": session, "log": log}
    home |= {"lock": db.with_name(db.name + "-extraction.lock"), "next_turn": turns, "timed": []}
    return home


def run_stop_auto_bench(
    runs: int = 20, lines: int = 500, gap: float = 2.0, delay: float = 0.2, max_events: int = 20
) -> dict[str, Any]:
    """``Stop`` as the host waits for it with ``[extraction] auto`` off and on: each run follows one more
    turn appended to the transcript, ``gap`` seconds after the previous hook ended (a person's turn), on a
    database that holds a ``lines``-line transcript already captured. With auto on, the hook starts the
    detached run, which sends up to ``max_events`` events to a loopback endpoint answering after ``delay``
    seconds, while the next turns' hooks run: the run's CPU competes with them, as on a user's machine.

    The runs go in four blocks, off, on, on, off, so that a machine whose load drifts during the
    benchmark weighs on both series alike; after an ``on`` block the automatic run is waited for."""
    texts = sentences(400)
    hook = [*yiji_command(), "hook", "claude-code", "Stop"]
    endpoint = _QuietEndpoint(delay)
    try:
        with tempfile.TemporaryDirectory(prefix="yiji-bench-auto-") as tmp:
            homes = {
                mode: _auto_home(Path(tmp) / mode, endpoint.base_url, mode == "on", max_events, lines, texts)
                for mode in ("off", "on")
            }
            for home in homes.values():
                _run(hook, home["stop"], home["env"])  # warm-up and the first capture
                time.sleep(1.0)  # a started run takes the lock
                _wait_unlocked(home["lock"], 120)
            half = max(1, runs // 2)
            for mode in ("off", "on", "on", "off"):
                home = homes[mode]
                for _ in range(half):
                    time.sleep(gap)
                    n = home["next_turn"]
                    _append(home["transcript"], _turn(home["session"], str(home["work"]), n, texts))
                    home["next_turn"] = n + 1
                    home["timed"].append(_run(hook, home["stop"], home["env"]))
                time.sleep(1.0)
                _wait_unlocked(home["lock"], 120)
            logged = {}
            for mode, home in homes.items():
                text = home["log"].read_text(encoding="utf-8") if home["log"].exists() else ""
                logged[mode] = text.count("extraction run --auto: tried")
                if "yiji hook" in text:
                    raise RuntimeError("a hook logged a failure during the benchmark")
            series = {mode: home["timed"] for mode, home in homes.items()}
    finally:
        endpoint.close()
    off = _summary([wall for wall, _, _ in series["off"]])
    on = _summary([wall for wall, _, _ in series["on"]])
    ratio = on["p95_ms"] / off["p95_ms"]
    return {
        "runs": len(series["on"]),
        "lines": lines,
        "gap_s": gap,
        "endpoint_delay_s": delay,
        "off": {**off, "cpu": _summary([cpu for _, cpu, _ in series["off"]])},
        "on": {**on, "cpu": _summary([cpu for _, cpu, _ in series["on"]])},
        "automatic_runs_logged": logged["on"],
        "endpoint_calls": endpoint.calls[0],
        "p95_ratio": round(ratio, 3),
        "target_ratio": 1.1,
        "target_met": ratio <= 1.1,
    }
