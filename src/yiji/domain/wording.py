"""Counts in English prose: ``1 memory``, ``2 memories``, never ``memory(ies)``."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it takes; ``plural`` defaults to the noun with an ``s``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
