"""BM25 exactly as SQLite FTS5's ``bm25()`` computes it, for a bounded set of documents.

FTS5's ``bm25()`` first counts, for every phrase of the query, the documents that contain it, by
reading the phrase's whole posting list; on a large index that costs more than scoring the documents
themselves. Recall's bounded candidate stages already know each term's document count (cached) and
the index's row and token totals, so they score their few hundred documents here instead:

    idf(t)   = ln((N - n(t) + 0.5) / (n(t) + 0.5)), or 1e-6 when not positive
    score(d) = - sum over query terms t of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

with k1 = 1.2 and b = 0.75 (FTS5's constants), ``tf`` the term's occurrences in the document body and
``|d|`` its length in tokens. Lower is better, as with FTS5. Bodies are :func:`yiji.domain.segment.tokens`
joined by spaces, so a space-separated token is one FTS5 token; Latin diacritics are folded as FTS5's
``unicode61`` tokenizer folds them.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["K1", "B", "fold", "folded_body", "scores"]

K1 = 1.2
B = 0.75
_LATIN_MARKED = re.compile("[\u00c0-\u024f\u1e00-\u1eff]")


def fold(token: str) -> str:
    """The token as FTS5's ``unicode61`` tokenizer stores it (Latin diacritics removed)."""
    if token.isascii() or not _LATIN_MARKED.search(token):
        return token
    return "".join(ch for ch in unicodedata.normalize("NFD", token) if not unicodedata.combining(ch))


def folded_body(body: str) -> str:
    """An index body with every token folded (:func:`fold`); most bodies need nothing and come back as
    they are."""
    if body.isascii() or not _LATIN_MARKED.search(body):
        return body
    return " ".join(fold(token) for token in body.split())


def scores(
    bodies: Iterable[tuple[int, str]],
    terms: Sequence[str],
    doc_counts: Mapping[str, int],
    total_docs: int,
    average_length: float,
) -> dict[int, float]:
    """FTS5 bm25 of each ``(rowid, body)`` for the query ``terms`` (OR-ed); documents without any: absent."""
    folded = [fold(t) for t in terms]
    idf: dict[str, float] = {}
    for term, key in zip(terms, folded, strict=True):
        n = doc_counts.get(term, 0)
        value = math.log((total_docs - n + 0.5) / (n + 0.5))
        idf[key] = idf.get(key, 0.0) + (value if value > 0 else 1e-6)
    average = average_length if average_length > 0 else 1.0
    needles = [(f" {key} ", weight) for key, weight in idf.items()]
    out: dict[int, float] = {}
    for rowid, text in bodies:
        body = folded_body(text)
        # every token between two spaces of its own, so adjacent repeats are all counted
        padded = " " + body.replace(" ", "  ") + " "
        norm = K1 * (1 - B + B * (body.count(" ") + 1) / average)
        total = 0.0
        for needle, weight in needles:
            tf = padded.count(needle)
            if tf:
                total += weight * tf * (K1 + 1) / (tf + norm)
        if total:
            out[rowid] = -total
    return out
