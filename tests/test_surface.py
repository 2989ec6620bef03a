"""The service's public surface, pinned: every public name of :class:`yiji.service.MemoryService`, with each
method's parameters (name, kind, default, annotation) and return annotation, equals the snapshot in
``tests/data/surface/memory_service.json``.

A change of the surface is deliberate: regenerate the snapshot with ``YIJI_UPDATE_SURFACE=1`` and review
its diff (a dropped or retyped method is what this test exists to catch)."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Any

from yiji.service import MemoryService

SNAPSHOT = Path(__file__).parent / "data" / "surface" / "memory_service.json"


def _annotation(value: Any) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    return " ".join(str(value).split()) if isinstance(value, str) else inspect.formatannotation(value)


def _method(function: Any) -> dict[str, Any]:
    signature = inspect.signature(function)
    return {
        "parameters": [
            {
                "name": p.name,
                "kind": p.kind.name,
                "default": None if p.default is inspect.Parameter.empty else repr(p.default),
                "annotation": _annotation(p.annotation),
            }
            for p in signature.parameters.values()
        ],
        "returns": _annotation(signature.return_annotation),
    }


def surface(service: MemoryService) -> dict[str, Any]:
    """Methods from the class (as bound on an instance, so ``self`` is left out); other public names,
    class or instance, by name only."""
    methods: dict[str, Any] = {}
    attributes: list[str] = []
    for name in sorted(set(dir(service))):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(service, name)
        if isinstance(static, property):
            attributes.append(name)
            continue
        value = getattr(service, name)
        if inspect.ismethod(value) or inspect.isfunction(value):
            methods[name] = _method(value)
        else:
            attributes.append(name)
    return {"methods": methods, "attributes": attributes}


def test_the_service_surface_is_the_pinned_one(service: MemoryService) -> None:
    found = surface(service)
    if os.environ.get("YIJI_UPDATE_SURFACE") == "1":
        SNAPSHOT.write_text(json.dumps(found, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    pinned = json.loads(SNAPSHOT.read_text())
    assert sorted(found["methods"]) == sorted(pinned["methods"]), "a public method was added or dropped"
    assert found["attributes"] == pinned["attributes"], "a public attribute was added or dropped"
    for name, shape in pinned["methods"].items():
        assert found["methods"][name] == shape, f"{name}: parameters or return type changed"
