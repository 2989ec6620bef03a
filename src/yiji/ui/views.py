"""Presentation helpers for the review UI: where the quote sits in a page of text, the geometry of a
fact key's timeline, a recall's ``why`` in words, the one-time confirmation (flash) after a change, and
reading the browser's date fields in the display zone. Plain values in, plain values out; no I/O and no
memory rules."""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, time, tzinfo
from typing import Any

from yiji.models.memories import MemoryRecord
from yiji.timeutil import read_in_zone, to_db

__all__ = [
    "FLASH_KINDS",
    "Bar",
    "Flash",
    "Segment",
    "Timeline",
    "Why",
    "exact_time",
    "flash_value",
    "highlight",
    "page_links",
    "read_flash",
    "time_input",
    "timeline",
    "why_in_words",
]


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


@dataclass(frozen=True)
class Why:
    """A recall item's ``why`` for a person: each additive part as its share of the evidence (named by
    the key of its word in :mod:`yiji.ui.i18n`, ``why.<key>``), the factors that lowered the score,
    the words that matched and, for a context item, the hit it accompanies."""

    score: float
    parts: list[tuple[str, str]] = field(default_factory=list)
    factors: list[tuple[str, str]] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    in_source: list[str] = field(default_factory=list)
    """Matched words a memory's own text does not hold: found through its source event."""
    uninformative: list[str] = field(default_factory=list)
    context_of: str | None = None
    weak: bool = False


def why_in_words(why: Mapping[str, Any], own_text: str | None = None) -> Why:
    """The engine's explanation (:meth:`yiji.domain.ranking.Scored.explain` plus the recall's additions)
    as shares and factors; zero contributions and factors without effect are left out.

    ``own_text`` is the text shown for the item (a memory's text): a matched word it does not hold was
    found in the memory's source event, and is listed as such (``in_source``), never marked as matched
    on the memory."""
    raw = why.get("contributions") or {}
    parts = {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float) and v > 0}
    total = sum(parts.values())
    shares = []
    for key, value in sorted(parts.items(), key=lambda kv: -kv[1]):
        share = value / total * 100
        shares.append((key, f"{share:.0f}%" if share >= 1 else "<1%"))
    factors = [
        (str(k), f"×{float(v):.2f}")
        for k, v in (why.get("factors") or {}).items()
        if isinstance(v, int | float) and float(v) < 0.995
    ]
    context = why.get("context_of")
    matched = [str(w) for w in why.get("matched") or []]
    shown = None if own_text is None else unicodedata.normalize("NFKC", own_text).casefold()
    in_source = (
        []
        if shown is None
        else [w for w in matched if unicodedata.normalize("NFKC", w).casefold() not in shown]
    )
    return Why(
        score=float(why.get("score") or 0.0),
        parts=shares,
        factors=factors,
        matched=[w for w in matched if w not in in_source],
        in_source=in_source,
        uninformative=[str(w) for w in why.get("uninformative") or []],
        context_of=str(context) if context else None,
        weak=why.get("tier") == "weak",
    )


FLASH_KINDS = {"corrected": 0, "deleted": 6, "accepted": 0, "rejected": 0, "edited": 0}
"""The confirmations a change can leave for the next page, with how many counts each carries."""
_FLASH = re.compile(r"^([a-z]+)((?:-\d{1,12})*)\.([0-9a-f]{32})$")


@dataclass(frozen=True)
class Flash:
    kind: str
    counts: tuple[int, ...]


def _signature(secret: str, payload: str) -> str:
    return hmac.new(secret.encode(), payload.encode(), hashlib.sha256).hexdigest()[:32]


def flash_value(secret: str, kind: str, counts: Sequence[int] = ()) -> str:
    """The cookie value confirming a change of ``kind`` (with its counts), signed with ``secret`` so
    another page on this host cannot plant a false confirmation."""
    if FLASH_KINDS.get(kind) != len(counts):
        raise ValueError("unknown confirmation or wrong number of counts")
    payload = kind + "".join(f"-{int(n)}" for n in counts)
    return f"{payload}.{_signature(secret, payload)}"


def read_flash(secret: str, value: str | None) -> Flash | None:
    """The confirmation a cookie holds, or ``None`` when there is none or it is not ours."""
    found = _FLASH.match(value or "")
    if not found or not hmac.compare_digest(
        found.group(3), _signature(secret, found.group(1) + found.group(2))
    ):
        return None
    kind = found.group(1)
    counts = tuple(int(n) for n in found.group(2).split("-")[1:])
    return Flash(kind, counts) if FLASH_KINDS.get(kind) == len(counts) else None


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LOCAL_MINUTE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")


def exact_time(value: datetime, zone: tzinfo | None) -> str:
    """``value`` as ISO 8601 in the display ``zone`` (``None``: the system's), to the microsecond, for a
    form field that sends it back unchanged unless a person edits it."""
    try:
        return value.astimezone(zone).isoformat()
    except (OverflowError, ValueError):  # at the very ends of the calendar: as stored
        return to_db(value)


def time_input(value: str | None, zone: tzinfo | None, field: str, *, end_of_day: bool = False) -> str | None:
    """A browser date or datetime-local field (which has no timezone) read in the display ``zone``
    (``None``: the system's), as ISO 8601 with its offset; other text is passed on as typed, for the
    service to check. A date means its start, or with ``end_of_day`` its last microsecond.

    The reading goes through :func:`yiji.timeutil.read_in_zone`, the rule every time passes: a date
    the zone cannot bring to UTC (the first or last day of the calendar) raises
    :class:`yiji.errors.InvalidInput` naming ``field``, as the CLI does for the same input."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        if _DATE.match(value):
            day = datetime.fromisoformat(value)
            naive = datetime.combine(day.date(), time.max if end_of_day else time.min)
        elif _LOCAL_MINUTE.match(value):
            naive = datetime.fromisoformat(value)
        else:
            return value
    except ValueError:
        return value  # such as 2026-02-30: the service names the field
    return read_in_zone(naive, zone, field).isoformat()
