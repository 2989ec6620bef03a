"""``yiji bench refresh``: rerun the benchmarks behind docs/benchmarks.md's current table and rewrite it.

The table's rows are :data:`yiji_bench.current.ROWS`, in that order: each :class:`Row` names its commands
(``yiji bench ...``, run as processes of their own with ``--json``), how its figure is read from their
output, the command and data shown, and a rough duration. A refresh runs the chosen rows and writes each
row it reran: figure, command, data, date (UTC), commit (the repository's ``HEAD``, ``-dirty`` when a
tracked file other than the page differs from it) and the machine's load (the one-minute load average
sampled every few seconds while the row ran, lowest-highest). The table is written again after every row,
so a refresh stopped midway keeps what it measured.

A row that cannot run here is *not rerun*, said so, and keeps its cells as they were (its date says how
old they are): the data sets (LoCoMo, MADial-Bench, LongMemEval_S) are read from a data root
(``--data-root`` or ``YIJI_BENCH_DATA``, laid out as :data:`DATA_FILES`), and the extraction rows need an
endpoint's configuration (``--extraction-config``) and its kept answers (``--answers``). A row whose
command fails, or whose figure cannot be read from the output, keeps its cells too and is reported
failed. Archives a command keeps (``--keep``) go under ``--keep-root`` (a temporary folder without it,
removed afterwards); a later refresh with the same folder reuses them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from string import Formatter
from typing import Any

from yiji.errors import InvalidInput

__all__ = [
    "COLUMNS",
    "DATA_ENV",
    "DATA_FILES",
    "Inputs",
    "Results",
    "Row",
    "Run",
    "RunFailed",
    "default_doc",
    "read_table",
    "refresh",
    "run_yiji",
]

Results = dict[str, Any]
"""A row's command outputs (parsed JSON) by run name."""

COLUMNS = ("measure", "figure", "command", "data", "date", "commit", "load")
HEADING = "## Current figures"
DATA_ENV = "YIJI_BENCH_DATA"
DATA_FILES = {
    "locomo": "locomo/locomo10.json",
    "madial": "madial",
    "longmemeval": "longmemeval/longmemeval_s_cleaned.json.xz",
}
"""The data sets under the data root, by placeholder name."""

NOT_MEASURED = "not measured yet"
LOAD_EVERY_S = 5.0


@dataclass(frozen=True)
class Run:
    """One command of a row: ``yiji --json bench <words>``, placeholders (``{locomo}``, ``{keep}``, ...)
    filled in per word. ``extraction``: it runs with the extraction endpoint's configuration."""

    name: str
    words: str
    extraction: bool = False

    def placeholders(self) -> set[str]:
        names = {name.split("/")[0] for _, name, _, _ in Formatter().parse(self.words) if name}
        return names | ({"extraction_config"} if self.extraction else set())

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command line after ``yiji``."""
        words = [word.format_map(values) for word in self.words.split()]
        config = ["--config", values["extraction_config"]] if self.extraction else []
        return [*config, "--json", "bench", *words]


@dataclass(frozen=True)
class Row:
    """A row of the table and the benchmark behind it."""

    key: str
    measure: str
    runs: tuple[Run, ...]
    figure: Callable[[Results], str]
    command: str
    data: str
    minutes: float
    """Rough minutes on the reference machine (0: its runs are another row's, run once)."""

    def placeholders(self) -> set[str]:
        return {name for run in self.runs for name in run.placeholders()}


@dataclass(frozen=True)
class Inputs:
    """What rows read from outside the repository; ``None`` where it was not given."""

    data_root: Path | None = None
    keep_root: Path | None = None
    answers: Path | None = None
    extraction_config: Path | None = None

    @classmethod
    def from_environment(
        cls,
        data_root: str | None,
        keep_root: str | None,
        answers: str | None,
        extraction_config: str | None,
    ) -> Inputs:
        root = data_root or os.environ.get(DATA_ENV) or None
        return cls(
            Path(root) if root else None,
            Path(keep_root) if keep_root else None,
            Path(answers) if answers else None,
            Path(extraction_config) if extraction_config else None,
        )

    def values(self, keep: Path) -> dict[str, str]:
        """Each placeholder's value where it is given (and, for a data set, present)."""
        values = {"keep": str(keep)}
        if self.data_root is not None:
            for name, relative in DATA_FILES.items():
                if (self.data_root / relative).exists():
                    values[name] = str(self.data_root / relative)
        if self.answers is not None:
            values["answers"] = str(self.answers)
        if self.extraction_config is not None and self.extraction_config.is_file():
            values["extraction_config"] = str(self.extraction_config)
        return values


_WHY = {
    "locomo": f"the LoCoMo data ({DATA_FILES['locomo']} under --data-root or {DATA_ENV})",
    "madial": f"the MADial-Bench data ({DATA_FILES['madial']}/ under --data-root or {DATA_ENV})",
    "longmemeval": f"the LongMemEval_S data ({DATA_FILES['longmemeval']} under --data-root or {DATA_ENV})",
    "answers": "the extraction endpoint's kept answers (--answers DIR)",
    "extraction_config": "an extraction endpoint's configuration (--extraction-config FILE)",
}


class RunFailed(Exception):
    """A benchmark command exited with an error or printed no JSON."""


def default_doc() -> Path:
    """docs/benchmarks.md of the repository this package is installed from (for development)."""
    return Path(__file__).resolve().parents[3] / "docs" / "benchmarks.md"


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().removeprefix("|").removesuffix("|").split(" | ")]


