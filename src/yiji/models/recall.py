"""Boundary models for recall: the query and its explainable results."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from yiji.models.common import AwareTime, InputModel, OutputModel, Scope, ScopeId, UtcTime
from yiji.models.memories import Kind, MemoryPresentation, MemoryRecord

__all__ = ["RAW_EXCERPT_CHARS", "RecallMode", "RawEvent", "RecallItem", "RecallQuery", "RecallResult"]

RAW_EXCERPT_CHARS = 2000
"""Raw-event fallback text is capped at this many characters, with an explicit ``truncated`` flag."""


RecallMode = Literal["fast", "semantic", "deep"]


class RecallQuery(InputModel):
    query: Annotated[str, Field(min_length=1, max_length=4000)]
    persona: ScopeId | None = None
    project: ScopeId | None = None
    kinds: Annotated[list[Kind] | None, Field(max_length=7)] = None
    since: AwareTime | None = None
    until: AwareTime | None = None
    as_of: AwareTime | None = None
    include_history: bool = False
    include_raw: bool = True
    limit: Annotated[int, Field(ge=1, le=200)] = 10
    mode: RecallMode = "fast"
    """``fast``: lexical, cue and relation lookups only; ``semantic`` adds cosine similarity over up to
    ``recall.semantic_scan_limit`` most recent eligible vectors; ``deep`` scans every eligible vector."""

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace only")
        return value


class RawEvent(OutputModel):
    """A conversation event with no derived memory, returned as labeled fallback evidence."""

    id: str
    seq: int
    session: str
    role: str
    occurred_at: UtcTime
    text: str
    truncated: bool
    total_chars: int
    label: str = "raw event (no derived memory); original text, not a checked fact"


class RecallItem(OutputModel):
    type: Literal["memory", "raw_event"]
    id: str
    score: float
    why: dict[str, Any]
    matched_by: list[str]
    memory: MemoryRecord | None = None
    presentation: MemoryPresentation | None = None
    """How the memory is shown under ordinary forgetting (gist or topic cues for old episodes)."""
    event: RawEvent | None = None


class RecallResult(OutputModel):
    scope: Scope
    query: str
    mode: str
    items: list[RecallItem]
    warnings: list[str] = []
