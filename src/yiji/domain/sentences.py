"""What a quoted sentence says: the sentence around a quote, whether it asks or supposes, and whom it names.

A quote can cut "如果" or "吗" off its sentence, or leave out who it is about, so the rules of
:mod:`yiji.domain.validation`, :mod:`yiji.domain.grounding` and :mod:`yiji.domain.cues` look at the
quote's sentence in the source event (:func:`sentence_of`). The words are data
(``domain/data/<language>/<name>.txt``, read through :mod:`yiji.domain.words`). Pure: no I/O, no clock.
"""

from __future__ import annotations

import re
from typing import Final

from yiji.domain import words

__all__ = [
    "about_someone_else",
    "is_question_or_condition",
    "names_a_subject",
    "names_someone",
    "sentence_of",
    "statement_of",
]

_SENTENCE_END: Final = "。！？!?；;\n"


_FULL_STOP: Final = re.compile(r"\.\s+(?=[A-Z0-9\"'\u201c])")
"""An English sentence's end: a full stop, space, and the next sentence's capital ("3.5" and
"e.g. this" are no ends)."""


def sentence_of(quote: str, source: str) -> str:
    """The sentence of ``source`` around the first occurrence of ``quote`` (``quote`` if absent).

    Rules look at the sentence, not only the quote, since a quote can cut "如果" or "吗" off it.
    """
    at = source.find(quote) if quote else -1
    if at < 0:
        return quote
    stops = [m.end() for m in _FULL_STOP.finditer(source, 0, at + 1) if m.end() <= at]
    start = max([source.rfind(ch, 0, at) + 1 for ch in _SENTENCE_END] + stops[-1:])
    if quote[-1] in _SENTENCE_END:  # the quote ends its sentence
        return source[start : at + len(quote)]
    after = at + len(quote)
    ends = [e + 1 for e in (source.find(ch, after) for ch in _SENTENCE_END) if e >= 0]
    stop = _FULL_STOP.search(source, after)
    if stop is not None:
        ends.append(stop.start() + 1)
    return source[start : min(ends, default=len(source))]


_QUESTION: Final = re.compile(
    r"[?？]|(?:吗|(?<![什怎这那多要])么|呢|嘛)\s*[。！!…]*\s*$|是不是|有没有|要不要|会不会|能不能|可不可以"
)
_CONDITIONAL: Final = words.pattern("conditional")
_THIRD_PARTY: Final = words.pattern("third_party")


def names_someone(text: str) -> bool:
    """Whether ``text`` names a person or animal other than the speakers: a relative, a friend,
    "他", "she"."""
    return bool(_THIRD_PARTY.search(text))


def about_someone_else(quote: str, source: str) -> bool:
    """Whether the sentence of ``quote``, up to the quote's end, names a relative or another person
    ("我妈妈住在成都"): what it states is then not the speaker's own single-valued fact."""
    sentence = sentence_of(quote, source)
    before = sentence[: sentence.find(quote) + len(quote)] if quote in sentence else sentence
    return names_someone(before)


_SPEAKER_WORDS: Final = words.pattern("speaker_words")


def names_a_subject(text: str) -> bool:
    """Whether ``text`` names whom or what it is about: a speaker ("我", "you"), a pronoun ("它",
    "they") or someone else (:func:`names_someone`)."""
    return bool(_SPEAKER_WORDS.search(text)) or names_someone(text)


def statement_of(quote: str, source: str) -> str:
    """The words that make ``quote``'s statement: the quote alone when it names its own subject
    ("我老家在江西九江" after "打算在老家办几桌"); otherwise its sentence up to the quote's end, whose
    earlier clauses say whom it is about and whether it is only planned ("下个月要搬到深圳" after
    "我打算")."""
    if names_a_subject(quote):
        return quote
    sentence = sentence_of(quote, source)
    at = sentence.find(quote)
    return sentence[: at + len(quote)] if at >= 0 else sentence


def is_question_or_condition(quote: str, source: str) -> bool:
    """Whether the sentence of ``quote`` asks something or states a condition or wish."""
    sentence = sentence_of(quote, source)
    return bool(_QUESTION.search(sentence) or _CONDITIONAL.search(sentence))
