"""The companion's current emotion: the latest expressed role emotion, decayed toward calm.

This module owns the rule that turns stored emotion expressions into the "current emotion" of a context
pack. An expression is a valence in [-1, 1] and an arousal in [0, 1] that the *assistant* expressed at a
known time (role emotion must come from an assistant expression; :func:`expression_from_memory` applies
that rule to a stored memory row).

Invariants:

* Pure: no I/O, no clock reads; ``now`` and every threshold are parameters with documented defaults.
* Both valence and arousal decay toward zero by the same factor
  ``0.5 ** (elapsed_hours / half_life_hours)`` (6-hour default half-life). Elapsed time before the
  expression (a timestamp in the future of ``now``) counts as zero: factor 1.
* A factor strictly below ``omit_below`` (0.01 by default) means there is no current emotion (``None``);
  a factor equal to it, within floating-point rounding, is kept.
* Only the single most recent expression counts; an older one is never used as a fallback.
* Nothing here reads or edits the persona, and historical expressions are left as they are: the decayed
  values exist only in the returned :class:`CurrentEmotion`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from yiji.timeutil import utc

__all__ = [
    "EMOTION_HALF_LIFE_HOURS",
    "EMOTION_OMIT_BELOW",
    "CurrentEmotion",
    "EmotionExpression",
    "current_emotion",
    "decay_factor",
    "expression_from_memory",
    "most_recent",
]

EMOTION_HALF_LIFE_HOURS: Final = 6.0
"""Default half-life of an expressed emotion, in hours."""

EMOTION_OMIT_BELOW: Final = 0.01
"""Default: a decay factor strictly below this means no current emotion."""

_ROLE_EMOTION_BASIS: Final = "assistant_expression"
# Relative slack when comparing a factor with the omission threshold, so a factor that is the
# threshold up to floating-point rounding counts as equal (and is kept).
_FACTOR_REL_TOL: Final = 1e-12


@dataclass(frozen=True)
class EmotionExpression:
    """One emotion the assistant expressed: valence in [-1, 1], arousal in [0, 1], an aware time."""

    valence: float
    arousal: float
    expressed_at: datetime
    memory_id: str | None = None

    def __post_init__(self) -> None:
        if not -1.0 <= self.valence <= 1.0:
            raise ValueError("valence must be within [-1, 1]")
        if not 0.0 <= self.arousal <= 1.0:
            raise ValueError("arousal must be within [0, 1]")
        utc(self.expressed_at)  # rejects a naive time


@dataclass(frozen=True)
class CurrentEmotion:
    """The decayed emotion at a moment: ``valence``/``arousal`` are the expressed values times ``factor``."""

    valence: float
    arousal: float
    factor: float
    expressed_at: datetime
    memory_id: str | None = None


def decay_factor(elapsed: timedelta, half_life_hours: float = EMOTION_HALF_LIFE_HOURS) -> float:
    """``0.5 ** (elapsed_hours / half_life_hours)``; a negative ``elapsed`` counts as zero (factor 1)."""
    if not half_life_hours > 0:
        raise ValueError("half_life_hours must be positive")
    if elapsed <= timedelta(0):
        return 1.0
    return float(0.5 ** ((elapsed / timedelta(hours=1)) / half_life_hours))


def current_emotion(
    expression: EmotionExpression | None,
    now: datetime,
    *,
    half_life_hours: float = EMOTION_HALF_LIFE_HOURS,
    omit_below: float = EMOTION_OMIT_BELOW,
) -> CurrentEmotion | None:
    """Decay ``expression`` to ``now``; ``None`` when there is none or its factor is below ``omit_below``."""
    if not 0.0 <= omit_below <= 1.0:
        raise ValueError("omit_below must be within [0, 1]")
    if expression is None:
        return None
    factor = decay_factor(utc(now) - utc(expression.expressed_at), half_life_hours)
    if factor < omit_below and not math.isclose(factor, omit_below, rel_tol=_FACTOR_REL_TOL):
        return None
    return CurrentEmotion(
        valence=expression.valence * factor,
        arousal=expression.arousal * factor,
        factor=factor,
        expressed_at=utc(expression.expressed_at),
        memory_id=expression.memory_id,
    )


def most_recent(expressions: Iterable[EmotionExpression]) -> EmotionExpression | None:
    """The expression with the latest ``expressed_at``; among equal times, the last one given.

    Callers pass expressions in insertion order, so a tie goes to the one recorded last.
    """
    latest: EmotionExpression | None = None
    for expression in expressions:
        if latest is None or utc(expression.expressed_at) >= utc(latest.expressed_at):
            latest = expression
    return latest


def expression_from_memory(
    basis: str,
    valence: float | None,
    arousal: float | None,
    valid_at: datetime,
    memory_id: str | None = None,
) -> EmotionExpression | None:
    """The role-emotion expression a stored memory carries, or ``None`` if it carries none.

    Only a memory whose basis is ``assistant_expression`` and that has both valence and arousal is a
    role emotion; a user's feelings or an inference never become the companion's emotion. The
    expression time is the memory's ``valid_at`` (when it was expressed).
    """
    if basis != _ROLE_EMOTION_BASIS or valence is None or arousal is None:
        return None
    return EmotionExpression(valence=valence, arousal=arousal, expressed_at=valid_at, memory_id=memory_id)
