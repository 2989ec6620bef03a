"""Segmentation and FTS5 query building, checked against a real SQLite FTS5 table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from importlib.metadata import version

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.domain.segment import (
    SEGMENTER_NAME,
    STOPWORDS,
    document_body,
    installed_version,
    match_query,
    query_characters,
    query_tokens,
    query_units,
    segmenter_id,
    segmenter_version,
    tokens,
)


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    """The index's shape: FTS5 with the default unicode61 tokenizer and one column ``body``."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE event_fts USING fts5 (body)")
    conn.execute("CREATE VIRTUAL TABLE event_terms USING fts5vocab(event_fts, instance)")
    yield conn
    conn.close()


def index(conn: sqlite3.Connection, *texts: str) -> None:
    for rowid, text in enumerate(texts, 1):
        conn.execute("INSERT INTO event_fts (rowid, body) VALUES (?, ?)", (rowid, document_body(text)))


def search(conn: sqlite3.Connection, text: str) -> list[int]:
    query = match_query(text)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT rowid FROM event_fts WHERE event_fts MATCH ? ORDER BY bm25(event_fts), rowid",
        (query,),
    )
    return [rowid for (rowid,) in rows]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("本书", ["本书", "本", "书"]),
        ("我喜欢读这本书", ["我", "喜欢", "读", "这", "本书", "喜", "欢", "本", "书"]),
        ("北京大学", ["北京", "大学", "北京大学", "北", "京", "大", "学"]),
        ("Hello, World!", ["hello", "world"]),
        ("iPhone15 发布", ["iphone15", "发布", "发", "布"]),
        ("ＡＢＣ１２３", ["abc123"]),  # NFKC: full-width Latin and digits
        ("Painted paintings", ["paint", "paint"]),  # English Snowball stems
        ("2023年5月", ["2023", "年", "5", "月"]),
        ("😀 ... ——", []),
        ("", []),
    ],
)
def test_tokens(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_each_cjk_character_once_per_occurrence() -> None:
    # jieba's search mode emits overlapping words; characters still come once per occurrence
    assert tokens("中华人民共和国").count("华") == 1  # besides 中华, 华人, 中华人民共和国
    assert tokens("好好学习").count("好") == 2
    # a character jieba already cut as a one-character word is not added again
    assert tokens("我读书").count("我") == 1


def test_segmenter_identity_names_rjieba_and_scheme() -> None:
    assert "rjieba" in SEGMENTER_NAME
    assert f"rjieba {version('rjieba')}" in segmenter_version()
    assert f"snowballstemmer {version('snowballstemmer')}" in segmenter_version()
    assert "scheme " in segmenter_version()
    assert segmenter_id() == f"{SEGMENTER_NAME} | {segmenter_version()}"


@pytest.mark.parametrize(
    "name", ["rjieba", "snowballstemmer", "PyStemmer", "pydantic-core", "typing_extensions"]
)
def test_installed_versions_are_read_as_importlib_metadata_reads_them(name: str) -> None:
    assert installed_version(name) == version(name)


@pytest.mark.parametrize(
    "text",
    [
        "我喜欢读这本书，中华人民共和国。",
        "Hello World 2023 iPhone15 x² ①",
        "ひらがな カタカナ 한국어 𠀀",
        "don't stop-believing: C++ & e-mail_address",
    ],
)
def test_tokens_survive_unicode61(fts: sqlite3.Connection, text: str) -> None:
    index(fts, text)
    terms = [t for (t,) in fts.execute("SELECT term FROM event_terms ORDER BY offset")]
    assert terms == tokens(text)


def test_unicode61_folds_diacritics_alike_for_documents_and_queries(
    fts: sqlite3.Connection,
) -> None:
    index(fts, "un café crème")
    assert search(fts, "CAFÉ") == [1]
    assert search(fts, "cafe") == [1]


def test_single_character_finds_compound(fts: sqlite3.Connection) -> None:
    index(fts, "我读完了这本书", "今天天气很好")
    assert search(fts, "书") == [1]
    assert search(fts, "本书") == [1]


def test_more_shared_terms_rank_first(fts: sqlite3.Connection) -> None:
    index(fts, "我们去海边放风筝", "我在海边捡贝壳", "Bart won the race")
    assert search(fts, "海边放风筝")[0] == 1


@pytest.mark.parametrize(
    ("query", "document"),
    [
        ('say "hi', "say hi"),  # unbalanced double quote
        ('he said ""quoted""', "he said quoted"),
        ("prefix*", "prefix"),  # not a prefix query
        ("^start", "start"),  # not an initial-token query
        ("NEAR(alpha beta)", "near alpha beta"),  # NEAR is a word
        ("alpha NEAR/2 beta", "near alpha 2 beta"),
        ("cats AND dogs", "cats dogs and"),
        ("cats NOT dogs", "dogs cats"),  # NOT does not exclude
        ("body:secret", "body secret"),  # no column filter
        ("{body}: secret", "body secret"),
        ("(unbalanced bracket", "unbalanced bracket"),
        ("closing) bracket]", "closing bracket"),
        ("- minus + plus", "minus plus"),
        ("'single' `back`", "single back"),
    ],
)
def test_query_syntax_is_searched_as_text(fts: sqlite3.Connection, query: str, document: str) -> None:
    index(fts, document, "unrelated words only")
    assert search(fts, query) == [1]
    expression = match_query(query)
    assert expression is not None
    # every term is a double-quoted literal joined by OR
    for part in expression.split(" OR "):
        assert part.startswith('"') and part.endswith('"')


def test_operator_words_are_literals(fts: sqlite3.Connection) -> None:
    index(fts, "this or that", "and so on", "not now")
    # all three are stopwords: a query of nothing else still searches them, as text
    assert search(fts, "OR") == [1]
    assert search(fts, "AND") == [2]
    assert search(fts, "NOT") == [3]


def test_not_does_not_exclude(fts: sqlite3.Connection) -> None:
    index(fts, "apples", "apples and pears")
    assert set(search(fts, "apples NOT pears")) == {1, 2}


@pytest.mark.parametrize("text", ["", "   ", "?!…", "——", "😀👍", '"" * ^ ()'])
def test_no_searchable_token_gives_none(text: str) -> None:
    assert match_query(text) is None


def test_stopwords_dropped_from_queries_only(fts: sqlite3.Connection) -> None:
    assert query_tokens("What did Melanie paint?") == ["melani", "paint"]
    assert query_tokens("我的书") == ["书"]
    assert "的" in tokens("我的书")  # documents keep every token
    assert {"the", "of", "的", "了"} <= STOPWORDS


def test_stopword_only_query_falls_back_to_its_words() -> None:
    assert query_tokens("the of") == ["the", "of"]
    assert query_tokens("我们的") == ["我们", "的", "我", "们"]  # 们 is listed too


def test_query_terms_are_distinct() -> None:
    assert query_tokens("book books BOOK") == ["book"]


def test_quotes_inside_a_token_are_doubled() -> None:
    # tokens never contain quotes today; the literal builder still escapes them
    from yiji.domain.segment import _literal

    assert _literal('a"b') == '"a""b"'


def _match(body: str, query: str) -> list[int]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE event_fts USING fts5 (body)")
        conn.execute("INSERT INTO event_fts (rowid, body) VALUES (1, ?)", (body,))
        hits = conn.execute("SELECT rowid FROM event_fts WHERE event_fts MATCH ?", (query,))
        return [rowid for (rowid,) in hits]
    finally:
        conn.close()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_any_text_builds_a_valid_query(document: str, text: str) -> None:
    # never a syntax error, whatever the text; SQLite's Unicode tables are older than Python's,
    # so a few recent letters are separators to unicode61 and may find nothing
    query = match_query(text)
    if query is not None:
        assert _match(document_body(document), query) in ([], [1])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='书本我们读的 ,.!?"*^():-ABCabc123NEARORANDNOT', min_size=1, max_size=40))
