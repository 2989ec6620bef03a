"""``yiji bench refresh``: docs/benchmarks.md's current table is the refresh's rows, and a refresh reruns a
row and rewrites exactly the table (figure, command, data, date, commit, load); a row it cannot run keeps
its cells and is said not to be rerun."""

from __future__ import annotations

import json
import lzma
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji_bench.current import ROWS
from yiji_bench.refresh import COLUMNS, Inputs, Row, Run, read_table, refresh, run_yiji

from .bench_helpers import tiny_locomo
from .fakeprovider import FakeProvider
from .test_bench_baselines import _madial as madial_files
from .test_bench_longmemeval import _scaled_data as scaled_data

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
REGISTRY = {row.key: row for row in ROWS}


def test_the_table_is_the_rows_the_refresh_knows() -> None:
    """A row cannot be added to the table by hand: each is a row of the refresh, in its order, with its
    command and data."""
    _, _, table = read_table(DOC.read_text(encoding="utf-8"))
    assert [cells[0] for cells in table] == [row.measure for row in ROWS]
    assert all(len(cells) == len(COLUMNS) for cells in table)
    assert [(cells[2], cells[3]) for cells in table] == [(row.command, row.data) for row in ROWS]
    assert len(REGISTRY) == len(ROWS)
    for row in ROWS:  # a cell with a pipe would split the row
        assert "|" not in row.measure + row.command + row.data, row.key
        assert row.runs and all(run.words.split()[0] != "refresh" for run in row.runs), row.key


PAGE = """# Benchmarks

Intro.

## Current figures

Words before the table.

| measure | figure | command | data | date |
|---|---|---|---|---|
| one host-ingest, small | **999.9 ms** | `yiji bench host-ingest` | synthetic | 2026-01-01 |
| LoCoMo, small | **0.100** | `yiji bench locomo` | LoCoMo | 2026-01-02 |
| a row no benchmark measures | 1 | by hand | none | 2026-01-03 |

Words after the table.

## Next section

| a | b |
|---|---|
| 1 | 2 |
"""


def _rows() -> list[Row]:
    return [
        Row(
            key="host-ingest",
            measure="one host-ingest, small",
            runs=(Run("host-ingest", "host-ingest --messages 5 --runs 2"),),
            figure=REGISTRY["host-ingest"].figure,
            command="`yiji bench host-ingest`",
            data="synthetic",
            minutes=1,
        ),
        Row(
            key="locomo",
            measure="LoCoMo, small",
            runs=(Run("fast", "locomo --data {locomo}"),),
            figure=lambda r: str(r["fast"]["overall"]["recall@10"]),
            command="`yiji bench locomo`",
            data="LoCoMo",
            minutes=1,
        ),
        Row(
            key="broken",
            measure="a benchmark whose command fails",
            runs=(Run("bad", "resume --memories -1"),),
            figure=lambda r: "never",
            command="`yiji bench resume`",
            data="synthetic",
            minutes=1,
        ),
        Row(
            key="misread",
            measure="a figure read from a field the output lacks",
            runs=(Run("host-ingest", "host-ingest --messages 5 --runs 2"),),
            figure=lambda r: str(r["host-ingest"]["no such field"]),
            command="`yiji bench host-ingest`",
            data="synthetic",
            minutes=1,
        ),
    ]


