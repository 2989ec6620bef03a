"""Recall ranking: one pure, explainable score per candidate.

The store selects bounded candidates (FTS5 ``bm25()`` top-N, their session neighbours, one-hop
relations, optionally vectors); this module turns each candidate's *components* into a score and
says how much each component contributed, so a user can see why something ranked. No I/O, no clock:
ages come in as numbers.

The score::

    relevance = w_lexical   * lexical          own FTS5 match, 0..1 relative to the best candidate
              + w_neighbour * neighbour        decayed sum of neighbouring turns' lexical strengths
              + w_session   * session          best lexical strength in the candidate's session
              + w_related   * related          best lexical strength among one-hop related memories
              + w_cosine    * cosine           only when a vector exists and cosine >= threshold
    score = relevance * basis_factor * confidence_factor * freshness_factor

    freshness        = 0.5 ** (age_days / half_life_days)          (1.0 for a future/zero age)
    freshness_factor = (1 - w_freshness) + w_freshness * freshness  (never below 1 - w_freshness)

Invariants:

* **No evidence, no result.** A candidate with no lexical match, no neighbour or related credit and
  no cosine at or above the threshold scores 0 and has ``evidence=False``; freshness, basis,
  confidence or session credit alone never surface anything (the contract: a query with no evidence
  returns nothing).
* Lexical strengths are *relative* (see :func:`lexical_strengths`), so weights do not depend on the
  scale of ``bm25()``, which grows with the query length and the corpus.
* Freshness multiplies and is bounded below by ``1 - w_freshness``: old evidence is demoted, never
  dropped. Sources are never deleted by forgetting.
* The cosine term is a seam: absent (``None``) by default, and fast recall never computes it.

Defaults were measured on LoCoMo (raw turns as events, "now" = the dataset's last date) and
MADial-Bench (see ``scripts/recall_research.py``): neighbour 0.2 over a window of 2 turns (distance
2 counts half), session 0.4, freshness weight 0.1 with the contract's 180-day half-life.
Basis/confidence priors and the cosine and related weights are engineering defaults that the public
benchmarks (raw events only, no derived memories, no vectors) cannot measure.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = [
    "BASIS_FACTORS",
    "DEFAULT_WEIGHTS",
    "Components",
    "Scored",
    "Weights",
    "freshness",
    "lexical_strengths",
    "neighbour_credit",
    "rank",
    "score",
    "total",
    "session_strengths",
]

K = TypeVar("K", bound=Hashable)

BASIS_FACTORS: Mapping[str, float] = {
    "user_statement": 1.0,
    "assistant_expression": 0.95,
    "inference": 0.85,
    "raw_event": 0.9,
}
"""Multipliers by source basis. ``raw_event`` is an event searched as a fallback (no derived
memory)."""


@dataclass(frozen=True)
class Weights:
    """Weights of the score; see the module docstring for the formula."""

    lexical: float = 1.0
    neighbour: float = 0.2
    neighbour_window: int = 2
    neighbour_decay: float = 0.5
    session: float = 0.4
    related: float = 0.3
    cosine: float = 0.5
    cosine_threshold: float = 0.3
    confidence: float = 0.2
    freshness: float = 0.1
    half_life_days: float = 180.0
    basis: Mapping[str, float] = field(default_factory=lambda: dict(BASIS_FACTORS))

    def __post_init__(self) -> None:
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if not 0.0 <= self.freshness <= 1.0 or not 0.0 <= self.confidence <= 1.0:
            raise ValueError("freshness and confidence weights must be within [0, 1]")
        if self.neighbour_window < 0 or not 0.0 <= self.neighbour_decay <= 1.0:
            raise ValueError("neighbour_window must be >= 0 and neighbour_decay within [0, 1]")


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True)
class Components:
    """What is known about one candidate. Strengths are in [0, 1]; ``None`` means "not applicable".

    ``basis`` is a memory's basis or ``"raw_event"``; ``confidence`` is a memory's model-supplied
    confidence (``None`` for raw events); ``age_days`` is ``now - occurred_at`` (or ``valid_at``)
    in days.
    """

    lexical: float = 0.0
    neighbour: float = 0.0
    session: float = 0.0
    related: float = 0.0
    cosine: float | None = None
    basis: str = "raw_event"
    confidence: float | None = None
    age_days: float = 0.0


@dataclass(frozen=True)
class Scored:
    """A score with its parts: additive ``contributions`` and multiplicative ``factors``."""

    score: float
    evidence: bool
    contributions: Mapping[str, float]
    factors: Mapping[str, float]

    def explain(self) -> dict[str, object]:
        """A JSON-ready explanation: ``{"score", "evidence", "contributions", "factors"}``."""
        return {
            "score": round(self.score, 6),
            "evidence": self.evidence,
            "contributions": {k: round(v, 6) for k, v in self.contributions.items()},
            "factors": {k: round(v, 6) for k, v in self.factors.items()},
        }


def freshness(age_days: float, half_life_days: float = 180.0) -> float:
    """``0.5 ** (age_days / half_life_days)``; a negative age (a future time) counts as 0 days."""
    if half_life_days <= 0:
        raise ValueError("half_life_days must be positive")
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


def lexical_strengths(bm25: Mapping[K, float]) -> dict[K, float]:
    """Turn FTS5 ``bm25()`` values (negative; lower is better) into strengths in [0, 1].

    The best candidate gets 1.0 and the others their share of it. Non-negative values (no match)
    get 0.
    """
    best = max((-value for value in bm25.values()), default=0.0)
    if best <= 0.0:
        return dict.fromkeys(bm25, 0.0)
    return {key: max(-value, 0.0) / best for key, value in bm25.items()}


def neighbour_credit(neighbours: Iterable[tuple[int, float]], weights: Weights = DEFAULT_WEIGHTS) -> float:
    """Credit from neighbouring turns of the same session: ``(distance, lexical strength)`` pairs.

    A neighbour at distance d (1 = adjacent) within the window adds ``strength * decay ** (d - 1)``.
    """
    total = 0.0
    for distance, strength in neighbours:
        d = abs(distance)
        if 1 <= d <= weights.neighbour_window:
            total += strength * weights.neighbour_decay ** (d - 1)
    return total


def session_strengths(strength_by_session: Iterable[tuple[K, float]]) -> dict[K, float]:
    """The best lexical strength seen in each session, from ``(session, strength)`` pairs."""
    best: dict[K, float] = {}
    for session, strength in strength_by_session:
        best[session] = max(best.get(session, 0.0), strength)
    return best


def score(parts: Components, weights: Weights = DEFAULT_WEIGHTS) -> Scored:
    """Score one candidate; see the module docstring for the formula and its invariants."""
    cosine = 0.0
    if parts.cosine is not None and parts.cosine >= weights.cosine_threshold:
        cosine = parts.cosine
    contributions = {
        "lexical": weights.lexical * parts.lexical,
        "neighbour": weights.neighbour * parts.neighbour,
        "session": weights.session * parts.session,
        "related": weights.related * parts.related,
        "cosine": weights.cosine * cosine,
    }
    fresh = freshness(parts.age_days, weights.half_life_days)
    confidence = 1.0 if parts.confidence is None else min(max(parts.confidence, 0.0), 1.0)
    factors = {
        "basis": weights.basis.get(parts.basis, min(weights.basis.values(), default=1.0)),
        "confidence": (1.0 - weights.confidence) + weights.confidence * confidence,
        "freshness": (1.0 - weights.freshness) + weights.freshness * fresh,
    }
    evidence = parts.lexical > 0 or parts.neighbour > 0 or parts.related > 0 or cosine > 0
    if not evidence:
        return Scored(0.0, False, contributions, factors)
    relevance = sum(contributions.values())
    total = relevance * factors["basis"] * factors["confidence"] * factors["freshness"]
    return Scored(total, True, contributions, factors)


def total(parts: Components, weights: Weights = DEFAULT_WEIGHTS) -> float:
    """The same number as ``score(parts, weights).score``, without building the explanation."""
    cosine = parts.cosine if parts.cosine is not None and parts.cosine >= weights.cosine_threshold else 0.0
    if not (parts.lexical > 0 or parts.neighbour > 0 or parts.related > 0 or cosine > 0):
        return 0.0
    relevance = (
        weights.lexical * parts.lexical
        + weights.neighbour * parts.neighbour
        + weights.session * parts.session
        + weights.related * parts.related
        + weights.cosine * cosine
    )
    confidence = 1.0 if parts.confidence is None else min(max(parts.confidence, 0.0), 1.0)
    basis = weights.basis.get(parts.basis, min(weights.basis.values(), default=1.0))
    fresh = freshness(parts.age_days, weights.half_life_days)
    return (
        relevance
        * basis
        * ((1.0 - weights.confidence) + weights.confidence * confidence)
        * ((1.0 - weights.freshness) + weights.freshness * fresh)
    )


def rank(
    candidates: Sequence[tuple[K, Components]], weights: Weights = DEFAULT_WEIGHTS, limit: int | None = None
) -> list[tuple[K, Scored]]:
    """Score and order candidates, best first; candidates without evidence are left out.

    The sort is stable: equal scores keep the caller's order (pass candidates in FTS rank order).
    With ``limit``, only the best ``limit`` are returned (and only they get a full explanation).
    """
    totals = [(index, total(parts, weights)) for index, (_, parts) in enumerate(candidates)]
    kept = [item for item in totals if item[1] > 0.0 or score(candidates[item[0]][1], weights).evidence]
    kept.sort(key=lambda item: -item[1])
    if limit is not None:
        kept = kept[:limit]
    return [(candidates[i][0], score(candidates[i][1], weights)) for i, _ in kept]
