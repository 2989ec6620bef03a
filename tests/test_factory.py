"""The tests build the service in one place (:mod:`tests.factory`), so that a change of its construction
is followed there alone."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _constructions(path: Path) -> list[int]:
    """The lines of ``path`` that call ``MemoryService(...)`` (by name or as ``module.MemoryService``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if name == "MemoryService":
                found.append(node.lineno)
    return found


def test_only_the_factory_builds_the_service() -> None:
    built = {
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != "factory.py"
        for line in _constructions(path)
    }
    assert built == set(), "build the service with tests.factory.make_service"
    assert _constructions(TESTS / "factory.py")  # the check finds a construction where there is one
