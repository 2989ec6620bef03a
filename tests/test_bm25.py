"""The bounded stages' BM25 equals SQLite FTS5's bm25() on the same documents (table-driven)."""

from __future__ import annotations

import sqlite3

import pytest

from yiji.domain import bm25

DOCS = [
    "杭州 喜欢 西湖 杭 州 喜 欢 西 湖",
    "tea tea tea lake",
    "a a a b",
    "café au lait",
    "周末 去 杭州 周 末 去 杭 州",
    "lake walk walk walk walk walk walk walk walk walk walk walk walk",
    "nothing here",
]
QUERIES = [
    ["杭州", "喜欢"],
    ["tea", "lake"],
    ["a"],
    ["cafe"],
    ["café", "lait"],
    ["周末", "杭州", "walk"],
    ["missing"],
]


@pytest.mark.parametrize("terms", QUERIES)
def test_scores_equal_fts5_bm25(terms: list[str]) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (body)")
    conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(DOCS, 1)))
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, row)")
    counts = {}
    for term in terms:
        row = conn.execute("SELECT doc FROM v WHERE term = ?", (bm25.fold(term),)).fetchone()
        counts[term] = row[0] if row else 0
    tokens = sum(len(d.split()) for d in DOCS)
    match = " OR ".join(f'"{t}"' for t in terms)
    expected = {
        r: round(s, 9) for r, s in conn.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (match,))
    }
    got = bm25.scores(list(enumerate(DOCS, 1)), terms, counts, len(DOCS), tokens / len(DOCS))
    assert {r: round(s, 9) for r, s in got.items()} == expected
