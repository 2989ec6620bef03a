"""The lexicon's blocks as bytes (:mod:`yiji.store.lexicon` keeps them in ``lex_block`` and ``lex_term``).

A block's blob holds up to :data:`yiji.store.lexicon.BLOCK` postings in document order: three width codes,
then the document gaps, the frequencies and the lengths, each array of the narrowest width that holds it
(the frequencies, nearly all 1, as the places and values of the others when that is shorter). A term's
*tail* is a run of 8-byte entries (:data:`TAIL_ENTRY`). A space's *recent* documents, not yet in their terms'
rows, are lines of text (:func:`recent_line`). Pure functions: no SQL here.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate, repeat
from operator import lshift, or_, sub
from typing import Any

from yiji.domain import topk

__all__ = [
    "NO_LENGTH",
    "TAIL_ENTRY",
    "block",
    "decode",
    "encode",
    "encoded",
    "postings",
    "recent_counts",
    "recent_line",
    "recent_lines",
    "tail",
    "tail_block",
    "unpack",
]

TAIL_ENTRY = struct.Struct("<II")
"""A tail entry: the document and ``tf << 16 | length``; a posting whose numbers do not fit goes straight
into the blocks."""
NO_LENGTH = 1 << 32
"""The shortest length of an empty tail."""
_WIDTHS = "BHIQ"
_SIZES = [array(typecode).itemsize for typecode in _WIDTHS]
_SPARSE = len(_WIDTHS)
"""Width codes from here on: a block's frequencies stored sparse (:func:`_frequencies`)."""
_SWAP = sys.byteorder != "little"


def _packed(values: Sequence[int]) -> tuple[int, bytes]:
    """``values`` (not negative) as an array of the narrowest width: (width code, little-endian bytes)."""
    top = max(values, default=0)
    for code, typecode in enumerate(_WIDTHS):
        if top < 1 << (8 * array(typecode).itemsize):
            packed = array(typecode, values)
            if _SWAP:
                packed.byteswap()
            return code, packed.tobytes()
    raise ValueError("posting value out of range")


def _unpacked(code: int, data: bytes) -> array[int]:
    out = array(_WIDTHS[code])
    out.frombytes(data)
    if _SWAP:
        out.byteswap()
    return out


def _frequencies(tfs: Sequence[int]) -> tuple[int, bytes]:
    """A block's frequencies, as :func:`_packed` or, when shorter, only those other than 1 (nearly every
    posting's): width code :data:`_SPARSE` + the values' code, then their count (a byte), their places (a
    byte each) and their values."""
    if tfs.count(1) == len(tfs):
        return _SPARSE, b"\x00"
    dense = _packed(tfs)
    others = [(place, tf) for place, tf in enumerate(tfs) if tf != 1]
    if len(tfs) > 256 or len(others) > 255:
        return dense
    code, values = _packed([tf for _, tf in others])
    sparse = bytes([len(others), *(place for place, _ in others)]) + values
    return (_SPARSE + code, sparse) if len(sparse) < len(dense[1]) else dense


def encode(postings: Sequence[topk.Posting]) -> bytes:
    """A block's blob (postings in document order): the widths, then the document gaps, the
    frequencies (:func:`_frequencies`) and the lengths, each array of the narrowest width that holds it."""
    docs, tfs, lengths = zip(*postings, strict=True)
    return encoded(docs, tfs, lengths)


def encoded(docs: Sequence[int], tfs: Sequence[int], lengths: Sequence[int]) -> bytes:
    packed = [_packed([0, *map(sub, docs[1:], docs)]), _frequencies(tfs), _packed(lengths)]
    return bytes(code for code, _ in packed) + b"".join(part for _, part in packed)


def decode(first: int, count: int, data: bytes) -> topk.Decoded:
    """A block's documents and keys (:data:`yiji.domain.topk.KEY_SHIFT`): with every frequency 1, the keys
    are the lengths as stored (no loop over the postings in Python)."""
    gap_code, tf_code, length_code = data[0], data[1], data[2]
    at = 3 + count * _SIZES[gap_code]
    docs = list(accumulate(_unpacked(gap_code, data[3:at]), initial=first))
    del docs[0]
    if tf_code >= _SPARSE:
        others = data[at]
        places = data[at + 1 : at + 1 + others]
        at += 1 + others
        end = at + others * _SIZES[tf_code - _SPARSE]
        values = _unpacked(tf_code - _SPARSE, data[at:end])
        lengths = _unpacked(length_code, data[end : end + count * _SIZES[length_code]])
        if not others:
            return docs, lengths
        keys = lengths.tolist()
        for place, tf in zip(places, values, strict=True):
            keys[place] = topk.key_of(tf, lengths[place])
    else:
        end = at + count * _SIZES[tf_code]
        tfs = _unpacked(tf_code, data[at:end])
        lengths = _unpacked(length_code, data[end : end + count * _SIZES[length_code]])
        keys = list(map(or_, map(lshift, tfs, repeat(topk.KEY_SHIFT)), lengths))
    return docs, keys


