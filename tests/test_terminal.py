"""What a person at a terminal sees and sends: Ctrl-C stops ``yiji serve``; a write that creates a new
database says so. A real pseudo-terminal (``pty.fork``), ``yiji`` as a child process, real SQLite files."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_yiji
from .mcp_helpers import INITIALIZE
from .terminal_helpers import Terminal


def test_ctrl_c_stops_serve_on_a_terminal(tmp_path: Path) -> None:
    term = Terminal.start("--db", str(tmp_path / "y.db"), "serve")
    try:
        term.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert term.read_until(b'"serverInfo"', 30), term.text()  # the server is up and reading
        term.write(b"\x03")  # Ctrl-C: the terminal sends SIGINT to the foreground process group
        code = term.wait(10)
        assert code is not None, f"serve still runs 10 s after Ctrl-C: {term.text()[-500:]}"
        assert code in (0, 130), (code, term.text()[-3000:])
        assert "Traceback" not in term.text() and "KeyboardInterrupt" not in term.text()
    finally:
        term.close()


def test_ctrl_d_still_ends_serve_on_a_terminal(tmp_path: Path) -> None:
    term = Terminal.start("--db", str(tmp_path / "y.db"), "serve")
    try:
        term.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert term.read_until(b'"serverInfo"', 30), term.text()
        term.write(b"\x04")  # Ctrl-D at the start of a line: end of input
        assert term.wait(10) == 0, term.text()[-3000:]
        assert "Traceback" not in term.text()
    finally:
        term.close()


def test_a_write_that_creates_a_database_says_where_on_a_terminal(tmp_path: Path) -> None:
    mistyped = tmp_path / "data" / "yjii.db"
    submit = ("event", "submit", "--session", "s", "--role", "user", "hello")
    term = Terminal.start("--db", str(mistyped), *submit)
    try:
        assert term.wait(60) == 0, term.text()
        assert f"yiji: created a new database at {mistyped}" in term.text()
        assert "stored" in term.text()
    finally:
        term.close()
    again = Terminal.start("--db", str(mistyped), *submit)
    try:
        assert again.wait(60) == 0, again.text()
        assert "new database" not in again.text()  # only the write that created it says so
    finally:
        again.close()


def test_no_notice_where_standard_error_is_no_terminal(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.db"
    sent = run_yiji("--db", str(fresh), "event", "submit", "--session", "s", "--role", "user", "hi")
    assert sent.code == 0 and sent.err == "", sent.err
    assert fresh.exists()


def test_the_read_only_refusal_names_the_path_given(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "yiji.db"
    refused = run_yiji("--db", str(missing), "memory", "list")
    assert refused.code == 2
    assert f"db: no database exists at {missing};" in refused.err
    assert not missing.parent.exists()
