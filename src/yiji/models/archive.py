"""Boundary models for portable archives: one strict model per table row, the header, and results.

Archive rows are untrusted input, even when they come from yiji's own backup: every model forbids
unknown fields, refuses type coercion (``"1"`` is not ``1``, ``true`` is not ``1``), refuses NaN and
infinities, and normalizes every time to yiji's fixed-width UTC string (a time without a timezone is
refused). Field order follows the column order of schema version 3, and field names are the column
names, so a validated row is ready to insert.

Models are versioned only where the schema changed: version 1 memories have no ``gist``
(:class:`MemoryRowV1`); ``event_cues`` arrive with version 2 and ``capture_cursors`` with version 3;
version 7 memories carry their review state (:class:`MemoryRowV7`); the ``deletion_ledger`` arrives with
version 10 (:class:`DeletionLedgerRow`); version 11 events say whether secrets were redacted from their
text (:class:`EventRowV11`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from yiji.domain.deletions import DIGEST_PATTERN
from yiji.errors import InvalidInput
from yiji.models.common import ID_PATTERN, SCOPE_PATTERN, OutputModel
from yiji.models.events import MAX_EVENT_TEXT
from yiji.models.personas import MAX_PERSONA_TEXT
from yiji.timeutil import parse_time, to_db

__all__ = [
    "ArchiveHeader",
    "ArchiveLine",
    "ArchiveResult",
    "CaptureCursorRow",
    "CheckpointRow",
    "DbTime",
    "DeletionLedgerRow",
    "EventCueRow",
    "EventRow",
    "EventRowV11",
    "MemoryRow",
    "MemoryRowV1",
    "MemoryRowV7",
    "PersonaRow",
    "RelationRow",
    "RowModel",
]


def _db_time(value: Any) -> str:
    try:
        return to_db(parse_time(value, "time"))
    except InvalidInput as exc:
        raise ValueError(exc.rule) from None


DbTime = Annotated[str, BeforeValidator(_db_time)]
"""A time in an archive: fixed-width UTC, or any ISO 8601 string with a timezone (normalized)."""


def _json_array_text(value: str) -> str:
    try:
        decoded = json.loads(value)
    except ValueError:
        raise ValueError("must be a JSON array encoded as text") from None
    if not isinstance(decoded, list):
        raise ValueError("must be a JSON array encoded as text")
    return value


ScopeId = Annotated[str, Field(pattern=SCOPE_PATTERN)]
ExternalId = Annotated[str, Field(pattern=ID_PATTERN)]
RecordId = Annotated[str, Field(min_length=1, max_length=256)]
Text = Annotated[str, Field(min_length=1)]
JsonArrayText = Annotated[str, AfterValidator(_json_array_text)]
Seq = Annotated[int, Field(ge=1)]


class RowModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False, defer_build=True)


class PersonaRow(RowModel):
    persona_id: ScopeId
    version: Annotated[int, Field(ge=1)]
    text: Annotated[str, Field(min_length=1, max_length=MAX_PERSONA_TEXT)]
    note: str | None
    created_at: DbTime


class EventRow(RowModel):
    seq: Seq
    id: ExternalId
    persona_id: ScopeId
    project_id: ScopeId
    session_id: ExternalId
    role: Literal["user", "assistant", "system", "tool"]
    source: Annotated[str, Field(min_length=1, max_length=128)]
    category: Literal["conversation", "reference", "persona", "correction"]
    text: Annotated[str, Field(min_length=1, max_length=MAX_EVENT_TEXT)]
    occurred_at: DbTime
    ingested_at: DbTime
    amended: Annotated[int, Field(ge=0, le=1)]
    extraction_state: Literal["none", "pending", "done", "skipped"]
    extraction_error: str | None
    extraction_attempts: Annotated[int, Field(ge=0)]


class EventRowV11(EventRow):
    """Version 11 adds ``redacted``; older archives' events import as not redacted."""

    redacted: Annotated[int, Field(ge=0, le=1)]


