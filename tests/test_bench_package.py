"""The benchmarks are a package of their own (``bench/``, ``yiji_bench``): the ``yiji`` command finds
``yiji bench`` through the package's entry point, and where the package is absent says how to get it."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import yiji_bench
import yiji_bench.cli
from yiji.cli import PLUGIN_GROUP, build_parser, plugin_commands
from yiji.cli.context import add_common

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "src" / "yiji_bench"


def test_the_bench_package_adds_yiji_bench_through_its_entry_point() -> None:
    assert PLUGIN_GROUP == "yiji.commands"
    assert plugin_commands() == {"bench": "yiji_bench.cli"}
    # the CLI reads the entry points itself (for start-up time): what importlib.metadata reads
    assert plugin_commands() == {ep.name: ep.value for ep in entry_points(group=PLUGIN_GROUP)}
    common = argparse.ArgumentParser(add_help=False)
    add_common(common, suppress=True)
    sub = argparse.ArgumentParser().add_subparsers(dest="command")
    yiji_bench.cli.register(sub, common)
    assert tuple(sub.choices) == yiji_bench.cli.COMMANDS == ("bench",)
    # the whole parser and the one `yiji bench ...` builds hold the same command
    whole = build_parser().parse_args(["bench", "wal", "--seconds", "1"])
    narrow = build_parser("bench").parse_args(["bench", "wal", "--seconds", "1"])
    assert narrow.func is whole.func and vars(narrow) == vars(whole)


def test_the_product_alone_says_how_to_get_the_benchmarks(tmp_path: Path) -> None:
    """yiji's own source without this environment's packages (``-S``): no benchmarks installed."""

    def yiji(*argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        return subprocess.run(
            [sys.executable, "-S", "-m", "yiji", *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    listed = yiji("--help")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^    bench +the benchmarks are not installed here", listed.stdout, re.M)
    plain = yiji("bench", "recall", "--events", "100")
    assert (plain.returncode, plain.stdout) == (2, "")
    assert plain.stderr == (
        "yiji: invalid input: command: bench: the benchmarks are not installed here: they are a "
        "development package of yiji's repository (bench/), which `uv run yiji bench ...` in a checkout "
        "installs with the development environment (see docs/benchmarks.md)\n"
    )
    as_json = yiji("--json", "bench", "--help")
    assert as_json.returncode == 2
    assert json.loads(as_json.stderr)["problems"][0]["field"] == "command"


def test_no_benchmark_module_is_over_650_lines() -> None:
    lengths = {
        p.relative_to(BENCH).as_posix(): len(p.read_text("utf-8").splitlines()) for p in BENCH.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > 650} == {}


def test_the_public_names_of_the_benchmarks_exist() -> None:
    for info in pkgutil.walk_packages(yiji_bench.__path__, "yiji_bench."):
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            assert hasattr(module, name), f"{info.name}.__all__ names missing {name}"
