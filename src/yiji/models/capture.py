"""Boundary models of host capture (``yiji host-ingest``): one batch of visible messages from a host.

A batch names the capture instance and the host session, the cursor the host believes is stored
(``expect_cursor``), why it was sent (``reason``) and the messages, each with the host's own sequence
number. The host cursor is the highest host ``seq`` acknowledged; ``-1`` means nothing was captured yet.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from yiji.models.common import AwareTime, EventId, InputModel, OutputModel, ScopeId, SessionId, not_blank
from yiji.models.events import MAX_EVENT_TEXT

__all__ = [
    "BOUNDARY_REASONS",
    "MAX_CAPTURE_LINES",
    "NO_CURSOR",
    "CaptureBatch",
    "CaptureLine",
    "CaptureReason",
    "CaptureResult",
]

NO_CURSOR = -1
"""The cursor of a session nothing was captured from yet."""
MAX_CAPTURE_LINES = 10_000
CaptureReason = Literal["event", "pre-summarize", "pre-return", "backfill"]
BOUNDARY_REASONS: frozenset[str] = frozenset({"pre-summarize", "pre-return"})
"""Reasons that record a capture checkpoint even when the batch is empty."""


class CaptureLine(InputModel):
    """One visible message, as a host sends it on a line of standard input."""

    event_id: EventId
    message_id: Annotated[str, Field(min_length=1, max_length=128)]
    session: SessionId
    seq: Annotated[int, Field(ge=0)]
    role: Literal["user", "assistant"]
    text: Annotated[str, Field(min_length=1, max_length=MAX_EVENT_TEXT)]
    occurred_at: AwareTime

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return not_blank(value)


class CaptureBatch(InputModel):
    """One ``host-ingest`` call. Omitted persona/project take the configured defaults."""

    instance: ScopeId
    session: SessionId
    expect_cursor: Annotated[int, Field(ge=NO_CURSOR)] | None = None
    reason: CaptureReason = "event"
    persona: ScopeId | None = None
    project: ScopeId | None = None
    lines: Annotated[list[CaptureLine], Field(max_length=MAX_CAPTURE_LINES)] = []


class CaptureResult(OutputModel):
    """The acknowledgement printed on standard output.

    ``ok`` is false when the stored cursor was not the expected one (``conflict="cursor"``) or an event id
    was already stored with another payload (``conflict="event"``); nothing was written then, and
    ``cursor`` is the stored cursor.
    """

    ok: bool
    cursor: int
    conflict: Literal["cursor", "event"] | None = None
