"""Presentation helpers for the review UI: where the quote sits in a page of text, and the geometry of a
fact key's timeline. Plain values in, plain values out; no I/O and no memory rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from yiji.models.memories import MemoryRecord

__all__ = ["Bar", "Segment", "Timeline", "explain", "highlight", "page_links", "timeline"]


@dataclass(frozen=True)
class Segment:
    text: str
    quote: bool


def highlight(content: str, offset: int, start: int, end: int) -> list[Segment]:
    """Split a page of text (starting at character ``offset`` of the whole) around the quote
    ``[start, end)`` of the whole text; the part of the quote on this page is marked."""
    if start < 0 or end <= start:
        return [Segment(content, False)]
    lo = max(start - offset, 0)
    hi = min(end - offset, len(content))
    if hi <= 0 or lo >= len(content) or lo >= hi:
        return [Segment(content, False)]
    parts = [Segment(content[:lo], False), Segment(content[lo:hi], True), Segment(content[hi:], False)]
    return [p for p in parts if p.text]


def page_links(offset: int, limit: int, total: int) -> tuple[int | None, int | None]:
    """Offsets of the previous and next pages of a paged text (None where there is none)."""
    previous = max(offset - limit, 0) if offset > 0 else None
    following = offset + limit if offset + limit < total else None
    return previous, following


@dataclass(frozen=True)
class Bar:
    memory: MemoryRecord
    left: float  # percent of the axis
    width: float
    focus: bool
    open_ended: bool


@dataclass(frozen=True)
class Timeline:
    start: datetime
    end: datetime
    bars: list[Bar]


def timeline(facts: Sequence[MemoryRecord], focus_id: str, now: datetime) -> Timeline | None:
    """Bars for each fact of one key on a shared axis from the earliest start to the latest end (or now)."""
    if not facts:
        return None
    start = min(f.valid_at for f in facts)
    ends = [f.invalid_at or max(now, f.valid_at) for f in facts]
    end = max([*ends, now])
    span = (end - start).total_seconds() or 1.0
    bars = []
    for fact, until in zip(facts, ends, strict=True):
        left = (fact.valid_at - start).total_seconds() / span * 100
        width = max((until - fact.valid_at).total_seconds() / span * 100, 1.5)
        bars.append(
            Bar(
                memory=fact,
                left=round(min(left, 98.5), 2),
                width=round(min(width, 100 - min(left, 98.5)), 2),
                focus=fact.id == focus_id,
                open_ended=fact.invalid_at is None,
            )
        )
    return Timeline(start=start, end=end, bars=bars)


def explain(value: object) -> str:
    """A recall ``why`` value for a person: numbers to three places, mappings as ``key value`` pairs."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return " · ".join(f"{k} {explain(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(explain(v) for v in value)
    return str(value)
