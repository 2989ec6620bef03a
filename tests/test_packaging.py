"""The sdist and the wheel hold what they should and nothing else. Both are built with ``uv build
--offline`` (the build backend comes from uv's cache, filled when ``uv sync`` or ``uv run`` built this
project) from a copy of the project salted with what a working tree collects: the adapter's ``node_modules``
after ``npm ci``, ``__pycache__``, a local database, tool caches. The wheel then runs from a plain folder,
outside the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import require_tool

ROOT = Path(__file__).resolve().parent.parent
SDIST_TOP = {
    ".ci",
    ".gitignore",
    "LICENSE",
    "PKG-INFO",
    "README.md",
    "README.zh-CN.md",
    "bench",
    "docs",
    "examples",
    "integrations",
    "pyproject.toml",
    "scripts",
    "src",
    "tests",
    "uv.lock",
}
JUNK = [
    "integrations/deepseek-harness/node_modules/@deepseek-ai/dsh-session/package.json",
    "integrations/deepseek-harness/node_modules/.package-lock.json",
    "src/yiji/__pycache__/cli.cpython-311.pyc",
    "src/yiji/stray.pyc",
    "tests/__pycache__/conftest.cpython-311.pyc",
    "yiji.db",
    "yiji.db-wal",
    "examples/demo.db",
    ".hypothesis/examples/x",
    ".pytest_cache/v/cache/nodeids",
    ".venv/bin/python",
    "dist/yiji-0.0.1.tar.gz",
]
SKIP_COPY = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "__pycache__", "*.pyc", ".*_cache", ".hypothesis", "dist", "*.db*"
)


def _source_files(folder: Path) -> set[str]:
    """The files under ``folder`` a build should take, as paths relative to it."""
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not {"__pycache__", "node_modules"} & set(p.parts) and p.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    # the uv running this test (`uv run` names it), else the one on PATH
    uv = os.environ.get("UV") or require_tool("uv", "the build uses `uv build` (pip install uv)")
    work = tmp_path_factory.mktemp("packaging")
    project = work / "yiji"
    shutil.copytree(ROOT, project, ignore=SKIP_COPY)
    for junk in JUNK:
        (project / junk).parent.mkdir(parents=True, exist_ok=True)
        (project / junk).write_bytes(b"junk")
    out = work / "dist"
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT"}}
    proc = subprocess.run(
        [uv, "build", "--offline", "--out-dir", str(out), str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sdist,) = out.glob("yiji-*.tar.gz")
    (wheel,) = out.glob("yiji-*.whl")
    with tarfile.open(sdist) as archive:
        top = archive.getnames()[0].split("/")[0]
        sdist_files = [m.name.removeprefix(f"{top}/") for m in archive.getmembers() if m.isfile()]
    with zipfile.ZipFile(wheel) as archive:
        wheel_files = archive.namelist()
    return wheel, sdist_files, wheel_files


def _junk(names: list[str]) -> list[str]:
    # "_cache/": a tool's cache folder (.pytest_cache/, .mypy_cache/), never a module such as vector_cache.py
    bad = ("node_modules", "__pycache__", ".venv", ".hypothesis", "_cache/", "dist/")
    return [n for n in names if any(b in n for b in bad) or n.endswith((".pyc", ".db", ".db-wal", ".db-shm"))]


def test_sdist_has_the_source_and_no_junk(built: tuple[Path, list[str], list[str]]) -> None:
    _, sdist, _ = built
    assert _junk(sdist) == []
    assert {name.split("/")[0] for name in sdist} == SDIST_TOP
    # Everything of the package, the adapter and the tests is there, exactly.
    for folder in ("src/yiji", "bench", "integrations/deepseek-harness", "tests", "examples"):
        inside = {n.removeprefix(folder + "/") for n in sdist if n.startswith(folder + "/")}
        assert inside == _source_files(ROOT / folder), folder
    assert len(sdist) < 600  # 1,600 with node_modules


def test_wheel_is_the_package_and_its_metadata(built: tuple[Path, list[str], list[str]]) -> None:
    path, _, wheel = built
    assert _junk(wheel) == []
    package = {n.removeprefix("yiji/") for n in wheel if n.startswith("yiji/")}
    assert package == _source_files(ROOT / "src" / "yiji")
    # The benchmarks are a package of their own (bench/), never in the product: no folder of theirs, and
    # not one file with the content of one of theirs.
    assert [n for n in wheel if {"bench", "yiji_bench"} & set(n.split("/")[:-1])] == []
    bench = ROOT / "bench" / "src" / "yiji_bench"
    benchmarks = {(bench / name).read_bytes() for name in _source_files(bench)}
    with zipfile.ZipFile(path) as archive:
        assert [n for n in wheel if archive.read(n) in benchmarks] == []
    # Data files the package reads at run time travel with it.
    assert {
        "ui/static/style.css",
        "ui/templates/base.html",
        "probe_data/conversation_zh.json",
        "domain/data/jieba-words.bin",
        "domain/data/jieba-words.LICENSE",
    } <= package
    metadata = {n for n in wheel if not n.startswith("yiji/")}
    info = "yiji-0.1.0.dist-info"
    assert metadata == {
        f"{info}/METADATA",
        f"{info}/WHEEL",
        f"{info}/RECORD",
        f"{info}/entry_points.txt",
        f"{info}/licenses/LICENSE",
    }


def _from_wheel(wheel: Path, folder: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Unpacks ``wheel`` into a plain folder under ``folder``; the function returned runs Python with
    the arguments it is given, in ``folder``, that folder on its path."""
    site = folder / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)

    def python(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv],
            cwd=folder,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(site)},
            timeout=120,
            check=False,
        )

    return python


def test_the_wheel_runs_outside_the_repository(
    built: tuple[Path, list[str], list[str]], tmp_path: Path
) -> None:
    wheel, _, _ = built
    db = tmp_path / "demo.db"
    proc = _from_wheel(wheel, tmp_path)("-m", "yiji", "--db", str(db), "demo")
    assert proc.returncode == 0, proc.stderr
    assert f"  yiji --db {db} --project demo recall 乌龙茶" in proc.stdout and "uv run" not in proc.stdout


def test_the_wheel_says_how_to_get_the_benchmarks(
    built: tuple[Path, list[str], list[str]], tmp_path: Path
) -> None:
    """On a product install (the wheel alone: ``-S`` keeps this environment's packages out, the benchmarks
    among them) ``yiji --help`` says ``bench`` is not installed, and ``yiji bench ...`` how to get it."""
    wheel, _, _ = built
    python = _from_wheel(wheel, tmp_path)

    def yiji(*argv: str) -> subprocess.CompletedProcess[str]:
        return python("-S", "-m", "yiji", *argv)

    listed = yiji("--help")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^    bench +the benchmarks are not installed here", listed.stdout, re.M), listed.stdout
    for argv in (["bench", "recall", "--events", "100"], ["--json", "bench"]):
        refused = yiji(*argv)
        assert (refused.returncode, refused.stdout) == (2, ""), argv
        assert "development package of yiji's repository (bench/)" in refused.stderr
        assert "`uv run yiji bench ...`" in refused.stderr
