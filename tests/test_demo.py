"""``yiji demo``'s "try next" lines name the command the user has: ``uv run yiji`` from a checkout of the
repository, ``yiji`` where the package is installed. The installed case runs a copy of the package outside any
checkout (as a wheel puts it in site-packages); tests/test_packaging.py runs the built wheel too."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .conftest import run_yiji

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "yiji"


def _hints(out: str) -> list[str]:
    """The command lines the demo suggests (try next, and how to remove the demo data)."""
    tail = out.split("\ntry next:\n", 1)[1]
    return [line.strip() for line in tail.splitlines() if re.search(r"\byiji\b", line)]


def test_from_the_checkout_the_hints_say_uv_run(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo")
    assert result.code == 0, result.err
    hints = _hints(result.out)
    assert len(hints) == 6, hints
    assert all("uv run yiji" in line for line in hints), hints
    assert f"uv run yiji --db {db} recall 乌龙茶" in result.out


def test_installed_the_hints_say_yiji(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "yiji", ignore=shutil.ignore_patterns("__pycache__"))
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo", env={"PYTHONPATH": str(site)}, cwd=tmp_path)
    assert result.code == 0, result.err
    out = result.out
    assert "uv run" not in out
    hints = _hints(out)
    assert len(hints) == 6, hints
    assert hints[0].startswith(f"yiji --db {db} recall 乌龙茶"), hints
    assert "run `yiji serve` from its" in out
    assert f"do yiji --db {db} delete --event $id --yes; done" in out
