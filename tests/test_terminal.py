"""What a person at a terminal sees and sends: Ctrl-C stops ``yiji serve``; a write that creates a new
database says so. A real pseudo-terminal (``pty.fork``), ``yiji`` as a child process, real SQLite files."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from .conftest import run_yiji
from .fakeprovider import CHAT_PATH, FakeProvider, slow
from .mcp_helpers import INITIALIZE
from .terminal_helpers import Terminal


def _stops_at_ctrl_c(term: Terminal) -> None:
    """Ctrl-C (the terminal sends SIGINT to the foreground process group) ends ``yiji serve`` within 10 s,
    exit 0 or 130, without a traceback."""
    term.write(b"\x03")
    code = term.wait(10)
    assert code is not None, f"serve still runs 10 s after Ctrl-C: {term.text()[-500:]}"
    assert code in (0, 130), (code, term.text()[-3000:])
    assert "Traceback" not in term.text() and "KeyboardInterrupt" not in term.text()


def test_ctrl_c_stops_serve_on_a_terminal(tmp_path: Path) -> None:
    term = Terminal.start("--db", str(tmp_path / "y.db"), "serve")
    try:
        term.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert term.read_until(b'"serverInfo"', 30), term.text()  # the server is up and reading
        _stops_at_ctrl_c(term)
    finally:
        term.close()


def test_ctrl_c_stops_serve_while_a_call_waits_for_the_model(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    """A tool call still running in a worker thread (here an extraction waiting for a slow model) does not
    keep the server alive after Ctrl-C, and the event it was working on stays as it was."""
    db = tmp_path / "y.db"
    assert (
        run_yiji("--db", str(db), "event", "submit", "--session", "s", "--role", "user", "我住在杭州").code
        == 0
    )
    config = tmp_path / "yiji.toml"
    config.write_text(
        f'[extraction]\nbase_url = "{fake_provider.base_url}"\nmodel = "fake"\ntimeout_seconds = 120\n',
        encoding="utf-8",
    )
    fake_provider.answer_chat(lambda request: slow(60))
    term = Terminal.start("--db", str(db), "--config", str(config), "serve")
    try:
        term.write(json.dumps(INITIALIZE).encode() + b"\n")
        assert term.read_until(b'"serverInfo"', 30), term.text()
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "extraction_run", "arguments": {}}
        term.write(json.dumps(initialized).encode() + b"\n" + json.dumps(call).encode() + b"\n")
        deadline = time.monotonic() + 30
        while not fake_provider.requests_to(CHAT_PATH) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake_provider.requests_to(CHAT_PATH), term.text()[-2000:]  # the call waits for the model
        _stops_at_ctrl_c(term)
    finally:
        term.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT text, extraction_state FROM events").fetchall() == [
            ("我住在杭州", "none")
        ]


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