def read_table(text: str) -> tuple[int, int, list[list[str]]]:
    """The current table of the page: its first and past-the-last line numbers (0-based) and its rows'
    cells, header and rule left out. Raises InvalidInput (``doc``) when the page has none."""
    lines = text.splitlines()
    try:
        heading = lines.index(HEADING)
        start = next(i for i in range(heading, len(lines)) if lines[i].startswith("| measure |"))
    except (ValueError, StopIteration):
        raise InvalidInput("doc", f"has no table under '{HEADING}'") from None
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return start, end, [_cells(line) for line in lines[start + 2 : end]]


def _render(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table_cells(text: str, rows: Sequence[Row]) -> tuple[dict[str, list[str]], list[str]]:
    """The page's current rows by measure, for the rows the refresh knows (padded to the columns), and
    the measures of the rows it does not know."""
    _, _, table = read_table(text)
    measures = {row.measure for row in rows}
    padding = ["not recorded"] * len(COLUMNS)
    cells = {r[0]: (r + padding)[: len(COLUMNS)] for r in table if r[0] in measures}
    return cells, [r[0] for r in table if r[0] not in measures]


def _write(doc: Path, rows: Sequence[Row], fresh: Mapping[str, list[str]]) -> None:
    """Rewrite the page's table: the rows this refresh reran from ``fresh``, every other row as the page
    holds it NOW (read again here, so a row another refresh wrote while this one ran is kept)."""
    text = doc.read_text(encoding="utf-8")
    start, end, _ = read_table(text)
    cells = {**_table_cells(text, rows)[0], **fresh}
    lines = text.splitlines()
    table = [_render(COLUMNS), _render(["---"] * len(COLUMNS))]
    for row in rows:
        kept = cells.get(row.measure)
        table.append(_render(kept or [row.measure, NOT_MEASURED, row.command, row.data, "-", "-", "-"]))
    out = "\n".join([*lines[:start], *table, *lines[end:]]) + ("\n" if text.endswith("\n") else "")
    tmp = doc.with_name(doc.name + ".tmp")
    tmp.write_text(out, encoding="utf-8")
    os.replace(tmp, doc)


def run_yiji(argv: Sequence[str], loads: list[float]) -> Any:
    """``yiji <argv>`` as a process of its own (its progress on this terminal); its JSON output. The
    one-minute load average is added to ``loads`` every few seconds while it runs."""
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen([sys.executable, "-m", "yiji", *argv], stdout=out)
        while True:
            try:
                code = process.wait(timeout=LOAD_EVERY_S)
                break
            except subprocess.TimeoutExpired:
                loads.append(os.getloadavg()[0])
        out.seek(0)
        printed = out.read().decode("utf-8", errors="replace")
    if code != 0:
        raise RunFailed(f"exited with {code}")
    try:
        return json.loads(printed)
    except ValueError:
        raise RunFailed("printed no JSON") from None


def _git(doc: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=doc.parent, capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _commit(doc: Path) -> str:
    """The commit measured, ``-dirty`` when a tracked file other than the page differs from it."""
    head = (_git(doc, "rev-parse", "--short=7", "HEAD") or "").strip()
    if not head:
        return "unknown"
    changed = _git(doc, "status", "--porcelain", "--untracked-files=no", "--", ".", f":!{doc.name}")
    return head + ("-dirty" if changed is None or changed.strip() else "")


def _load(loads: Sequence[float]) -> str:
    low, high = f"{min(loads):.1f}", f"{max(loads):.1f}"
    return low if low == high else f"{low}-{high}"


@contextmanager
def _keep_folder(keep_root: Path | None, dry_run: bool) -> Iterator[Path]:
    if keep_root is not None:
        if not dry_run:
            keep_root.mkdir(parents=True, exist_ok=True)
        yield keep_root
        return
    with tempfile.TemporaryDirectory(prefix="yiji-bench-refresh-") as tmp:
        yield Path(tmp)


@dataclass
class _Refresh:
    doc: Path
    rows: Sequence[Row]
    values: dict[str, str]
    runner: Callable[[Sequence[str], list[float]], Any]
    fresh: dict[str, list[str]]
    """The rows this refresh reran, by measure; the page's other rows are read again at each write."""
    commit: str
    outputs: dict[tuple[str, ...], Any] = field(default_factory=dict)

    def rerun(self, row: Row) -> dict[str, Any]:
        loads = [os.getloadavg()[0]]
        started = time.monotonic()
        results: Results = {}
        for run in row.runs:
            argv = tuple(run.argv(self.values))
            if argv not in self.outputs:  # a run two rows share runs once, and fails once
                try:
                    self.outputs[argv] = self.runner(argv, loads)
                except RunFailed as exc:
                    self.outputs[argv] = exc
            output = self.outputs[argv]
            if isinstance(output, RunFailed):
                return {"key": row.key, "state": "failed", "why": f"`yiji {' '.join(argv)}` {output}"}
            results[run.name] = output
        loads.append(os.getloadavg()[0])
        try:
            figure = row.figure(results)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            why = f"the figure could not be read from the output ({type(exc).__name__})"
            return {"key": row.key, "state": "failed", "why": why}
        date = datetime.now(UTC).date().isoformat()
        load = _load(loads)
        self.fresh[row.measure] = [row.measure, figure, row.command, row.data, date, self.commit, load]
        _write(self.doc, self.rows, self.fresh)
        seconds = round(time.monotonic() - started, 1)
        return {"key": row.key, "state": "rerun", "figure": figure, "seconds": seconds, "load": load}


def refresh(
    doc: Path,
    rows: Sequence[Row],
    inputs: Inputs,
    *,
    only: Sequence[str] = (),
    dry_run: bool = False,
    runner: Callable[[Sequence[str], list[float]], Any] = run_yiji,
) -> dict[str, Any]:
    """Rerun ``rows`` (those named in ``only``, else every one) and rewrite ``doc``'s current table with
    the rows in the order of ``rows``; ``dry_run`` runs and writes nothing and says what would run.

    Returns ``{"doc", "rows": [{"key", "state", ...}], "removed"}``: per row ``rerun`` (with its figure,
    seconds and load), ``not rerun`` (``why``: what it needs), ``failed`` (``why``) or ``would run``
    (``commands`` and ``minutes``). ``removed`` lists rows of the page that no benchmark measures; the
    rewritten table leaves them out."""
    known = {row.key for row in rows}
    if any(key not in known for key in only):
        raise InvalidInput("only", "names a row the refresh does not know (--dry-run lists them)")
    if not doc.is_file():
        raise InvalidInput("doc", "the page does not exist")
    _, removed = _table_cells(doc.read_text(encoding="utf-8"), rows)
    chosen = [row for row in rows if not only or row.key in only]
    report: dict[str, Any] = {"doc": str(doc), "rows": [], "removed": removed}
    with _keep_folder(inputs.keep_root, dry_run) as keep:
        values = inputs.values(keep)
        job = _Refresh(doc, rows, values, runner, {}, _commit(doc))
        for row in chosen:
            lacking = sorted(row.placeholders() - set(values))
            if lacking:
                why = "needs " + "; ".join(_WHY.get(name, name) for name in lacking)
                report["rows"].append({"key": row.key, "state": "not rerun", "why": why})
            elif dry_run:
                commands = [f"yiji {' '.join(run.argv(values))}" for run in row.runs]
                report["rows"].append(
                    {"key": row.key, "state": "would run", "commands": commands, "minutes": row.minutes}
                )
            else:
                report["rows"].append(job.rerun(row))
        if not dry_run:
            _write(doc, rows, job.fresh)
    return report
