"""What a recall knows before it scores anything: the ranking's weights and the query described once.

:class:`Weights` are the parameters of the score in :mod:`yiji.domain.ranking` (its module docstring
states the formula); :func:`build_plan` weighs the query's words against the statistics of both indexes
(BM25's ``idf``, query-term saturation, uninformative words, a long query's characters) into a
:class:`RankingPlan`, which the ranking reads for every candidate. Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

__all__ = [
    "BASIS_FACTORS",
    "DEFAULT_WEIGHTS",
    "IndexStats",
    "RankingPlan",
    "Term",
    "Weights",
    "build_plan",
    "is_long_query",
    "named_speakers",
    "term_weight",
]

BASIS_FACTORS: Mapping[str, float] = {
    "user_statement": 1.0,
    "assistant_expression": 0.95,
    "inference": 0.85,
    "raw_user": 0.9,
    "raw_assistant": 0.9,
    "raw_event": 0.85,
}
"""Multipliers by source basis. ``raw_*`` is an event searched as a fallback (no derived memory), by
the role that said it; ``raw_event`` any other role."""


@dataclass(frozen=True)
class Weights:
    """Weights and thresholds of the score; see the module docstring for the formula."""

    lexical: float = 1.0
    cue: float = 1.0
    fact: float = 1.0
    neighbour: float = 0.2
    neighbour_window: int = 2
    neighbour_decay: float = 0.5
    session: float = 0.4
    related: float = 0.3
    cosine: float = 0.5
    cosine_threshold: float = 0.3
    confidence: float = 0.2
    freshness: float = 0.1
    time: float = 0.3
    echo: float = 0.3
    speaker: float = 0.5
    half_life_days: float = 180.0
    k1: float = 1.0
    b: float = 0.3
    idf_smoothing: float = 1.0
    k3: float = 1.5
    char_credit: float = 0.5
    char_partial: float = 1.0
    char_b: float = 0.75
    long_query: int = 20
    long_char_k1: float = 2.0
    long_char_b: float = 0.55
    common_share: float = 0.5
    common_min_docs: int = 4
    min_score: float = 0.01
    min_share: float = 0.65
    context_window: int = 1
    diversity: float = 0.0
    weak_share: float = 0.05
    cut_share: float = 0.35
    basis: Mapping[str, float] = field(default_factory=lambda: dict(BASIS_FACTORS))

    def __post_init__(self) -> None:
        if self.half_life_days <= 0:
            raise ValueError("half_life_days must be positive")
        if self.long_query < 1 or self.long_char_k1 <= 0 or not 0.0 <= self.long_char_b <= 1.0:
            raise ValueError("long_query must be >= 1, long_char_k1 > 0 and long_char_b within [0, 1]")
        if not all(0.0 <= v <= 1.0 for v in (self.freshness, self.confidence, self.time, self.speaker)):
            raise ValueError("freshness, confidence, time and speaker weights must be within [0, 1]")
        if self.neighbour_window < 0 or not 0.0 <= self.neighbour_decay <= 1.0:
            raise ValueError("neighbour_window must be >= 0 and neighbour_decay within [0, 1]")
        shares = (self.min_share, self.weak_share, self.cut_share, self.diversity)
        if not all(0.0 <= share <= 1.0 for share in shares) or self.min_score < 0.0:
            raise ValueError(
                "min_share, weak_share, cut_share and diversity must be within [0, 1]; min_score >= 0"
            )
        if self.context_window < 0:
            raise ValueError("context_window must be >= 0")


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True)
class IndexStats:
    """What an index knows about the query's words: documents, tokens, and documents per term."""

    docs: int
    tokens: int
    doc_counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def average_length(self) -> float:
        return self.tokens / self.docs if self.docs and self.tokens else 1.0


@dataclass(frozen=True)
class Term:
    """One query word as the plan weighs it (see :func:`build_plan`)."""

    word: str
    chars: tuple[str, ...] = ()
    weight: float = 1.0
    informative: bool = True
    char_weights: tuple[float, ...] = ()


