"""``yiji demo``: it writes to its own project (``demo``) and leaves the user's default project alone,
re-runs idempotently and in the same order, packs the recent turns within the default resume budget, and
``demo --remove`` takes out exactly what it wrote. Its "try next" lines name the command the user has:
``uv run --no-dev yiji`` from a checkout of the repository, ``yiji`` where the package is installed (a copy of
the package outside any checkout, as a wheel puts it in site-packages); tests/test_packaging.py runs the
built wheel too, tests/test_invocation.py the other ways yiji is started."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from .conftest import run_yiji
from .inprocess import run_cli

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "yiji"
ROOT = PACKAGE.parent.parent
PLAIN_UV = {"UV": ""}
"""As when yiji runs under the ``uv`` that ``PATH`` finds (the hints then say plain ``uv``; the case of
another uv is in ``tests/test_invocation.py``)."""


def _hints(out: str) -> list[str]:
    """The command lines the demo suggests (try next, and how to remove the demo data)."""
    tail = out.split("\ntry next", 1)[1]
    return [line.strip() for line in tail.splitlines()[1:] if re.search(r"\byiji\b", line)]


def _memories(db: Path, *scope: str) -> list[dict[str, object]]:
    listed = run_cli("--db", str(db), *scope, "--json", "memory", "list", "--history")
    assert listed.code == 0, listed.err
    return json.loads(listed.out)["memories"]


def test_the_demo_leaves_the_default_project_alone(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_cli("--db", str(db), "demo")
    assert result.code == 0, result.err
    assert "scope: persona=default project=demo" in result.out
    assert len(_memories(db, "--project", "demo")) == 5
    assert _memories(db) == []  # the README's examples start from an empty default project
    ids = run_cli("--db", str(db), "memory", "list", "--key", "home.city", "--ids")
    assert ids.code == 0 and ids.out == "", ids.out


def test_a_second_run_changes_nothing_and_lists_in_the_same_order(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    first = run_cli("--db", str(db), "demo")
    assert first.code == 0, first.err
    again = run_cli("--db", str(db), "--json", "demo")
    assert again.code == 0, again.err
    assert all(not e["created"] for e in json.loads(again.out)["events"])
    third = run_cli("--db", str(db), "demo")
    section = re.compile(r"memories \(each quotes its source exactly\):\n(.*?)\n\n", re.S)
    listed, relisted = section.search(first.out), section.search(third.out)
    assert listed is not None and relisted is not None
    assert listed.group(1) == relisted.group(1)
    # memories derived from one event list in the order they were given
    assert listed.group(1).index("用户住在杭州") < listed.group(1).index("用户每天早上沿着西湖跑步")


def test_the_default_resume_budget_holds_the_recent_turns(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_cli("--db", str(db), "demo")
    assert result.code == 0, result.err
    line = next(x for x in result.out.splitlines() if x.startswith("session_resume"))
    assert line.startswith("session_resume (budget 4000 utf8_bytes)"), line
    assert "recent_events" in line and "left out" not in line, line
    pack = run_cli("--db", str(db), "--project", "demo", "--json", "resume", "--session", "demo-recent")
    meta = json.loads(pack.out)["metadata"]
    assert meta["budget"] == 4000 and meta["omitted"] == [] and "recent_events" in meta["included"]


def test_demo_remove_deletes_the_demo_and_nothing_else(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert run_cli("--db", str(db), "demo").code == 0
    mine = run_cli(
        "--db", str(db), "--project", "demo", "event", "submit", "--id", "mine-1", "--session", "s",
        "--role", "user", "我养了一只猫",
    )  # fmt: skip
    assert mine.code == 0, mine.err
    assert run_cli("--db", str(db), "event", "submit", "--session", "s1", "--role", "user", "hi").code == 0
    removed = run_cli("--db", str(db), "--json", "demo", "--remove")
    assert removed.code == 0, removed.err
    data = json.loads(removed.out)
    assert data["deleted_event_ids"] == [f"demo-{i}" for i in range(1, 6)]
    assert len(data["deleted_memory_ids"]) == 5
    assert _memories(db, "--project", "demo") == []
    left = run_cli("--db", str(db), "--project", "demo", "--json", "event", "list")
    assert [e["id"] for e in json.loads(left.out)["events"]] == ["mine-1"]
    default = run_cli("--db", str(db), "--json", "event", "list")
    assert len(json.loads(default.out)["events"]) == 1
    again = run_cli("--db", str(db), "demo", "--remove")
    assert again.code == 0 and "no demo data in persona=default project=demo" in again.out


def test_from_the_checkout_the_hints_say_uv_run(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo", cwd=ROOT, env=PLAIN_UV)
    assert result.code == 0, result.err
    hints = _hints(result.out)
    assert len(hints) == 5, hints
    assert all(line.startswith("uv run --no-dev yiji") for line in hints), hints
    assert f"uv run --no-dev yiji --db {db} --project demo recall 乌龙茶" in result.out
    assert hints[-1] == f"uv run --no-dev yiji --db {db} --project demo demo --remove"


def test_outside_the_checkout_the_hints_name_the_project(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo", cwd=tmp_path, env=PLAIN_UV)
    assert result.code == 0, result.err
    prefix = f"uv run --project {shlex.quote(str(ROOT))} --no-dev yiji"
    hints = _hints(result.out)
    assert hints[0].startswith(f"{prefix} --db {db} --project demo recall 乌龙茶"), hints
    assert hints[-1] == f"{prefix} --db {db} --project demo demo --remove"


def test_installed_the_hints_say_yiji(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    shutil.copytree(PACKAGE, site / "yiji", ignore=shutil.ignore_patterns("__pycache__"))
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo", env={"PYTHONPATH": str(site)}, cwd=tmp_path)
    assert result.code == 0, result.err
    out = result.out
    assert "uv run" not in out
    hints = _hints(out)
    assert len(hints) == 5, hints
    assert hints[0].startswith(f"yiji --db {db} --project demo recall 乌龙茶"), hints
    assert "docs/clients.md gives each client's" in out
    assert hints[-1] == f"yiji --db {db} --project demo demo --remove"


def test_the_hints_run(tmp_path: Path) -> None:
    """Each suggested command line that reads works as printed (from the checkout)."""
    db = tmp_path / "demo.db"
    result = run_yiji("--db", str(db), "demo", cwd=ROOT, env=PLAIN_UV)
    assert result.code == 0, result.err
    for hint in _hints(result.out)[:3]:
        words = shlex.split(hint.split("#", 1)[0])
        assert words[:4] == ["uv", "run", "--no-dev", "yiji"], words
        ran = run_yiji(*words[4:], cwd=ROOT)
        assert ran.code == 0 and ran.out.strip(), (hint, ran.err)