class EventCueRow(RowModel):
    event_id: ExternalId
    cue_type: Literal["photo", "text"]
    identifier: Annotated[str, Field(min_length=1, max_length=512)]
    label: str | None


class MemoryRowV1(RowModel):
    pk: Seq
    id: RecordId
    persona_id: ScopeId
    project_id: ScopeId
    event_id: ExternalId
    kind: Literal["fact", "preference", "episode", "observation", "emotion", "agreement", "growth"]
    basis: Literal["user_statement", "assistant_expression", "inference"]
    text: Text
    quote: Text
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
    subject: str | None
    fact_key: str | None
    valid_at: DbTime
    invalid_at: DbTime | None
    revoked_at: DbTime | None
    revoked_reason: str | None
    valence: Annotated[float, Field(ge=-1.0, le=1.0)] | None
    arousal: Annotated[float, Field(ge=0.0, le=1.0)] | None
    origin: Literal["extraction", "manual", "correction", "import"]
    created_at: DbTime


class MemoryRow(MemoryRowV1):
    gist: str | None


class MemoryRowV7(MemoryRow):
    """Version 7 adds the review state; older archives' memories import as ``accepted``."""

    review_state: Literal["accepted", "proposed", "rejected"]
    reviewed_at: DbTime | None
    reviewed_by: Annotated[str, Field(min_length=1, max_length=200)] | None
    review_note: Annotated[str, Field(max_length=1000)] | None


class RelationRow(RowModel):
    from_id: RecordId
    to_id: RecordId
    type: Literal["related", "corrects"]
    created_at: DbTime


class CheckpointRow(RowModel):
    id: RecordId
    persona_id: ScopeId
    project_id: ScopeId
    session_id: ExternalId
    goal: str
    completed: JsonArrayText
    pending: JsonArrayText
    constraints: JsonArrayText
    next_action: str | None
    covered_seq: Seq | None
    created_at: DbTime
    invalidated_at: DbTime | None
    invalid_reason: str | None


class CaptureCursorRow(RowModel):
    instance_id: RecordId
    persona_id: ScopeId
    project_id: ScopeId
    session_id: ExternalId
    cursor: str
    updated_at: DbTime


class DeletionLedgerRow(RowModel):
    """What a deletion removed, by digest (:mod:`yiji.domain.deletions`): ``span`` and ``bounded`` are
    given exactly for an ``identifier``."""

    kind: Literal["event_id", "text", "identifier"]
    digest: Annotated[str, Field(pattern=DIGEST_PATTERN)]
    span: Annotated[int, Field(ge=1)] | None
    bounded: Annotated[int, Field(ge=0, le=1)] | None
    persona_id: ScopeId
    project_id: ScopeId
    deleted_at: DbTime

    @model_validator(mode="after")
    def _span_of_identifiers_only(self) -> DeletionLedgerRow:
        if not (self.kind == "identifier") == (self.span is not None) == (self.bounded is not None):
            raise ValueError("span and bounded must be given for an identifier and only for one")
        return self


class ArchiveHeader(RowModel):
    """The envelope of an archive (for JSON, everything except ``tables``)."""

    format: Literal["yiji-archive"]
    format_version: Annotated[int, Field(ge=1)]
    exported_at: DbTime
    counts: dict[str, Annotated[int, Field(ge=0)]] | None = None
    sequences: dict[str, Annotated[int, Field(ge=0)]] | None = None


class ArchiveLine(RowModel):
    """One JSONL line after the header: a row of a table."""

    table: str
    row: dict[str, Any]


class ArchiveResult(OutputModel):
    """What an export, import, backup or restore did."""

    operation: Literal["export", "import", "backup", "restore"]
    path: str
    format: Literal["json", "jsonl", "sqlite"]
    format_version: int
    """The archive format version, or the schema version of a SQLite file, that was read or written."""
    counts: dict[str, int]
