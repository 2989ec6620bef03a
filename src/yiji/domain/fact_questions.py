"""Which keyed properties a recall query asks about: "我住在哪里" asks for ``home.city``.

A single-valued fact ("The user moved to Shanghai", key ``home.city``) often shares no word with the
question that wants it, so lexical ranking alone can leave it far down the list. Recall therefore asks
this module which keys a query is about and adds the current value of each (``as_of``: the value then)
as a candidate with its own evidence (see :mod:`yiji.domain.ranking`, the ``fact`` contribution).

A query asks about a key when all three hold:

* it is about the user: a first-person word, or "the user" (``self``);
* it names the key's topic (``topic``: "住", "live", "birthday");
* it asks for the value: one of the key's question words (``asks``: "哪", "where") or a word of
  remembering (``recall``: "记得", "remember").

A statement ("我住在杭州") asks nothing; a question about someone else ("where does Tom live") is not
about the user. The words are data (``data/fact_questions.json``), one entry per key and language:
Chinese entries match as substrings, English ones as whole words or phrases, case-insensitively. The
module is pure: the data file is read once, on first use.

The same words tell recall whether a question is about the user alone (:func:`about_user`): a ``self``
word, and no ``other`` word ("you", "we", "你", "我们") outside a ``request`` ("can you", "你还记得",
which address the assistant only to ask). Recall then weighs what the assistant said less.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["QuestionWords", "about_user", "asked_keys", "question_words"]

_CJK = re.compile(r"[\u3400-\u9fff]")


def _matcher(words: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern for a word list: CJK entries as substrings, others as whole words or phrases."""
    parts = []
    for word in sorted({w.lower() for w in words}, key=len, reverse=True):
        escaped = re.escape(word)
        if _CJK.search(word) or not word[:1].isalnum():
            parts.append(escaped)
        else:
            parts.append(rf"(?<![\w']){escaped}(?!\w)")
    return re.compile("|".join(parts)) if parts else None


@dataclass(frozen=True)
class _Key:
    topic: re.Pattern[str] | None
    asks: re.Pattern[str] | None


@dataclass(frozen=True)
class QuestionWords:
    """The compiled word lists: who the question is about, remembering, and each key's topic and asks."""

    self_words: re.Pattern[str] | None
    other_words: re.Pattern[str] | None
    request_words: re.Pattern[str] | None
    recall_words: re.Pattern[str] | None
    keys: Mapping[str, _Key]


def _all_languages(entry: Mapping[str, list[str]]) -> list[str]:
    return [word for words in entry.values() for word in words]


def parse(data: Mapping[str, object]) -> QuestionWords:
    """Compile the question words of a data file's content (see ``data/fact_questions.json``)."""
    keys = data["keys"]
    assert isinstance(keys, dict)

    def words_of(name: str) -> re.Pattern[str] | None:
        entry = data[name]
        assert isinstance(entry, dict)
        return _matcher(_all_languages(entry))

    return QuestionWords(
        words_of("self"),
        words_of("other"),
        words_of("request"),
        words_of("recall"),
        {
            key: _Key(_matcher(_all_languages(entry["topic"])), _matcher(_all_languages(entry["asks"])))
            for key, entry in keys.items()
        },
    )


@cache
def question_words() -> QuestionWords:
    """The shipped question words (read once)."""
    text = (resources.files("yiji.domain") / "data" / "fact_questions.json").read_text(encoding="utf-8")
    return parse(json.loads(text))


def _folded(query: str) -> str:
    """``query`` as the word lists match it: lower case, a typographic apostrophe as a plain one."""
    return query.lower().replace("’", "'")


def asked_keys(query: str, words: QuestionWords | None = None) -> tuple[str, ...]:
    """The fact keys ``query`` asks the value of, in the data file's order; empty for most queries."""
    words = words or question_words()
    text = _folded(query)
    if words.self_words is None or not words.self_words.search(text):
        return ()
    remembering = words.recall_words is not None and bool(words.recall_words.search(text))
    return tuple(
        key
        for key, entry in words.keys.items()
        if entry.topic is not None
        and entry.topic.search(text)
        and (remembering or (entry.asks is not None and bool(entry.asks.search(text))))
    )


def about_user(query: str, words: QuestionWords | None = None) -> bool:
    """Whether ``query`` is about the user alone: a first-person word or "the user" (``self``), and no
    word that speaks of the assistant or of both together (``other``: "you", "你", "we", "我们") outside
    a request (``request``: "can you", "你还记得", which address the assistant only to ask). "What did
    I buy" and "can you suggest a gift for my mother" are; "what did you recommend" and "what did we
    decide" are not."""
    words = words or question_words()
    text = _folded(query)
    if words.self_words is None or not words.self_words.search(text):
        return False
    if words.request_words is not None:
        text = words.request_words.sub(" ", text)
    return words.other_words is None or not words.other_words.search(text)
