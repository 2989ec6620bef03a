"""Segmentation for the lexical index: one function for documents and queries.

Invariants:

* :func:`tokens` is the only segmenter. Documents (:func:`document_body`) and queries
  (:func:`match_query`) go through it, so a query token can only miss a document for lack of the
  word, never for being cut differently.
* Text is NFKC-normalized first (full-width Latin and digits, ligatures, superscripts become their
  plain forms), then split into runs of letters and digits; everything else (punctuation, symbols,
  emoji, whitespace) separates tokens and is dropped.
* A CJK run (Han, kana, Hangul) is cut by ``rjieba.cut_for_search`` (jieba's dictionary, search
  mode: ``北京大学`` gives ``北京``, ``大学``, ``北京大学``), and every CJK character of the run is
  added as well, once per occurrence, unless jieba already emitted that character as a
  one-character word at that position. So the query ``书`` finds ``本书``.
* Any other run (Latin, digits, Cyrillic, ...) is one token, lower-cased (``iPhone15`` ->
  ``iphone15``). A purely ASCII-letter token is reduced to its English Snowball (Porter2) stem, so
  ``painted``, ``painting`` and ``paints`` all become ``paint`` (measured on LoCoMo: recall@10
  +0.04, MRR +0.03). The stemmer is PyStemmer's C build of the Snowball English algorithm, which
  gives the same stems as the pure-Python ``snowballstemmer`` named in :func:`segmenter_version`
  (a test compares them) and loads in about a millisecond instead of loading every language.
* rjieba builds its whole dictionary when first imported (about 0.1 s), so English-only work never
  imports it, and a process that cuts little Chinese (a recall, a hook's prompt) cuts it with the
  dictionary words that occur in it (:mod:`yiji.domain.jieba_words`: the same words, tested) until it has
  cut :data:`OWN_WORDS_BUDGET` characters; past that it builds the whole dictionary once (:func:`jieba`).
* Every token is a maximal run of letters/digits, so the FTS5 ``unicode61`` tokenizer (the index's
  tokenizer) keeps each space-separated token as exactly one term (it still folds diacritics:
  ``café`` is stored as ``cafe``, identically for documents and queries).
* Stopwords (:data:`STOPWORDS`, matched on the lower-cased word before stemming; a CJK character
  is judged alone, so ``们`` is listed besides ``我们``) are removed from *queries* only. The index
  keeps every token, so a change of the list never requires a reindex, and a query made only of
  stopwords still searches them.

:data:`SEGMENTER_NAME` and :func:`segmenter_version` identify the scheme; the index records them
(:func:`segmenter_id`) and a mismatch means the lexical index must be rebuilt (``yiji reindex``).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from types import ModuleType

import Stemmer

__all__ = [
    "index_warning",
    "jieba",
    "COMMON_CHAR_SHARE",
    "COMMON_MIN_DOCS",
    "COMMON_SHARE",
    "match_terms",
    "prune_common",
    "SCHEME_VERSION",
    "SEGMENTER_NAME",
    "segmenter_id",
    "segmenter_version",
    "stem",
    "STOPWORDS",
    "document_body",
    "match_query",
    "name_words",
    "query_characters",
    "query_tokens",
    "query_units",
    "read_query",
    "tokens",
    "unit_terms",
    "QueryWord",
]

SCHEME_VERSION = 1
"""Version of yiji's rules around rjieba and the stemmer. Bump on any change to tokens()."""

SEGMENTER_NAME = "rjieba-search+cjk-chars+snowball-en"


def installed_version(distribution: str) -> str:
    """What ``importlib.metadata.version(distribution)`` answers, read from the first
    ``<name>-<version>.dist-info`` on ``sys.path``; importlib.metadata itself where there is none.

    Importing importlib.metadata (it pulls in the email package) costs more than the rest of a host
    capture's start-up, and only these two versions are wanted.
    """
    wanted = _normal(distribution)
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            if not (name.endswith(".dist-info") and _normal(name).startswith(wanted + "_")):
                continue
            try:
                head = Path(entry or ".", name, "METADATA").read_text(encoding="utf-8").split("\n\n", 1)[0]
            except OSError:
                continue
            fields = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
            if _normal(fields.get("Name", "")) == wanted and "Version" in fields:
                return fields["Version"].strip()
    from importlib.metadata import version

    return version(distribution)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@cache
def segmenter_version() -> str:
    """The versions of rjieba and of the Snowball algorithm's package, and of yiji's scheme."""
    rjieba, snowball = installed_version("rjieba"), installed_version("snowballstemmer")
    return f"rjieba {rjieba}; snowballstemmer {snowball}; scheme {SCHEME_VERSION}"


