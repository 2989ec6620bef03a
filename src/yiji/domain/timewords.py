"""The time words of each language, read from data files and compiled once for
:mod:`yiji.domain.timewindow`.

Each language is a file ``domain/data/timewords.<lang>.json``: word classes (a regular expression and how
a matched text becomes a value), rules whose patterns name those classes as ``{num}``, ``{unit}``,
``{month}`` …, context words, connectives, range words and the trigger words without which none of its
rules can match. A language's file is read and compiled when a query first has one of its trigger words
(:func:`triggered`, :func:`compiled`), never at import. Pure but for reading those files, once each.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

__all__ = ["Language", "Rule", "WordClass", "Words", "compiled", "triggered"]


@dataclass(frozen=True, slots=True)
class WordClass:
    """A word class of a language: a regular expression and how a matched text becomes a value."""

    regex: str
    words: Mapping[str, Any]
    numerals: Mapping[str, int]
    low: int | None
    high: int | None

    def value(self, text: str) -> Any:
        key = " ".join(text.lower().split())
        if key in self.words:
            return self.words[key]
        number = int(text) if text.isascii() and text.isdigit() else _numeral(text, self.numerals)
        if number is None or (self.low is not None and number < self.low):
            return None
        return None if self.high is not None and number > self.high else number


@dataclass(frozen=True, slots=True)
class Rule:
    """A row of a data file: its compiled pattern, the operation that resolves a match (``timewindow._OPS``)
    with the row's own arguments, and the words one of which must come right before a match
    (``context``); after a range word (``range_only``) a match counts only as an end of a range."""

    pattern: re.Pattern[str]
    op: str
    args: Mapping[str, Any]
    context: re.Pattern[str] | None
    range_only: re.Pattern[str] | None
    language: Language


@dataclass(frozen=True, slots=True)
class Language:
    """A language's word classes and the patterns that join its matches: connectives before
    (English "before ... June") or after (Chinese "六月之前") a time, and range words."""

    name: str
    spaced: bool
    classes: Mapping[str, WordClass]
    fuzzy: frozenset[str]
    capitalized: Mapping[str, str]
    connective_before: re.Pattern[str] | None
    connective_after: re.Pattern[str] | None
    connectives: Mapping[str, str]
    opener: re.Pattern[str]
    joiner: re.Pattern[str]
    needs_opener: bool


def _numeral(text: str, digits: Mapping[str, int]) -> int | None:
    """A Chinese numeral up to 99 ("三", "十二", "二十", "二十三"), or ``None``."""
    if not text or any(ch not in digits for ch in text):
        return None
    ten = digits.get("十", 10)
    if len(text) == 1:
        return digits[text]
    if len(text) == 2 and text[0] == "十":
        return ten + digits[text[1]]
    if len(text) == 2 and text[1] == "十":
        return digits[text[0]] * ten
    if len(text) == 3 and text[1] == "十" and "十" not in (text[0], text[2]):
        return digits[text[0]] * ten + digits[text[2]]
    return None


def _alternation(words: Sequence[str], spaced: bool) -> str:
    ordered = sorted(words, key=len, reverse=True)
    parts = [re.escape(w).replace(r"\ ", r"\s+") if spaced else re.escape(w) for w in ordered]
    return "|".join(parts)


def _word_class(spec: Mapping[str, Any], numerals: Mapping[str, int], spaced: bool) -> WordClass:
    parts: list[str] = []
    words: dict[str, Any] = dict(spec.get("words", {}))
    if words:
        parts.append(_alternation(list(words), spaced))
    if "pattern" in spec:
        parts.append(spec["pattern"])
    if "digits" in spec:
        parts.append(f"(?<![0-9])[0-9]{{1,{int(spec['digits'])}}}(?![0-9])")
    if spec.get("numerals"):
        chars = "".join(re.escape(ch) for ch in numerals)
        parts.append(f"[{chars}]{{1,3}}")
    return WordClass(
        regex="|".join(parts),
        words={" ".join(k.lower().split()): v for k, v in words.items()},
        numerals=numerals if spec.get("numerals") else {},
        low=spec.get("min"),
        high=spec.get("max"),
    )


_PLACEHOLDER: Final = re.compile(r"\{([a-z_]+)\}")


def _compile(template: str, language: Language) -> re.Pattern[str]:
    def named(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"(?P<{name}>{language.classes[name].regex})"

    body = _PLACEHOLDER.sub(named, template)
    if language.spaced:
        body = body.replace(" ", r"\s+")
        body = rf"(?<![A-Za-z0-9])(?:{body})(?![A-Za-z0-9])"
    return re.compile(body)


def _left_words(words: Sequence[str]) -> re.Pattern[str]:
    """Any of ``words`` (then an optional "the") directly before the end of a text."""
    return re.compile(rf"(?<![A-Za-z])(?:{_alternation(words, True)})\s+(?:the\s+)?$")


def _language(raw: Mapping[str, Any]) -> tuple[Language, list[Rule]]:
    spaced = bool(raw["spaced"])
    numerals: dict[str, int] = dict(raw.get("numerals", {}))
    classes = {name: _word_class(spec, numerals, spaced) for name, spec in raw["classes"].items()}
    connectives: dict[str, str] = dict(raw["connectives"])
    gap = r"[^\s,.;:!?，。！？；：、]+"
    if spaced:
        conn = _alternation(list(connectives), True)
        # "before June", "after last Tuesday"; with words between only when they end in a preposition
        # of time ("before my trip in June"), since "after work yesterday" is not after yesterday
        lead = _alternation(raw["gap_ends"], True)
        before = re.compile(rf"(?<![A-Za-z])(?P<c>{conn})(?:(?:\s+{gap}){{0,4}}?\s+(?:{lead}))?\s+$")
        after = None
    else:
        conn = _alternation(list(connectives), False)
        before = None
        # "六月旅行之前"; not across a person or 的 ("去年我以前的同事" is a former colleague)
        stop = re.escape(raw["gap_stops"])
        after = re.compile(rf"^[^\s,.;:!?，。！？；：、{stop}]{{0,4}}?(?P<c>{conn})")
    rng = raw["range"]
    language = Language(
        name=raw["language"],
        spaced=spaced,
        classes=classes,
        fuzzy=frozenset(" ".join(w.lower().split()) for w in raw["fuzzy"]),
        capitalized={w.lower(): w for w in raw["capitalized"]},
        connective_before=before,
        connective_after=after,
        connectives={" ".join(k.lower().split()): v for k, v in connectives.items()},
        opener=(
            _left_words(rng["openers"])
            if spaced
            else re.compile(rf"(?:{_alternation(rng['openers'], False)})\s*$")
        ),
        joiner=re.compile(rf"^\s*(?:{_alternation(rng['joiners'], spaced)})\s*(?:the\s+)?$"),
        needs_opener=spaced,
    )
    contexts: dict[str, list[str]] = dict(raw["contexts"])
    ranged = contexts.pop("range", [])
    # a word a rule needs before it ("in March", "on Monday"), or a connective, or a range word
    context = {key: _left_words([*words, *connectives, *ranged]) for key, words in contexts.items()}
    range_only = _left_words(ranged) if ranged else None
    rules = [
        Rule(
            pattern=_compile(row["pattern"], language),
            op=row["op"],
            args={k: v for k, v in row.items() if k not in {"pattern", "op", "context"}},
            context=context[row["context"]] if row.get("context") else None,
            range_only=range_only if row.get("context") else None,
            language=language,
        )
        for row in raw["rules"]
    ]
    return language, rules


@dataclass(frozen=True, slots=True)
class Words:
    rules: tuple[Rule, ...]
    languages: tuple[Language, ...]


@cache
def _raw(name: str) -> Mapping[str, Any]:
    # The file beside this module, read with os.path: importlib.resources would import pathlib,
    # tempfile and zipfile (tens of milliseconds) into every recall that names a time.
    path = os.path.join(os.path.dirname(__file__), "data", f"timewords.{name}.json")
    with open(path, encoding="utf-8") as handle:
        raw: dict[str, Any] = json.load(handle)
    return raw


@cache
def _trigger(name: str) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """The words (lower case) and characters without which no rule of language ``name`` can match."""
    triggers = _raw(name)["triggers"]
    return frozenset(triggers["words"]), re.compile("|".join(triggers["patterns"])) if triggers[
        "patterns"
    ] else None


def triggered(name: str, folded: str, tokens: frozenset[str]) -> bool:
    words, pattern = _trigger(name)
    return not tokens.isdisjoint(words) or (pattern is not None and pattern.search(folded) is not None)


@cache
def compiled(names: tuple[str, ...]) -> Words:
    """The compiled rules of the languages ``names`` (each language is compiled once, when a query
    first has one of its trigger words)."""
    rules: list[Rule] = []
    languages: list[Language] = []
    for name in names:
        language, language_rules = _language(_raw(name))
        languages.append(language)
        rules.extend(language_rules)
    return Words(tuple(rules), tuple(languages))
