"""The word lists of the extraction rules, read from one data file per list and language.

``yiji/domain/data/<language>/<name>.txt`` holds one entry a line (lines starting with ``#`` are
comments): a word, or a short regular expression where a word needs its context ("(?<!可)爱(?!好)").
Chinese entries (``zh``) match anywhere; English ones (``en``) match whole words. Adding a word or a
language is a data change with a test row (``tests/test_words.py``), never a new branch in a rule.

The files ship inside the package and are read once, on first use; this module does no other I/O.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

__all__ = ["LANGUAGES", "alternation", "entries", "pattern", "word_set"]

LANGUAGES = ("zh", "en")


@cache
def entries(name: str, language: str) -> tuple[str, ...]:
    """The entries of list ``name`` in ``language``, in file order (none when there is no such file)."""
    path = resources.files("yiji.domain") / "data" / language / f"{name}.txt"
    if not path.is_file():
        return ()
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return tuple(line for line in lines if line and not line.startswith("#"))


def alternation(name: str, *, whole_words: bool = True) -> str:
    """The regular expression of list ``name`` in every language: the Chinese entries, then the English
    ones, as whole words unless ``whole_words`` is false (for text folded without spaces)."""
    english = "|".join(entries(name, "en"))
    if english and whole_words:
        english = rf"\b(?:{english})\b"
    return "|".join(part for part in ("|".join(entries(name, "zh")), english) if part)


def pattern(name: str, *, whole_words: bool = True, flags: int = re.I) -> re.Pattern[str]:
    """:func:`alternation` compiled (case-insensitive by default)."""
    return re.compile(alternation(name, whole_words=whole_words), flags)


def word_set(name: str, language: str) -> frozenset[str]:
    """The entries of list ``name`` in ``language`` as a set of plain words (or characters)."""
    return frozenset(entries(name, language))
