"""The exact top-k's sums held in numpy arrays (:mod:`yiji.domain.topk_arrays`): the same list as the sums
in a dict, bit for bit, on every way through the blocks, and exhaustive scoring's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.domain import topk
from yiji.domain.topk_arrays import Dense

from .test_exact_candidates import _every_way as every_way

_TFS = st.integers(1, 4) | st.sampled_from((1000, 2**31 - 1, 2**32 - 1))
"""Frequencies: small ones mostly, and a few up to 32 bits (keys past 63 bits)."""


def _every_way(
    space: topk.Space,
    fixed: dict[str, list[topk.Posting]],
    cuts: list[int],
    eligible: Callable[[list[int]], set[int]],
    k: int,
    impacts: dict[str, topk.Saturations] | None,
) -> dict[bool, list[list[tuple[int, str]]]]:
    """``top_k`` once per way through the blocks (a floor sought never, early or as costs say; the terms
    after it looked up or read whole), with the sums in a dict (False) and in numpy's arrays (True, the
    blocks decoded one by one and many at once as the store does): each result as documents and their
    scores' exact bits."""
    counts = {term: len(postings) for term, postings in fixed.items()}
    floor_costs = (0, 0.01, topk.FLOOR_COST, 10**9)
    found = every_way(space, counts, fixed, cuts, eligible, k, floor_costs, impacts)
    bits = [[(doc, score.hex()) for doc, score in result] for result in found]
    # the ways come in threes: the dict, the arrays, the arrays over the store's blocks
    return {False: bits[0::3], True: bits[1::3] + bits[2::3]}


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from((0, 7, 10**6, 2**40)),
    lists=st.dictionaries(
        st.sampled_from("abcdefg"),
        st.lists(st.tuples(st.integers(1, 300), _TFS), max_size=150, unique_by=lambda p: p[0]),
        min_size=1,
    ),
    lengths=st.lists(st.integers(1, 40) | st.sampled_from((2**16, 2**32 - 1)), min_size=301, max_size=301),
    parts=st.none()
    | st.dictionaries(
        st.sampled_from("abcdefg"),
        st.lists(
            st.tuples(st.floats(0.01, 3.0), st.floats(0.2, 2.5), st.floats(0.0, 1.0)), min_size=1, max_size=3
        ).map(tuple),
    ),
    k=st.integers(1, 40),
    banned=st.sets(st.integers(1, 300), max_size=200),
    cuts=st.lists(st.integers(0, 150), max_size=8),
)
def test_numpy_sums_give_the_dicts_bits_and_exhaustive_scoring(
    base: int,
    lists: dict[str, list[tuple[int, int]]],
    lengths: list[int],
    parts: dict[str, topk.Saturations] | None,
    k: int,
    banned: set[int],
    cuts: list[int],
) -> None:
    """Random blocks (ids far from 0 too, frequencies and lengths up to 32 bits), BM25 or random sums of
    saturations, a random filter and ``k``: numpy's sums give the dict's result, score for score to the
    last bit, on every way through the blocks, and both are exhaustive scoring's."""
    fixed = {t: [(base + d, tf, lengths[d]) for d, tf in entries] for t, entries in lists.items()}
    documents = {doc for entries in fixed.values() for doc, _, _ in entries}
    space = topk.Space(len(documents) + 20, sum(lengths[d - base] for d in documents) + 20 * 8)

    def eligible(docs: list[int]) -> set[int]:
        return {doc for doc in docs if doc - base not in banned}

    ways = _every_way(space, fixed, cuts, eligible, k, parts)
    pure = ways[False][0]
    assert all(found == pure for found in ways[False] + ways[True])
    counts = {term: len(postings) for term, postings in fixed.items()}
    everything = dict(topk.exhaustive(space, counts, lambda t: fixed[t], set, 10**9, parts))
    expected = topk.exhaustive(space, counts, lambda t: fixed[t], eligible, k, parts)
    # the reference computes each impact by another arrangement of the same formula and sums in its own
    # term order: equal to the last bits, so it is compared by value; ties may list other documents
    assert len(pure) == len(expected)
    for (doc, bits), (_, want) in zip(pure, expected, strict=True):
        score = float.fromhex(bits)
        assert score == pytest.approx(want, rel=1e-12, abs=1e-15)
        assert everything[doc] == pytest.approx(score, rel=1e-12, abs=1e-15)
    ranked = [(float.fromhex(bits), doc) for doc, bits in pure]
    assert ranked == sorted(ranked, reverse=True)  # best first, the newer first among equal scores


