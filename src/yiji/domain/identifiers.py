"""One identifier in all its spellings: the rule of ``delete --matching`` and ``doctor --scan-for``.

A person who asks yiji to forget "123-45-6789" means every place that number is written, whether as
"123 45 6789", "123456789" or "１２３４５６７８９", and nothing else. :func:`normalise` maps each spelling
to one form:

1. Unicode NFKC (full-width digits and letters, compatibility characters) and case folding;
2. a run of separators (:data:`SEPARATORS`: whitespace, dashes, ``.``, ``_``, ``/``, ``,``, middle
   dots) *inside a run of digits* is removed: ``123-45-6789`` and ``123 45 6789`` become ``123456789``;
3. a run of separators *inside a run of letters* is removed when it holds no whitespace:
   ``alice.smith`` becomes ``alicesmith`` (words apart stay apart: ``new york`` keeps its space);
4. any other run of separators becomes one space, and the ends are trimmed.

Other characters (``@``, ``:``, ``+``, brackets, letters of scripts written without spaces) stay as
they are. :func:`holds` then finds the normalised needle in a normalised text *as a whole identifier*:
where the needle begins or ends with a letter or digit, the text must not go on with another letter or
digit there (a letter of a script written without spaces, such as Chinese, is not such a neighbour). So
"123456789" never matches "1234567890", and "alice@acme.io" never matches "alice.smith@acme.io"
(``alicesmith@acmeio``): the match is never wider than the normalisation.

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final

__all__ = ["SEPARATORS", "Needle", "holds", "is_word_char", "normalise"]

SEPARATORS: Final = frozenset("._/,·・‧")
"""Punctuation that joins the parts of one identifier (with whitespace and every dash, Unicode Pd)."""

_UNSPACED: Final = (
    (0x3040, 0x30FF),  # hiragana, katakana
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B on
)


def _unspaced(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _UNSPACED)


def is_word_char(ch: str) -> bool:
    """A letter or digit of a script written with spaces: what an identifier is made of."""
    return ch.isalnum() and not _unspaced(ch)


def _is_separator(ch: str) -> bool:
    return ch.isspace() or ch in SEPARATORS or unicodedata.category(ch) == "Pd"


def _kind(ch: str) -> str:
    if ch.isdecimal():
        return "digit"
    if is_word_char(ch):
        return "letter"
    return "other"


def normalise(text: str) -> str:
    """``text`` in the one form every spelling of an identifier shares (see the module notes)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    i, n = 0, len(folded)
    while i < n:
        ch = folded[i]
        if not _is_separator(ch):
            out.append(ch)
            i += 1
            continue
        j = i
        while j < n and _is_separator(folded[j]):
            j += 1
        run = folded[i:j]
        before = _kind(out[-1]) if out else "edge"
        after = _kind(folded[j]) if j < n else "edge"
        joined = before == after and (
            before == "digit" or (before == "letter" and not any(c.isspace() for c in run))
        )
        if not joined and out and j < n:
            out.append(" ")
        i = j
    return "".join(out)


def holds(text: str, needle: str) -> bool:
    """Whether the normalised ``text`` holds the normalised ``needle`` as a whole identifier."""
    if not needle:
        return False
    start_bounded = is_word_char(needle[0])
    end_bounded = is_word_char(needle[-1])
    at = text.find(needle)
    while at >= 0:
        end = at + len(needle)
        clear_before = not start_bounded or at == 0 or not is_word_char(text[at - 1])
        clear_after = not end_bounded or end == len(text) or not is_word_char(text[end])
        if clear_before and clear_after:
            return True
        at = text.find(needle, at + 1)
    return False


@dataclass(frozen=True)
class Needle:
    """An identifier to look for, normalised once."""

    form: str

    @classmethod
    def of(cls, text: str) -> Needle:
        return cls(normalise(text))

    @property
    def usable(self) -> bool:
        """Whether it names anything: at least one letter or digit survives the normalisation."""
        return any(ch.isalnum() for ch in self.form)

    def found_in(self, *texts: str | None) -> bool:
        """Whether any of ``texts`` holds it (``None`` holds nothing)."""
        return any(t is not None and holds(normalise(t), self.form) for t in texts)
