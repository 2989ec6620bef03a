"""Exact top-k lexical retrieval: BM25 over one scope's postings, stored as blocks, by MaxScore.

The candidates of fast recall are the ``k`` eligible documents of a scope with the best BM25 score for
the query's terms, the ones exhaustive scoring of every match would give; no document is left out for
its age or its place in an index. The statistics are the scope's own (:class:`Space`, each term's
document count), so another scope's data never changes a result.

**The score** is FTS5's ``bm25()`` with k1 = 1.2 and b = 0.75 (:mod:`yiji.domain.bm25`), positive here
(higher is better)::

    idf(t)    = ln((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when not positive
    impact    = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(d)  = sum of the impacts of the query terms d holds

**Blocks.** A term's postings are runs of documents in document order (:class:`Block`, as Lucene and
Tantivy store them), each with the inputs of its largest impact: its largest frequency and its shortest
document. The impact grows with ``tf`` and falls with ``|d|`` whatever the average length, so
``impact(max tf, min length)`` bounds every impact of the block, and the largest block bound of a term
bounds the term (its *ceiling*). Nothing stored depends on the average length.

A block decodes to its documents and their *keys* (:data:`KEY_SHIFT`): ``tf << 32 | length``, or the
length alone for a frequency of 1, so a block whose frequencies are all 1 (nearly every block) decodes
its lengths array and is done; each distinct key's impact is computed once per term.

**MaxScore** (Turtle and Flood, 1995), term at a time over the blocks: the terms are read whole, the one
of the highest ceiling first, each impact added to its document's sum. Once ``k`` eligible documents
score more than the ceilings of the terms not read yet add up to, no document met by none of the terms
read can take a place: the ``k``-th of those scores is a floor (``theta``). The other terms are then only
looked up for the documents whose sum plus the ceilings still to come reaches the floor, and only in the
blocks whose range holds one of them (a block holding none is not decoded), or read whole when there are
so many such documents that reading costs less (:data:`LOOKUP_COST`); a document falls out as soon as it
cannot reach the floor.

Seeking the floor is a pass over the documents met, so it is sought only when it can exist (the ceilings
read add up to more than those left) and may pay (more postings are left to read than documents were
met, :data:`FLOOR_COST`), and not when every n-th score says that fewer than ``k`` documents are over
the ceilings left. A query of many common terms of like ceilings (a resume's derived query) has no floor
until nearly every term is read, whatever finds it: a document holding three or four of a dozen terms
can take a place, so each list must be read to know which documents hold which. Those queries are read
whole and pay for the postings only. The best documents are picked without Python per document: every
n-th score places a bar about 4 times ``k``'s head above, the scores over it are counted and sorted
(:func:`_best`); with fewer over it than the head needs (many scores tie), a lower bar is tried, then
every score over the floor is sorted.

**Sums.** The sums of the terms read whole are held in a dict, summed by C-level loops over the decoded
blocks (about 370 ns a posting in CPython, most of a derived query's time), or in a dense numpy array
over the documents' range (:mod:`yiji.domain.topk_arrays`): a term read whole is its documents and
impacts as two arrays, added in one vectorised step, and the best are picked by a partition and a sort of
the head. numpy is an optional dependency (the ``embed`` extra); its sums are taken for terms of at least
:data:`ARRAY_POSTINGS` postings over a range of documents at most :data:`ARRAY_SPAN` times as long, once
the process has numpy loaded: it is imported only after the process's large queries have summed
:data:`ARRAY_IMPORT` postings in Python, so a one-shot command (a hook, a recall) does not pay for it
and a server pays once. On ``yiji bench resume``'s archive (100,000 memories) a
derived query's top-k (22-25 terms, 37,000-57,000 postings) took 17-25 ms in the dict and 8.6-11.6 ms with
numpy's sums over blocks decoded one by one; with the blocks decoded together, the impacts computed in
arrays and the terms after the floor kept in arrays (:mod:`yiji.domain.topk_arrays`), 5.2-10.7 ms (p50 over
80 derived resumes, alternating runs: 6.7 against 13.2 ms before); a given query, whose floor is found
early, costs about the same either way.

Both add the same float impacts one by one in the same term order (``0.0 + w``, which is ``w``,
for a document met first; the first term assigned), so each sum is the same IEEE 754 additions in the same
order, and both pick the best in the same order through the same filter: the same bits
(``tests/test_topk_arrays.py`` runs both on every way through random blocks). Sums regrouped (pairwise,
or a term's own impacts added up before its document's sum) would differ in the last bits, so neither
path does that. Once a floor is found, the documents that can still reach it go on in the same form
(a dict, or arrays).

Which way a query goes changes the work, never the result: each document's score is the sum of its
impacts in the same order (the terms' order above) on every path, so the results are the same bits.

The result equals :func:`exhaustive` (the reference the tests compare with) score for score (sums of the
same impacts taken in another order, equal to the last bits); among equal scores the newer document comes
first.

**Other formulas.** A caller may give each term its own impact, a sum of saturations
``weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))`` with parameters of its own
(:data:`Saturations`): each grows with ``tf`` and falls with ``|d|``, so the block bounds hold as they do
for BM25. A caller may so fetch documents best first by an upper bound of another lexical formula, such as
the final ranking's strength (docs/benchmarks.md, "Exactness of the final ranking"); fast recall today asks
for BM25.

Pure: the store's reads come in as callables.
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, islice, repeat
from operator import add, le, lt
from typing import Any, Protocol

from yiji.domain.bm25 import K1, B

__all__ = [
    "ARRAY_IMPORT",
    "ARRAY_POSTINGS",
    "ARRAY_SPAN",
    "Block",
    "Saturations",
    "Posting",
    "FLOOR_COST",
    "KEY_SHIFT",
    "LOOKUP_COST",
    "Space",
    "Unpack",
    "block_of",
    "exhaustive",
    "idf",
    "impact",
    "key_of",
    "saturated",
    "top_k",
    "unkeyed",
]

Posting = tuple[int, int, int]
"""(document id, term frequency, document length in tokens)."""

Saturations = tuple[tuple[float, float, float], ...]
"""A term's impact as a sum of ``(weight, k1, b)`` saturations (see the module notes)."""