def test_a_text_finds_itself(text: str) -> None:
    query = match_query(text)
    if query is not None:
        assert _match(document_body(text), query) == [1]


def _words_by_definition(text: str) -> list[str]:
    """The module's rule as its docstring states it, run by run: the maximal runs of letters and digits
    of the NFKC-normalized text, each cut into CJK runs (jieba's words and the characters) and other
    pieces (lower-cased), then stemmed."""
    import re
    import unicodedata

    from yiji.domain.segment import _CJK_RUN, _cjk_words, stem

    out: list[str] = []
    for run in re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text)):
        for index, piece in enumerate(_CJK_RUN.split(run)):
            if piece:
                out += list(_cjk_words(piece)) if index % 2 else [stem(piece.lower())]
    return out


# letters, digits and separators of several scripts, with the edge cases of the one-pass cut: CJK-range
# characters that are no letters (・ ゛ ゠, unassigned U+3040), full-width forms and ligatures that NFKC
# changes, characters whose lower case is longer (İ), combining marks, an astral ideograph and an emoji
_MIXED = "aZé É_ 1２ｆｉ中文北京大学读书・゛ー゠アイ한국\u3040 ß İ ﬁ-.,!?\n😀\U00020000\u0307Ωω"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=_MIXED, max_size=40) | st.text(max_size=40))
def test_tokens_follow_the_run_by_run_definition(text: str) -> None:
    assert tokens(text) == _words_by_definition(text)


