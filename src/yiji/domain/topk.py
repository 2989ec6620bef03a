"""Exact top-k lexical retrieval: BM25 over one scope's postings, by the Threshold Algorithm.

The candidates of fast recall are the ``k`` eligible documents of a scope with the best BM25 score for
the query's terms, the ones exhaustive scoring of every match would give; no document is left out for
its age or its place in an index. The statistics are the scope's own (:class:`Space`, each term's
document count), so another scope's data never changes a result.

**The score** is FTS5's ``bm25()`` with k1 = 1.2 and b = 0.75 (:mod:`yiji.domain.bm25`), positive here
(higher is better)::

    idf(t)    = ln((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when not positive
    impact    = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(d)  = sum of the impacts of the query terms d holds

**Impact order without stored impacts.** For one term, the impact grows with ``tf`` and falls with the
document's length ``|d|``, whatever the average length. The store keeps a term's postings grouped by
``tf`` and, inside a group, by length (then the newer document first); reading each group from its
shortest document and merging the groups by impact gives the term's postings in exactly non-increasing
impact order (:func:`impact_order`), with nothing to recompute when the average length moves.

**Two exact ways.** When the query's terms hold few postings in all (:data:`SCAN_POSTINGS`), every
posting is scored (:data:`Scan`: the store sums them where they lie, in SQL): a posting is a row of the
lexicon, cheaper than anything that would let some be skipped. Above that, the lists are read in impact
order; should the lists stand level for long (documents much alike, so that the bound falls slowly), the
search gives way to scoring every posting once it has met more documents than that would cost
(:data:`RANDOM_ACCESS_COST`). The ``k``-th score it found by then is a floor the result must reach, so the
scan may require MaxScore's essential terms (:func:`essential_terms`): a document holding only terms whose
largest impacts add up to less than the floor cannot take a place, and is not summed:

**The Threshold Algorithm** (Fagin, Lotem and Naor, 2003): the terms' lists are read in impact order,
a batch at a time, always from the list standing highest (it lowers the bound most). Each newly met
document is scored completely from its body (random access) and checked against the caller's filter,
unless its impact there plus where the other lists stand is already below the ``k``-th score found (it
cannot take a place). ``tau``, the sum of the impacts at which the lists stand, bounds the score of every
document not met yet; once ``k`` eligible documents score at least ``tau``, no unmet document can take
their place. Either way the result equals :func:`exhaustive` (the reference the tests compare with)
score for score; among equal scores the newer document comes first.

Pure: the store's reads come in as callables.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from yiji.domain.bm25 import K1, B

__all__ = [
    "SCAN_POSTINGS",
    "Group",
    "Posting",
    "Scan",
    "Space",
    "essential_terms",
    "exhaustive",
    "idf",
    "impact",
    "impact_order",
    "scan_postings",
    "top_k",
]

Posting = tuple[int, int, int]
"""(document id, term frequency, document length in tokens)."""

Group = tuple[int, Iterator[tuple[int, int]]]
"""A term's postings of one frequency: ``(tf, (doc, length) ...)`` by length, then newer doc first."""

Scan = Callable[[Mapping[str, float], float, int | None, Collection[str]], list[tuple[int, float]]]
"""Every posting of the weighted terms scored: ``scan(weights, average_length, n, required)`` gives the
``n`` best ``(doc, score)`` (all of them when ``n`` is None), best first, the newer document first among
equals; with ``required``, only the documents holding at least one of those terms."""

_SLACK = 1e-9
"""Sums of the same impacts in another order differ in the last bits."""
SCAN_POSTINGS = 20_000
"""Up to this many postings in all, scoring every posting costs less than the Threshold Algorithm's
random accesses (a posting is a row; a random access reads and scans a document's body)."""
RANDOM_ACCESS_COST = 30
"""What meeting one document costs the Threshold Algorithm, in postings scored (measured at a million
events: reading its list, its body and its filter, 12-20 us a document; a posting summed in SQL, about
0.5 us). It gives way to scoring every posting once it has met more documents than the query's postings
divided by this."""
_FIRST_BATCH = 16
_LARGEST_BATCH = 4096


@dataclass(frozen=True)
class Space:
    """One scope's index: its documents and their tokens in all."""

    docs: int
    tokens: int

    @property
    def average_length(self) -> float:
        return self.tokens / self.docs if self.docs else 1.0


def idf(space: Space, docs_with_term: int) -> float:
    value = math.log((space.docs - docs_with_term + 0.5) / (docs_with_term + 0.5))
    return value if value > 0 else 1e-6


def impact(weight: float, tf: int, length: int, average_length: float) -> float:
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average_length))


