"""The documentation's examples are tests: every shell line of the README and of the task pages in docs/
that a user would run runs, in order, from a folder holding the repository's ``examples/``, against a fresh
database, and must succeed. The README's Quickstart runs first, so the examples run on a database where the
demo already ran, as they would on a new user's machine; the demo keeps to a scope of its own, so the
examples that follow find their default scope empty. The docs write yiji run from the checkout as the
Quickstart leaves it, ``.uv/bin/uv run --no-dev yiji ...``; here that runs as ``yiji ...``, the CLI installed
in this environment. The lines of one chain share one shell, so a variable set on one line
(``MEMORY_ID=$(...)``) serves the lines after it.

Only the lines in :data:`NOT_RUN` are left out, and the install steps in :data:`INSTALL_STEPS` are taken off
the front of their line, each for the reason given there; every entry must still match a line of the docs,
so the lists cannot outlive what they excuse. Every page of docs/ with shell examples is in a chain or in
:data:`OTHER_PAGES` with the reason.
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

ROOT = Path(__file__).resolve().parent.parent

# Each chain runs in one shell on one fresh database, page after page: the README, then the task pages in
# the order a reader follows them (docs/README.md lists them).
CHAINS: dict[str, list[str]] = {
    "en": [
        "README.md",
        "docs/cli.md",
        "docs/memories.md",
        "docs/review.md",
        "docs/recall.md",
        "docs/corrections.md",
        "docs/resume.md",
        "docs/operations.md",
        "docs/extraction.md",
        "docs/development.md",
    ],
    "zh": ["README.zh-CN.md", "docs/memories.zh-CN.md", "docs/review.zh-CN.md", "docs/recall.zh-CN.md"],
}

LOCALES = {"en": "C.UTF-8", "zh": "zh_CN.UTF-8"}
"""The locale each chain runs in."""

OTHER_PAGES: dict[str, str] = {
    "docs/benchmarks.md": "benchmarks: minutes long, or on downloaded data; tests/test_bench*.py run them",
    "docs/probe-demo.md": "a run against two local chat models",
    "docs/host-capture.md": "the adapter's npm install and tests; tests/test_deepseek_harness.py runs them",
    "docs/host-capture.zh-CN.md": "the same, in Chinese",
}

INSTALL_STEPS: dict[str, str] = {
    "python3 -m pip install --target .uv uv && ": "installs uv from the package index; .ci/run runs the "
    "Quickstart as written on a fresh clone",
}

NOT_RUN: dict[str, str] = {
    # Needs the network (installs packages) or programs that are not yiji's.
    ".uv/bin/uv sync --inexact --no-dev --extra ": "installs from the package index; the development "
    "environment has every extra",
    "CMAKE_ARGS=": "builds llama-cpp-python from the package index",
    "npm install ": "installs the host programs from the npm registry; .ci/run installs them",
    "llama-server ": "an external model server",
    # Runs until interrupted.
    ".uv/bin/uv run --no-dev yiji ui": "a web server that runs until interrupted (and opens a browser); "
    "tests/test_ui*.py",
    # The development tools: the test suite (this file is part of it) and what CI runs beside it.
    ".uv/bin/uv run pytest": "the test suite itself",
    "YIJI_UI_SCREENSHOTS=": "the browser tests, part of the test suite",
    "UPDATE_SNAPSHOTS=": "rewrites a pinned snapshot of the test suite",
    ".uv/bin/uv run ruff ": "the linter, which .ci/run runs",
    ".uv/bin/uv run mypy": "the type checker, which .ci/run runs",
    ".uv/bin/uv run yiji bench ": "minutes long, or needs downloaded data sets; tests/test_bench*.py run "
    "them small",
}

# How the docs run yiji from a checkout; here the installed command stands in for each.
CHECKOUT_COMMANDS = re.compile(r"(?:\.uv/bin/)?uv run (?:--no-dev )?yiji\b")


@dataclass(frozen=True)
class Line:
    readme: str
    number: int  # where the command starts in the README
    text: str  # the command as written, continuation lines included

    def not_run(self) -> str | None:
        return next((prefix for prefix in NOT_RUN if self.text.startswith(prefix)), None)

    def install_step(self) -> str | None:
        return next((prefix for prefix in INSTALL_STEPS if self.text.startswith(prefix)), None)

    def command(self) -> str:
        """The line as run here: its install step taken off, yiji run as the installed command."""
        text = self.text.removeprefix(self.install_step() or "")
        return CHECKOUT_COMMANDS.sub("yiji", text)


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


def page_lines(page: str) -> list[Line]:
    return shell_lines(page, (ROOT / page).read_text(encoding="utf-8"))


def chain_lines(chain: str) -> list[Line]:
    return [line for page in CHAINS[chain] for line in page_lines(page) if not line.not_run()]


def _script(lines: list[Line], out: Path) -> str:
    """One shell for all the lines; each line's output and status go to files of its own."""
    steps = []
    for i, line in enumerate(lines):
        command = line.command()
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


