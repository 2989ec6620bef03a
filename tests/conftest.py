"""Shared fixtures: real SQLite files in tmp_path, a fixed clock, the CLI run as users run it, and the
loopback OpenAI-compatible server with an HTTP client to reach it."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import FakeProvider
from .inprocess import CliResult, run_cli

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
YIJI_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "yiji"
"""Where the tests find tools installed once for them (a Node.js, the coding hosts' packages)."""


def require_tool(name: str, reason: str) -> str:
    """Return the path of an external tool (a browser, Node.js), or skip the test with ``reason``.

    On a user's machine a missing tool is a skip with a reason. CI sets ``YIJI_CI_STRICT=1``, and there a
    missing tool fails the test instead, so those tests always run where it matters.
    """
    path = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
    if path:
        return path
    if os.environ.get("YIJI_CI_STRICT") == "1":
        pytest.fail(f"{name} is required in CI (YIJI_CI_STRICT=1): {reason}")
    pytest.skip(f"{name} not found: {reason}")


@pytest.fixture(autouse=True)
def english_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain CLI output follows the locale (``[display] language = "auto"``): the tests read it in English
    whatever the machine's locale is; tests of the language give their own (tests/test_language.py)."""
    monkeypatch.setenv("LC_ALL", "C.UTF-8")


@pytest.fixture
def anyio_backend() -> str:
    """The event loop of every ``pytest.mark.anyio`` test: asyncio, as the MCP SDK's stdio client uses."""
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "yiji.db"


@pytest.fixture
def home(tmp_path: Path, db_path: Path) -> dict[str, Any]:
    """What a coding host's hook runs in: a git checkout with a ``src`` folder to work in, the hook's
    environment (the database at ``db_path``, which the in-process ``cli`` uses too, a log file, a home
    folder) and the paths a test reads."""
    project = tmp_path / "work" / "atlas"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    env = {
        "YIJI_DB": str(db_path),
        "YIJI_HOOK_LOG": str(tmp_path / "hooks.log"),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
    }
    return {"root": tmp_path, "project": project, "env": env, "log": tmp_path / "hooks.log", "db": db_path}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(T0, timedelta(milliseconds=1))


@pytest.fixture
def service(db_path: Path, clock: FixedClock) -> Iterator[MemoryService]:
    svc = make_service(db_path, clock=clock)
    yield svc
    svc.close()


@pytest.fixture
def cli(db_path: Path) -> Any:
    """Run ``yiji`` in-process (:func:`tests.inprocess.run_cli`) against the test database (``--db`` is
    added)."""

    def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> CliResult:
        return run_cli("--db", str(db_path), *args, env=env, input=input)

    return run


def foreign_database(path: Path, user_version: int) -> Path:
    """A SQLite file at ``path`` that yiji did not make: one table ``x`` and this ``user_version``."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE x (y)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    return path


def config_env(tmp_path: Path, toml: str, db: str = "y.db") -> dict[str, str]:
    """The environment of a CLI run whose config file (in ``tmp_path``) holds ``toml``, with a database
    named ``db`` beside it."""
    path = tmp_path / "config.toml"
    path.write_text(toml, encoding="utf-8")
    return {"YIJI_CONFIG": str(path), "YIJI_DB": str(tmp_path / db)}


def run_yiji(
    *args: str, env: dict[str, str] | None = None, input: str | None = None, cwd: Path | None = None
) -> CliResult:
    """Run ``yiji`` as a subprocess, as a user would (in ``cwd`` when given)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "yiji", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=120,
        check=False,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A running :class:`FakeProvider` on 127.0.0.1, stopped after the test."""
    with FakeProvider() as provider:
        yield provider


@pytest.fixture
def http_client() -> Iterator[httpx.Client]:
    """A real ``httpx.Client`` (closed after the test), as the composition root would inject it."""
    with httpx.Client() as client:
        yield client
