"""The plain BM25 rows of ``yiji bench locomo``, ``yiji bench madial`` and the LoCoMo resume packs.

Every recall benchmark prints plain BM25 beside yiji, over the same documents and in the same run, so a
figure is read against a baseline measured on exactly what yiji saw. Each row is computed as the
reference script of its data set computes it (``shared/bench/*_retrieval_baseline.py``), and equals that
script's printed table on the full data:

* **LoCoMo** (``locomo_retrieval_baseline.py``, its default implementation): a turn is its baseline text
  (:func:`yiji_bench.datasets.baseline_turn_text`: speaker, text, photo caption), tokens are the lower-case
  runs of ``[a-z0-9]+(?:'[a-z]+)?`` without the script's stopwords, and the score is Okapi BM25 with
  Lucene's non-negative idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``, ``k1`` 1.2, ``b`` 0.75. Every turn of
  the conversation is ranked; ties go to the earlier turn.
* **MADial-Bench** (``madial_retrieval_baseline.py``): a memory is ``time event``
  (:func:`yiji_bench.datasets.baseline_memory_text`); Chinese tokens are jieba's search-mode words that
  are neither blank nor punctuation alone, English tokens the lower-case runs of ``[a-z0-9]+``; the score
  is ``rank_bm25.BM25Okapi``'s (:func:`bm25_scores`, which the LongMemEval row uses too). Every memory
  of the user is ranked; ties go to the lower memory id. yiji's segmenter (``rjieba``) cuts as jieba
  does, except that jieba's unknown-word step splits a run such as ``2023-05-01`` into ``2023``, ``-``,
  ``05`` ...: that split is made here too (:func:`madial_tokens`), so the words are the script's.

Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from yiji.domain import segment

__all__ = [
    "OKAPI_B",
    "OKAPI_EPSILON",
    "OKAPI_K1",
    "SCRIPT_STOPWORDS",
    "LocomoBm25",
    "MadialBm25",
    "bm25_scores",
    "locomo_tokens",
    "madial_tokens",
]

OKAPI_K1, OKAPI_B, OKAPI_EPSILON = 1.5, 0.75, 0.25
"""``rank_bm25.BM25Okapi``'s defaults, which the LongMemEval and MADial scripts use."""
SCRIPT_STOPWORDS = frozenset(
    """a an the and or but if of to in on at for with from by as is am are was were be been
being do does did have has had i you he she it we they me him her us them my your his its our
their this that these those what which who whom whose when where why how not no so than too very
can could will would shall should may might must just about into over after before up down out
there here also any all some""".split()
)
"""The stopwords of the LoCoMo and LongMemEval scripts (the same list in both)."""
_LOCOMO_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_MADIAL_EN_WORD = re.compile(r"[a-z0-9]+")
_HAN = re.compile("[\u4e00-\u9fd5]")
_JIEBA_SKIP = re.compile(r"([a-zA-Z0-9]+(?:\.\d+)?%?)")
"""jieba's ``finalseg.re_skip``: how its unknown-word step cuts a run without Chinese characters."""
_PUNCTUATION = re.compile(r"\W+")


def locomo_tokens(text: str) -> list[str]:
    """The LoCoMo script's tokens of ``text``."""
    return [t for t in _LOCOMO_WORD.findall(text.lower()) if t not in SCRIPT_STOPWORDS]


class LocomoBm25:
    """The LoCoMo script's BM25 over one conversation's turn texts (in turn order)."""

    K1 = 1.2
    B = 0.75

    def __init__(self, texts: Sequence[str]) -> None:
        docs = [locomo_tokens(t) for t in texts]
        self._freqs = [Counter(d) for d in docs]
        self._lengths = [len(d) for d in docs]
        self._average = sum(self._lengths) / max(1, len(docs))
        counts = Counter(t for tf in self._freqs for t in tf)
        size = len(docs)
        self._idf = {t: math.log(1 + (size - n + 0.5) / (n + 0.5)) for t, n in counts.items()}

    def scores(self, question: str) -> list[float]:
        """The score of every turn for ``question``, in turn order."""
        query = locomo_tokens(question)
        out = []
        for tf, length in zip(self._freqs, self._lengths, strict=True):
            total, norm = 0.0, self.K1 * (1 - self.B + self.B * length / self._average)
            for term in query:
                f = tf.get(term)
                if f:
                    total += self._idf[term] * f * (self.K1 + 1) / (f + norm)
            out.append(total)
        return out

    def ranking(self, question: str) -> list[int]:
        """Every turn's position, best first; ties by position."""
        scores = self.scores(question)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def bm25_scores(documents: Sequence[Sequence[str]], query: Sequence[str]) -> list[float]:
    """``rank_bm25.BM25Okapi(documents).get_scores(query)``, computed in the same order of operations."""
    size = len(documents)
    if not size:
        return []
    freqs: list[dict[str, int]] = []
    counts: dict[str, int] = {}
    total = 0
    for doc in documents:
        total += len(doc)
        tf: dict[str, int] = {}
        for word in doc:
            tf[word] = tf.get(word, 0) + 1
        freqs.append(tf)
        for word in tf:
            counts[word] = counts.get(word, 0) + 1
    avgdl = total / size
    idf: dict[str, float] = {}
    idf_sum = 0.0
    negative = []
    for word, n in counts.items():
        value = math.log(size - n + 0.5) - math.log(n + 0.5)
        idf[word] = value
        idf_sum += value
        if value < 0:
            negative.append(word)
    if idf:
        floor = OKAPI_EPSILON * (idf_sum / len(idf))
        for word in negative:
            idf[word] = floor
    scores = [0.0] * size
    lengths = [len(doc) for doc in documents]
    for q in query:
        weight = idf.get(q) or 0
        for i, tf in enumerate(freqs):
            f = tf.get(q) or 0
            scores[i] += weight * (
                f * (OKAPI_K1 + 1) / (f + OKAPI_K1 * (1 - OKAPI_B + OKAPI_B * lengths[i] / avgdl))
            )
    return scores


def madial_tokens(text: str, lang: str) -> list[str]:
    """The MADial script's tokens of ``text`` in ``lang`` (``zh`` or ``en``)."""
    if lang == "en":
        return _MADIAL_EN_WORD.findall(text.lower())
    words: list[str] = []
    for word in segment.jieba().cut_for_search(text):
        if _HAN.search(word) or _JIEBA_SKIP.fullmatch(word):
            words.append(word)
        else:
            words.extend(part for part in _JIEBA_SKIP.split(word) if part)
    return [w for w in words if w.strip() and not _PUNCTUATION.fullmatch(w)]


class MadialBm25:
    """The MADial script's BM25 over one user's memory texts (in memory-id order), in ``lang``; the texts
    are cut into words once, for every dialogue of the user."""

    def __init__(self, texts: Sequence[str], lang: str) -> None:
        self.lang = lang
        self._documents = [madial_tokens(t, lang) for t in texts]

    def scores(self, query: str) -> list[float]:
        """Every memory's score for ``query``, in memory-id order."""
        return bm25_scores(self._documents, madial_tokens(query, self.lang))

    def ranking(self, query: str) -> list[int]:
        """Every memory's position, best first for ``query``; ties by position."""
        scores = self.scores(query)
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
