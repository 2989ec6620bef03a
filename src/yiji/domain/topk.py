"""Exact top-k lexical retrieval: BM25 over one scope's postings, with MaxScore dynamic pruning.

The candidates of fast recall are the ``k`` eligible documents of a scope with the best BM25 score for
the query's terms, exactly the ones exhaustive scoring of every match would give; no document is left out
for its age or its place in an index. The statistics are the scope's own (:class:`Space`): its document
count, its average length and each term's document count in it, so another scope's data never changes a
result.

**The score** is FTS5's ``bm25()`` with k1 = 1.2 and b = 0.75 (:mod:`yiji.domain.bm25`), positive here
(higher is better)::

    idf(t)    = ln((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when not positive
    impact    = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(d)  = sum of the impacts of the query terms d holds

**MaxScore** (Turtle and Flood, 1995; as Lucene, Tantivy and PISA run it). Each term has an upper bound
on its impact in any document: its idf times the saturation of the largest term frequency at the
shortest length it was seen with (:class:`TermBound`; the bound may be loose after deletions, never too
low). Terms are taken from the highest bound down. Their posting lists are read whole while a document
holding only the terms not yet read could still enter the top ``k``; once the sum of the remaining
bounds falls below the ``k``-th best eligible score known so far (``theta``, a lower bound of the final
``k``-th score), the remaining lists are not read: they are only probed for the documents already met
whose score could still reach ``theta``. A document never met holds only unread terms, so its score is
at most that sum, below ``theta``: it cannot be among the top ``k``. The result equals
:func:`exhaustive`, the reference the tests compare with, ties broken by the newer document (higher id)
first.

Pure: the postings, probes and the eligibility filter come in as callables.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from yiji.domain.bm25 import K1, B

__all__ = ["Posting", "Space", "TermBound", "exhaustive", "idf", "impact", "top_k"]

Posting = tuple[int, int, int]
"""(document id, term frequency, document length in tokens)."""

_SLACK = 1e-9
"""Sums of the same impacts in another order differ in the last bits: prune only below this margin."""


@dataclass(frozen=True)
class Space:
    """One scope's index: its documents and their tokens in all."""

    docs: int
    tokens: int

    @property
    def average_length(self) -> float:
        return self.tokens / self.docs if self.docs else 1.0


@dataclass(frozen=True)
class TermBound:
    """A query term in a space: its document count, the largest frequency and the shortest document
    length it was seen with (together an upper bound of its impact)."""

    term: str
    docs: int
    max_tf: int
    min_length: int


def idf(space: Space, docs_with_term: int) -> float:
    value = math.log((space.docs - docs_with_term + 0.5) / (docs_with_term + 0.5))
    return value if value > 0 else 1e-6


def impact(weight: float, tf: int, length: int, average_length: float) -> float:
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average_length))


def _order(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def exhaustive(
    space: Space,
    terms: Sequence[TermBound],
    postings: Callable[[str], Iterable[Posting]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
) -> list[tuple[int, float]]:
    """The reference: every posting of every term scored, the best ``k`` eligible documents."""
    average = space.average_length
    scores: dict[int, float] = {}
    for bound in terms:
        weight = idf(space, bound.docs)
        for doc, tf, length in postings(bound.term):
            scores[doc] = scores.get(doc, 0.0) + impact(weight, tf, length, average)
    ranked = _order(scores)
    allowed = eligible([doc for doc, _ in ranked])
    return [(doc, score) for doc, score in ranked if doc in allowed][:k]


class _Eligibility:
    """Asks the filter about documents in batches, best first, and remembers the answers."""

    def __init__(self, check: Callable[[list[int]], set[int]], batch: int) -> None:
        self.check = check
        self.batch = batch
        self.known: dict[int, bool] = {}

    def best(self, ranked: Sequence[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """The first ``k`` eligible of ``ranked`` (fewer when there are fewer)."""
        out: list[tuple[int, float]] = []
        at = 0
        while len(out) < k and at < len(ranked):
            window = ranked[at : at + max(self.batch, 2 * (k - len(out)))]
            unknown = [doc for doc, _ in window if doc not in self.known]
            if unknown:
                allowed = self.check(unknown)
                self.known.update((doc, doc in allowed) for doc in unknown)
            for doc, score in window:
                if self.known[doc]:
                    out.append((doc, score))
                    if len(out) == k:
                        break
            at += len(window)
        return out


def top_k(
    space: Space,
    terms: Sequence[TermBound],
    postings: Callable[[str], Iterable[Posting]],
    probe: Callable[[str, list[int]], Iterable[Posting]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
) -> list[tuple[int, float]]:
    """The best ``k`` eligible documents by BM25, best first, by MaxScore (see the module notes).

    ``postings(term)`` yields a term's whole posting list; ``probe(term, docs)`` its postings among
    ``docs``; ``eligible(docs)`` the subset of ``docs`` the caller may return (scope filters, validity,
    review state...)."""
    if k <= 0 or not terms or space.docs <= 0:
        return []
    average = space.average_length
    weighted = []
    for bound in terms:
        if bound.docs <= 0:
            continue
        weight = idf(space, bound.docs)
        weighted.append((impact(weight, bound.max_tf, bound.min_length, average), weight, bound.term))
    weighted.sort(key=lambda item: -item[0])
    rest = [0.0] * (len(weighted) + 1)  # rest[i]: the sum of the bounds of terms i, i+1, ...
    for i in range(len(weighted) - 1, -1, -1):
        rest[i] = rest[i + 1] + weighted[i][0]
    scores: dict[int, float] = {}
    gate = _Eligibility(eligible, batch=max(2 * k, 32))

    def threshold() -> float:
        best = gate.best(_order(scores), k)
        return best[-1][1] if len(best) == k else 0.0

    read = 0
    while read < len(weighted):
        if len(scores) >= k and rest[read] < threshold() - _SLACK:
            break
        _, weight, term = weighted[read]
        for doc, tf, length in postings(term):
            scores[doc] = scores.get(doc, 0.0) + impact(weight, tf, length, average)
        read += 1
    for i in range(read, len(weighted)):
        theta = threshold()
        open_docs = [doc for doc, score in scores.items() if score + rest[i] >= theta - _SLACK]
        if not open_docs:
            break
        _, weight, term = weighted[i]
        for doc, tf, length in probe(term, open_docs):
            scores[doc] += impact(weight, tf, length, average)
    return gate.best(_order(scores), k)
