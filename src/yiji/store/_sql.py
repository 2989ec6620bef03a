"""Small SQL helpers shared by the store modules."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import TypeVar

__all__ = ["CHUNK", "chunks", "derived_from", "marks"]

CHUNK = 400
"""Ids per ``IN (...)`` list: well under SQLite's limit on bound parameters, even when a list is used twice."""


K = TypeVar("K", bound=Hashable)


def chunks(ids: Iterable[K]) -> Iterator[list[K]]:
    """Distinct ``ids`` in first-seen order, in lists of at most :data:`CHUNK`."""
    items = list(dict.fromkeys(ids))
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(chunk: Sequence[object]) -> str:
    """``?,?,...`` for an ``IN`` list of ``chunk``."""
    return ",".join("?" * len(chunk))


def derived_from(event: str = "e", memory: str = "m") -> str:
    """SQL: the event aliased ``event`` has an accepted memory (subquery alias ``memory``).

    An event whose memories all wait for review or were rejected counts as one with no memory: its
    raw text stays a recall candidate, so nothing said is lost while a proposal waits."""
    return (
        f"EXISTS (SELECT 1 FROM memories {memory} WHERE {memory}.event_id = {event}.id "
        f"AND {memory}.review_state = 'accepted')"
    )
