"""What the ``yiji bench`` command modules share: argument types and a line of their output.

Only the standard library at module level: ``yiji bench --help`` builds the parser from these."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["archive_or_mode", "at_least", "data_path", "positive", "reindex_line"]


def reindex_line(reindex: dict[str, Any] | None) -> str:
    if not reindex:
        return ""
    return (
        f"\n  vectors: {reindex['vectors']} in {reindex['seconds']} s = "
        f"{reindex['vectors_per_second']} vectors/s"
    )


def archive_or_mode(value: str) -> int | str:
    """``--memories`` of ``bench resume``: an archive size, or a LoCoMo memory mode."""
    if value in ("none", "observations"):
        return value
    return at_least(value, 0, "must be a number, 'none' or 'observations'", "must not be negative")


def positive(value: str) -> int:
    return at_least(value, 1, "must be a whole number", "must be at least 1")


def at_least(value: str, least: int, not_number: str, too_small: str) -> int:
    """``value`` as a whole number of at least ``least``; otherwise the argparse error named."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(not_number) from None
    if number < least:
        raise argparse.ArgumentTypeError(too_small)
    return number


def data_path(value: str) -> str:
    from pathlib import Path

    from yiji.errors import InvalidInput

    if not Path(value).exists():
        raise InvalidInput("data", "the path does not exist")
    return value
