"""Pydantic models at yiji's boundaries (MCP, CLI, archives): inputs forbid unknown fields."""

from yiji.models.common import Scope, parse
from yiji.models.events import Cue, EventFilter, EventIn, EventRecord, SubmitResult
from yiji.models.personas import PersonaRecord

__all__ = [
    "Cue",
    "EventFilter",
    "EventIn",
    "EventRecord",
    "PersonaRecord",
    "Scope",
    "SubmitResult",
    "parse",
]