@dataclass(frozen=True)
class RankingPlan:
    """Everything the rules need to know about one recall, built once per query.

    ``terms`` are the query's words with their weights; ``average_length`` is per index name (a
    document's length is compared with the average of its own index); ``limit`` caps the result.
    """

    terms: tuple[Term, ...]
    average_length: Mapping[str, float] = field(default_factory=dict)
    weights: Weights = DEFAULT_WEIGHTS
    limit: int | None = None

    char_weights: Mapping[str, float] = field(default_factory=dict)
    """Each component character of the query's informative words, once, with its weight; in a long
    query, each character that is a term of its own, with its weight."""
    long: bool = False
    """A long query: its characters are terms of their own and can be evidence (module docstring)."""
    about_user: bool = False
    """The query asks about the user alone ("what did I buy", "我住在哪"): what the assistant said is
    the other speaker's (``speaker`` factor)."""
    speakers: frozenset[str] = frozenset()
    """The speakers the query names (:func:`named_speakers`): what others said is weighed by the
    ``speaker`` factor."""

    @property
    def has_evidence(self) -> bool:
        """True when some query word can be evidence (a query of stopwords alone has none)."""
        return any(t.informative for t in self.terms)

    @property
    def ideal(self) -> float:
        return sum(t.weight for t in self.terms)


def named_speakers(words: Iterable[str], names: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The speakers, of ``names`` (a speaker's name -> the query words of that name), whose every word is
    among the query's ``words``; a name without words is never named."""
    said = set(words)
    return frozenset(name for name, parts in names.items() if parts and said.issuperset(parts))


def is_long_query(words: int, weights: Weights = DEFAULT_WEIGHTS) -> bool:
    """True when a query of ``words`` informative words is long: its characters count on their own
    (a caller may ask with its count of non-stopwords, an upper bound, to know whether to collect
    the characters at all)."""
    return words >= weights.long_query


def term_weight(docs: int, with_term: int, smoothing: float = 1.0) -> float:
    """``ln(s + (N - n + 0.5) / (n + 0.5))`` (``s`` = ``smoothing``, 1 by default): rare words weigh
    more; never below a tiny positive value."""
    return max(math.log(smoothing + (max(docs - with_term, 0) + 0.5) / (with_term + 0.5)), 1e-6)


def build_plan(
    words: Sequence[tuple[str, tuple[str, ...], bool, int]],
    indexes: Mapping[str, IndexStats],
    weights: Weights = DEFAULT_WEIGHTS,
    limit: int | None = None,
    characters: Sequence[tuple[str, int]] = (),
    about_user: bool = False,
) -> RankingPlan:
    """Weigh the query's ``(word, component characters, stopword, count in the query)`` against the
    indexes. A word said ``n`` times weighs ``(k3 + 1) * n / (k3 + n)`` times more (BM25's query-term
    saturation: a long conversational query repeats what it is about).

    A word is uninformative when it is a stopword, or when it is in more than ``common_share`` of the
    documents of an index with at least ``common_min_docs`` documents. When no word is informative
    and some are not stopwords, those count as informative (they are all the query has).

    ``characters`` are the characters of the query's CJK words with the number of words that use
    each (see :func:`yiji.domain.segment.query_characters`): terms of their own, weighed like words,
    when the query is long (:func:`is_long_query` of its informative words); ignored otherwise.
    """
    docs = sum(s.docs for s in indexes.values())

    def common(word: str) -> bool:
        return any(
            s.docs >= weights.common_min_docs and s.doc_counts.get(word, 0) > weights.common_share * s.docs
            for s in indexes.values()
        )

    def weight(term: str) -> float:
        with_term = sum(s.doc_counts.get(term, 0) for s in indexes.values())
        return term_weight(docs, with_term, weights.idf_smoothing)

    def repeated(n: int) -> float:
        return (weights.k3 + 1.0) * n / (weights.k3 + n)

    terms = [
        Term(
            word,
            chars,
            weight(word) * repeated(count),
            not stop and not common(word),
            tuple(weight(c) for c in chars),
        )
        for word, chars, stop, count in words
    ]
    if not any(t.informative for t in terms):
        stops = {word for word, _, stop, _ in words if stop}
        terms = [replace(t, informative=t.word not in stops) for t in terms]
    chars: dict[str, float] = {}
    long = bool(characters) and is_long_query(sum(t.informative for t in terms), weights)
    if long:
        chars = {c: weight(c) * repeated(count) for c, count in characters}
    else:
        for t in terms:
            if t.informative:
                chars.update((c, cw) for c, cw in zip(t.chars, t.char_weights, strict=True) if c not in chars)
    return RankingPlan(
        tuple(terms),
        {name: s.average_length for name, s in indexes.items()},
        weights,
        limit,
        chars,
        long,
        about_user,
    )
