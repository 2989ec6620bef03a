"""Which keyed properties a recall query asks about: "我住在哪里" asks for ``home.city``.

A single-valued fact ("The user moved to Shanghai", key ``home.city``) often shares no word with the
question that wants it, so lexical ranking alone can leave it far down the list. Recall therefore asks
this module which keys a query is about and adds the current value of each (``as_of``: the value then)
as a candidate with its own evidence (see :mod:`yiji.domain.ranking`, the ``fact`` contribution).

A query asks about a key when all three hold:

* it is about the user: a first-person word, or "the user" (``self``), and no other person of the
  user's (``people``: "where does my sister live" and "我妈妈住在哪里" ask about them);
* it names the key's topic (``topic``: "住", "live", "birthday");
* it asks for the value: one of the key's question words (``asks``: "哪", "where") or a word of
  remembering (``recall``: "记得", "remember"); or it is a *lookup*, a query with no interrogative
  (``interrogative``) that says nothing beyond whose and what, stopwords aside ("我的生日", "my home").

A statement ("我住在杭州", "my home is too cold") asks nothing; a question about someone else ("where
does Tom live") is not about the user. The words are data (``data/fact_questions.json``), one entry
per key and language: Chinese entries match as substrings, English ones as whole words or phrases of
their Snowball stems, case-insensitively (so "live" also finds "lives", "living" and "lived", and
"work" finds "working": the inflections of a word are one entry, not a list). The module is pure: the
data file is read once, on first use.

The same words tell recall whether a question is about the user alone (:func:`about_user`): a ``self``
word, and no ``other`` word ("you", "we", "你", "我们") outside a ``request`` ("can you", "你还记得",
which address the assistant only to ask). Recall then weighs what the assistant said less.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from yiji.domain import segment

__all__ = ["Asked", "QuestionWords", "about_user", "asked_keys", "question_words", "read"]

_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True)
class _Query:
    """A query as the word lists match it: the folded text (Chinese entries are substrings of it), and
    its English words, each with its span in the text and its stem (``norms``, space-framed:
    ``" where do i live "``), so "working" finds "work" and "lives" finds "live"."""

    text: str
    spans: tuple[tuple[int, int], ...]
    norms: str
    starts: tuple[int, ...]
    """Where each word's stem begins in ``norms``."""

    @classmethod
    def of(cls, query: str) -> _Query:
        text = query.lower()
        words = list(_EN_WORD.finditer(text))
        norms, starts, at = [], [], 1
        for word in words:
            norm = segment.stem(word.group())
            starts.append(at)
            norms.append(norm)
            at += len(norm) + 1
        return cls(text, tuple(w.span() for w in words), " " + " ".join(norms) + " ", tuple(starts))

    def without(self, lists: Iterable[_Words]) -> str:
        """The text with every word and character that an entry of ``lists`` matches blanked out."""
        chars = [False] * len(self.text)
        for words in lists:
            for start, end in words.matches(self):
                chars[start:end] = [True] * (end - start)
        return "".join(" " if done else ch for ch, done in zip(self.text, chars, strict=True))


_EN_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class _Words:
    """One word list: its Chinese entries as one substring pattern, its English ones as one pattern over
    the stems of a query's words (whole words and phrases only)."""

    cjk: re.Pattern[str] | None
    english: re.Pattern[str] | None

    @classmethod
    def of(cls, words: Iterable[str]) -> _Words:
        cjk: set[str] = set()
        english: set[str] = set()
        for entry in words:
            word = entry.lower()
            if _CJK.search(word):
                cjk.add(word)
            elif norms := [segment.stem(w.group()) for w in _EN_WORD.finditer(word)]:
                english.add(" ".join(norms))
        return cls(_alternatives(cjk, ""), _alternatives(english, " "))

    def search(self, q: _Query) -> bool:
        found = self.cjk and self.cjk.search(q.text)
        return bool(found or (self.english and self.english.search(q.norms)))

    def matches(self, q: _Query) -> Iterator[tuple[int, int]]:
        """The spans of the query's text that an entry matches: Chinese substrings, English words."""
        if self.cjk:
            yield from (m.span() for m in self.cjk.finditer(q.text))
        if self.english:
            for m in self.english.finditer(q.norms):
                yield from (s for s, at in zip(q.spans, q.starts, strict=True) if m.start() <= at < m.end())