def postings(first: int, count: int, data: bytes) -> list[topk.Posting]:
    docs, keys = decode(first, count, data)
    return [(doc, *topk.unkeyed(key)) for doc, key in zip(docs, keys, strict=True)]


def tail(data: bytes) -> list[topk.Posting]:
    return sorted((doc, key >> 16, key & 0xFFFF) for doc, key in TAIL_ENTRY.iter_unpack(data))


def tail_block(data: bytes, max_tf: int, min_len: int) -> topk.Block:
    postings = tail(data)

    def decode() -> topk.Decoded:
        return [p[0] for p in postings], [topk.key_of(tf, length) for _, tf, length in postings]

    return topk.Block(postings[0][0], postings[-1][0], max_tf, min_len, decode)


def block(first: int, last: int, count: int, max_tf: int, min_len: int, data: bytes) -> topk.Block:
    return topk.Block(first, last, max_tf, min_len, lambda: decode(first, count, data), data, count)


def unpack(blocks: Sequence[topk.Block]) -> tuple[Any, Any]:
    """A term's blocks as two numpy arrays, documents (``int64``) and keys (``uint64``), the values
    :func:`decode` gives (:data:`yiji.domain.topk.Unpack`; numpy is loaded when this is called).

    The blocks of one layout (the same width codes and count, so the same length: nearly every full
    block of a term is one of a few) are decoded together: their blobs side by side are a matrix of
    bytes whose columns are the gaps, frequencies and lengths of every block at once. A block whose
    frequencies are stored sparse with values other than 1, a tail and a space's recent documents are
    decoded alone."""
    import numpy as np

    # a layout: the three width codes and the count, which fix a block's length (frequencies dense or
    # all 1); the blocks of one layout are rows of one byte matrix
    layouts: dict[tuple[int, int, int, int], tuple[list[bytes], list[int]]] = {}
    alone: list[topk.Block] = []
    for b in blocks:
        data = b.data
        if data is None or (data[1] >= _SPARSE and data[3 + b.count * _SIZES[data[0]]]):
            alone.append(b)
        else:
            blobs, firsts = layouts.setdefault((data[0], data[1], data[2], b.count), ([], []))
            blobs.append(data)
            firsts.append(b.first)
    docs: list[Any] = []
    keys: list[Any] = []
    for (gap_code, tf_code, length_code, count), (blobs, firsts) in layouts.items():
        rows = np.frombuffer(b"".join(blobs), np.uint8).reshape(len(blobs), -1)

        def column(at: int, code: int, rows: Any = rows, count: int = count) -> tuple[Any, int]:
            end = at + count * _SIZES[code]
            values = np.ascontiguousarray(rows[:, at:end]).view(np.dtype(_WIDTHS[code]).newbyteorder("<"))
            return values, end

        gaps, at = column(3, gap_code)
        first = np.array(firsts, dtype=np.int64)
        docs.append((np.cumsum(gaps, axis=1, dtype=np.int64) + first[:, None]).ravel())
        if tf_code >= _SPARSE:  # every frequency 1: the keys are the lengths
            lengths, _ = column(at + 1, length_code)
            keys.append(lengths.astype(np.uint64).ravel())
        else:
            tfs, at = column(at, tf_code)
            lengths, _ = column(at, length_code)
            shifted = np.left_shift(tfs.astype(np.uint64), np.uint64(topk.KEY_SHIFT))
            keys.append((shifted | lengths.astype(np.uint64)).ravel())
    for b in alone:
        ids, found = b.postings()
        docs.append(np.asarray(ids, dtype=np.int64))
        keys.append(np.asarray(found, dtype=np.uint64))
    if not docs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64)
    return np.concatenate(docs), np.concatenate(keys)


def recent_line(doc: int, length: int, counts: Mapping[str, int]) -> str:
    """A document as its space's recent documents hold it: ``doc length term tf term tf ...``."""
    if not counts:
        return f"{doc} {length}\n"
    if len(counts) == length:  # every frequency 1: one join
        return f"{doc} {length} {' 1 '.join(counts)} 1\n"
    return f"{doc} {length} " + " ".join([f"{term} {tf}" for term, tf in counts.items()]) + "\n"


def recent_lines(recent: str) -> Iterator[tuple[int, int, list[str]]]:
    """The recent documents of a space: (doc, length, ``[term, tf, term, tf, ...]``)."""
    for line in recent.split("\n"):
        if line:
            parts = line.split(" ")
            yield int(parts[0]), int(parts[1]), parts[2:]


def recent_counts(terms: Sequence[str]) -> dict[str, int]:
    """A recent document's ``[term, tf, term, tf, ...]`` as term -> frequency; a line whose frequencies
    are all 1 (most) is read without converting each."""
    tfs = terms[1::2]
    if tfs.count("1") == len(tfs):
        return dict.fromkeys(terms[::2], 1)
    return dict(zip(terms[::2], map(int, tfs), strict=True))
