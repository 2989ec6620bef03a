"""What one recall learns about a candidate (:class:`FoundItem`), and the ranked candidates rendered as
recall items (:func:`render_items`). Part of the recall use case (:mod:`yiji.service.recall`); imports no
pydantic model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from yiji.db import Connection
from yiji.domain import ranking
from yiji.domain.recall import CONTEXT_EXCERPT_CHARS, RecalledItem
from yiji.domain.records import RAW_EXCERPT_CHARS, MemoryRecord, RawEvent
from yiji.store import memories as memory_store
from yiji.store import search
from yiji.timeutil import from_db

__all__ = ["FoundItem", "render_items"]


@dataclass
class FoundItem:
    """What one recall learns about a candidate before it is scored."""

    seq: int
    session: str
    basis: str
    confidence: float | None
    at: str
    lexical: ranking.Lexical = ranking.Lexical()
    cue: float = 0.0
    fact: float = 0.0
    related: float = 0.0
    cosine: float | None = None

    @property
    def own(self) -> float:
        return max(self.lexical.strength, self.cue)


def render_items(
    conn: Connection, found: Mapping[str, FoundItem], ranked: list[ranking.Ranked[str]]
) -> list[RecalledItem]:
    """The ranked candidates as recall items, each with its record (or raw excerpt) and why it was found."""
    every = [*ranked, *(c for r in ranked for c in r.context)]
    records = memory_store.get_many(conn, [r.key[2:] for r in every if r.key.startswith("m:")])
    events = search.raw_turns(conn, [int(r.key[2:]) for r in every if r.key.startswith("e:")])

    def public_id(key: str) -> str:
        return records[key[2:]].id if key.startswith("m:") else events[int(key[2:])][0]

    def render(r: ranking.Ranked[str]) -> RecalledItem:
        item = found[r.key]
        why = r.scored.explain()
        how = [
            name
            for name, present in (
                ("lexical", item.lexical.strength > 0),
                ("cue", item.cue > 0),
                ("fact", item.fact > 0),
                ("related", item.related > 0),
                ("vector", (item.cosine or 0.0) > 0),
            )
            if present
        ]
        if item.lexical.matched or item.lexical.uninformative:
            why["matched"] = list(item.lexical.matched)
            if item.lexical.uninformative:
                why["uninformative"] = list(item.lexical.uninformative)
        if r.context_of is not None:
            why["context_of"] = public_id(r.context_of)
            how = ["context"]
        elif r.tier == "weak":
            why["tier"] = "weak"
            how.append("weak")
        result = _recall_item(r.key, r.scored.score, why, how, records, events, r.context_of is not None)
        tier = "fact" if r.tier == "hit" and item.fact > 0 else r.tier
        result = replace(result, tier=tier)
        if r.context:
            result = replace(result, context=[render(c) for c in r.context])
        return result

    return [render(r) for r in ranked]


def _recall_item(
    key: str,
    score: float,
    why: dict[str, Any],
    how: list[str],
    records: dict[str, MemoryRecord],
    events: dict[int, tuple[str, str, str, str, str]],
    context: bool = False,
) -> RecalledItem:
    if key.startswith("m:"):
        m = records[key[2:]]
        return RecalledItem("memory", m.id, score, why, how, memory=m)
    seq = int(key[2:])
    event_id, session, role, occurred_at, text = events[seq]
    cap = CONTEXT_EXCERPT_CHARS if context else RAW_EXCERPT_CHARS
    excerpt = RawEvent.of(event_id, seq, session, role, from_db(occurred_at), text, cap)
    return RecalledItem("raw_event", event_id, score, why, how, event=excerpt)
