"""The in-process CLI runner (:mod:`tests.inprocess`): a command line run there answers as a process of its
own does, and leaves the test's process as it found it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from .conftest import run_yiji
from .inprocess import run_cli

COMMAND_LINES = [
    ("--version",),
    ("recal", "杭州"),
    ("--json", "event", "submit", "--session", "s", "--role", "robot", "你好"),
    ("event", "submit", "--id", "e1", "--session", "s", "--role", "user", "--occurred-at",
     "2026-03-01T09:00:00+08:00", "--file", "-"),
    ("event", "show", "e1"),
    ("event", "show", "missing"),
]  # fmt: skip


def test_a_run_answers_as_a_process_does(tmp_path: Path) -> None:
    env = {"YIJI_DB": str(tmp_path / "y.db"), "TZ": "Asia/Tokyo", "HOME": str(tmp_path)}
    for number, words in enumerate(COMMAND_LINES):
        text = "我住在杭州\r\n第二行\n"
        # each command line runs on its own database, once in each way: the answers must be equal
        apart = {**env, "YIJI_DB": str(tmp_path / f"apart-{number}.db")}
        inside = {**env, "YIJI_DB": str(tmp_path / f"inside-{number}.db")}
        for setup in COMMAND_LINES[3:4] if "show" in words else ():
            assert run_yiji(*setup, env=apart, input=text).code == 0
            assert run_cli(*setup, env=inside, input=text).code == 0
        process = run_yiji(*words, env=apart, input=text)
        here = run_cli(*words, env=inside, input=text)
        assert (here.code, here.out, here.err) == (process.code, process.out, process.err), words


def test_a_run_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    before = (dict(os.environ), os.getcwd(), time.tzname)
    done = run_cli(
        "--json", "event", "list", cwd=tmp_path, env={"YIJI_DB": str(tmp_path / "y.db"), "TZ": "Asia/Tokyo"}
    )
    assert done.code == 2 and "no database exists" in done.err  # a command that only reads
    assert (dict(os.environ), os.getcwd(), time.tzname) == before


def test_a_run_sees_the_time_zone_it_is_given(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    sent = run_cli(
        "--db", db, "event", "submit", "--id", "e1", "--session", "s", "--role", "user",
        "--occurred-at", "2026-03-01T00:00:00Z", "hi",
    )  # fmt: skip
    assert sent.code == 0, sent.err
    tokyo = run_cli("--db", db, "event", "show", "e1", env={"TZ": "Asia/Tokyo", "YIJI_CONFIG": os.devnull})
    utc = run_cli("--db", db, "event", "show", "e1", env={"TZ": "UTC", "YIJI_CONFIG": os.devnull})
    assert "2026-03-01 09:00 (+09:00)" in tokyo.out and "2026-03-01 00:00 (+00:00)" in utc.out


def test_a_file_left_open_fails_the_run_that_left_it(tmp_path: Path) -> None:
    """The leak check itself: a descriptor a run opens and keeps is named."""
    from . import inprocess

    fds = inprocess._open_fds()
    kept = (tmp_path / "kept.txt").open("w", encoding="utf-8")
    try:
        with pytest.raises(AssertionError, match=r"left files open: .*kept\.txt"):
            inprocess._check_left_behind(set(threading.enumerate()), fds)
    finally:
        kept.close()
    inprocess._check_left_behind(set(threading.enumerate()), inprocess._open_fds())