_SLACK = 1e-9
"""Sums of the same impacts in another order differ in the last bits."""
LOOKUP_COST = 8
"""What looking a document up in a term's blocks costs (a bisection in Python), in postings summed by
reading the term whole (C-level loops): past the term's postings divided by this, it is read whole."""
_SAMPLE = 1024
"""Scores read (every n-th) to place a bar above most documents met."""
FLOOR_COST = 1.0
"""What reading a posting whole costs against passing over a document met to seek a floor: a floor is
sought only while the postings left to read, times this, outnumber the documents met (with fewer, the
terms left are read whole without trying)."""

ARRAY_POSTINGS = 8192
"""Postings of a query's terms from which their sums are held in numpy arrays when numpy is installed
(:mod:`yiji.domain.topk_arrays`): below it, numpy's fixed cost per call outweighs what it saves."""
ARRAY_SPAN = 16
"""The arrays are dense over the documents' range: at most this many times the postings long."""
ARRAY_IMPORT = 250_000
"""Postings a process sums in Python for queries of :data:`ARRAY_POSTINGS` or more before it imports
numpy for them (rent before buying): the import costs 0.1-0.3 s here and numpy saves about 0.25 us a
posting, so a command that runs a query or two on a 100,000-memory archive (a hook, ``yiji recall``)
never pays it, and a server pays it once, within its first few resumes. numpy already loaded (by
semantic recall, say) is used at once."""


@dataclass(frozen=True)
class Space:
    """One scope's index: its documents and their tokens in all."""

    docs: int
    tokens: int

    @property
    def average_length(self) -> float:
        return self.tokens / self.docs if self.docs else 1.0


KEY_SHIFT = 32
"""A posting's *key* is ``tf << KEY_SHIFT | length``, or its length alone when ``tf`` is 1 (nearly every
posting's: a block of them decodes its lengths and is done)."""
_LENGTH = (1 << KEY_SHIFT) - 1

Decoded = tuple[Sequence[int], Sequence[int]]
"""A block's postings: its documents in increasing order and each one's key (:data:`KEY_SHIFT`)."""
Unpack = Callable[[Sequence["Block"]], tuple[Any, Any]]
"""The store's decoder of a term's blocks into two numpy arrays at once (documents as ``int64``, keys as
``uint64``, in any order of the blocks): the numpy sums' way to read a term whole without a Python list
per block. It gives the documents and keys :meth:`Block.postings` gives."""


