"""Words shown to people, in Chinese and English: the review UI's and the plain CLI output's.

The words both read are data (``data/wording.json``: one table per language, the same keys in each, and the
measure words of the Chinese counts), so the UI (:mod:`yiji.ui.i18n`, which adds its own words) and the CLI
say the same thing the same way, and the CLI reads them without importing the UI. Which language the CLI
speaks is :func:`language_of` (``[display] language``, else the locale). JSON and MCP output never changes
with the language. English counts are :func:`counted`: ``1 memory``, ``2 memories``, never ``memory(ies)``.
"""

from __future__ import annotations

import json
import unicodedata
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "LANGUAGES",
    "LOCALE_VARIABLES",
    "Words",
    "counted",
    "language_of",
    "padded",
    "shared_words",
    "shown_width",
    "words_for",
]

LANGUAGES = ("zh", "en")

LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")
"""Where ``auto`` looks for the language, the first one set winning (as POSIX programs read them)."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun in the number it takes; ``plural`` defaults to the noun with an ``s``."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def language_of(setting: str, environ: Mapping[str, str]) -> str:
    """``zh`` or ``en``: the setting itself unless it is ``auto``; then the first locale variable set
    (``LC_ALL``, ``LC_MESSAGES``, ``LANG``): ``zh...`` is Chinese, anything else (``C``, ``en_US``)
    English."""
    if setting in LANGUAGES:
        return setting
    for name in LOCALE_VARIABLES:
        value = environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@cache
def _table() -> dict[str, Any]:
    text = (resources.files("yiji.domain") / "data" / "wording.json").read_text(encoding="utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def shared_words(language: str) -> dict[str, str]:
    """The words the UI and the CLI share, in ``language`` (``zh`` or ``en``)."""
    words: dict[str, str] = _table()[language]
    return dict(words)


class Words:
    """The CLI's words in one language: ``words["cli.review.empty"]``, and counts of a noun in it."""

    def __init__(self, language: str) -> None:
        self.language = language
        self._words = shared_words(language)
        self._nouns: dict[str, list[str]] = _table()["nouns"].get(language, {})

    def __getitem__(self, key: str) -> str:
        return self._words[key]

    def page(self, key: str, noun: str, plural: str, **numbers: int) -> str:
        """A paging line (``cli.page``, ``cli.page.more``, ...) about ``noun``: English counts it with its
        plural (``2 memories``), Chinese with its measure word (``2 条记忆``)."""
        measure, shown = self._nouns.get(noun, ("", noun))
        total = numbers.get("total", 0)
        return self._words[key].format(
            counted=counted(total, noun, plural), plural=plural, noun=shown, measure=measure, **numbers
        )


@cache
def words_for(language: str) -> Words:
    return Words(language)


def shown_width(text: str) -> int:
    """Columns ``text`` takes on a terminal: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def padded(text: str, width: int, right: bool = False) -> str:
    """``text`` filled with spaces to ``width`` terminal columns (on the left when ``right``)."""
    fill = " " * max(0, width - shown_width(text))
    return fill + text if right else text + fill
