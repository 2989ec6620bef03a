"""The automatic extraction run after capture (``[extraction] auto = true``): started detached, bounded,
at most one per database.

A capture hook (``Stop``, ``SessionEnd``) or ``host-ingest`` that committed something calls :func:`start`.
It starts ``yiji extraction run --auto`` as a process of its own session (``start_new_session``; standard
input, output and error closed; its CPU priority lowered by :data:`NICENESS` before anything else) and
returns at once: the host's turn never waits for an endpoint. The
started run takes an exclusive lock on ``<database>-extraction.lock`` (``fcntl.flock``, released by the
kernel when the process ends, however it ends): a run that finds the lock held exits at once, so at most
one runs per database, and :func:`start` does not even start one while the lock is held.

The run (:func:`run_auto`) covers every scope, oldest event first, sends at most ``auto_max_events`` and
ends by ``auto_time_limit_seconds``: before a new event once the time has passed, and in the middle of a
call by a watchdog that ends the process (the event then stays as it was and the next run sends it; a
killed process cannot lose a commit). An endpoint that is down leaves every event as it was, with the
reason, for the next run. It logs one line to the hook log (``[hooks] log``, else ``hooks.log`` beside the
database): counts and reasons, never a text or a path.

Only the standard library is imported at module level: :func:`start` runs inside a hook.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yiji.config import Config
    from yiji.service import MemoryService

__all__ = ["lock_path", "run_auto", "start"]

NICENESS = 10
"""How much the started run lowers its CPU priority (``os.nice``), first thing, before its imports: on a
busy machine the host's next turn and its hooks get the processor before the background run (measured with
``yiji bench hooks --auto``, docs/benchmarks.md)."""
_CHILD = (
    "import os, sys\n"
    "try:\n"
    f"    os.nice({NICENESS})\n"
    "except (AttributeError, OSError):\n"
    "    pass\n"
    "from yiji.cli import main\n"
    "sys.exit(main())\n"
)
"""The started process: the lower priority, then ``yiji ARGS`` (``python -c`` puts ARGS in ``sys.argv``)."""
GRACE_SECONDS = 2.0
"""How long past ``auto_time_limit_seconds`` the watchdog waits for a run to end by itself."""


def lock_path(config: Config) -> Path:
    """The lock file of ``config``'s database: at most one automatic run holds it."""
    db = config.db.expanduser()
    return db.with_name(db.name + "-extraction.lock")


def _open_lock(path: Path) -> IO[bytes] | None:
    """The lock file, locked exclusively by this process; ``None`` when another process holds it (or
    locks are not available here)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): no automatic run
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    file = os.fdopen(fd, "r+b")
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        file.close()
        return None
    return file


def start(config: Config, config_file: str | None) -> bool:
    """Start a detached automatic run for ``config``'s database when ``[extraction] auto`` is on, an
    endpoint is configured and no run holds the lock; whether one was started. Never waits for it."""
    if not (config.extraction.auto and config.extraction.enabled):
        return False
    held = _open_lock(lock_path(config))
    if held is None:  # a run is under way (it catches up on what was just captured), or no locks here
        return False
    held.close()  # the started run takes the lock itself; two racing starts: the second exits at once
    command = [sys.executable, "-c", _CHILD, "--db", str(config.db.expanduser())]
    if config_file:
        command += ["--config", config_file]
    command += ["extraction", "run", "--auto"]
    subprocess.Popen(  # noqa: S603 - our own interpreter and package, no shell
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return True


def _log(config: Config, message: str) -> None:
    """One line in the hook log (``[hooks] log``, else ``hooks.log`` beside the database)."""
    path = config.hooks.log.expanduser() if config.hooks.log is not None else None
    if path is None:
        folder = config.db.expanduser().parent
        path = folder / "hooks.log" if folder.is_dir() else None
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} yiji extraction run --auto: {' '.join(message.split())}\n"
    if path is not None:
        try:
            with path.open("a", encoding="utf-8") as file:
                file.write(line)
            return
        except OSError:
            pass
    sys.stderr.write(line)


def summary_words(result: Mapping[str, Any]) -> str:
    """A run's summary in words: counts and reasons only."""
    from yiji.domain.endpoint_failures import describe
    from yiji.domain.wording import counted

    said = (
        f"tried {counted(result['tried'], 'event')}: completed {result['completed']}, "
        f"{counted(result['memories'], 'memory', 'memories')} stored"
        + (f" ({result['proposed']} proposed, waiting for review)" if result["proposed"] else "")
        + f", still pending {result['still_pending']}"
    )
    failures = result["failures"]
    if failures:
        said += " (" + "; ".join(f"{f['events']}: {describe(f['reason'], f.get('status'))}" for f in failures)
        said += ")"
    if result["not_tried"]:
        why = {
            "limit": "the limit was reached",
            "time": "the time limit was reached",
            "endpoint": "the endpoint failed",
        }.get(result["stopped"] or "", "")
        said += f"; not tried {result['not_tried']}" + (f" ({why})" if why else "")
    return said


def run_auto(service: MemoryService, config: Config) -> int:
    """The automatic run itself (``yiji extraction run --auto``): under the lock, bounded, logged."""
    lock = _open_lock(lock_path(config))
    if lock is None:
        return 0
    limit = config.extraction.auto_time_limit_seconds

    def expire() -> None:
        _log(config, f"time limit of {limit:g} s reached in a call; stopped, it waits for the next run")
        os._exit(0)

    watchdog = threading.Timer(limit + GRACE_SECONDS, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        if service.extractor is None:
            _log(config, "no extraction endpoint is configured; nothing was sent")
            return 0
        result = service.extraction_run(
            every_scope=True,
            limit=config.extraction.auto_max_events,
            time_limit=limit,
            offline_vectors=False,
        )
        if result["tried"]:
            _log(config, summary_words(result))
        return 0
    except Exception as exc:  # a detached run has no one to tell but the log
        from yiji.errors import YijiError

        _log(config, exc.message if isinstance(exc, YijiError) else f"unexpected {type(exc).__name__}")
        return 0
    finally:
        watchdog.cancel()
        lock.close()