def key_of(tf: int, length: int) -> int:
    return length if tf == 1 else tf << KEY_SHIFT | length


def unkeyed(key: int) -> tuple[int, int]:
    """``(tf, length)`` of a key (:data:`KEY_SHIFT`)."""
    return (key >> KEY_SHIFT) or 1, key & _LENGTH


@dataclass
class Block:
    """A run of one term's postings: documents ``first`` .. ``last`` (not every one of them), the
    largest frequency and the shortest length among them, and how to decode them (once, when needed)."""

    first: int
    last: int
    max_tf: int
    min_len: int
    decode: Callable[[], Decoded]
    data: bytes | None = field(default=None, repr=False)
    """The block as its store encodes it, for a decoder of many blocks at once (:data:`Unpack`), or
    None (the block decodes alone)."""
    count: int = 0
    """Its postings, when :attr:`data` is given."""
    _decoded: Decoded | None = field(default=None, repr=False)

    def postings(self) -> Decoded:
        if self._decoded is None:
            self._decoded = self.decode()
        return self._decoded

    def triples(self) -> list[Posting]:
        """The block's postings as ``(doc, tf, length)``."""
        docs, keys = self.postings()
        return [(doc, *unkeyed(key)) for doc, key in zip(docs, keys, strict=True)]


def block_of(postings: Iterable[Posting]) -> Block:
    """A block of these postings (any order; none with ``tf`` or length past 32 bits): the reference
    form the tests build, the store decoding its own blobs."""
    rows = sorted(postings)
    docs = [doc for doc, _, _ in rows]
    keys = [key_of(tf, length) for _, tf, length in rows]
    return Block(
        docs[0],
        docs[-1],
        max(tf for _, tf, _ in rows),
        min(length for _, _, length in rows),
        lambda: (docs, keys),
    )


def idf(space: Space, docs_with_term: int) -> float:
    value = math.log((space.docs - docs_with_term + 0.5) / (docs_with_term + 0.5))
    return value if value > 0 else 1e-6


def impact(weight: float, tf: int, length: int, average_length: float) -> float:
    return weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average_length))


def saturated(parts: Saturations, tf: int, length: int, average_length: float) -> float:
    """A term's impact under :data:`Saturations` ``parts``."""
    return sum(w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average_length)) for w, k1, b in parts)


def _order(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))


