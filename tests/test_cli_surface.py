"""The CLI's surface pinned: the ``--help`` of every command and subcommand equals a committed snapshot.

A move that changes a command, an option or a help text fails here. When a change is intended, rewrite the
snapshot and commit it with the change::

    UPDATE_SNAPSHOTS=1 uv run pytest -q tests/test_cli_surface.py

``yiji bench`` is left out (its subcommands, and its line in ``yiji --help``): the benchmarks live in a
package of their own with their own tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import pytest

from yiji.cli import build_parser, main

SNAPSHOT = Path(__file__).parent / "data" / "surface" / "cli_help.json"
LEFT_OUT = frozenset({"bench"})
_BENCH_ENTRY = re.compile(r"^    bench .*\n(?:^      .*\n)*", re.MULTILINE)


def _command_paths() -> list[tuple[str, ...]]:
    """Every command line that names a parser, walked from the whole parser: ``()``, ``("event",)``, ..."""
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), build_parser())]
    while stack:
        path, parser = stack.pop()
        paths.append(path)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    if (*path, name)[0] not in LEFT_OUT:
                        stack.append(((*path, name), child))
    return sorted(paths)


def _help(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    """What ``yiji <path> --help`` prints, through the entry point."""
    code = main([*path, "--help"])  # the entry point answers --help with its exit code
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), f"yiji {' '.join(path)} --help"
    return _BENCH_ENTRY.sub("", out) if not path else out


def test_every_command_help_matches_the_snapshot(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps help text to the terminal's width
    current = {" ".join(("yiji", *path)): _help(path, capsys) for path in _command_paths()}
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(current) == sorted(pinned), "commands added or removed"
    changed = [name for name in pinned if current[name] != pinned[name]]
    assert changed == [], f"--help changed for {changed} (intended? rerun with UPDATE_SNAPSHOTS=1)"
