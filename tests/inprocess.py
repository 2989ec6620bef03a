"""``yiji`` run in the test's own process: :func:`run_cli` takes what :func:`tests.conftest.run_yiji`
takes and gives what it gives, without starting an interpreter.

A command line run here sees what a process of its own would: the arguments, the environment
(``os.environ`` plus ``env``), the working directory, standard input (``input``, else an empty stream
that is not a terminal, like the subprocess's), and standard output and error as UTF-8 bytes that are
decoded as :func:`subprocess.run` with ``text=True`` decodes them (universal newlines). Its exit status is
what ``main`` returns, or the code of a ``SystemExit``; an exception that escapes is printed to its
standard error with exit status 1, as the interpreter would.

What a run changes in the process is put back afterwards: the environment (and the C library's time
zone, which follows ``TZ``), the working directory, ``sys.argv`` and the standard streams, the root
logger's handlers and level, the class attributes of the CLI's parser. yiji's own caches are emptied
before and after a run, since a process of its own starts without them (a rules file, the working
directory, how yiji was started are read again). What a run must not leave behind makes that run fail
rather than a later test: a thread still running, a file still open (a database connection not closed,
a log file, a socket).

Tests whose point is a process keep :func:`tests.conftest.run_yiji`: hooks, crashes, kills and faults,
start-up imports, signals, fresh installs and the commands the docs show, real hosts, several processes
at once, servers (``serve``, ``ui``), and anything that starts a process of its own
(``[extraction] auto``).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yiji
from yiji.cli import build_parser, main

__all__ = ["CliResult", "run_cli"]

_ARGV0 = str(Path(yiji.__file__).resolve().parent / "__main__.py")
"""``sys.argv[0]`` of ``python -m yiji``: the package's ``__main__.py``."""


@dataclass
class CliResult:
    """What a ``yiji`` command line ended with: its exit status and what it wrote."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


_PARSER = type(build_parser("recall"))
"""The CLI's parser class: ``main`` sets a class attribute of it (errors as JSON), put back after a run."""

THREAD_GRACE_SECONDS = 10.0
"""How long a thread a run started may take to end after the run returned (a loopback server's
handler notices a client that went away at its next write, later on a loaded machine)."""


def run_cli(
    *args: str, env: Mapping[str, str] | None = None, input: str | None = None, cwd: Path | None = None
) -> CliResult:
    """Run ``yiji args...`` in this process, as :func:`tests.conftest.run_yiji` runs it in another."""
    stdout, stderr = io.BytesIO(), io.BytesIO()
    threads = set(threading.enumerate())
    fds = _open_fds()
    with _process_state(env, cwd, input, stdout, stderr, args):
        code = _call_main(list(args))
    _check_left_behind(threads, fds)
    return CliResult(code, _decoded(stdout.getvalue()), _decoded(stderr.getvalue()))


def _call_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:  # what escapes main ends the process: its traceback, exit status 1
        traceback.print_exc()
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()


@contextlib.contextmanager
def _process_state(
    env: Mapping[str, str] | None,
    cwd: Path | None,
    input: str | None,
    stdout: io.BytesIO,
    stderr: io.BytesIO,
    args: tuple[str, ...],
) -> Iterator[None]:
    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_argv = sys.argv
    root = logging.getLogger()
    saved_logging = (list(root.handlers), root.level)
    saved_parser = dict(vars(_PARSER))
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode("utf-8")), encoding="utf-8")
    out = io.TextIOWrapper(stdout, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(stderr, encoding="utf-8", write_through=True)
    try:
        os.environ.update(env or {})
        _follow_time_zone(saved_environ)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = stdin, out, err
        sys.argv = [_ARGV0, *args]
        _clear_caches()
        yield
    finally:
        _clear_caches()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        root.handlers[:] = saved_logging[0]
        root.setLevel(saved_logging[1])
        for name in set(vars(_PARSER)) - set(saved_parser):
            delattr(_PARSER, name)
        for name, value in saved_parser.items():
            if vars(_PARSER).get(name) is not value and not name.startswith("__"):
                setattr(_PARSER, name, value)
        os.chdir(saved_cwd)
        changed = dict(os.environ)
        os.environ.clear()
        os.environ.update(saved_environ)
        _follow_time_zone(changed)
        for stream in (stdin, out, err):
            stream.detach()  # the bytes stay readable; the wrappers are not closed with them


def _clear_caches() -> None:
    """Empty the caches of yiji's own module-level functions (``functools.cache``, ``lru_cache``), as a
    new process starts without them: some hold what was read from outside (a rules file, the working
    directory, how yiji was started), which a later run must read again."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "yiji" or name.startswith("yiji.")):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()


def _follow_time_zone(before: Mapping[str, str]) -> None:
    """The C library reads ``TZ`` once; a process started with another one would see that one."""
    if before.get("TZ") != os.environ.get("TZ"):
        time.tzset()


def _decoded(data: bytes) -> str:
    """``data`` as ``subprocess.run(..., text=True)`` gives it: UTF-8 (the tests' locale), with
    universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()


def _open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each refers to (Linux: ``/proc/self/fd``)."""
    folder = Path("/proc/self/fd")
    found: dict[int, str] = {}
    if not folder.is_dir():
        return found
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):  # the descriptor of the listing itself is gone by now
            found[int(entry.name)] = os.readlink(entry)
    return found


def _process_wide(thread: threading.Thread) -> bool:
    """tqdm's monitor: one per process, started by the first progress bar (even a silent one), by design
    alive until the process ends."""
    monitor = sys.modules.get("tqdm._monitor")
    return monitor is not None and isinstance(thread, monitor.TMonitor)


def _check_left_behind(threads: set[threading.Thread], fds: dict[int, str]) -> None:
    """Fail the run that left a thread running or a file open, rather than a later test."""
    deadline = time.monotonic() + THREAD_GRACE_SECONDS
    for thread in set(threading.enumerate()) - threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [t.name for t in set(threading.enumerate()) - threads if t.is_alive() and not _process_wide(t)]
    assert not running, f"the in-process yiji run left threads running: {running}"
    # A file the process had open before the run is left aside: SQLite keeps the descriptor of a closed
    # connection while another connection of the process uses the same file (POSIX locks belong to the
    # process, and closing any descriptor would drop them), so a test that holds the database open sees
    # the run's closed connections as open descriptors.
    before = set(fds.values())
    opened = {
        fd: target
        for fd, target in _open_fds().items()
        if fds.get(fd) != target and target not in before and not target.startswith("/proc/")
    }
    assert not opened, f"the in-process yiji run left files open: {sorted(opened.values())}"
