"""Boundary models for a memory's lifecycle: correction, permanent deletion and the companion's emotion.

A correction fixes an *error* (the memory was never true); a change in the world is a new event instead.
Deletion results list identifiers and counts only, never text, so a deletion report leaves no residue of
what it removed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from yiji.models.common import (
    AwareTime,
    EventId,
    InputModel,
    OutputModel,
    Scope,
    ScopeId,
    SessionId,
    UtcTime,
)
from yiji.models.events import MAX_EVENT_TEXT, EventRecord, Role
from yiji.models.memories import Basis, Kind

__all__ = [
    "CorrectRequest",
    "CorrectResult",
    "CurrentEmotionState",
    "DeleteRequest",
    "DeleteResult",
    "EmotionResult",
]


class CorrectRequest(InputModel):
    """Correct a mistaken memory with a statement of what is actually true.

    ``statement`` becomes the text of a new ``correction`` event (role ``user`` unless given, in the
    mistaken memory's session unless given). The corrected memory is derived from that event: ``text``
    defaults to the statement and ``quote`` to the whole statement, so both are grounded in it. ``kind``,
    ``subject``, ``fact_key``, ``confidence``, ``valence`` and ``arousal`` default to the mistaken memory's;
    ``basis`` defaults to what the correction event's role states (``user_statement`` for ``user``,
    ``assistant_expression`` for ``assistant``), otherwise the mistaken memory's; an omitted ``valid_at``
    keeps the mistaken memory's start.
    """

    memory_id: EventId
    statement: Annotated[str, Field(min_length=1, max_length=MAX_EVENT_TEXT)]
    persona: ScopeId | None = None
    project: ScopeId | None = None
    text: Annotated[str | None, Field(min_length=1, max_length=4000)] = None
    quote: Annotated[str | None, Field(min_length=1, max_length=4000)] = None
    kind: Kind | None = None
    basis: Basis | None = None
    subject: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    fact_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    valid_at: AwareTime | None = None
    confidence: Annotated[float | None, Field(ge=0, le=1)] = None
    valence: Annotated[float | None, Field(ge=-1, le=1)] = None
    arousal: Annotated[float | None, Field(ge=0, le=1)] = None
    gist: Annotated[str | None, Field(min_length=1, max_length=400)] = None
    role: Role = "user"
    session: SessionId | None = None
    event_id: EventId | None = None
    occurred_at: AwareTime | None = None

    @field_validator("statement")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace only")
        return value


class CorrectResult(OutputModel):
    """What a correction did: the new correction event, the corrected memory derived from it, the mistaken
    (now revoked) memory and its amended source event. ``created`` is false when the same correction
    (same ``event_id`` and statement) was already stored: nothing changed."""

    scope: Scope
    event: EventRecord
    corrected_memory_id: str
    mistaken_memory_id: str
    amended_event_id: str
    checkpoints_invalidated: int
    created: bool = True


MAX_MATCHING = 1000
"""The longest text ``matching`` may be (an identifier or a phrase, not a document)."""


class DeleteRequest(InputModel):
    """Permanently delete, starting from exactly one event, one memory, or every event and memory of
    the scope holding the identifier ``matching`` in any spelling (:mod:`yiji.domain.identifiers`)."""

    event_id: EventId | None = None
    memory_id: EventId | None = None
    matching: str | None = Field(default=None, min_length=1, max_length=MAX_MATCHING)
    persona: ScopeId | None = None
    project: ScopeId | None = None
    dry_run: bool = False

    @model_validator(mode="after")
    def _exactly_one_start(self) -> DeleteRequest:
        if sum(v is not None for v in (self.event_id, self.memory_id, self.matching)) != 1:
            raise ValueError("give exactly one of event_id, memory_id or matching")
        return self


class DeleteResult(OutputModel):
    """What a deletion removed (or, with ``dry_run``, would remove): identifiers and counts, never text.

    ``matched_event_ids``/``matched_memory_ids`` (a deletion by ``matching`` only) are those that hold
    the identifier themselves; ``event_ids``/``memory_ids`` add what their deletion closure takes with
    them. ``relations`` counts relation edges (``related`` and ``corrects``) touching a removed memory;
    ``checkpoints`` counts checkpoints of the scope that were (would be) invalidated.
    """

    scope: Scope
    dry_run: bool
    event_ids: list[str]
    memory_ids: list[str]
    relations: int
    embeddings: int
    cues: int
    checkpoints: int
    matched_event_ids: list[str] = []
    matched_memory_ids: list[str] = []


class CurrentEmotionState(OutputModel):
    """The companion's current emotion: the latest expression's valence/arousal times ``factor``."""

    memory_id: str
    valence: float
    arousal: float
    factor: float
    expressed_valence: float
    expressed_arousal: float
    expressed_at: UtcTime
    half_life_hours: float


class EmotionResult(OutputModel):
    scope: Scope
    emotion: CurrentEmotionState | None
