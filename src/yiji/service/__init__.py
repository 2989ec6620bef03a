"""The service layer: one method per use case, owning transactions.

Adapters (CLI, MCP, host capture) build a :class:`MemoryService` once through :func:`open_service` and make
one call per request. Use cases are grouped in mixins by area; they share :class:`ServiceBase` state.
"""

from __future__ import annotations

from yiji.config import Config
from yiji.db import Database
from yiji.service.base import ServiceBase
from yiji.service.events import EventOps
from yiji.service.health import HealthOps
from yiji.service.personas import PersonaOps
from yiji.timeutil import Clock

__all__ = ["MemoryService", "ServiceBase", "open_service"]


class MemoryService(PersonaOps, EventOps, HealthOps):
    """Every use case of yiji, over one database."""


def open_service(config: Config, *, clock: Clock | None = None) -> MemoryService:
    """The composition root used by the CLI and the MCP server."""
    db = Database(config.db, synchronous=config.synchronous)
    return MemoryService(db, config, clock=clock)
