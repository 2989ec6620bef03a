"""The exact top-k's per-document sums held in numpy arrays (:mod:`yiji.domain.topk`, when numpy is there).

:func:`yiji.domain.topk.top_k` reads the terms whole into per-document sums, highest ceiling first, until a
floor is found; a query of many common terms (a resume's derived query) reads nearly all of them so,
tens of thousands of postings, and summing them one by one in Python is most of its time. Here the sums
are a dense array over the documents' range (:class:`Dense`): a term read whole is its documents and
their impacts as two arrays, added in one vectorised step.

**The same bits.** A document's sum is the same floating-point additions in the same order as the pure
path's ``scores[d] = scores.get(d, 0.0) + w``: the terms are added in the same order, each impact is the
same float (computed in arrays by the same IEEE 754 operations in the same order as the term's table
computes one in Python: :func:`_impacts`), and ``sums[at] += w`` over one term's documents (each once in a
term) is one IEEE 754 addition per posting, ``0.0 + w`` (which is ``w``) for a document met first, as in the
pure path; the first term is assigned, as there. The best ``k`` are picked in the same order (higher score
first, then the larger document id, the newer) through the same eligibility filter
(:class:`yiji.domain.topk._Eligibility`), so the result is the same list, bit for bit
(``tests/test_exact_candidates.py`` runs both).

A term's blocks are decoded by the store many at once (:data:`yiji.domain.topk.Unpack`: the blocks of
one layout as one matrix of bytes), so no Python list is made per block. Once a floor is found, the
documents that can still reach it stay in arrays too (:meth:`Dense.finish`): each term left is decoded
(whole, or only its blocks that hold a candidate when the candidates are few) and added to the
candidates it holds.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from itertools import chain, compress
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from yiji.domain.topk import _LENGTH, _SAMPLE, _SLACK, KEY_SHIFT

if TYPE_CHECKING:
    from yiji.domain.topk import Block, _Eligibility, _Term

__all__ = ["Dense"]

_Docs = npt.NDArray[np.int64]
_Scores = npt.NDArray[np.float64]
_Keys = npt.NDArray[np.unsignedinteger[Any]]


def _keys(keys: Sequence[int]) -> npt.NDArray[np.unsignedinteger[Any]]:
    """A block's keys as an array: an ``array.array`` (a block of frequencies all 1: its lengths as
    stored) without a copy."""
    if isinstance(keys, array):
        return np.frombuffer(keys, dtype=keys.typecode)
    return np.array(keys, dtype=np.uint64)


def _decoded(term: _Term, blocks: Sequence[Block] | None = None) -> tuple[_Docs, _Keys]:
    """The documents and keys of the term's ``blocks`` (all of them by default), in no particular
    order of the blocks. The blocks are decoded by the store's decoder of many at once when it is
    given (:data:`yiji.domain.topk.Unpack`), else one by one; a document is in one block of a term, so
    their order does not matter."""
    if blocks is None:
        blocks = term.blocks
    if term.unpack is not None:
        docs, keys = term.unpack(blocks)
        return docs, keys
    decoded = [block.postings() for block in blocks]
    size = sum(len(docs) for docs, _ in decoded)
    docs = np.fromiter(chain.from_iterable(docs for docs, _ in decoded), np.int64, size)
    if not size:
        return docs, np.zeros(0, dtype=np.uint64)
    return docs, np.concatenate([_keys(keys) for _, keys in decoded])


def _impacts(term: _Term, keys: _Keys) -> _Scores:
    """Each key's impact, computed in arrays by the same IEEE 754 operations in the same order as the
    term's table computes one in Python (:class:`yiji.domain.topk._Impacts`: ``0 + ...`` then each
    saturation ``lift * tf / (tf + base + per * length)`` added in turn, an integer ``tf`` or length
    taken as the float it equals exactly), so each impact is the same float."""
    if not len(keys):
        return np.zeros(0, dtype=np.float64)
    tf = np.right_shift(keys, np.uint64(KEY_SHIFT)).astype(np.float64)
    tf[tf == 0.0] = 1.0
    length = np.bitwise_and(keys, np.uint64(_LENGTH)).astype(np.float64)
    total = np.zeros(len(keys), dtype=np.float64)
    for lift, base, per in term.table.parts:
        total = total + lift * tf / (tf + base + per * length)
    return total


def _postings(term: _Term) -> tuple[_Docs, _Scores]:
    """The term's documents and each one's impact."""
    docs, keys = _decoded(term)
    return docs, _impacts(term, keys)


def _best(docs: _Docs, scores: _Scores, gate: _Eligibility, k: int, above: float) -> list[tuple[int, float]]:
    """The first ``k`` eligible documents scoring more than ``above``, higher score first, then the larger
    id: the head (about 4 times ``k``) picked by a partition and sorted, everything sorted only when the
    filter refuses most of it (as the pure path's ``_best``)."""
    if above > -math.inf:
        over = scores > above
        docs, scores = docs[over], scores[over]
    wanted = max(4 * k, 64)
    head_docs, head_scores = docs, scores
    if len(scores) > wanted:
        # every score tied with the wanted-th best comes along, so the sort below decides among them
        bar = np.partition(scores, len(scores) - wanted)[len(scores) - wanted]
        over = scores >= bar
        head_docs, head_scores = docs[over], scores[over]
    order = np.lexsort((-head_docs, -head_scores))[:wanted]
    found = gate.best(list(zip(head_docs[order].tolist(), head_scores[order].tolist(), strict=True)), k)
    if len(found) == k or len(scores) <= wanted:
        return found
    order = np.lexsort((-docs, -scores))
    return gate.best(list(zip(docs[order].tolist(), scores[order].tolist(), strict=True)), k)


class Dense:
    """Each document's sum of the impacts read, over documents ``low`` .. ``low + span - 1``."""

    def __init__(self, low: int, span: int) -> None:
        self.low = low
        self.sums: _Scores = np.zeros(span, dtype=np.float64)
        self.met = np.zeros(span, dtype=np.bool_)
        self.count = 0

    def __len__(self) -> int:
        """Documents met."""
        return self.count

    def add(self, term: _Term, *, fresh: bool) -> None:
        """Every posting's impact added to its document's sum (``fresh``: no sum holds anything yet)."""
        docs, impacts = _postings(term)
        at = docs - self.low
        if fresh:
            self.sums[at] = impacts
        else:
            self.sums[at] += impacts
        self.count += len(at) - int(np.count_nonzero(self.met[at]))
        self.met[at] = True

    def _scores(self) -> tuple[_Docs, _Scores]:
        at = np.flatnonzero(self.met)
        return at + self.low, self.sums[at]

    def threshold(self, rest: float, gate: _Eligibility, k: int) -> float | None:
        """As the pure path's ``_threshold``: the ``k``-th eligible score among the documents scoring more
        than ``rest``, or None (also when every n-th score says fewer than ``k`` do)."""
        docs, scores = self._scores()
        bar = rest + _SLACK
        if len(scores) > 4 * _SAMPLE:
            step = max(1, len(scores) // _SAMPLE)
            if int(np.count_nonzero(scores[::step] > bar)) * step < k:
                return None
        found = _best(docs, scores, gate, k, bar)
        return found[-1][1] if len(found) == k else None

    def reaching(self, bar: float, rest: float) -> dict[int, float]:
        """The documents whose sum plus ``rest`` reaches ``bar``, with their sums."""
        docs, scores = self._scores()
        keep = bar <= rest + scores
        return dict(zip(docs[keep].tolist(), scores[keep].tolist(), strict=True))

    def best(self, gate: _Eligibility, k: int) -> list[tuple[int, float]]:
        docs, scores = self._scores()
        return _best(docs, scores, gate, k, -math.inf)

    def finish(
        self, terms: Sequence[_Term], theta: float, rest: float, gate: _Eligibility, k: int, cost: float
    ) -> list[tuple[int, float]]:
        """As the pure path's :func:`yiji.domain.topk._finish`, in arrays: the documents whose sum plus
        ``rest`` reaches the floor ``theta``, each of ``terms`` in turn added to those of them it holds
        (one IEEE addition a document, in the same order of the terms), the ones that can no longer
        reach the floor dropped after each; then the best ``k`` eligible. A term is decoded whole, or,
        when the candidates are few beside its postings (``cost``, :data:`yiji.domain.topk.LOOKUP_COST`),
        only in its blocks whose range holds one of them. A document the term holds that is not a
        candidate is not added: in the pure path it is added and falls out at once (its one impact is
        under the floor), so the lists are the same."""
        docs, sums = self._scores()
        keep = theta - _SLACK <= rest + sums
        docs, sums = docs[keep], sums[keep]  # documents in increasing order
        for term in terms:
            rest -= term.ceiling
            blocks: Sequence[Block] = term.blocks
            if len(docs) * cost <= term.count and blocks:
                firsts = np.fromiter((b.first for b in blocks), np.int64, len(blocks))
                lasts = np.fromiter((b.last for b in blocks), np.int64, len(blocks))
                holding = np.searchsorted(docs, lasts, "right") > np.searchsorted(docs, firsts, "left")
                blocks = list(compress(blocks, holding.tolist()))
            held, keys = _decoded(term, blocks)
            _, mine, theirs = np.intersect1d(docs, held, assume_unique=True, return_indices=True)
            sums[mine] += _impacts(term, keys[theirs])
            keep = theta - rest - _SLACK <= sums
            docs, sums = docs[keep], sums[keep]
        return _best(docs, sums, gate, k, -math.inf)