def _order(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


def score_of(
    space: Space, weights: Mapping[str, float], frequencies: Mapping[str, int], length: int
) -> float:
    """A document's score from its term frequencies and length."""
    # impact() with its per-document part computed once: the same operations in the same order
    norm = K1 * (1 - B + B * length / space.average_length)
    lift = K1 + 1
    return sum(
        weight * tf * lift / (tf + norm)
        for term, weight in weights.items()
        if (tf := frequencies.get(term, 0))
    )


class _Eligibility:
    """Asks the filter about documents in batches, best first."""

    def __init__(self, check: Callable[[list[int]], set[int]]) -> None:
        self.check = check

    def best(self, ranked: Sequence[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """The first ``k`` eligible of ``ranked`` (fewer when there are fewer)."""
        out: list[tuple[int, float]] = []
        at = 0
        while len(out) < k and at < len(ranked):
            window = ranked[at : at + max(32, 2 * (k - len(out)))]
            allowed = self.check([doc for doc, _ in window])
            out.extend((doc, score) for doc, score in window if doc in allowed)
            at += len(window)
        return out[:k]


def exhaustive(
    space: Space,
    doc_counts: Mapping[str, int],
    postings: Callable[[str], Iterable[Posting]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
) -> list[tuple[int, float]]:
    """The reference: every posting of every term scored, the best ``k`` eligible documents."""
    average = space.average_length
    scores: dict[int, float] = {}
    for term, docs in doc_counts.items():
        if docs <= 0:
            continue
        weight = idf(space, docs)
        for doc, tf, length in postings(term):
            scores[doc] = scores.get(doc, 0.0) + impact(weight, tf, length, average)
    ranked = _order(scores)
    allowed = eligible([doc for doc, _ in ranked])
    return [(doc, score) for doc, score in ranked if doc in allowed][:k]


def impact_order(
    groups: Iterable[Group], weight: float, average_length: float
) -> Iterator[tuple[int, float]]:
    """A term's ``(doc, impact)`` in non-increasing impact order (newer document first among equals),
    merged from its frequency groups (see the module notes)."""
    heap: list[tuple[float, int, int, int, Iterator[tuple[int, int]]]] = []
    for tf, rows in groups:
        for doc, length in rows:
            heap.append((-impact(weight, tf, length, average_length), -doc, tf, length, rows))
            break
    heapq.heapify(heap)
    while heap:
        negative, negative_doc, tf, _length, rows = heap[0]
        yield -negative_doc, -negative
        for doc, length in rows:
            heapq.heapreplace(heap, (-impact(weight, tf, length, average_length), -doc, tf, length, rows))
            break
        else:
            heapq.heappop(heap)


def scan_postings(postings: Callable[[str], Iterable[Posting]]) -> Scan:
    """:data:`Scan` over posting lists read whole (the reference; the store sums in SQL)."""

    def scan(
        weights: Mapping[str, float], average: float, n: int | None, required: Collection[str] = ()
    ) -> list[tuple[int, float]]:
        scores: dict[int, float] = {}
        get = scores.get
        for term, weight in weights.items():
            # impact() unrolled: this loop runs once per posting
            lift, base, per_token = weight * (K1 + 1), K1 * (1 - B), K1 * B / average
            for doc, tf, length in postings(term):
                scores[doc] = get(doc, 0.0) + lift * tf / (tf + base + per_token * length)
        if required:
            holding = {doc for term in required for doc, _, _ in postings(term)}
            scores = {doc: score for doc, score in scores.items() if doc in holding}
        if n is None:
            return _order(scores)
        return heapq.nlargest(n, scores.items(), key=lambda item: (item[1], item[0]))

    return scan


def _scan(
    weights: Mapping[str, float],
    scan: Scan,
    eligible: Callable[[list[int]], set[int]],
    k: int,
    average: float,
    required: Collection[str] = (),
) -> list[tuple[int, float]]:
    """Every posting of every term scored (of the documents holding a ``required`` term, if any); the
    best ``k`` eligible."""
    gate = _Eligibility(eligible)
    wanted = max(4 * k, 64)
    head = scan(weights, average, wanted, required)
    found = gate.best(head, k)
    if len(found) == k or len(head) < wanted:
        return found
    # the filter refused most of the best: look further
    return gate.best(scan(weights, average, None, required), k)


def essential_terms(
    ceilings: Mapping[str, float], doc_counts: Mapping[str, int], threshold: float
) -> list[str]:
    """MaxScore's essential terms (Turtle and Flood, 1995): the fewest terms, those of the highest
    ``ceilings`` (each term's largest impact), such that the others' ceilings add up to less than
    ``threshold`` (a score the ``k``-th best document is known to reach). A document holding none of them
    scores less than ``threshold`` and cannot take a place. Among equal ceilings the term with more
    documents is left out first. A term without a ceiling (not read yet) is always essential."""
    order = sorted(ceilings, key=lambda t: (ceilings[t], -doc_counts.get(t, 0)))
    below = 0.0
    optional: set[str] = set()
    for term in order:
        if below + ceilings[term] >= threshold - _SLACK:
            break
        below += ceilings[term]
        optional.add(term)
    return [term for term in doc_counts if term not in optional]


def _required(
    weights: Mapping[str, float],
    ceilings: Mapping[str, float],
    doc_counts: Mapping[str, int],
    best: Sequence[tuple[float, int]],
    k: int,
) -> list[str]:
    """The essential terms a scan may require (:func:`essential_terms`), when requiring them is worth
    it: the documents holding them bring at most half the postings into the sums. Otherwise none."""
    if len(best) < k:
        return []
    counts = {term: doc_counts[term] for term in weights}
    essential = essential_terms(
        {term: ceilings[term] for term in weights if term in ceilings}, counts, best[0][0]
    )
    if len(essential) == len(counts):
        return []
    at_most = sum(counts[term] for term in essential) * len(counts)
    return essential if 2 * at_most < sum(counts.values()) else []


def top_k(
    space: Space,
    doc_counts: Mapping[str, int],
    scan: Scan,
    groups: Callable[[str], Iterable[Group]],
    frequencies: Callable[[list[int]], Mapping[int, tuple[Mapping[str, int], int]]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
    *,
    scan_below: int = SCAN_POSTINGS,
    random_access_cost: float = RANDOM_ACCESS_COST,
) -> list[tuple[int, float]]:
    """The best ``k`` eligible documents by BM25, best first (see the module notes).

    ``doc_counts`` gives each query term's document count in the space; ``scan`` scores every posting
    (:data:`Scan`); ``groups(term)`` its postings by frequency (see :data:`Group`); ``frequencies(docs)`` each
    document's frequencies of the query terms and its length (random access); ``eligible(docs)`` the
    subset of ``docs`` the caller may return (scope filters, validity, review state...). Up to
    ``scan_below`` postings in all, every posting is scored; above, the Threshold Algorithm reads the
    lists in impact order, until it has met more documents than the postings divided by
    ``random_access_cost`` (0: never gives way)."""
    weights = {term: idf(space, n) for term, n in doc_counts.items() if n > 0}
    if k <= 0 or not weights or space.docs <= 0:
        return []
    average = space.average_length
    total = sum(doc_counts[term] for term in weights)
    if total <= scan_below:
        return _scan(weights, scan, eligible, k, average)
    lists = {term: impact_order(groups(term), weight, average) for term, weight in weights.items()}
    frontier = dict.fromkeys(weights, math.inf)
    ceilings: dict[str, float] = {}  # each term's largest impact: the first of its list
    batches = dict.fromkeys(weights, max(_FIRST_BATCH, k))
    scores: dict[int, float] = {}
    best: list[tuple[float, int]] = []  # a min-heap of the k best eligible (score, doc)
    while lists:
        # the list standing highest lowers the bound most: read a batch of it
        term = max(lists, key=lambda t: frontier[t])
        met: list[int] = []
        taken = 0
        # a document met here scores at most its impact here plus where the other lists stand: below the
        # k-th score already found, it is not scored at all (it cannot take a place)
        others = sum(value for t, value in frontier.items() if t != term)
        floor = best[0][0] - _SLACK if len(best) == k else -math.inf
        for doc, value in lists[term]:
            ceilings.setdefault(term, value)
            frontier[term] = value
            if doc not in scores:
                scores[doc] = 0.0
                if value + others >= floor:
                    met.append(doc)
            taken += 1
            if taken >= batches[term]:
                break
        else:
            del lists[term]
            frontier[term] = 0.0
        batches[term] = min(batches[term] * 2, _LARGEST_BATCH)
        if len(scores) * random_access_cost > total:
            # the lists stand level for long (documents much alike): scoring every posting costs less, and
            # the k-th score found so far spares the documents that hold only terms of small impact
            return _scan(
                weights, scan, eligible, k, average, _required(weights, ceilings, doc_counts, best, k)
            )
        if met:
            counted = frequencies(met)
            allowed = eligible([doc for doc in met if doc in counted])
            for doc in met:
                counts, length = counted.get(doc, ({}, 0))
                value = score_of(space, weights, counts, length)
                scores[doc] = value
                if doc in allowed:
                    item = (value, doc)
                    if len(best) < k:
                        heapq.heappush(best, item)
                    elif item > best[0]:
                        heapq.heapreplace(best, item)
        if len(best) == k and best[0][0] >= sum(frontier.values()) - _SLACK:
            break
    return [(doc, value) for value, doc in sorted(best, reverse=True)]