def test_sums_follow_the_terms_order_to_the_last_bit() -> None:
    """A document's sum is its impacts added one by one, highest ceiling first, never regrouped: with
    impacts 1, 2**-53 and 2**-53 the sum is 1.0 (each tiny one rounds away), where adding the tiny ones
    together first would give 1 + 2**-52. Each impact here is its weight exactly (k1 1, b 0, tf 1)."""
    tiny = 2.0**-53
    assert (1.0 + tiny) + tiny != 1.0 + (tiny + tiny)  # the order shows in the bits
    fixed = {"a": [(1, 1, 5), (3, 1, 5)], "b": [(1, 1, 5), (2, 1, 5)], "c": [(1, 1, 5), (2, 1, 5)]}
    parts = {"a": ((1.0, 1.0, 0.0),), "b": ((tiny, 1.0, 0.0),), "c": ((tiny, 1.0, 0.0),)}
    space = topk.Space(10, 50)
    ways = _every_way(space, fixed, [], set, 3, parts)
    # documents 3 and 1 tie at 1.0, the newer first
    want = [(3, (1.0).hex()), (1, (1.0).hex()), (2, (tiny + tiny).hex())]
    assert all(found == want for found in ways[False] + ways[True])


def test_a_filter_refusing_the_head_of_tied_scores_gives_the_same_list() -> None:
    """Two thousand documents of one score, the filter refusing all but a few scattered ones: the head
    (4 times k) is refused whole, everything is sorted, and both sums give the newest eligible first."""
    fixed = {"a": [(doc, 1, 7) for doc in range(1, 2001)], "b": [(doc, 1, 7) for doc in range(1, 2001, 3)]}
    allowed = {5, 17, 404, 1000, 1999}
    space = topk.Space(3000, 3000 * 7)
    ways = _every_way(space, fixed, [128, 256, 1000], lambda docs: allowed & set(docs), 10, None)
    pure = ways[False][0]
    assert all(found == pure for found in ways[False] + ways[True])
    assert [doc for doc, _ in pure] == [1999, 1000, 404, 17, 5]


def _terms(postings: dict[str, list[topk.Posting]]) -> dict[str, topk._Term]:
    return {t: topk._Term(((1.0, 1.2, 0.75),), [topk.block_of(p)], 5.0, len(p)) for t, p in postings.items()}


def test_the_sums_are_numpys_for_many_postings_over_a_dense_range() -> None:
    """Unasked, numpy sums the terms from :data:`topk.ARRAY_POSTINGS` postings on, while their documents'
    range is at most :data:`topk.ARRAY_SPAN` times as long; asked, it always or never does."""
    many = topk.ARRAY_POSTINGS
    dense = _terms({"a": [(10**9 + d, 1, 3) for d in range(many)]})
    few = _terms({"a": [(d, 1, 3) for d in range(many - 1)]})
    spread = _terms({"a": [(d * (topk.ARRAY_SPAN + 1), 1, 3) for d in range(many)]})
    assert isinstance(topk._sums(dense, None), Dense)
    assert not isinstance(topk._sums(few, None), Dense)
    assert not isinstance(topk._sums(spread, None), Dense)
    assert isinstance(topk._sums(few, True), Dense) and isinstance(topk._sums(spread, True), Dense)
    assert not isinstance(topk._sums(dense, False), Dense)


