"""One identifier in all its spellings: the rule of ``delete --matching`` and ``doctor --scan-for``.

A person who asks yiji to forget "123-45-6789" means every place that number is written, whether as
"123 45 6789", "123456789" or "１２３４５６７８９", and nothing else. :func:`normalise` maps each spelling
to one form:

1. Unicode NFKC (full-width digits and letters, compatibility characters) and case folding;
2. a run of separators (:data:`SEPARATORS`: whitespace, dashes, ``.``, ``_``, ``/``, ``,``, middle
   dots) *inside a run of digits* is removed: ``123-45-6789`` and ``123 45 6789`` become ``123456789``;
3. a run of separators *inside a run of letters* is removed when it holds no whitespace:
   ``alice.smith`` becomes ``alicesmith`` (words apart stay apart: ``new york`` keeps its space);
4. any other run of separators becomes one space (:data:`JOIN` in :func:`identifier_form` when it holds
   no whitespace), and the ends are trimmed.

Other characters (``@``, ``:``, ``+``, brackets, letters of scripts written without spaces) stay as
they are. :func:`holds_identifier` then finds the needle in a text *as a whole identifier*. The
boundary, defined here once:

* an identifier is its letters and digits in order; case, width (NFKC), and the separators *between*
  them are its spelling (``project_2024`` = ``PROJECT-2024`` = ``project 2024`` =
  ``ＰＲＯＪＥＣＴ＿２０２４``);
* the text must not go on, at either end of the match, with another letter or digit (``xproject_2024``,
  ``project_20245``), nor with a separator *without whitespace* followed by a letter or digit of any
  script: ``_``, ``.``, ``-``, ``/`` and the others join a longer identifier (``project_2024_v2``,
  ``project_2024.v2``, ``project_2024-v2``, ``v2_project_2024``, ``project_2024_预算``);
* anything else ends it: whitespace, the end of the text, a separator followed by whitespace or the end
  (``project_2024.`` at the end of a sentence), a comma (``project_2024，下一步``: between digits it
  groups them, ``1,234``, elsewhere it is a sentence's), quotes, brackets, other punctuation, and letters of a
  script written without spaces (``关于project_2024的预算``).

So "123456789" never matches "1234567890", "alice@acme.io" never matches "alice.smith@acme.io"
(``alicesmith@acmeio``), and "project_2024" never matches "project_2024_v2": a permanent deletion never
takes a distinct identifier. To keep that knowledge, the form the matcher reads (:func:`identifier_form`)
writes a run of separators that joins two parts of one token as :data:`JOIN` instead of a space;
:func:`normalise` is that form with ``JOIN`` shown as a space.

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Final

__all__ = [
    "JOIN",
    "SEPARATORS",
    "Needle",
    "holds",
    "holds_identifier",
    "identifier_form",
    "is_word_char",
    "normalise",
]

SEPARATORS: Final = frozenset("._/,·・‧")
"""Punctuation that joins the parts of one identifier (with whitespace and every dash, Unicode Pd)."""

JOIN: Final = "\x1f"
"""In :func:`identifier_form`, a run of separators without whitespace or comma between two parts of one token
(``_`` in ``project_2024``). No text can hold it there: it is whitespace to Python, so the text's own
becomes a separator."""

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


def identifier_form(text: str) -> str:
    """``text`` in the one form every spelling of an identifier shares (see the module notes), with
    :data:`JOIN` where separators without whitespace join two parts of one token: the form
    :func:`holds` reads."""
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
        spaced = any(c.isspace() for c in run)
        before = _kind(out[-1]) if out else "edge"
        after = _kind(folded[j]) if j < n else "edge"
        joined = before == after and (before == "digit" or (before == "letter" and not spaced))
        if not joined and out and j < n:  # a comma is a sentence's (１２３，别), not an identifier's
            out.append(" " if spaced or "," in run else JOIN)
        i = j
    return "".join(out)


def normalise(text: str) -> str:
    """``text`` in the one form every spelling of an identifier shares, as words apart by spaces."""
    return identifier_form(text).replace(JOIN, " ")


def _extends(text: str, at: int, step: int) -> bool:
    """Whether the identifier form ``text`` goes on from index ``at`` (the character next to a match,
    ``step`` the direction) with more of the same token: a letter or digit, or :data:`JOIN` followed
    by a letter or digit of any script."""
    if not 0 <= at < len(text):
        return False
    if is_word_char(text[at]):
        return True
    beyond = at + step
    return text[at] == JOIN and 0 <= beyond < len(text) and text[beyond].isalnum()


def holds(text: str, needle: str) -> bool:
    """Whether ``text`` holds ``needle`` as a whole identifier, both in :func:`identifier_form`
    (separators inside the needle match any separators; the ends follow the module's boundary)."""
    if not needle:
        return False
    start_bounded = is_word_char(needle[0])
    end_bounded = is_word_char(needle[-1])
    plain, sought = text.replace(JOIN, " "), needle.replace(JOIN, " ")
    at = plain.find(sought)
    while at >= 0:
        end = at + len(sought)
        clear_before = not start_bounded or not _extends(text, at - 1, -1)
        clear_after = not end_bounded or not _extends(text, end, 1)
        if clear_before and clear_after:
            return True
        at = plain.find(sought, at + 1)
    return False


def holds_identifier(text: str, identifier: str) -> bool:
    """Whether ``text`` holds ``identifier`` as one whole identifier in any spelling: the one rule of
    ``delete --matching``, ``doctor --scan-for`` and anything that checks a text against a deleted
    identifier. An identifier with no letter or digit names nothing and is never found."""
    needle = Needle.of(identifier)
    return needle.usable and needle.found_in(text)


@dataclass(frozen=True)
class Needle:
    """An identifier to look for, normalised once."""

    form: str

    @classmethod
    def of(cls, text: str) -> Needle:
        return cls(identifier_form(text))

    @property
    def usable(self) -> bool:
        """Whether it names anything: at least one letter or digit survives the normalisation."""
        return any(ch.isalnum() for ch in self.form)

    def found_in(self, *texts: str | None) -> bool:
        """Whether any of ``texts`` holds it (``None`` holds nothing)."""
        return any(t is not None and holds(identifier_form(t), self.form) for t in texts)