def segmenter_id() -> str:
    """What the index records in ``meta``; a different value means the index needs ``yiji reindex``."""
    return f"{SEGMENTER_NAME} | {segmenter_version()}"


# Han (unified, extension A, compatibility, extensions B+), kana, Hangul syllables.
CJK_CHARACTERS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # extension A
    "\u4e00-\u9fff"  # unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0003134f"  # extensions B-G
)
_WORD = re.compile(r"[^\W_]+")  # a maximal run of letters and digits
# One compiled class serves every CJK test: compiling a class this wide costs milliseconds per process.
_CJK_RUN = re.compile(f"([{CJK_CHARACTERS}]+)")
_ASCII_WORD = re.compile(r"[a-z]+")
_STEMMER = Stemmer.Stemmer("english")

# English: the function words of the LoCoMo baseline plus contraction fragments (``don't`` is cut
# into ``don`` + ``t``; not ``won``, the past of "win"). Chinese: particles, pronouns, auxiliaries
# and conjunctions that carry no topic; content-bearing characters (even common ones such as 人, 天,
# 年, 去) are kept. A CJK character is judged alone, so ``们`` is listed besides ``我们``.
_STOP_EN = """
a an the and or but if of to in on at for with from by as is am are was were be been being do does
did have has had i you he she it we they me him her us them my your his its our their this that
these those what which who whom whose when where why how not no so than too very can could will
would shall should may might must just about into over after before up down out there here also any
all some many much s t m d ll re ve don didn doesn isn wasn aren weren haven hasn wouldn couldn shouldn
"""
_STOP_ZH = """
的 了 着 过 是 在 和 与 及 或 而 且 但 就 都 也 还 又 把 被 让 给 对 从 向 于 为 以 之 其
我 你 您 他 她 它 们 我们 你们 他们 她们 它们 咱们 自己 这 那 这个 那个 这些 那些 这样 那样 这里
那里 吗 呢 吧 啊 呀 哦 嗯 哈 啦 嘛 哇 呗 么 呐 哎 诶
什么 怎么 怎么样 为什么 哪 哪里 哪儿 谁 几 多少 时候 何时 如何 怎样 多久 哪个 哪些
个 一个 一下 一些 有点 有些 一点
很 太 最 更 非常 真 真的 特别 比较 挺
会 能 要 想 可以 应该 得 地 所以 因为 如果 虽然 但是 然后 还是 或者 而且 并且 不过 只是 就是 也是
还有 有 没 没有 不 别 已经 正在 刚 刚才
说 觉得 知道 感觉 感到
"""
STOPWORDS: frozenset[str] = frozenset(_STOP_EN.split()) | frozenset(_STOP_ZH.split())
"""Query-only stopwords (English function words, Chinese particles/pronouns/auxiliaries)."""


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A lower-case word as the index holds it: its English stem when it is ASCII letters only."""
    return str(_STEMMER.stemWord(word)) if _ASCII_WORD.fullmatch(word) else word


@lru_cache(maxsize=1)
def jieba() -> ModuleType:
    """The ``rjieba`` module, imported (and its whole dictionary built) on first use."""
    import rjieba

    return rjieba


OWN_WORDS_BUDGET = 5_000
"""CJK characters a process cuts with their own dictionary words (:mod:`yiji.domain.jieba_words`) before it
builds rjieba's whole dictionary: the same words either way. Cut so, text costs about 8 us a character
(reading the words of its characters' groups), against about 0.1 s for the whole dictionary once: a recall,
a hook or a small write never builds it, a bulk import builds it after its first few dozen turns."""


class _OwnWords:
    """How many CJK characters this process has cut with their own dictionary words."""

    def __init__(self) -> None:
        self.used = 0


_OWN = _OwnWords()


def _whole_built() -> bool:
    """Whether this process has built rjieba's whole dictionary (:func:`jieba`)."""
    return jieba.cache_info().currsize > 0


@cache
def _own_words() -> ModuleType | None:
    """:mod:`yiji.domain.jieba_words` when it may cut here (:func:`~yiji.domain.jieba_words.usable`)."""
    from yiji.domain import jieba_words

    return jieba_words if jieba_words.usable(installed_version("rjieba")) else None


def _cut(run: str) -> list[tuple[str, int, int]]:
    """jieba's search-mode cut of a CJK run: ``(word, start, end)``."""
    if not _whole_built() and _OWN.used + len(run) <= OWN_WORDS_BUDGET:
        own = _own_words()
        if own is not None:
            _OWN.used += len(run)
            cut: list[tuple[str, int, int]] = own.cutter((run,)).tokenize(run, mode="search")
            return cut
    whole: list[tuple[str, int, int]] = jieba().tokenize(run, mode="search")
    return whole


def expect(texts: Iterable[str]) -> None:
    """Before cutting a batch of ``texts``: when their CJK characters pass what is left of
    :data:`OWN_WORDS_BUDGET`, build the whole dictionary now, rather than cut the first of them with their
    own words and then build it anyway. The words are the same either way; only the time differs."""
    if _whole_built():
        return
    left = OWN_WORDS_BUDGET - _OWN.used
    for text in texts:
        left -= sum(map(len, _CJK_RUN.findall(text)))
        if left < 0:
            jieba()
            return


def _cjk_words(run: str) -> Iterator[str]:
    """jieba search-mode words, then the run's characters not already cut as one-character words."""
    words = _cut(run)
    yield from [word for word, _, _ in words if not word.isspace()]
    single = {start for word, start, _ in words if len(word) == 1}
    # ``run`` is a maximal run of CJK characters (see _runs), so every character is indexed
    yield from [ch for i, ch in enumerate(run) if i not in single]


def _runs(text: str) -> Iterator[tuple[str, str]]:
    """The maximal runs of letters and digits of ``text`` (NFKC-normalized), each cut into its CJK and
    other pieces, in order: ``(cjk, "")`` or ``("", other)``, ``other`` lower-cased.

    The text is cut at its CJK runs once, then each piece into runs of letters and digits: the same
    pieces as cutting every run of letters and digits at its CJK characters (a run's CJK and other
    characters are apart in both), in one pass over the text. ASCII text (most English) has no CJK piece
    and needs no normalizing."""
    if text.isascii():
        for run in _WORD.findall(text.lower()):
            yield "", run
        return
    for index, piece in enumerate(_CJK_RUN.split(unicodedata.normalize("NFKC", text))):
        if index % 2:  # a CJK run: its characters that are no letter (such as ・) still cut it
            for run in _WORD.findall(piece):
                yield run, ""
        elif piece:
            for run in _WORD.findall(piece):
                yield "", run.lower()


def _words(text: str) -> Iterator[str]:
    """Lower-cased words before stemming, in text order."""
    for cjk, other in _runs(text):
        if cjk:
            yield from _cjk_words(cjk)
        else:
            yield other


def tokens(text: str) -> list[str]:
    """Segment ``text`` into index terms (in text order; repeats kept, since frequency matters)."""
    return [stem(word) for word in _words(text)]


def document_body(text: str) -> str:
    """The value of the FTS5 ``body`` column for ``text``: its tokens joined by single spaces."""
    return " ".join(tokens(text))


def query_tokens(text: str) -> list[str]:
    """Distinct query terms in first-seen order, stopwords removed unless nothing else is left."""
    words = list(_words(text))
    content = [stem(word) for word in words if word not in STOPWORDS]
    return list(dict.fromkeys(content or [stem(word) for word in words]))


@dataclass(frozen=True)
class QueryWord:
    """One word of a query as recall weighs it.

    ``chars`` are the distinct CJK characters of a word of two or more characters (they are indexed
    too, so a document holding them all apart, such as ``海上`` for ``上海``, can still be found);
    a one-character word is its own term. ``stop`` marks a stopword: it is searched only when the
    query has nothing else, and never counts as evidence.
    """

    word: str
    chars: tuple[str, ...] = ()
    stop: bool = False
    count: int = 1
    """How often the word occurs in the query (a long conversational query repeats its topic)."""


def query_units(text: str) -> list[QueryWord]:
    """The words of a query, in first-seen order, each with its component characters.

    Unlike :func:`query_tokens`, characters are never separate words: a character counts only as a
    part of the query word it belongs to, and the characters of a stopword (``什`` of ``什么``,
    ``里`` of ``哪里``) are dropped with it. A query made only of stopwords keeps them, marked.
    """
    return read_query(text)[0]


def query_characters(text: str) -> list[tuple[str, int]]:
    """The characters of a query's CJK words of two or more characters, stopwords included, each with
    the number of such words that use it; characters that are stopwords themselves (我, 的) are left
    out. A long query counts them as terms of their own (see :mod:`yiji.domain.ranking`): ``感觉``
    is a stopword, but ``感`` and ``觉`` say something about a conversation about feelings."""
    return read_query(text)[1]


def read_query(text: str) -> tuple[list[QueryWord], list[tuple[str, int]]]:
    """:func:`query_units` and :func:`query_characters` of ``text`` from one pass of the segmenter
    (each CJK run cut once)."""
    words: dict[str, QueryWord] = {}
    found: Counter[str] = Counter()

    def add(word: str, chars: tuple[str, ...], stop: bool) -> None:
        seen = words.get(word)
        words[word] = QueryWord(word, chars, stop, seen.count + 1 if seen else 1)

    for cjk, other in _runs(text):
        if cjk:
            for word, _start, _end in _cut(cjk):
                if len(word) > 1:
                    found.update(ch for ch in dict.fromkeys(word) if ch not in STOPWORDS)
                if not word.isspace():
                    add(word, tuple(dict.fromkeys(word)) if len(word) > 1 else (), word in STOPWORDS)
        else:
            add(stem(other), (), other in STOPWORDS)
    units = list(words.values())
    content = [w for w in units if not w.stop]
    return content or units, list(found.items())


@lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[str, ...]:
    """The words of a speaker's name as a query that names them has them (stopwords left out); a
    speaker's name recurs in every recall of its conversation, so it is cut once."""
    return tuple(u.word for u in query_units(name) if not u.stop)


def unit_terms(units: Sequence[QueryWord]) -> list[str]:
    """The index terms to search for ``units``: each word and its component characters."""
    return list(dict.fromkeys(t for u in units for t in (u.word, *u.chars)))


def _literal(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def match_terms(terms: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression OR-ing ``terms`` as quoted literals (``None`` when there are none)."""
    if not terms:
        return None
    return " OR ".join(_literal(token) for token in terms)


def match_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``: its query tokens as quoted literals, OR-ed together.

    Every token is a double-quoted FTS5 string (inner quotes doubled), so nothing the user typed is
    executed as query syntax: ``"``, ``*``, ``^``, ``NEAR``, ``AND``/``OR``/``NOT``, ``body:`` and
    brackets are searched as text (punctuation is dropped by :func:`tokens`, words become literals).
    Returns ``None`` when the text has no searchable token; the caller then has no lexical evidence.
    """
    return match_terms(query_tokens(text))


COMMON_SHARE = 0.2
"""A query term found in more than this share of an index's documents is too common to search."""
COMMON_CHAR_SHARE = 0.01
"""The same for a single CJK character: it is weak evidence on its own (its words are searched too)."""
COMMON_MIN_DOCS = 1000
"""Below this many documents nothing is pruned: small archives are cheap to search in full."""


def prune_common(
    terms: Sequence[str],
    doc_counts: Mapping[str, int],
    total_docs: int,
    *,
    share: float = COMMON_SHARE,
    char_share: float = COMMON_CHAR_SHARE,
    min_docs: int = COMMON_MIN_DOCS,
    keep_at_least: int = 2,
) -> list[str]:
    """Drop query terms that occur in more than ``share`` of ``total_docs`` documents (``char_share`` for
    a single CJK character).

    Such terms carry little ranking weight (their bm25 idf is low), yet alone they would fill the
    candidates with documents that hold nothing else of the query. Below ``min_docs`` documents nothing
    is dropped (measured: dropping there too lowers LoCoMo and MADial-Bench). When every term is that
    common, the ``keep_at_least`` rarest are kept, so a query
    never loses all its evidence. Order of the kept terms follows ``terms``.
    """
    if total_docs < min_docs:
        return list(terms)

    def limit(term: str) -> float:
        return (char_share if len(term) == 1 and _CJK_RUN.match(term) else share) * total_docs

    kept = [t for t in terms if doc_counts.get(t, 0) <= limit(t)]
    if kept:
        return kept
    rarest = set(sorted(terms, key=lambda t: doc_counts.get(t, 0))[:keep_at_least])
    return [t for t in terms if t in rarest]


def index_warning(
    built_with: str | None, has_rows: Callable[[], bool], reindex: str = "yiji reindex"
) -> str | None:
    """What to tell a user about the lexical index, or None when it is current; ``reindex`` is the
    command that rebuilds it where the process runs (:func:`yiji.invocation.yiji_command`).

    An index stamped by another segmenter needs a rebuild; an unstamped one over a database that holds
    events or memories was never completed (an interrupted import or rebuild, or an older yiji).
    """
    if built_with == segmenter_id():
        return None
    if built_with is not None:
        return f"the lexical index was built by another segmenter; run `{reindex}`"
    if has_rows():
        return f"the lexical index is not complete for this database; run `{reindex}`"
    return None
