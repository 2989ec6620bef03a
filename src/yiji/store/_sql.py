"""Small SQL helpers shared by the store modules."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence
from typing import TypeVar

__all__ = ["CHUNK", "chunks", "marks"]

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
