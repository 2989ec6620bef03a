"""Recall requests and results as plain data: the request's fast check, and the result's JSON form.

``yiji recall`` is the command a person (or a host's hook) runs most, so its whole path starts without
pydantic. :func:`plain_request` builds a :class:`RecallRequest` from input whose values already have their
final types and keep every rule of the boundary model (:class:`yiji.models.recall.RecallQuery`); for
anything else it returns ``None`` and the caller lets the boundary model decide, so it converts what it may
and words the error, naming the field and the rule. The fast path therefore accepts only what the model
accepts, with the same values.

The result types are the one form of a recall's result on every path (the CLI, the MCP tool, the review
UI, session resume); they hold the stored records of :mod:`yiji.domain.records`. :meth:`Recalled.as_dict`
is its JSON form. Times are aware datetimes in UTC, written as yiji's fixed-width UTC strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from yiji.domain.forgetting import Presentation
from yiji.domain.limits import SCOPE_PATTERN
from yiji.domain.records import MemoryRecord, RawEvent
from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "KINDS",
    "MAX_KINDS",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MODES",
    "CONTEXT_EXCERPT_CHARS",
    "RecallRequest",
    "Recalled",
    "RecalledItem",
    "TIERS",
    "plain_request",
]

CONTEXT_EXCERPT_CHARS = 600
"""A turn that travels with a hit as its context is capped at this many characters (``truncated``;
``memory_read`` pages the whole text)."""
MAX_QUERY_CHARS = 4000
MAX_LIMIT = 200
MAX_KINDS = 7
KINDS: tuple[str, ...] = ("fact", "preference", "episode", "observation", "emotion", "agreement", "growth")
MODES: tuple[str, ...] = ("fast", "semantic", "deep")


@dataclass(frozen=True)
class RecallRequest:
    """One recall. Omitted persona/project take the configured defaults; times are in UTC.

    ``mode``: ``fast`` (lexical, cue and relation lookups only), ``semantic`` (adds cosine similarity over
    up to ``recall.semantic_scan_limit`` most recent eligible vectors) or ``deep`` (every eligible vector).
    """

    query: str
    persona: str | None = None
    project: str | None = None
    kinds: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    as_of: datetime | None = None
    include_history: bool = False
    include_raw: bool = True
    limit: int = 10
    mode: str = "fast"


_SCOPE = re.compile(SCOPE_PATTERN)
_KEYS = frozenset(
    {
        "query",
        "persona",
        "project",
        "kinds",
        "since",
        "until",
        "as_of",
        "include_history",
        "include_raw",
        "limit",
        "mode",
    }
)


TIERS = ("fact", "hit", "weak")
"""The groups a recall list comes in, in this order (see :func:`yiji.domain.ranking.rank`): asked-for
facts first, then good matches (items the query finds on their own, not through a neighbour) best
first, then weaker matches best first. Scores
fall within a group, not across groups; a hit's context items travel with it (tier ``context``)."""


def _time(value: object) -> tuple[bool, datetime | None]:
    """``(plain, value)`` for an absent time or one that parses; ``plain`` is false when the model must
    judge."""
    if value is None:
        return True, None
    try:
        return True, parse_time(value, "time")
    except InvalidInput:
        return False, None


def plain_request(raw: Mapping[str, Any]) -> RecallRequest | None:  # noqa: PLR0911 - one return per rule
    """The request, when ``raw`` is plainly valid; ``None`` when the boundary model must decide."""
    if not raw.keys() <= _KEYS or "query" not in raw:
        return None
    query = raw["query"]
    if not (type(query) is str and 1 <= len(query) <= MAX_QUERY_CHARS and query.strip()):
        return None
    persona, project = raw.get("persona"), raw.get("project")
    if any(v is not None and not (type(v) is str and _SCOPE.fullmatch(v)) for v in (persona, project)):
        return None
    kinds = raw.get("kinds")
    if kinds is not None and not (
        type(kinds) is list and len(kinds) <= MAX_KINDS and all(k in KINDS for k in kinds)
    ):
        return None
    times = [_time(raw.get(name)) for name in ("since", "until", "as_of")]
    if not all(plain for plain, _ in times):
        return None
    history, include_raw = raw.get("include_history", False), raw.get("include_raw", True)
    if type(history) is not bool or type(include_raw) is not bool:
        return None
    limit, mode = raw.get("limit", 10), raw.get("mode", "fast")
    if not (type(limit) is int and 1 <= limit <= MAX_LIMIT and mode in MODES):
        return None
    since, until, as_of = (value for _, value in times)
    return RecallRequest(
        query,
        persona,
        project,
        None if kinds is None else tuple(kinds),
        since,
        until,
        as_of,
        history,
        include_raw,
        limit,
        mode,
    )


@dataclass(frozen=True)
class RecalledItem:
    """One recalled item: a memory with its presentation now, or a raw event.

    ``matched_by`` names its own evidence (``lexical``, ``cue``, ``fact``, ``related``, ``vector``), plus
    ``weak`` for a match under the hit floor; a context item has ``["context"]`` and ``why.context_of``
    (the hit it is shown for). ``why`` is the full score explanation (:mod:`yiji.domain.ranking`)."""

    type: str
    """``memory`` or ``raw_event``."""
    id: str
    score: float
    why: dict[str, Any]
    matched_by: list[str]
    memory: MemoryRecord | None = None
    presentation: Presentation | None = None
    """How the memory is shown under ordinary forgetting (gist or topic cues for old episodes)."""
    event: RawEvent | None = None
    context: list[RecalledItem] = field(default_factory=list)
    """A hit's neighbouring turns (and what its event also gave), in conversation order: shown with it,
    never in a slot of their own; each has ``matched_by == ["context"]``."""
    tier: str = "hit"
    """Which group of the list the item is in (:data:`TIERS`, in list order), or ``context``."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "id": self.id,
            "score": self.score,
            "why": self.why,
            "matched_by": list(self.matched_by),
            "memory": None if self.memory is None else self.memory.as_dict(),
            "presentation": None if self.presentation is None else self.presentation.as_dict(),
            "event": None if self.event is None else self.event.as_dict(),
            "context": [c.as_dict() for c in self.context],
            "tier": self.tier,
        }


@dataclass(frozen=True)
class Recalled:
    """What one recall found, in the scope it ran in (``memory_recall``'s result; :meth:`as_dict` is its
    JSON form, the scope as one object)."""

    persona: str
    project: str
    query: str
    mode: str
    items: list[RecalledItem]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": {"persona": self.persona, "project": self.project},
            "query": self.query,
            "mode": self.mode,
            "items": [item.as_dict() for item in self.items],
            "warnings": list(self.warnings),
        }