def test_a_refresh_reruns_what_it_can_and_rewrites_only_the_table(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(PAGE, encoding="utf-8")
    empty = tmp_path / "data"
    empty.mkdir()
    report = refresh(doc, _rows(), Inputs(data_root=empty, keep_root=tmp_path / "keep"))

    states = {row["key"]: row["state"] for row in report["rows"]}
    assert states == {"host-ingest": "rerun", "locomo": "not rerun", "broken": "failed", "misread": "failed"}
    why = {row["key"]: row.get("why", "") for row in report["rows"]}
    assert "LoCoMo data (locomo/locomo10.json under --data-root" in why["locomo"]
    assert why["broken"] == "`yiji --json bench resume --memories -1` exited with 2"
    assert why["misread"] == "the figure could not be read from the output (KeyError)"
    assert report["removed"] == ["a row no benchmark measures"]

    text = doc.read_text(encoding="utf-8")
    start, end, table = read_table(text)
    lines, page = text.splitlines(), PAGE.splitlines()
    assert lines[:start] == page[: page.index("| measure | figure | command | data | date |")]
    assert (
        lines[end:]
        == page[page.index("| a row no benchmark measures | 1 | by hand | none | 2026-01-03 |") + 1 :]
    )
    assert lines[start : start + 2] == [
        "| measure | figure | command | data | date | commit | load |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    fresh, kept, broken, misread = table
    measure, figure, command, data, date, commit, load = fresh
    assert (measure, command, data) == ("one host-ingest, small", "`yiji bench host-ingest`", "synthetic")
    assert re.fullmatch(r"\*\*[\d,]+\.\d ms\*\*", figure) and figure != "**999.9 ms**"
    assert date == datetime.now(UTC).date().isoformat()
    assert commit == "unknown"  # the page is outside any git repository
    assert re.fullmatch(r"\d+\.\d(-\d+\.\d)?", load)
    assert figure == report["rows"][0]["figure"]
    # what could not run keeps its cells (its date says how old they are), commit and load not recorded
    assert (
        kept
        == ["LoCoMo, small", "**0.100**", "`yiji bench locomo`", "LoCoMo", "2026-01-02"]
        + ["not recorded"] * 2
    )
    # a row never measured says so
    assert (
        broken
        == ["a benchmark whose command fails", "not measured yet", "`yiji bench resume`", "synthetic"]
        + ["-"] * 3
    )
    assert misread[1:] == ["not measured yet", "`yiji bench host-ingest`", "synthetic", "-", "-", "-"]

    # a second refresh of one row keeps the other rows as the first one wrote them
    again = refresh(doc, _rows(), Inputs(data_root=empty, keep_root=tmp_path / "keep"), only=["locomo"])
    assert [row["state"] for row in again["rows"]] == ["not rerun"]
    assert read_table(doc.read_text(encoding="utf-8"))[2] == table

    # in a repository: the commit measured, "-dirty" when a tracked file other than the page changed
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    (tmp_path / "code.py").write_text("x = 1\n", encoding="utf-8")
    for step in (["init", "-q"], ["add", "benchmarks.md", "code.py"], ["commit", "-q", "-m", "m"]):
        subprocess.run([*git, *step], cwd=tmp_path, check=True, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short=7", "HEAD"], cwd=tmp_path, check=True, capture_output=True, text=True
    ).stdout.strip()
    (tmp_path / "code.py").write_text("x = 2\n", encoding="utf-8")
    refresh(doc, _rows(), Inputs(keep_root=tmp_path / "keep"), only=["host-ingest"])
    assert read_table(doc.read_text(encoding="utf-8"))[2][0][5] == f"{head}-dirty"


def test_a_row_written_by_another_refresh_while_this_one_runs_is_kept(tmp_path: Path) -> None:
    """Two refreshes of different rows may overlap (a long one beside short ones): each rewrites only the
    rows it reran, and keeps every other row as the page holds it when it writes."""
    doc = tmp_path / "benchmarks.md"
    doc.write_text(PAGE, encoding="utf-8")
    other = "| LoCoMo, small | **0.100** | `yiji bench locomo` | LoCoMo | 2026-01-02 |"
    written = "| LoCoMo, small | **0.200** | `yiji bench locomo` | LoCoMo | 2026-01-05 | abc1234 | 0.5 |"

    def runner(argv: Any, loads: list[float]) -> Any:  # another refresh writes its row meanwhile
        doc.write_text(doc.read_text(encoding="utf-8").replace(other, written), encoding="utf-8")
        return {"host-ingest": {"p50_ms": 1.0, "p95_ms": 2.0, "events": 5, "runs": 2}}

    small = REGISTRY["host-ingest"]
    rows = [*_rows()[:2]]
    rows[0] = Row(
        key="host-ingest",
        measure="one host-ingest, small",
        runs=small.runs,
        figure=lambda r: f"**{r['host-ingest']['host-ingest']['p95_ms']} ms**",
        command="`yiji bench host-ingest`",
        data="synthetic",
        minutes=1,
    )
    report = refresh(doc, rows, Inputs(keep_root=tmp_path / "keep"), only=["host-ingest"], runner=runner)
    assert [row["state"] for row in report["rows"]] == ["rerun"]
    _, _, table = read_table(doc.read_text(encoding="utf-8"))
    assert table[0][:2] == ["one host-ingest, small", "**2.0 ms**"]
    assert table[1] == [
        "LoCoMo, small",
        "**0.200**",
        "`yiji bench locomo`",
        "LoCoMo",
        "2026-01-05",
        "abc1234",
        "0.5",
    ]


# Every row's figure, read from the real commands' output at small sizes (the output has the same shape at
# every size, and in fast mode as in semantic mode, which only adds the offline model's time). Each command
# below stands for the rows' runs named in SHAPES; the data sets are tiny copies of the real ones.
SMALL = {
    "locomo": "locomo --data {locomo}",
    "madial": "madial --data {madial}",
    "madial-cross": "madial --data {madial} --cross",
    "lme": "longmemeval --data {longmemeval} --split dev",
    "lme-grid": "longmemeval --data {longmemeval} --split dev --scale 10 --scale 20 --scale 40 --keep {keep}",
    "lme-40x": "longmemeval --data {longmemeval} --split dev --scale 40 --keep {keep}",
    "packs": "resume --memories 0 --locomo {locomo}",
    "extraction": "extraction --data labelled --data heldout --limit 1 --answers {answers}",
    "resume": "resume --memories 200 --resumes 4",
    "recall-planted": "recall --events 400 --rounds 1 --keep {keep}/recall --data {longmemeval}",
    "recall": "recall --events 200 --events 400 --rounds 1 --keep {keep}/recall",
    "hooks": "hooks --events 60 --runs 2 --lines 20 --incremental-runs 2",
    "hooks-auto": "hooks --auto --incremental-runs 2 --lines 10 --gap 0.1 --delay 0.01",
    "semantic": "semantic --vectors 200 --mode semantic --rounds 1",
    "startup": "startup --keep {keep}/startup --runs 1 --events 200",
    "ingest": "ingest --single 20 --batched 20 --imported 0",
    "import": "import --events 200 --keep {keep}/import",
    "wal": "wal --seconds 1 --readers 1",
    "host-ingest": "host-ingest --messages 5 --runs 2",
}
SHAPES = {
    "locomo": {"fast": "locomo", "semantic": "locomo"},
    "locomo-observations": {"fast": "locomo", "semantic": "locomo"},
    "madial-zh": {"fast": "madial", "semantic": "madial-cross"},
    "madial-en": {"fast": "madial", "semantic": "madial-cross"},
    "longmemeval-user": {"fast": "lme", "semantic": "lme"},
    "longmemeval-both": {"fast": "lme", "semantic": "lme"},
    "longmemeval-scaled-dev": {"grid": "lme-grid"},
    "longmemeval-scaled-test": {"grid": "lme-grid"},
    "longmemeval-scaled-120": {
        "dev": "lme-grid",
        "test": "lme-grid",
        "semantic-dev": "lme-40x",
        "semantic-test": "lme-40x",
    },
    "longmemeval-semantic-scaled": {"dev": "lme-grid", "test": "lme-grid"},
    "resume-locomo": {"raw": "packs", "observations": "packs"},
    "extraction": {"all": "extraction"},
    "extraction-safety": {"all": "extraction"},
    "extraction-review": {"all": "extraction"},
    "resume": {"resume": "resume"},
    "recall-1m": {"recall": "recall-planted"},
    "longmemeval-40x-latency": {"fast": "lme-40x", "semantic": "lme-40x"},
    "hooks": {"hooks": "hooks"},
    "hooks-auto": {"auto": "hooks-auto"},
    "recall-latency": {"recall": "recall"},
    "semantic": {"semantic": "semantic", "deep": "semantic"},
    "startup": {"startup": "startup"},
    "ingest": {"ingest": "ingest"},
    "import": {"import": "import"},
    "wal": {"wal": "wal"},
    "host-ingest": {"host-ingest": "host-ingest"},
}


@pytest.fixture(scope="module")
def small_outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Each command of :data:`SMALL` run once (on tiny data sets), by name."""
    root = tmp_path_factory.mktemp("refresh-data")
    (root / "locomo").mkdir()
    tiny_locomo(root / "locomo" / "locomo10.json")
    madial_files(root / "madial")
    (root / "longmemeval").mkdir()
    (root / "longmemeval" / "longmemeval_s_cleaned.json.xz").write_bytes(
        lzma.compress(json.dumps(scaled_data()).encode())
    )
    with FakeProvider() as provider:
        config = root / "extraction.toml"
        config.write_text(f'[extraction]\nbase_url = "{provider.base_url}"\nmodel = "fake"\n', "utf-8")
        values = {
            "locomo": str(root / "locomo" / "locomo10.json"),
            "madial": str(root / "madial"),
            "longmemeval": str(root / "longmemeval" / "longmemeval_s_cleaned.json.xz"),
            "keep": str(root / "keep"),
            "answers": str(root / "answers"),
        }
        outputs: dict[str, Any] = {}
        for name, words in SMALL.items():
            prefix = ["--config", str(config)] if name == "extraction" else []
            argv = [*prefix, "--json", "bench", *(word.format_map(values) for word in words.split())]
            outputs[name] = run_yiji(argv, [])
        yield outputs


def test_every_row_has_a_small_run() -> None:
    assert list(SHAPES) == list(REGISTRY)
    assert all(set(SHAPES[key]) == {run.name for run in row.runs} for key, row in REGISTRY.items())


@pytest.mark.parametrize("key", list(REGISTRY))
def test_each_row_reads_its_figure_from_its_commands_output(key: str, small_outputs: dict[str, Any]) -> None:
    figure = REGISTRY[key].figure({run: small_outputs[name] for run, name in SHAPES[key].items()})
    # digits, or "-" where a run counted nothing (the loopback endpoint proposes no memory)
    assert re.search(r"\d|-", figure) and not re.search(r"[{}]|None|nan", figure), figure


def test_extraction_shares_keep_three_places_and_counts_stay_whole() -> None:
    pooled = {
        "precision": 0.84,
        "recall": 0.6700000001,
        "assistant_as_user_fact": 0,
        "user_key_on_forbidden": 2,
        "restates_quote": 287,
        "accepted": 543,
        "review_facts": {"waiting_share": 0.155, "precision_accepted_at_once": None},
    }
    run = {"all": {"pooled": pooled}}
    assert REGISTRY["extraction"].figure(run) == "**0.840** / 0.670; 287 of 543 (0.529)"
    nothing = {"all": {"pooled": {**pooled, "restates_quote": 0, "accepted": 0}}}
    assert REGISTRY["extraction"].figure(nothing) == "**0.840** / 0.670; 0 of 0 (-)"
    assert REGISTRY["extraction-safety"].figure(run) == "**0 / 2**"
    assert REGISTRY["extraction-review"].figure(run) == "0.155; -"


def test_dry_run_lists_every_row_and_writes_nothing(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(DOC.read_text(encoding="utf-8"), encoding="utf-8")
    before = doc.read_bytes()
    argv = [sys.executable, "-m", "yiji", "--json", "bench", "refresh", "--dry-run", "--doc", str(doc)]
    env = {**os.environ, "YIJI_BENCH_DATA": str(tmp_path / "no data here")}
    done = subprocess.run([*argv], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [row["key"] for row in report["rows"]] == list(REGISTRY)
    states = {row["key"]: row["state"] for row in report["rows"]}
    needs_data = {key for key, row in REGISTRY.items() if row.placeholders() - {"keep"}}
    assert {key for key, state in states.items() if state == "not rerun"} == needs_data
    assert {key for key, state in states.items() if state == "would run"} == set(REGISTRY) - needs_data
    assert report["removed"] == []
    assert doc.read_bytes() == before
    plain = subprocess.run(
        [a for a in argv if a != "--json"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert plain.returncode == 0, plain.stderr
    assert re.search(r"^resume: would run \(about \d+ min\): yiji --json bench resume$", plain.stdout, re.M)
    assert "locomo: not rerun: needs the LoCoMo data (locomo/locomo10.json under --data-root" in plain.stdout
    assert plain.stdout.endswith("min in all; nothing was run or written (--dry-run)\n")
    assert doc.read_bytes() == before

    unknown = subprocess.run(
        [*argv, "--only", "no-such-row"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert unknown.returncode == 2
    assert "only: names a row the refresh does not know" in unknown.stderr
    assert "no-such-row" not in unknown.stderr
