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


MAX_MODULE_LINES = 650
"""No source module is longer; the UI's message tables (``ui/i18n.py``) are data and aside."""


def test_no_module_is_longer_than_the_limit() -> None:
    lengths = {
        str(p.relative_to(SRC)): len(p.read_text(encoding="utf-8").splitlines())
        for p in SRC.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    long = {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES and name != "ui/i18n.py"}
    assert long == {}


def _own_bases() -> dict[str, list[str]]:
    """Each class of yiji's own (``module:Class``) with the names of its bases that are yiji's own classes.

    A base is resolved through the module's imports: a name bound by ``from yiji... import`` (or a
    ``yiji...`` module attribute) that names a class defined somewhere in ``src/yiji``, or a class of the
    same module."""
    trees = {
        p: ast.parse(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py") if "__pycache__" not in p.parts
    }
    own = {n.name for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.ClassDef)}
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        local = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        imported: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("yiji"):
                imported.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.Import):
                imported.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("yiji")})
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            mine: list[str] = []
            for base in node.bases:
                target = base.value if isinstance(base, ast.Subscript) else base
                if isinstance(target, ast.Name):
                    name = target.id if target.id in local else imported.get(target.id)
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    name = target.attr if target.value.id in imported else None
                else:
                    name = None
                if name in own:
                    mine.append(name)
            found[f"{path.relative_to(SRC)}:{node.name}"] = mine
    return found


def test_no_class_has_more_than_one_base_of_yijis_own() -> None:
    """Objects, not mixins: a class of yiji's own names at most one of yiji's classes as its base. The
    error tree (``yiji.errors.YijiError`` and what derives from it) is "is a", and aside."""
    bases = _own_bases()
    by_name: dict[str, list[str]] = {}
    for key, mine in bases.items():
        by_name.setdefault(key.split(":")[1], []).extend(mine)
    errors = {"YijiError"}
    while True:
        more = {name for name, mine in by_name.items() if errors.intersection(mine)} - errors
        if not more:
            break
        errors |= more
    mixed = {key: mine for key, mine in bases.items() if len(mine) > 1 and key.split(":")[1] not in errors}
    assert mixed == {}
