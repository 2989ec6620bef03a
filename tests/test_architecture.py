"""Layering rules enforced: adapters -> service -> domain/store; SQL only in db/store; pure domain."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import yiji

SRC = Path(yiji.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _modules() -> dict[str, set[str]]:
    return {str(p.relative_to(SRC)): _imports(p) for p in SRC.rglob("*.py") if "__pycache__" not in p.parts}


def test_only_db_and_store_import_sqlite3() -> None:
    offenders = [
        name
        for name, imports in _modules().items()
        if "sqlite3" in imports and not (name == "db.py" or name.startswith("store/"))
    ]
    assert offenders == []


def test_domain_is_pure() -> None:
    forbidden = {"sqlite3", "httpx", "yiji.db", "yiji.store", "yiji.service", "mcp", "yiji.cli"}
    for name, imports in _modules().items():
        if name.startswith("domain/"):
            bad = {i for i in imports if any(i == f or i.startswith(f + ".") for f in forbidden)}
            assert not bad, f"{name} imports {bad}"


def test_nothing_below_the_service_knows_adapters() -> None:
    adapters = ("yiji.cli", "yiji.mcp_server", "yiji.ui", "mcp", "starlette", "uvicorn", "jinja2")
    for name, imports in _modules().items():
        if name.split("/")[0] in {"store", "domain", "service", "db.py", "schema.py", "models", "providers"}:
            bad = {i for i in imports if any(i == a or i.startswith(a + ".") for a in adapters)}
            assert not bad, f"{name} imports {bad}"


def test_adapters_do_not_touch_the_store() -> None:
    for name, imports in _modules().items():
        if name.startswith(("cli/", "ui/", "mcp_server/")):
            bad = {i for i in imports if i.startswith("yiji.store") or i == "yiji.db"}
            assert not bad, f"{name} imports {bad}"


def test_public_names_exist() -> None:
    for info in pkgutil.walk_packages(yiji.__path__, "yiji."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            assert hasattr(module, name), f"{info.name}.__all__ names missing {name}"


def test_the_cli_imports_no_web_stack_until_ui_runs() -> None:
    """``yiji ui`` imports Starlette, uvicorn and Jinja2 in its handler; other commands start without them."""
    code = (
        "import sys, yiji.cli; yiji.cli.build_parser(); "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'jinja2', 'yiji.ui.app') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
