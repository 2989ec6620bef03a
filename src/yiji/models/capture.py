"""Boundary model of host capture (``yiji host-ingest``): the authority on what a batch may hold.

A batch names the capture instance and the host session, the cursor the host believes is stored
(``expect_cursor``), why it was sent (``reason``) and the messages, each with the host's own sequence
number. Plainly valid input is accepted without pydantic by :func:`yiji.domain.capture.plain_batch`; this
model decides everything else (conversions and the wording of errors) through :func:`parse_batch`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator

from yiji.domain.capture import MAX_CAPTURE_LINES, MAX_MESSAGE_ID, MAX_SEQ, NO_CURSOR
from yiji.domain.capture import CaptureBatch as Batch
from yiji.domain.capture import CaptureLine as Line
from yiji.domain.limits import MAX_EVENT_TEXT
from yiji.models.common import AwareTime, EventId, InputModel, ScopeId, SessionId, not_blank, parse

__all__ = ["CaptureBatch", "CaptureLine", "CaptureReason", "parse_batch"]

CaptureReason = Literal["event", "pre-summarize", "pre-return", "backfill"]


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):  # JSON true is not the number 1
        raise ValueError("must be a whole number, not true or false")
    return value


HostSeq = Annotated[int, BeforeValidator(_not_bool), Field(ge=0, le=MAX_SEQ)]
"""A host's sequence number: a whole number (``3.0`` converts; ``true`` is refused)."""


class CaptureLine(InputModel):
    """One visible message, as a host sends it on a line of standard input."""

    event_id: EventId
    message_id: Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_ID)]
    session: SessionId
    seq: HostSeq
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
    expect_cursor: Annotated[int, Field(ge=NO_CURSOR, le=MAX_SEQ)] | None = None
    reason: CaptureReason = "event"
    persona: ScopeId | None = None
    project: ScopeId | None = None
    lines: Annotated[list[CaptureLine], Field(max_length=MAX_CAPTURE_LINES)] = []


def parse_batch(raw: Any) -> Batch:
    """Validate ``raw`` with the model; raise InvalidInput naming the field and rule, or return the batch."""
    model = parse(CaptureBatch, raw)
    lines = tuple(
        Line(x.event_id, x.message_id, x.session, x.seq, x.role, x.text, x.occurred_at) for x in model.lines
    )
    return Batch(
        model.instance, model.session, model.expect_cursor, model.reason, model.persona, model.project, lines
    )
