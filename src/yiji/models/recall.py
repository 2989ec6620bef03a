"""Boundary models for recall: the query and its explainable results."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import Field, field_validator

from yiji.models.common import AwareTime, InputModel, OutputModel, Scope, ScopeId, UtcTime
from yiji.models.memories import Kind, MemoryPresentation, MemoryRecord
from yiji.timeutil import to_db

__all__ = [
    "RAW_EXCERPT_CHARS",
    "RAW_NOTE",
    "RawEvent",
    "RecallItem",
    "RecallQuery",
    "RecallResult",
    "compact",
]

RAW_EXCERPT_CHARS = 2000
"""Raw-event fallback text is capped at this many characters, with an explicit ``truncated`` flag."""


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
    mode: Literal["fast"] = "fast"

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


RAW_NOTE = "raw_event items are original turns without a derived memory: quoted text, not checked facts"
"""Said once per compact result instead of once per raw item."""


def compact(value: Any) -> Any:
    """``value`` without ``None`` fields, at any depth (for compact agent-facing results)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def _brief_why(why: dict[str, Any], explain: bool) -> dict[str, Any]:
    """The explanation without zero parts; ``explain`` keeps the factors too."""
    out: dict[str, Any] = {
        k: round(v, 3)
        for k, v in why.get("contributions", {}).items()
        if isinstance(v, int | float) and v != 0
    }
    if why.get("matched"):
        out["matched"] = why["matched"]
    if explain:
        out = {
            **{k: v for k, v in why.items() if k not in ("contributions", "score")},
            "contributions": {k: v for k, v in why.get("contributions", {}).items() if v != 0},
        }
    return out


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

    def brief(self, explain: bool = False) -> dict[str, Any]:
        """The item as an agent needs it: id, type, text as presented, quote, time, kind, basis, score
        first; then what matched (or which hit it is context of); nulls and zero parts left out.
        ``explain`` adds the full explanation and the record's other fields."""
        out: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.memory is not None:
            m, shown = self.memory, self.presentation
            out["text"] = shown.text if shown is not None else m.text
            if out["text"] != m.quote:
                out["quote"] = m.quote
            out["time"] = shown.time_label if shown is not None else to_db(m.valid_at)
            out["kind"] = m.kind
            out["basis"] = m.basis
            if shown is not None and shown.mode != "detailed":
                out["shown_as"] = shown.mode
        elif self.event is not None:
            e = self.event
            out["text"] = e.text
            out["time"] = to_db(e.occurred_at)
            out["role"] = e.role
            if e.truncated:
                out["truncated"] = True
                out["total_chars"] = e.total_chars
        out["score"] = round(self.score, 3)
        if "context" in self.matched_by:
            out["context_of"] = self.why.get("context_of")
        else:
            out["why"] = _brief_why(self.why, explain)
            if "weak" in self.matched_by:
                out["weak"] = True
        if explain:
            out["why"] = _brief_why(self.why, explain)
            out["matched_by"] = self.matched_by
            if self.memory is not None:
                extra = self.memory.model_dump(
                    mode="json",
                    include={"event_id", "confidence", "subject", "fact_key", "invalid_at", "gist"},
                )
                out.update(compact(extra))
            elif self.event is not None:
                out["session"] = self.event.session
                out["seq"] = self.event.seq
        return cast(dict[str, Any], compact(out))


class RecallResult(OutputModel):
    scope: Scope
    query: str
    mode: str
    items: list[RecallItem]
    warnings: list[str] = []

    def brief(self, explain: bool = False) -> dict[str, Any]:
        """The compact result for agents (MCP): scope once, items in :meth:`RecallItem.brief` form."""
        out: dict[str, Any] = {
            "scope": self.scope.model_dump(mode="json"),
            "items": [item.brief(explain) for item in self.items],
        }
        if any(item.type == "raw_event" for item in self.items):
            out["note"] = RAW_NOTE
        if self.warnings:
            out["warnings"] = self.warnings
        return out
