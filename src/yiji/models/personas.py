"""Boundary models for personas: immutable versions keyed by persona id + version."""

from __future__ import annotations

from yiji.models.common import OutputModel, UtcTime

__all__ = ["MAX_PERSONA_TEXT", "PersonaRecord"]

MAX_PERSONA_TEXT = 100_000


class PersonaRecord(OutputModel):
    persona: str
    version: int
    text: str
    note: str | None = None
    created_at: UtcTime
