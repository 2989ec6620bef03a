"""Recall at the boundary: the query's model, and the compact form of its explainable results for agents.

The results themselves are the plain records of :mod:`yiji.domain.recall` (one definition for every
path); :func:`brief` is the form the MCP tool returns."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import Field, field_validator

from yiji.domain import recall as plain
from yiji.domain.recall import MAX_KINDS, MAX_LIMIT, MAX_QUERY_CHARS, Recalled, RecalledItem
from yiji.models.common import AwareTime, InputModel, ScopeId
from yiji.models.memories import Kind
from yiji.timeutil import to_db

__all__ = [
    "RAW_NOTE",
    "RecallMode",
    "RecallQuery",
    "brief",
    "brief_item",
    "compact",
]


RecallMode = Literal["fast", "semantic", "deep"]


class RecallQuery(InputModel):
    """The boundary form of :class:`yiji.domain.recall.RecallRequest` (whose fast check,
    :func:`yiji.domain.recall.plain_request`, keeps the same rules)."""

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    persona: ScopeId | None = None
    project: ScopeId | None = None
    kinds: Annotated[list[Kind] | None, Field(max_length=MAX_KINDS)] = None
    since: AwareTime | None = None
    until: AwareTime | None = None
    as_of: AwareTime | None = None
    include_history: bool = False
    include_raw: bool = True
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = 10
    mode: RecallMode = "fast"
    """``fast``: lexical, cue and relation lookups only; ``semantic`` adds cosine similarity over up to
    ``recall.semantic_scan_limit`` most recent eligible vectors; ``deep`` scans every eligible vector."""

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty or whitespace only")
        return value

    def request(self) -> plain.RecallRequest:
        """The same request as plain data, for the recall use case."""
        return plain.RecallRequest(
            self.query,
            self.persona,
            self.project,
            None if self.kinds is None else tuple(self.kinds),
            self.since,
            self.until,
            self.as_of,
            self.include_history,
            self.include_raw,
            self.limit,
            self.mode,
        )


RAW_NOTE = "raw_event items are original turns without a derived memory: quoted text, not checked facts"
"""Said once per compact result instead of once per raw item."""


def compact(value: Any) -> Any:
    """``value`` without ``None`` fields, at any depth (for compact agent-facing results)."""
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


_EXPLAINED = frozenset({"event_id", "confidence", "subject", "fact_key", "invalid_at", "gist"})
"""The record's fields an explained brief item adds."""


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


def brief_item(item: RecalledItem, explain: bool = False) -> dict[str, Any]:
    """The item as an agent needs it: id, type, text as presented, quote, time, kind, basis, score first;
    then what matched (or which hit it is context of); nulls and zero parts left out. ``explain`` adds
    the full explanation and the record's other fields."""
    out: dict[str, Any] = {"id": item.id, "type": item.type}
    if item.memory is not None:
        m, shown = item.memory, item.presentation
        out["text"] = shown.text if shown is not None else m.text
        if out["text"] != m.quote:
            out["quote"] = m.quote
        out["time"] = shown.time_label if shown is not None else to_db(m.valid_at)
        out["kind"] = m.kind
        out["basis"] = m.basis
        if shown is not None and shown.mode != "detailed":
            out["shown_as"] = shown.mode
    elif item.event is not None:
        e = item.event
        out["text"] = e.text
        out["time"] = to_db(e.occurred_at)
        out["role"] = e.role
        if e.truncated:
            out["truncated"] = True
            out["total_chars"] = e.total_chars
    out["score"] = round(item.score, 3)
    if item.tier != "context":
        out["tier"] = item.tier
    if item.context:
        out["context"] = [_context_brief(c) for c in item.context]
    if "context" in item.matched_by:
        out["context_of"] = item.why.get("context_of")
    else:
        out["why"] = _brief_why(item.why, explain)
        if "weak" in item.matched_by:
            out["weak"] = True
    if explain:
        out["why"] = _brief_why(item.why, explain)
        out["matched_by"] = item.matched_by
        if item.memory is not None:
            extra = item.memory.as_dict()
            out.update(compact({k: v for k, v in extra.items() if k in _EXPLAINED}))
        elif item.event is not None:
            out["session"] = item.event.session
            out["seq"] = item.event.seq
    return cast(dict[str, Any], compact(out))


def brief(found: Recalled, explain: bool = False) -> dict[str, Any]:
    """The compact result for agents (MCP): scope once, items in :func:`brief_item` form."""
    out: dict[str, Any] = {
        "scope": {"persona": found.persona, "project": found.project},
        "items": [brief_item(item, explain) for item in found.items],
    }
    if found.mode != "fast":
        out["mode"] = found.mode
    if any(item.type == "raw_event" for item in found.items):
        out["note"] = RAW_NOTE
    if found.warnings:
        out["warnings"] = found.warnings
    return out


def _context_brief(item: RecalledItem) -> dict[str, Any]:
    """A context turn as an agent needs it: id, type, text, role or kind, time, truncation."""
    out = brief_item(item)
    return {k: v for k, v in out.items() if k not in {"score", "context_of", "why"}}