def test_c_stemmer_matches_the_pure_python_snowball_english_stemmer() -> None:
    """The index records snowballstemmer's version; the C stemmer used must give the same stems."""
    import re
    from pathlib import Path

    import Stemmer
    from snowballstemmer.english_stemmer import EnglishStemmer

    sources = [*Path(__file__).parent.glob("*.py"), *Path(__file__).parents[1].glob("src/yiji/**/*.py")]
    words = {w.lower() for p in sources for w in re.findall(r"[A-Za-z]+", p.read_text(encoding="utf-8"))}
    words |= {"painted", "painting", "paints", "generously", "running", "ponies", "caresses", "happily"}
    c, py = Stemmer.Stemmer("english"), EnglishStemmer()
    assert len(words) > 2000
    assert [w for w in sorted(words) if c.stemWord(w) != py.stemWord(w)] == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        # characters belong to their word; a stopword's characters go with it (什 of 什么, 里 of 哪里)
        ("我妈妈什么时候生日", [("妈妈", ("妈",)), ("生日", ("生", "日"))]),
        ("用户在哪里工作", [("用户", ("用", "户")), ("工作", ("工", "作"))]),
        ("住在哪里", [("住", ())]),
        ("What did Melanie paint?", [("melani", ()), ("paint", ())]),
        ("书", [("书", ())]),
    ],
)
def test_query_units(text: str, words: list[tuple[str, tuple[str, ...]]]) -> None:
    units = query_units(text)
    assert [(u.word, u.chars) for u in units] == words
    assert not any(u.stop for u in units)


def test_query_units_keep_stopwords_only_when_nothing_else_is_left() -> None:
    assert [(u.word, u.stop) for u in query_units("什么？")] == [("什么", True)]
    assert query_units("？？") == []


def test_query_units_count_repeats() -> None:
    counts = {u.word: u.count for u in query_units("爬山，爬山，还是爬山好。hiking hikes")}
    assert counts["爬山"] == 3 and counts["hike"] == 2


@pytest.mark.parametrize(
    ("text", "characters"),
    [
        # characters of words of two or more characters, stopwords (什么, 时候, 感觉) included; a
        # character that is a stopword itself (我, 么, 的, 别) is left out
        ("我妈妈什么时候生日", [("妈", 1), ("什", 1), ("时", 1), ("候", 1), ("生", 1), ("日", 1)]),
        ("感觉特别累，上海的早上", [("感", 1), ("觉", 1), ("特", 1), ("上", 2), ("海", 1), ("早", 1)]),
        # counted per word that uses it, so a repeated word counts each time
        ("上海，上海", [("上", 2), ("海", 2)]),
        ("What did Melanie paint?", []),
        ("书", []),  # a one-character word is a word, not a character term
    ],
)
def test_query_characters(text: str, characters: list[tuple[str, int]]) -> None:
    assert query_characters(text) == characters
