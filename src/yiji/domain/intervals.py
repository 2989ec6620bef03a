"""Validity intervals of single-valued facts: who closes whom, and what held at a given time.

A single-valued property is identified by ``subject + fact_key`` within one persona + project scope
(for example ``user`` + ``home.city``). Its facts form a timeline:

* Facts are ordered by ``(valid_at, created_at, id)``: validity time first, then insertion time,
  then id, so equal starts have one deterministic order (the later insertion wins).
* Each fact's interval ends where the next fact's begins; the last one is open (``invalid_at`` is
  ``None``). Intervals are half-open: a fact holds at ``t`` when ``valid_at <= t < invalid_at``.
  A fact whose start equals its successor's is never current (an empty interval) but stays in
  history.
* Revoked facts take no part: they neither close nor get closed.
* A late historical insert (earlier ``valid_at``, later ``created_at``) slots into its place by
  validity time: its predecessor now ends at its start, and it ends at its successor's start.
* Existing closed intervals are never reopened. The caller computes intervals only on insertion
  (:func:`close_intervals`), never after deleting or revoking a successor, so the evidence that
  once closed an interval keeps it closed. :func:`timeline` recomputes a whole history from scratch
  and is meant for checks and tests, not for writes after deletions.
* A fact whose ``valid_at`` lies in the future is not current until it starts.

Pure: no I/O, no clock. All datetimes must be timezone-aware (a naive one raises ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from yiji.timeutil import utc

__all__ = [
    "FactSpan",
    "IntervalUpdate",
    "as_of",
    "close_intervals",
    "close_intervals_batch",
    "current",
    "history",
    "is_current",
    "order_key",
    "timeline",
]


@dataclass(frozen=True, slots=True)
class FactSpan:
    """One fact of a ``(subject, fact_key)`` timeline, as far as interval logic needs it.

    ``created_at`` is the insertion (database) time, used only to break ties between equal starts.
    ``invalid_at`` is the stored end; it is ignored for a fact being inserted.
    """

    id: str
    valid_at: datetime
    created_at: datetime
    invalid_at: datetime | None = None
    revoked: bool = False


@dataclass(frozen=True, slots=True)
class IntervalUpdate:
    """Set ``invalid_at`` of memory ``id`` (``None``: open, currently valid)."""

    id: str
    invalid_at: datetime | None


def order_key(fact: FactSpan) -> tuple[datetime, datetime, str]:
    """The total order of a timeline: validity time, then insertion time, then id."""
    return (utc(fact.valid_at), utc(fact.created_at), fact.id)


def is_current(valid_at: datetime, invalid_at: datetime | None, t: datetime) -> bool:
    """Whether an interval holds at ``t``: ``valid_at <= t < invalid_at`` (``None``: no end)."""
    at = utc(t)
    return utc(valid_at) <= at and (invalid_at is None or at < utc(invalid_at))


def history(facts: Iterable[FactSpan], *, include_revoked: bool = False) -> list[FactSpan]:
    """The facts in timeline order; revoked ones only when asked for."""
    return sorted((f for f in facts if include_revoked or not f.revoked), key=order_key)


def timeline(facts: Iterable[FactSpan]) -> list[IntervalUpdate]:
    """Every live fact's end as a clean history implies it: the next fact's start, the last open.

    This reopens intervals whose successor was deleted, so it must not be used to rewrite stored
    intervals after a deletion; it is the reference the incremental functions agree with.
    """
    live = history(facts)
    ends: list[datetime | None] = [utc(nxt.valid_at) for nxt in live[1:]]
    if live:
        ends.append(None)  # the latest fact stays open
    return [IntervalUpdate(f.id, end) for f, end in zip(live, ends, strict=True)]


def close_intervals(existing: Iterable[FactSpan], new: FactSpan) -> list[IntervalUpdate]:
    """The interval changes that inserting ``new`` into a timeline requires.

    ``existing`` is every stored fact of the same scope + subject + fact_key (revoked ones may be
    included; they are skipped). Returns, in timeline order:

    * for the live predecessor of ``new`` (if any): ``invalid_at = new.valid_at``, but only when it
      was open or ended later than that; an earlier end is kept (it is never extended or reopened);
    * for ``new`` itself, always: the start of its live successor, or ``None`` if it is the latest.

    Raises ``ValueError`` if ``new`` is revoked or its id is already in ``existing``.
    """
    if new.revoked:
        raise ValueError("a revoked fact takes no part in a timeline")
    live = history(existing)
    if any(f.id == new.id for f in live):
        raise ValueError("the new fact is already in the timeline")
    key = order_key(new)
    before = [f for f in live if order_key(f) < key]
    after = [f for f in live if order_key(f) > key]

    updates: list[IntervalUpdate] = []
    start = utc(new.valid_at)
    if before:
        prev = before[-1]
        if prev.invalid_at is None or start < utc(prev.invalid_at):
            updates.append(IntervalUpdate(prev.id, start))
    updates.append(IntervalUpdate(new.id, utc(after[0].valid_at) if after else None))
    return updates


def close_intervals_batch(
    existing: Iterable[FactSpan], new_facts: Sequence[FactSpan]
) -> list[IntervalUpdate]:
    """Insert several facts of one timeline (e.g. one extraction batch) in the given order.

    Returns one update per changed existing fact and one per new fact, with final values, in
    timeline order. The result does not depend on the order of ``new_facts``.
    """
    state: dict[str, FactSpan] = {f.id: f for f in existing}
    original = dict(state)
    new_ids: set[str] = set()
    for fact in new_facts:
        if fact.id in state:
            raise ValueError("the new fact is already in the timeline")
        for update in close_intervals(state.values(), fact):
            base = fact if update.id == fact.id else state[update.id]
            state[update.id] = FactSpan(
                base.id, base.valid_at, base.created_at, update.invalid_at, base.revoked
            )
        new_ids.add(fact.id)

    changed = [f for f in state.values() if f.id in new_ids or f.invalid_at != original[f.id].invalid_at]
    return [IntervalUpdate(f.id, f.invalid_at) for f in sorted(changed, key=order_key)]


def as_of(facts: Iterable[FactSpan], t: datetime) -> FactSpan | None:
    """The live fact that held at ``t`` according to the stored intervals, or ``None``.

    Stored intervals of one timeline do not overlap; if they ever did, the latest in timeline order
    wins, so the answer stays deterministic.
    """
    holding = [f for f in history(facts) if is_current(f.valid_at, f.invalid_at, t)]
    return holding[-1] if holding else None


def current(facts: Iterable[FactSpan], now: datetime) -> FactSpan | None:
    """The fact that holds now; a fact starting in the future is not current yet."""
    return as_of(facts, now)