class _Eligibility:
    """Asks the filter about documents in batches, best first; each document once."""

    def __init__(self, check: Callable[[list[int]], set[int]]) -> None:
        self.check = check
        self.known: dict[int, bool] = {}

    def best(self, ranked: Sequence[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """The first ``k`` eligible of ``ranked`` (fewer when there are fewer)."""
        out: list[tuple[int, float]] = []
        at = 0
        known = self.known
        while len(out) < k and at < len(ranked):
            window = ranked[at : at + max(32, 2 * (k - len(out)))]
            asked = [doc for doc, _ in window if doc not in known]
            if asked:
                allowed = self.check(asked)
                known.update((doc, doc in allowed) for doc in asked)
            out.extend((doc, score) for doc, score in window if known[doc])
            at += len(window)
        return out[:k]


def exhaustive(
    space: Space,
    doc_counts: Mapping[str, int],
    postings: Callable[[str], Iterable[Posting]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
    impacts: Mapping[str, Saturations] | None = None,
) -> list[tuple[int, float]]:
    """The reference: every posting of every term scored, the best ``k`` eligible documents."""
    average = space.average_length
    parts = _saturations(space, doc_counts, impacts)
    scores: dict[int, float] = {}
    for term, terms in parts.items():
        for doc, tf, length in postings(term):
            scores[doc] = scores.get(doc, 0.0) + saturated(terms, tf, length, average)
    ranked = _order(scores)
    allowed = eligible([doc for doc, _ in ranked])
    return [(doc, score) for doc, score in ranked if doc in allowed][:k]


def _saturations(
    space: Space, doc_counts: Mapping[str, int], impacts: Mapping[str, Saturations] | None
) -> dict[str, Saturations]:
    """Each term's saturations: the caller's, or BM25's (its ``idf``, k1 1.2, b 0.75) for a term the space
    holds."""
    if impacts is not None:
        return {term: parts for term, parts in impacts.items() if parts and doc_counts.get(term, 0) > 0}
    return {term: ((idf(space, n), K1, B),) for term, n in doc_counts.items() if n > 0}


class _Impacts(dict[int, float]):
    """One term's impact of each posting key met (:data:`KEY_SHIFT`), computed once."""

    def __init__(self, parts: Saturations, average: float) -> None:
        super().__init__()
        self.parts = [(w * (k1 + 1), k1 * (1 - b), k1 * b / average) for w, k1, b in parts]

    def __missing__(self, key: int) -> float:
        tf, length = unkeyed(key)
        if len(self.parts) == 1:  # BM25's one saturation: ``sum`` of one value is ``0 + value``
            lift, base, per = self.parts[0]
            value = self[key] = 0.0 + lift * tf / (tf + base + per * length)
        else:
            value = self[key] = sum(lift * tf / (tf + base + per * length) for lift, base, per in self.parts)
        return value


class _Term:
    def __init__(
        self,
        parts: Saturations,
        blocks: Sequence[Block],
        average: float,
        count: int,
        unpack: Unpack | None = None,
    ) -> None:
        self.blocks = blocks
        self.count = count
        self.unpack = unpack
        self.table = _Impacts(parts, average)
        self.ceiling = max((saturated(parts, b.max_tf, b.min_len, average) for b in blocks), default=0.0)

    def add_all(self, scores: dict[int, float], *, fresh: bool = False) -> None:
        """Every posting's impact added to its document's sum (``fresh``: ``scores`` holds none of the
        term's documents, so each impact is its document's first)."""
        get = scores.get
        impact = self.table.__getitem__
        for block in self.blocks:
            docs, keys = block.postings()
            # C-level loops: this runs once per posting
            if fresh:
                scores.update(zip(docs, map(impact, keys), strict=True))
            else:
                sums = map(add, map(get, docs, repeat(0.0)), map(impact, keys))
                scores.update(zip(docs, sums, strict=True))

    def look_up(self, docs: Sequence[int]) -> Iterator[tuple[int, float]]:
        """``(doc, impact)`` of those of ``docs`` (increasing) the term holds; only the blocks whose range
        holds one of them are decoded."""
        table = self.table
        for block in self.blocks:
            lo, hi = bisect_left(docs, block.first), bisect_right(docs, block.last)
            if lo >= hi:
                continue
            ids, keys = block.postings()
            for doc in docs[lo:hi]:
                at = bisect_left(ids, doc)
                if at < len(ids) and ids[at] == doc:
                    yield doc, table[keys[at]]


def _sampled(values: Sequence[float]) -> tuple[list[float], int]:
    """About :data:`_SAMPLE` of ``values`` (every n-th, best first) and n."""
    step = max(1, len(values) // _SAMPLE)
    return sorted(islice(values, 0, None, step), reverse=True), step


def _best(
    scores: Mapping[int, float], gate: _Eligibility, k: int, above: float = -math.inf
) -> list[tuple[int, float]]:
    """The best ``k`` eligible of ``scores`` scoring more than ``above``: the head first, everything
    sorted only when the filter refuses most of it. The head is picked by C-level loops, no Python per
    document: over a bar that every n-th score puts about 4 times the head's size above (checked by
    counting; a lower one, then ``above``, when the count falls short), and sorted as ``(score, doc)``
    tuples."""
    wanted = max(4 * k, 64)
    values = list(scores.values())
    bars = [above]
    if len(values) > 16 * wanted:
        # about 4 and 16 times the head over them, going by the sample; the floor when both fall short
        # (many scores tie)
        sample, step = _sampled(values)
        bars = [max(above, sample[min(len(sample) - 1, n * wanted // step)]) for n in (4, 16)] + bars
    if bars[0] == -math.inf:
        picked: Iterable[tuple[float, int]] = zip(values, scores.keys(), strict=True)
    else:
        for bar in bars:
            over = list(map(lt, repeat(bar), values))
            if bar == above or over.count(True) >= wanted:
                break
        picked = zip(compress(values, over), compress(scores.keys(), over), strict=True)
    head = [(doc, score) for score, doc in sorted(picked, reverse=True)[:wanted]]
    found = gate.best(head, k)
    if len(found) == k or len(head) < wanted:
        return found
    return gate.best(_order({doc: score for doc, score in scores.items() if score > above}), k)


def _threshold(scores: Mapping[int, float], rest: float, gate: _Eligibility, k: int) -> float | None:
    """The ``k``-th eligible score among the documents scoring more than ``rest`` (the ceilings of the
    terms not read), or None when fewer than ``k`` eligible documents do, or when every n-th score
    (:func:`_sampled`) says so (not seeking it then changes the work only)."""
    bar = rest + _SLACK
    if len(scores) > 4 * _SAMPLE:
        sample, step = _sampled(list(scores.values()))
        if bisect_left([-v for v in sample], -bar) * step < k:
            return None
    found = _best(scores, gate, k, bar)
    return found[-1][1] if len(found) == k else None


class _Sums(Protocol):
    """Each document's sum of the impacts of the terms read whole so far."""

    def __len__(self) -> int: ...

    def add(self, term: _Term, *, fresh: bool) -> None: ...

    def threshold(self, rest: float, gate: _Eligibility, k: int) -> float | None: ...

    def reaching(self, bar: float, rest: float) -> dict[int, float]: ...

    def best(self, gate: _Eligibility, k: int) -> list[tuple[int, float]]: ...

    def finish(
        self, terms: Sequence[_Term], theta: float, rest: float, gate: _Eligibility, k: int, cost: float
    ) -> list[tuple[int, float]]:
        """Once the floor ``theta`` is found, ``terms`` (not read, ``rest`` their ceilings) added to
        the documents that can still reach it; the best ``k`` eligible of those that do (``cost``:
        what looking a document up costs, :data:`LOOKUP_COST`)."""
        ...


def _finish(
    candidates: dict[int, float],
    terms: Sequence[_Term],
    theta: float,
    rest: float,
    gate: _Eligibility,
    k: int,
    lookup_cost: float,
) -> list[tuple[int, float]]:
    """Once the floor ``theta`` is found: ``terms`` (those not read, ``rest`` their ceilings) looked up
    for the ``candidates`` (the documents that can still reach it, with their sums), or read whole
    where that costs less (:data:`LOOKUP_COST`), each document dropped as soon as it cannot reach the
    floor; then the best ``k`` eligible."""
    for term in terms:
        rest -= term.ceiling
        if len(candidates) * lookup_cost > term.count:
            term.add_all(candidates)  # cheaper than the lookups; the documents it adds fall out below
        else:
            for doc, value in term.look_up(sorted(candidates)):
                candidates[doc] += value
        floor = theta - rest - _SLACK
        candidates = dict(compress(candidates.items(), map(le, repeat(floor), candidates.values())))
    return _best(candidates, gate, k)


class _DictSums:
    """The sums in a dict, summed by C-level loops over the decoded blocks (no numpy)."""

    def __init__(self) -> None:
        self.scores: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self.scores)

    def add(self, term: _Term, *, fresh: bool) -> None:
        term.add_all(self.scores, fresh=fresh)

    def threshold(self, rest: float, gate: _Eligibility, k: int) -> float | None:
        return _threshold(self.scores, rest, gate, k)

    def reaching(self, bar: float, rest: float) -> dict[int, float]:
        """The documents whose sum plus ``rest`` reaches ``bar`` (kept by C-level loops)."""
        reach = map(add, repeat(rest), self.scores.values())
        return dict(compress(self.scores.items(), map(le, repeat(bar), reach)))

    def best(self, gate: _Eligibility, k: int) -> list[tuple[int, float]]:
        return _best(self.scores, gate, k)

    def finish(
        self,
        terms: Sequence[_Term],
        theta: float,
        rest: float,
        gate: _Eligibility,
        k: int,
        cost: float,
    ) -> list[tuple[int, float]]:
        return _finish(self.reaching(theta - _SLACK, rest), terms, theta, rest, gate, k, cost)


class _Numpy:
    """Whether this process sums with numpy (:data:`ARRAY_IMPORT`): numpy's sums once loaded, None
    before (or without numpy)."""

    def __init__(self) -> None:
        self.dense: Callable[[int, int], _Sums] | None = None
        self.missing = False
        self.rented = 0
        """Postings of large queries summed in Python while numpy was not loaded."""

    def sums(self, postings: int, *, asked: bool) -> Callable[[int, int], _Sums] | None:
        if self.dense is None and not self.missing:
            if asked or self.rented >= ARRAY_IMPORT or "numpy" in sys.modules:
                try:
                    from yiji.domain.topk_arrays import Dense
                except ImportError:
                    self.missing = True
                else:
                    self.dense = Dense
            if self.dense is None and not asked:
                self.rented += postings
        return self.dense


_NUMPY = _Numpy()


def _sums(terms: Mapping[str, _Term], arrays: bool | None) -> _Sums:
    """numpy's sums when ``arrays`` asks for them, or (None) when the terms hold at least
    :data:`ARRAY_POSTINGS` postings over a range of documents at most :data:`ARRAY_SPAN` times that and
    numpy is installed and loaded (:data:`ARRAY_IMPORT`); the dict otherwise."""
    if arrays is False:
        return _DictSums()
    postings = sum(term.count for term in terms.values())
    if arrays is None and postings < ARRAY_POSTINGS:
        return _DictSums()
    low = min((block.first for term in terms.values() for block in term.blocks), default=0)
    high = max((block.last for term in terms.values() for block in term.blocks), default=0)
    span = high - low + 1
    if arrays is None and span > ARRAY_SPAN * postings:
        return _DictSums()
    dense = _NUMPY.sums(postings, asked=bool(arrays))
    if dense is None:
        if arrays:
            raise ImportError("numpy is not installed")
        return _DictSums()
    return dense(low, span)


def top_k(
    space: Space,
    doc_counts: Mapping[str, int],
    blocks: Callable[[list[str]], Mapping[str, Sequence[Block]]],
    eligible: Callable[[list[int]], set[int]],
    k: int,
    *,
    lookup_cost: float = LOOKUP_COST,
    floor_cost: float = FLOOR_COST,
    impacts: Mapping[str, Saturations] | None = None,
    arrays: bool | None = None,
    unpack: Unpack | None = None,
) -> list[tuple[int, float]]:
    """The best ``k`` eligible documents by BM25 (or by ``impacts``), best first (see the module notes).

    ``doc_counts`` gives each query term's document count in the space; ``blocks(terms)`` each term's
    blocks (read once, for all the terms at once); ``eligible(docs)`` the subset of ``docs`` the caller
    may return (scope filters, validity, review state...); ``lookup_cost`` as :data:`LOOKUP_COST`,
    ``floor_cost`` as :data:`FLOOR_COST` (both change the work only, never the result);
    ``impacts``: each term's :data:`Saturations` instead of BM25 (a term absent there is not read);
    ``arrays``: the terms read whole summed with numpy (True), in Python (False), or as :data:`ARRAY_POSTINGS`
    says (None); the result is the same bits whichever; ``unpack``: the store's decoder of many blocks at
    once for the numpy sums (:data:`Unpack`), or None (each block decoded alone)."""
    weights = _saturations(space, doc_counts, impacts)
    if k <= 0 or not weights or space.docs <= 0:
        return []
    average = space.average_length
    stored = blocks(list(weights))
    terms = {
        term: _Term(parts, stored.get(term, ()), average, doc_counts[term], unpack)
        for term, parts in weights.items()
    }
    order = sorted(terms, key=lambda t: (-terms[t].ceiling, doc_counts[t], t))
    rest = sum(term.ceiling for term in terms.values())
    unread = sum(term.count for term in terms.values())
    gate = _Eligibility(eligible)
    sums = _sums(terms, arrays)
    theta = -math.inf
    reached = 0.0
    at = 0
    # the terms read whole, highest ceiling first, until the others cannot lift a document not met
    while at < len(order):
        term = terms[order[at]]
        at += 1
        rest -= term.ceiling
        reached += term.ceiling
        unread -= term.count
        sums.add(term, fresh=at == 1)
        # a floor is sought only when a document met may score more than the terms left could give
        # (``reached``: the ceilings read) and reading those terms would cost more than seeking it
        if at < len(order) and reached > rest and unread * floor_cost > len(sums):
            floor = sums.threshold(rest, gate, k)
            if floor is not None:
                theta = floor
                break
    if at == len(order):
        return sums.best(gate, k)
    # the others looked up for the documents that can still reach the floor
    return sums.finish([terms[name] for name in order[at:]], theta, rest, gate, k, lookup_cost)
