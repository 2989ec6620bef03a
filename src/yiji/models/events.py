"""Boundary models for events: what a host submits and what yiji returns."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from yiji.domain.limits import MAX_EVENT_TEXT
from yiji.models.common import (
    AwareTime,
    EventId,
    InputModel,
    Offset,
    OutputModel,
    Page,
    Scope,
    ScopeId,
    SessionId,
    UtcTime,
)

__all__ = [
    "CATEGORIES",
    "MAX_EVENT_TEXT",
    "ROLES",
    "Category",
    "Cue",
    "EventFilter",
    "EventIn",
    "EventPage",
    "ImportRejection",
    "ImportSummary",
    "EventRecord",
    "Role",
    "SubmitResult",
]


Role = Literal["user", "assistant", "system", "tool"]
Category = Literal["conversation", "reference", "persona", "correction"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")
CATEGORIES: tuple[str, ...] = ("conversation", "reference", "persona", "correction")


class Cue(InputModel):
    """A photo or text cue: an identifier and an optional label. A label, not image recognition."""

    type: Literal["photo", "text"]
    identifier: Annotated[str, Field(min_length=1, max_length=512)]
    label: Annotated[str | None, Field(max_length=2000)] = None

    @field_validator("identifier")
    @classmethod
    def _identifier_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class EventIn(InputModel):
    """An original event submitted by a host. Omitted persona/project take the configured defaults."""

    id: EventId | None = None
    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId
    role: Role
    source: Annotated[str, Field(min_length=1, max_length=128)] = "chat"
    category: Category = "conversation"
    text: Annotated[str, Field(min_length=1, max_length=MAX_EVENT_TEXT)]
    occurred_at: AwareTime | None = None
    cues: Annotated[list[Cue], Field(max_length=64)] = []

    @field_validator("text", "source")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace only")
        return value


class EventRecord(OutputModel):
    """A stored event. ``seq`` increases across the whole database."""

    id: str
    seq: int
    persona: str
    project: str
    session: str
    role: str
    source: str
    category: str
    text: str
    occurred_at: UtcTime
    ingested_at: UtcTime
    amended: bool
    extraction_state: str
    extraction_error: str | None = None
    cues: list[Cue] = []
    redacted: bool = False
    """Secrets in the submitted text were replaced by ``[redacted:<rule>]`` markers before it was stored."""


class SubmitResult(OutputModel):
    """The result of ``event_submit``: the stored event and whether this call created it.

    ``skipped`` is ``"deleted"`` when the event was not stored because it repeats a deletion (a deleted
    event's id or text, or an identifier deleted with ``delete --matching``); ``event`` is null then and
    a warning says which matched, never the text."""

    scope: Scope
    event: EventRecord | None
    created: bool
    skipped: Literal["deleted"] | None = None
    memory_ids: list[str] = []
    extraction: dict[str, object] | None = None
    warnings: list[str] = []


class EventFilter(InputModel):
    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId | None = None
    role: Role | None = None
    category: Category | None = None
    since: AwareTime | None = None
    until: AwareTime | None = None
    limit: Annotated[int, Field(ge=1, le=10_000)] = 50
    offset: Offset = 0


class EventPage(Page):
    """One page of events: ``total`` matches in all, ``next_offset`` is null on the last page."""

    events: list[EventRecord]


class ImportRejection(OutputModel):
    """A record an import refused: its line in the file, the field and the rule (never the value)."""

    line: int
    field: str
    rule: str


class ImportSummary(OutputModel):
    """What ``event import`` did. ``rejections`` lists at most the first 1,000 (``rejected`` counts all).
    ``stopped_at_line`` is set when reading stopped there (a JSON list broke off, or a byte that is not
    UTF-8) and the rest of the file was not read."""

    inserted: int
    already_present: int
    rejected: int
    skipped_deleted: int = 0
    """Records not stored because they repeat a deletion (:mod:`yiji.service.deletions`)."""
    batches: int
    rejections: list[ImportRejection]
    stopped_at_line: int | None = None

    def committed_line(self) -> str:
        """What was committed, in one line (also the start of the message of an import that failed)."""
        from yiji.domain.wording import counted

        deleted = f", not stored as deleted {self.skipped_deleted}" if self.skipped_deleted else ""
        return (
            f"inserted {self.inserted}, already present {self.already_present}{deleted}, "
            f"rejected {self.rejected} ({counted(self.batches, 'batch', 'batches')} committed)"
        )
