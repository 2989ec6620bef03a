"""How common a word is in a language at large: the background a small scope's statistics lean on.

A scope of a few hundred turns says little about how rare a word is: in one conversation about a trip,
"Tokyo" is in many turns and "need" in few. The ranking's term weights (:func:`yiji.domain.ranking_plan.
build_plan`) add a fixed number of *background documents* to the scope's own: each holds a term with the
probability that a document of the scope's average length holds it in the language at large,
``1 - exp(-p * length)``, ``p`` its share of the language's tokens. A large scope's statistics outweigh
them; a small one's are tempered by them.

The shares are data (``data/background/en.tsv``, ``zh.tsv``: ``term<TAB>-ln p * 100``, the terms as the
index holds them), built by ``scripts/background_words.py`` from spaCy's English lexeme probabilities and
jieba's dictionary (both MIT-licensed). An ASCII term is read in the English table, a CJK one in the
Chinese table; a term in neither has the table's smallest share (a term of another script: none). Pure:
the tables are read once, on first use.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources

__all__ = ["document_share"]

_LANGUAGES = ("en", "zh")


@cache
def _table(language: str) -> tuple[dict[str, float], float]:
    """A language's token shares, and the share of a term it does not list (half its smallest)."""
    text = resources.files("yiji.domain").joinpath(f"data/background/{language}.tsv").read_text("utf-8")
    shares: dict[str, float] = {}
    for line in text.splitlines():
        term, _, hundredths = line.partition("\t")
        shares[term] = math.exp(-int(hundredths) / 100)
    return shares, min(shares.values(), default=0.0) / 2


def _language(term: str) -> str | None:
    if term.isascii():
        return "en"
    first = ord(term[0])
    if (
        0x3040 <= first <= 0x30FF
        or 0x3400 <= first <= 0x9FFF
        or 0xF900 <= first <= 0xFAFF
        or first >= 0x20000
    ):
        return "zh"
    return None


def document_share(term: str, length: float) -> float:
    """The probability that a document of ``length`` tokens holds ``term`` in its language at large."""
    language = _language(term) if term else None
    if language is None:
        return 0.0
    shares, unlisted = _table(language)
    return -math.expm1(-shares.get(term, unlisted) * max(length, 1.0))
