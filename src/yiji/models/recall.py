"""Boundary models for recall: the query and its explainable results."""

from __future__ import annotations

from typing import Annotated, Any, Literal, cast

from pydantic import Field, field_validator

from yiji.domain import recall as plain
from yiji.domain.forgetting import Presentation
from yiji.domain.recall import MAX_KINDS, MAX_LIMIT, MAX_QUERY_CHARS
from yiji.domain.records import RAW_EXCERPT_CHARS, MemoryRecord, RawEvent
from yiji.models.common import AwareTime, InputModel, OutputModel, Scope, ScopeId
from yiji.models.memories import Kind
from yiji.timeutil import to_db

__all__ = [
    "RAW_EXCERPT_CHARS",
    "RAW_NOTE",
    "RecallMode",
    "RawEvent",
    "RecallItem",
    "RecallQuery",
    "RecallResult",
    "compact",
    "recall_result",
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


class RecallItem(OutputModel):
    """One recalled item. ``matched_by`` names its own evidence (``lexical``, ``cue``, ``fact``,
    ``related``, ``vector``), plus ``weak`` for a match under the hit floor; a context item has
    ``["context"]`` and ``why.context_of`` (the hit it is shown for). ``why`` is the full score
    explanation (:mod:`yiji.domain.ranking`)."""

    type: Literal["memory", "raw_event"]
    id: str
    score: float
    why: dict[str, Any]
    matched_by: list[str]
    memory: MemoryRecord | None = None
    presentation: Presentation | None = None
    """How the memory is shown under ordinary forgetting (gist or topic cues for old episodes)."""
    event: RawEvent | None = None
    context: list[RecallItem] = []
    """A hit's neighbouring turns (and what its event also gave), in conversation order: shown with it,
    never in a slot of their own."""
    tier: Literal["fact", "hit", "weak", "context"] = "hit"
    """The group the item is listed in: asked-for facts, then good matches, then weaker
    matches (scores fall within a group, not across groups), or ``context`` of a hit."""

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
        if self.tier != "context":
            out["tier"] = self.tier
        if self.context:
            out["context"] = [_context_brief(c) for c in self.context]
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
                extra = self.memory.as_dict()
                out.update(compact({k: v for k, v in extra.items() if k in _EXPLAINED}))
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
        if self.mode != "fast":
            out["mode"] = self.mode
        if any(item.type == "raw_event" for item in self.items):
            out["note"] = RAW_NOTE
        if self.warnings:
            out["warnings"] = self.warnings
        return out


def _context_brief(item: RecallItem) -> dict[str, Any]:
    """A context turn as an agent needs it: id, type, text, role or kind, time, truncation."""
    out = item.brief()
    return {k: v for k, v in out.items() if k not in {"score", "context_of", "why"}}


def _item(item: plain.RecalledItem) -> RecallItem:
    m, shown, e = item.memory, item.presentation, item.event
    return RecallItem.trusted(
        type=item.type,
        id=item.id,
        score=item.score,
        why=item.why,
        matched_by=item.matched_by,
        memory=m,
        presentation=shown,
        event=e,
        context=[_item(c) for c in item.context],
        tier=item.tier,
    )


def recall_result(found: plain.Recalled) -> RecallResult:
    """The boundary model of a plain recall result (the same fields, so the same JSON)."""
    return RecallResult.trusted(
        scope=Scope.trusted(persona=found.persona, project=found.project),
        query=found.query,
        mode=found.mode,
        items=[_item(item) for item in found.items],
        warnings=found.warnings,
    )
