"""The README's examples are tests: every shell line of README.md and README.zh-CN.md that a user would run
runs, in order, from a folder holding the repository's ``examples/``, against a fresh database, and must
succeed. ``uv run yiji ...`` runs as ``yiji ...``, the CLI installed in this environment. The lines of one
README share one shell, so a variable set on one line (``MEMORY_ID=$(...)``) serves the lines after it.

Only the lines in :data:`NOT_RUN` are left out, each for the reason given there; every entry must still match
a line of the READMEs, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READMES = ["README.md", "README.zh-CN.md"]

NOT_RUN: dict[str, str] = {
    # Needs the network (installs packages) or programs that are not yiji's.
    "pip install ": "installs from the package index; the demo it runs is tests/test_demo.py's",
    "CMAKE_ARGS=": "builds llama-cpp-python from the package index",
    "llama-server ": "an external model server",
    # Runs until interrupted.
    "uv run yiji ui": "a web server that runs until interrupted (and opens a browser); tests/test_ui*.py",
    # The development tools: the test suite (this file is part of it) and what CI runs beside it.
    "uv run pytest": "the test suite itself",
    "YIJI_UI_SCREENSHOTS=": "the browser tests, part of the test suite",
    "uv run ruff ": "the linter, which .ci/run runs",
    "uv run mypy": "the type checker, which .ci/run runs",
    "uv run yiji bench ": "minutes long, or needs downloaded data sets; tests/test_bench*.py run them small",
    # Decide proposals, which only extraction by a model makes (tests/test_review.py decides them).
    "uv run yiji review accept ": "needs a proposal, which only extraction with a model makes",
    "uv run yiji review reject ": "needs a proposal, which only extraction with a model makes",
    "uv run yiji review edit ": "needs a proposal, which only extraction with a model makes",
}


@dataclass(frozen=True)
class Line:
    readme: str
    number: int  # where the command starts in the README
    text: str  # the command as written, continuation lines included

    def not_run(self) -> str | None:
        return next((prefix for prefix in NOT_RUN if self.text.startswith(prefix)), None)


def shell_lines(readme: str, text: str) -> list[Line]:
    """The commands of the README's ``sh``/``bash`` blocks, in order (comment lines left out)."""
    lines: list[Line] = []
    block = False
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if raw.startswith("```"):
            block = raw.strip() in {"```sh", "```bash", "```shell"} if not block else False
            continue
        if not block:
            continue
        if not pending:
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            start = number
        pending.append(raw)
        if not raw.endswith("\\"):
            lines.append(Line(readme, start, "\n".join(pending)))
            pending = []
    return lines


def readme_lines(readme: str) -> list[Line]:
    return shell_lines(readme, (ROOT / readme).read_text(encoding="utf-8"))


def _script(lines: list[Line], out: Path) -> str:
    """One shell for all the lines; each line's output and status go to files of its own."""
    steps = []
    for i, line in enumerate(lines):
        command = line.text.replace("uv run yiji", "yiji")
        steps.append(
            f"{{\n{command}\n}} >{shlex.quote(str(out / f'{i}.out'))} 2>{shlex.quote(str(out / f'{i}.err'))}"
            f" </dev/null\necho $? >{shlex.quote(str(out / f'{i}.rc'))}"
        )
    return "\n".join(steps) + "\n"


@dataclass(frozen=True)
class Ran:
    line: Line
    code: int
    out: str
    err: str


def run_lines(lines: list[Line], work: Path) -> list[Ran]:
    """Run ``lines`` in one shell in ``work`` (a copy of ``examples/`` beside them), on a fresh database."""
    yiji = Path(sys.executable).parent / "yiji"
    assert yiji.exists(), f"the yiji command is not installed beside {sys.executable}"
    shutil.copytree(ROOT / "examples", work / "examples")
    out = work / ".out"
    out.mkdir()
    home = work / ".home"
    home.mkdir()
    (home / "config.toml").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("YIJI_")}
    env |= {
        "PATH": f"{yiji.parent}{os.pathsep}{env.get('PATH', '')}",
        "YIJI_DB": str(work / "yiji.db"),
        "YIJI_CONFIG": str(home / "config.toml"),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
    }
    script = work / ".readme.sh"
    script.write_text(_script(lines, out), encoding="utf-8")
    bash = shutil.which("bash")
    assert bash, "bash runs the README's lines"
    subprocess.run([bash, str(script)], cwd=work, env=env, timeout=900, check=True)
    return [
        Ran(
            line,
            int((out / f"{i}.rc").read_text().strip()),
            (out / f"{i}.out").read_text(encoding="utf-8", errors="replace"),
            (out / f"{i}.err").read_text(encoding="utf-8", errors="replace"),
        )
        for i, line in enumerate(lines)
    ]


def _failures(results: list[Ran]) -> str:
    return "\n\n".join(
        f"{r.line.readme}:{r.line.number}: exit {r.code}\n$ {r.line.text}\n{r.out[-1500:]}{r.err[-1500:]}"
        for r in results
        if r.code != 0
    )


@pytest.mark.parametrize("readme", READMES)
def test_readme_examples_run_in_order(readme: str, tmp_path: Path) -> None:
    lines = [
        line
        for line in shell_lines(readme, (ROOT / readme).read_text(encoding="utf-8"))
        if not line.not_run()
    ]
    assert len(lines) >= 30, [line.text for line in lines]
    results = run_lines(lines, tmp_path)
    assert _failures(results) == ""
    by_text = {r.line.text.split("#")[0].strip(): r for r in results}
    # A few outcomes that say the examples did what the README says, not just exit 0.
    read = next(r for t, r in by_text.items() if t.startswith('uv run yiji memory read "$MEMORY_ID"'))
    assert "我住在杭州" in read.out
    corrected = next(r for t, r in by_text.items() if t.startswith('uv run yiji memory correct "$MEMORY_ID"'))
    assert corrected.out.startswith("corrected: mem_")
    scanned = next(r for t, r in by_text.items() if t.startswith('uv run yiji doctor --scan-for "苏州"'))
    assert scanned.out.count(": not found") == 2 and "苏州" not in scanned.out
    ingested = next(r for t, r in by_text.items() if "--expect-cursor -1" in t)
    assert '"ok": true' in ingested.out
    assert (tmp_path / "restored.db").exists() and (tmp_path / "new.db").exists()


def test_every_line_left_out_is_still_in_a_readme() -> None:
    lines = [
        line
        for readme in READMES
        for line in shell_lines(readme, (ROOT / readme).read_text(encoding="utf-8"))
    ]
    used = {line.not_run() for line in lines} - {None}
    assert used == set(NOT_RUN)


def test_a_broken_example_fails(tmp_path: Path) -> None:
    text = (
        "Intro\n\n```sh\nuv run yiji event submit --id a1 --session s --role user \\\n    hello\n"
        "# a comment\nuv run yiji memory read mem_missing   # no such memory\nuv run yiji ui\n```\n\n"
        "```toml\nnot = 'shell'\n```\n"
    )
    lines = shell_lines("X.md", text)
    assert [(line.number, line.not_run()) for line in lines] == [(4, None), (7, None), (8, "uv run yiji ui")]
    results = run_lines(lines[:2], tmp_path)
    assert [r.code for r in results] == [0, 2]
    assert _failures(results).startswith("X.md:7: exit 2\n$ uv run yiji memory read mem_missing")
    assert re.search(r"not found: no memory with this id", results[1].err)
