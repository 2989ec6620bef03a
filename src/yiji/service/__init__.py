"""The service layer: one method per use case, owning transactions.

Adapters (CLI, MCP) build a :class:`MemoryService` once through :func:`open_service` and make one call per
request. Importing this package is cheap: the composition (:mod:`yiji.service.compose`, which imports every
use case, the models and the providers) loads on first use of one of its names, so a use case that runs on
its own, such as host capture (:mod:`yiji.service.capture`), starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yiji.service.compose import (
        IdleCheckpointer,
        MemoryService,
        build_embedder,
        build_extractor,
        open_service,
    )

__all__ = [
    "IdleCheckpointer",
    "MemoryService",
    "build_embedder",
    "build_extractor",
    "open_service",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from yiji.service import compose

        return getattr(compose, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