def run_lines(lines: list[Line], work: Path, locale: str = "C.UTF-8") -> list[Ran]:
    """Run ``lines`` in one shell in ``work`` (a copy of ``examples/`` beside them), on a fresh database.

    The home directory is empty, so the database is the default one in it, as on a new machine; the
    locale is ``locale`` (plain output follows it: the Chinese pages run in a Chinese one)."""
    yiji = Path(sys.executable).parent / "yiji"
    assert yiji.exists(), f"the yiji command is not installed beside {sys.executable}"
    shutil.copytree(ROOT / "examples", work / "examples")
    out = work / ".out"
    out.mkdir()
    home = work / ".home"
    home.mkdir()
    (home / "config.toml").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("YIJI_", "LC_", "LANG"))}
    env |= {
        "LANG": locale,
        "PATH": f"{yiji.parent}{os.pathsep}{env.get('PATH', '')}",
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


def _by_text(results: list[Ran]) -> dict[str, Ran]:
    """The results by command as run (``yiji ...``), comments left out."""
    return {r.line.command().split("#")[0].strip(): r for r in results}


def run_chain(chain: str, work: Path, at_least: int) -> list[Ran]:
    """Run a chain's lines; every one succeeds, and the first is the Quickstart's demo."""
    lines = chain_lines(chain)
    assert len(lines) >= at_least, [line.text for line in lines]
    results = run_lines(lines, work, LOCALES[chain])
    assert _failures(results) == ""
    first = results[0]
    assert first.line.install_step() and first.line.command() == "yiji demo", first.line.text
    assert "remove the demo data" in first.out
    return results


def test_the_docs_examples_run_in_order_after_the_demo(tmp_path: Path) -> None:
    by_text = _by_text(run_chain("en", tmp_path, at_least=30))
    # A few outcomes that say the examples did what the docs say, not just exit 0.
    listed = next(r for t, r in by_text.items() if t.startswith("yiji memory list --key home.city --history"))
    assert "杭州" in listed.out and "Shanghai" not in listed.out  # the demo's memories stay in their scope
    decided = [r.out.split(":")[0] for t, r in by_text.items() if t.startswith("yiji review ") and "$(" in t]
    assert decided == ["accepted", "rejected", "accepted"]  # the review queue, tried without a model
    read = next(r for t, r in by_text.items() if t.startswith('yiji memory read "$MEMORY_ID"'))
    assert "我住在杭州" in read.out
    corrected = next(r for t, r in by_text.items() if t.startswith('yiji memory correct "$MEMORY_ID"'))
    assert corrected.out.startswith("corrected: mem_")
    scanned = next(r for t, r in by_text.items() if t.startswith('yiji doctor --scan-for "苏州"'))
    assert scanned.out.count(": not found") == 2 and "苏州" not in scanned.out
    ingested = next(r for t, r in by_text.items() if "--expect-cursor -1" in t)
    assert '"ok": true' in ingested.out
    saved = next(r for t, r in by_text.items() if t.startswith("yiji checkpoint save"))
    assert saved.out.startswith("saved checkpoint  scope=default/default")
    shown = next(r for t, r in by_text.items() if t.startswith("yiji checkpoint show --session s1"))
    assert "state: valid" in shown.out
    assert (tmp_path / "restored.db").exists() and (tmp_path / "new.db").exists()
    semantic = next(r for t, r in by_text.items() if t.startswith("yiji recall \"don't delete"))
    assert "原图千万别删" in semantic.out.splitlines()[1]  # English over Chinese, first: the vectors found it


def test_the_chinese_pages_run_in_order_after_the_demo(tmp_path: Path) -> None:
    by_text = _by_text(run_chain("zh", tmp_path, at_least=20))
    # In a Chinese locale plain output speaks Chinese where yiji has the words.
    listed = next(r for t, r in by_text.items() if t.startswith("yiji memory list --key home.city --history"))
    assert "杭州" in listed.out and listed.out.splitlines()[-1].startswith("第 1-")
    waiting = next(r for t, r in by_text.items() if t == "yiji review")
    assert "3 条待审" in waiting.out, waiting.out


def test_every_page_with_examples_is_run() -> None:
    chained = {page for pages in CHAINS.values() for page in pages}
    with_examples = {
        str(path.relative_to(ROOT))
        for path in [ROOT / "README.md", ROOT / "README.zh-CN.md", *sorted((ROOT / "docs").glob("*.md"))]
        if shell_lines(path.name, path.read_text(encoding="utf-8"))
    }
    assert with_examples - chained == set(OTHER_PAGES)
    assert not chained & set(OTHER_PAGES)


def test_every_line_left_out_is_still_in_the_docs() -> None:
    lines = [line for pages in CHAINS.values() for page in pages for line in page_lines(page)]
    assert {line.not_run() for line in lines} - {None} == set(NOT_RUN)
    assert {line.install_step() for line in lines} - {None} == set(INSTALL_STEPS)


def test_a_broken_example_fails(tmp_path: Path) -> None:
    text = (
        "Intro\n\n```sh\n.uv/bin/uv run --no-dev yiji event submit --id a1 --session s --role user \\\n"
        "    hello\n"
        "# a comment\n.uv/bin/uv run --no-dev yiji memory read mem_missing   # no such memory\n"
        ".uv/bin/uv run --no-dev yiji ui\n```\n\n"
        "```toml\nnot = 'shell'\n```\n"
    )
    lines = shell_lines("X.md", text)
    assert [(line.number, line.not_run()) for line in lines] == [
        (4, None),
        (7, None),
        (8, ".uv/bin/uv run --no-dev yiji ui"),
    ]
    results = run_lines(lines[:2], tmp_path)
    assert [r.code for r in results] == [0, 2]
    assert _failures(results).startswith(
        "X.md:7: exit 2\n$ .uv/bin/uv run --no-dev yiji memory read mem_missing"
    )
    assert re.search(r"not found: no memory with that id in this scope", results[1].err)


def test_checkout_commands_run_as_the_installed_one() -> None:
    line = Line("X.md", 1, "python3 -m pip install --target .uv uv && .uv/bin/uv run --no-dev yiji demo")
    assert line.install_step() and line.command() == "yiji demo"
    assert Line("X.md", 2, "uv run yiji recall 西湖 && uv run --no-dev yiji doctor").command() == (
        "yiji recall 西湖 && yiji doctor"
    )
