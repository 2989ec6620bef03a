"""A recall query read once: what its text says, before any index is read.

A recall runs in three stages, each taking the :class:`Query` this module builds (as Tantivy splits a
search into a query, a collector and a scorer):

1. **candidates** (:class:`yiji.service.recall.Candidates`): the exact lookups of the scope's indexes for
   the query's :attr:`Query.terms`, its cue :attr:`Query.identifiers` and its :attr:`Query.asked_keys`,
   and the context around them, described as :class:`yiji.domain.ranking.Candidate` values;
2. **ranking** (:func:`yiji.domain.ranking_plan.build_plan` weighs the query's words against the scope's
   statistics, :func:`yiji.domain.ranking.rank` orders the candidates): pure;
3. **presentation** (:func:`yiji.service.recall_items.render_items`): the listed items with their
   records, read once for the final list only.

Invariants:

* :func:`parse` is the only place a recall reads its query text: it is segmented once
  (:func:`yiji.domain.segment.read_query`: its words and, for a long query, its characters from one
  pass of the segmenter), read once for the user's facts it asks about
  (:func:`yiji.domain.fact_questions.read`) and once for the time it names
  (:func:`yiji.domain.timewindow.resolve_query_window`, in the person's zone).
* Pure: no I/O and no clock; ``local_now`` comes in. A :class:`Query` is immutable, so every stage can
  be given it and tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from yiji.domain import fact_questions, ranking_plan, segment, timewindow

__all__ = ["IDENTIFIERS", "Query", "parse"]

IDENTIFIERS = 16
"""Most cue identifiers looked up for one query (its whole text and its space-separated pieces)."""


@dataclass(frozen=True)
class Query:
    """A recall query as its stages read it."""

    text: str
    units: tuple[segment.QueryWord, ...]
    """Its words, in first-seen order (:func:`yiji.domain.segment.query_units`)."""
    characters: tuple[tuple[str, int], ...]
    """The characters of its CJK words with how many words use each, when it may be long (its
    non-stopwords reach ``long_query``); else none (:func:`yiji.domain.segment.query_characters`)."""
    terms: tuple[str, ...]
    """The index terms to look up: each word, its component characters, and :attr:`characters`."""
    identifiers: tuple[str, ...]
    """Exact cue identifiers to look up: the stripped text and its space-separated pieces, sorted."""
    asked_keys: tuple[str, ...]
    """The user's fact keys it asks the value of (:func:`yiji.domain.fact_questions.asked_keys`)."""
    about_user: bool
    """Whether it is about the user alone (:func:`yiji.domain.fact_questions.about_user`)."""
    window: timewindow.TimeWindow | None
    """The time it names, resolved in the person's zone; ``None`` when it names none or when the
    ranking weighs no time."""

    @property
    def words(self) -> list[tuple[str, tuple[str, ...], bool, int]]:
        """``(word, component characters, stopword, count)`` per word, as the plan weighs them."""
        return [(u.word, u.chars, u.stop, u.count) for u in self.units]


def parse(
    text: str, local_now: datetime, weights: ranking_plan.Weights = ranking_plan.DEFAULT_WEIGHTS
) -> Query:
    """Read ``text`` once (see the module docstring); ``local_now`` is now in the person's zone (the
    calendar of "yesterday" and "上周"), ``weights`` say when a query is long and whether time counts."""
    units, found = segment.read_query(text)
    # a long query (a stretch of conversation) counts its characters as terms of their own
    characters = found if ranking_plan.is_long_query(sum(not u.stop for u in units), weights) else []
    terms = dict.fromkeys([*segment.unit_terms(units), *(c for c, _ in characters)])
    asked = fact_questions.read(text)
    return Query(
        text=text,
        units=tuple(units),
        characters=tuple(characters),
        terms=tuple(terms),
        identifiers=tuple(sorted({text.strip(), *text.split()} - {""})[:IDENTIFIERS]),
        asked_keys=asked.keys,
        about_user=asked.about_user,
        window=timewindow.resolve_query_window(text, local_now) if weights.time > 0 else None,
    )