def _alternatives(entries: set[str], frame: str) -> re.Pattern[str] | None:
    """Longest first; ``frame`` (a space) makes an entry match whole words of the space-framed stems."""
    if not entries:
        return None
    body = "|".join(re.escape(e) for e in sorted(entries, key=len, reverse=True))
    return re.compile(rf"(?<={frame})(?:{body})(?={frame})" if frame else body)


@dataclass(frozen=True)
class _Key:
    topic: _Words
    asks: _Words


@dataclass(frozen=True)
class QuestionWords:
    """The compiled word lists: who the question is about, remembering, and each key's topic and asks."""

    self_words: _Words
    other_words: _Words
    request_words: _Words
    recall_words: _Words
    keys: Mapping[str, _Key]
    interrogatives: _Words
    people: _Words


def _all_languages(entry: Mapping[str, list[str]]) -> list[str]:
    return [word for words in entry.values() for word in words]


def parse(data: Mapping[str, object]) -> QuestionWords:
    """Compile the question words of a data file's content (see ``data/fact_questions.json``)."""
    keys = data["keys"]
    assert isinstance(keys, dict)

    def words_of(name: str) -> _Words:
        entry = data.get(name, {})
        assert isinstance(entry, dict)
        return _Words.of(_all_languages(entry))

    return QuestionWords(
        words_of("self"),
        words_of("other"),
        words_of("request"),
        words_of("recall"),
        {
            key: _Key(_Words.of(_all_languages(entry["topic"])), _Words.of(_all_languages(entry["asks"])))
            for key, entry in keys.items()
        },
        words_of("interrogative"),
        words_of("people"),
    )


@cache
def question_words() -> QuestionWords:
    """The shipped question words (read once)."""
    text = (resources.files("yiji.domain") / "data" / "fact_questions.json").read_text(encoding="utf-8")
    return parse(json.loads(text))


@dataclass(frozen=True)
class Asked:
    """What a query asks of the user's facts: the keys it asks the value of (:func:`asked_keys`) and
    whether it is about the user alone (:func:`about_user`)."""

    keys: tuple[str, ...]
    about_user: bool


def read(query: str, words: QuestionWords | None = None) -> Asked:
    """:func:`asked_keys` and :func:`about_user` of ``query``, from one reading of its words."""
    words = words or question_words()
    q = _Query.of(query)
    return Asked(_asked_keys(q, words), _about_user(q, words))


def asked_keys(query: str, words: QuestionWords | None = None) -> tuple[str, ...]:
    """The fact keys ``query`` asks the value of, in the data file's order; empty for most queries."""
    return _asked_keys(_Query.of(query), words or question_words())


def _asked_keys(q: _Query, words: QuestionWords) -> tuple[str, ...]:
    if not words.self_words.search(q) or words.people.search(q):
        return ()
    named = [(key, entry) for key, entry in words.keys.items() if entry.topic.search(q)]
    if not named:
        return ()
    if words.recall_words.search(q):
        return tuple(key for key, _ in named)
    asking = tuple(key for key, entry in named if entry.asks.search(q))
    if asking or not _only_named(q, words, [entry for _, entry in named]):
        return asking
    return tuple(key for key, _ in named)


def _only_named(q: _Query, words: QuestionWords, named: list[_Key]) -> bool:
    """True when the query asks nothing and says nothing but whose and what: "我的生日", "my home". No
    interrogative ("where was I born" asks where, which the birthday does not answer), and every word a
    stopword or part of a self, request or named topic's entry: a lookup, not a statement ("I live in
    Hangzhou" says where)."""
    if words.interrogatives.search(q):
        return False
    lists = (words.self_words, words.request_words, *(k.topic for k in named))
    return not any(not unit.stop for unit in segment.query_units(q.without(lists)))


def about_user(query: str, words: QuestionWords | None = None) -> bool:
    """Whether ``query`` is about the user alone: a first-person word or "the user" (``self``), and no
    word that speaks of the assistant or of both together (``other``: "you", "你", "we", "我们") outside
    a request (``request``: "can you", "你还记得", which address the assistant only to ask). "What did
    I buy" and "can you suggest a gift for my mother" are; "what did you recommend" and "what did we
    decide" are not."""
    return _about_user(_Query.of(query), words or question_words())


def _about_user(q: _Query, words: QuestionWords) -> bool:
    if not words.self_words.search(q):
        return False
    return not words.other_words.search(_Query.of(q.without([words.request_words])))