_RENTAL = """
import json, sys
from yiji.domain import topk

def query(docs):
    lists = {t: [(d, 1 + d % 2, 3 + d % 5) for d in range(i, docs, 2)] for i, t in enumerate("ab")}
    space = topk.Space(docs, docs * 5)
    counts = {t: len(p) for t, p in lists.items()}
    return lambda: topk.top_k(space, counts, lambda ts: {t: [topk.block_of(lists[t])] for t in ts}, set, 10)

small, large = query(topk.ARRAY_POSTINGS - 1), query(topk.ARRAY_POSTINGS)
loaded = ["numpy" in sys.modules]
found = set()
for _ in range(3 * topk.ARRAY_IMPORT // topk.ARRAY_POSTINGS):
    found.add(json.dumps([(d, s.hex()) for d, s in small()]))
loaded.append("numpy" in sys.modules)
for _ in range(-(-topk.ARRAY_IMPORT // topk.ARRAY_POSTINGS) + 3):
    found.add(json.dumps([(d, s.hex()) for d, s in large()]))
    loaded.append("numpy" in sys.modules)
print(json.dumps({"loaded": loaded, "results": len(found)}))
"""


def test_a_process_imports_numpy_once_its_large_queries_would_pay_for_it() -> None:
    """numpy is not imported for small queries however many, nor for the first large ones: only once
    large queries have summed :data:`topk.ARRAY_IMPORT` postings in Python; each query's result stays
    the same bits before and after."""
    done = subprocess.run([sys.executable, "-c", _RENTAL], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    paid = -(-topk.ARRAY_IMPORT // topk.ARRAY_POSTINGS)  # large queries summed in Python first
    assert result["loaded"] == [False, False] + [False] * paid + [True] * 3
    assert result["results"] == 2  # one list for the small query, one for the large, on either path


def test_the_stores_blocks_decoded_together_are_each_blocks_postings() -> None:
    """The store's decoder of many blocks at once gives each block's documents and keys: blocks of one
    layout side by side, blocks of the same size but other widths, sparse and dense frequencies, a
    tail and a block of recent documents."""
    import numpy as np

    from yiji.store import postings as codec

    def stored(rows: list[topk.Posting]) -> topk.Block:
        return codec.block(
            rows[0][0],
            rows[-1][0],
            len(rows),
            max(r[1] for r in rows),
            min(r[2] for r in rows),
            codec.encode(rows),
        )

    blocks = [
        stored([(10, 1, 300), (12, 1, 301)]),  # narrow gaps, wide lengths: 10 bytes
        stored([(20, 1, 5), (900, 1, 6)]),  # wide gaps, narrow lengths: 10 bytes too
        stored([(1000, 1, 7), (1001, 1, 8)]),
        stored([(1100, 1, 7), (1102, 1, 9)]),  # the layout of the one before
        stored([(2000, 3, 7), (2001, 1, 8), (2002, 1, 9)]),  # one frequency other than 1, stored sparse
        stored([(3000 + d, 2 + d % 3, 4) for d in range(20)]),  # frequencies stored dense
        codec.tail_block(
            codec.TAIL_ENTRY.pack(5000, 2 << 16 | 3) + codec.TAIL_ENTRY.pack(4999, 1 << 16 | 4), 2, 3
        ),
        topk.block_of([(6000, 1, 2), (6001, 4, 2)]),
    ]
    docs, keys = codec.unpack(blocks)
    assert docs.dtype == np.int64 and keys.dtype == np.uint64
    want = sorted((doc, key) for block in blocks for doc, key in zip(*block.postings(), strict=True))
    assert sorted(zip(docs.tolist(), keys.tolist(), strict=True)) == want
    assert [len(part) for part in codec.unpack([])] == [0, 0]
