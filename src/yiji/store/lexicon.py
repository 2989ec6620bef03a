"""SQL for the lexicon: the scope-partitioned postings beside the FTS5 index, and the scope's statistics.

FTS5 (``memory_fts``, ``event_fts``) stays the index of record: what is searchable and its segmented
body. The lexicon is a rebuildable side structure in the same file, kept in the same transactions by
every write of :mod:`yiji.store.search` (and rebuilt with it by ``reindex``; tables of schema v8), holding for each *space*
(a scope's memory index or its raw-event index) what exact top-k retrieval reads:

* ``lex_space``: the space's scope and index, its document count and its tokens in all;
* ``lex_term``: per term of a space, its document count, its largest frequency and the shortest document
  holding it (the term's score bound; after a deletion the bound may be loose, never too low);
* ``lex_posting``: per term and document, the frequency and the document's length, clustered by
  (space, term, document) so a term's list in one scope is one range of the B-tree.

A term's rows go when its last document goes, so deleted text leaves no word behind. The statistics are
the scope's own: another scope's data never changes them (:mod:`yiji.domain.topk`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from yiji.db import Connection
from yiji.domain import bm25, topk
from yiji.store._sql import chunks, marks

__all__ = [
    "EVENTS",
    "MEMORIES",
    "add_documents",
    "bounds",
    "build_from_index",
    "clear",
    "postings",
    "probe",
    "remove_documents",
    "space_of",
    "space_stats",
]

MEMORIES = 0
"""The memory index (documents are ``memories.pk``)."""
EVENTS = 1
"""The raw-event index (documents are ``events.seq``)."""

_TABLES = {MEMORIES: "memory_fts", EVENTS: "event_fts"}
_OWNERS = {
    MEMORIES: "SELECT pk, persona_id, project_id FROM memories WHERE pk IN ({})",
    EVENTS: "SELECT seq, persona_id, project_id FROM events WHERE seq IN ({})",
}


def _terms(body: str) -> tuple[Counter[str], int]:
    """Term frequencies and the length of an index body (space-separated tokens, folded as FTS5 does)."""
    tokens = body.split()
    return Counter(bm25.fold(token) for token in tokens), len(tokens)


def space_of(
    conn: Connection, persona_id: str, project_id: str, tbl: int, *, create: bool = False
) -> int | None:
    row = conn.execute(
        "SELECT id FROM lex_space WHERE persona_id = ? AND project_id = ? AND tbl = ?",
        (persona_id, project_id, tbl),
    ).fetchone()
    if row is not None:
        return int(row[0])
    if not create:
        return None
    cursor = conn.execute(
        "INSERT INTO lex_space (persona_id, project_id, tbl) VALUES (?, ?, ?)", (persona_id, project_id, tbl)
    )
    return int(cursor.lastrowid or 0)


def _owners(conn: Connection, tbl: int, docs: Sequence[int]) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, str]] = {}
    for chunk in chunks(docs):
        out.update(
            (int(r[0]), (str(r[1]), str(r[2])))
            for r in conn.execute(_OWNERS[tbl].format(marks(chunk)), chunk)
        )
    return out


def add_documents(conn: Connection, tbl: int, documents: Sequence[tuple[int, str]]) -> None:
    """Add ``(doc, body)`` pairs of index ``tbl`` (their scope read from their rows)."""
    if not documents:
        return
    owners = _owners(conn, tbl, [doc for doc, _ in documents])
    spaces: dict[tuple[str, str], int] = {}
    rows: list[tuple[int, str, int, int, int]] = []
    terms: dict[tuple[int, str], list[int]] = {}
    totals: dict[int, list[int]] = {}
    for doc, body in documents:
        owner = owners.get(doc)
        if owner is None:
            continue
        space = spaces.get(owner)
        if space is None:
            space = spaces[owner] = space_of(conn, owner[0], owner[1], tbl, create=True) or 0
        counts, length = _terms(body)
        total = totals.setdefault(space, [0, 0])
        total[0] += 1
        total[1] += length
        for term, tf in counts.items():
            rows.append((space, term, doc, tf, length))
            entry = terms.get((space, term))
            if entry is None:
                terms[(space, term)] = [1, tf, length]
            else:
                entry[0] += 1
                entry[1] = max(entry[1], tf)
                entry[2] = min(entry[2], length)
    conn.executemany(
        "INSERT OR REPLACE INTO lex_posting (space, term, doc, tf, len) VALUES (?, ?, ?, ?, ?)", rows
    )
    conn.executemany(
        "INSERT INTO lex_term (space, term, docs, max_tf, min_len) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (space, term) DO UPDATE SET docs = docs + excluded.docs, "
        "max_tf = max(max_tf, excluded.max_tf), min_len = min(min_len, excluded.min_len)",
        [(space, term, *entry) for (space, term), entry in terms.items()],
    )
    conn.executemany(
        "UPDATE lex_space SET docs = docs + ?, tokens = tokens + ? WHERE id = ?",
        [(docs, tokens, space) for space, (docs, tokens) in totals.items()],
    )


def remove_documents(conn: Connection, tbl: int, docs: Sequence[int]) -> None:
    """Remove these documents of index ``tbl``; call before their FTS5 rows (their bodies) and their
    authoritative rows (their scope) are deleted. Documents not in the index are ignored."""
    if not docs:
        return
    owners = _owners(conn, tbl, docs)
    table = _TABLES[tbl]
    postings: list[tuple[int, str, int]] = []
    terms: Counter[tuple[int, str]] = Counter()
    totals: dict[int, list[int]] = {}
    for chunk in chunks(docs):
        for r in conn.execute(f"SELECT rowid, body FROM {table} WHERE rowid IN ({marks(chunk)})", chunk):
            owner = owners.get(int(r[0]))
            space = space_of(conn, owner[0], owner[1], tbl) if owner else None
            if space is None:
                continue
            counts, length = _terms(str(r[1]))
            total = totals.setdefault(space, [0, 0])
            total[0] += 1
            total[1] += length
            for term in counts:
                postings.append((space, term, int(r[0])))
                terms[(space, term)] += 1
    conn.executemany("DELETE FROM lex_posting WHERE space = ? AND term = ? AND doc = ?", postings)
    conn.executemany(
        "UPDATE lex_term SET docs = docs - ? WHERE space = ? AND term = ?",
        [(n, space, term) for (space, term), n in terms.items()],
    )
    conn.executemany(
        "DELETE FROM lex_term WHERE space = ? AND term = ? AND docs <= 0",
        [(space, term) for space, term in terms],
    )
    conn.executemany(
        "UPDATE lex_space SET docs = max(docs - ?, 0), tokens = max(tokens - ?, 0) WHERE id = ?",
        [(docs_, tokens, space) for space, (docs_, tokens) in totals.items()],
    )


def clear(conn: Connection) -> None:
    conn.execute("DELETE FROM lex_posting")
    conn.execute("DELETE FROM lex_term")
    conn.execute("DELETE FROM lex_space")


def _bodies(conn: Connection, table: str) -> Iterator[list[tuple[int, str]]]:
    batch: list[tuple[int, str]] = []
    for r in conn.execute(f"SELECT rowid, body FROM {table}"):
        batch.append((int(r[0]), str(r[1])))
        if len(batch) >= 2000:
            yield batch
            batch = []
    if batch:
        yield batch


def build_from_index(conn: Connection) -> None:
    """Fill the lexicon from the FTS5 bodies (a new lexicon beside an existing index: the migration)."""
    clear(conn)
    for tbl, table in _TABLES.items():
        for batch in _bodies(conn, table):
            add_documents(conn, tbl, batch)


def space_stats(conn: Connection, space: int | None) -> topk.Space:
    if space is None:
        return topk.Space(0, 0)
    row = conn.execute("SELECT docs, tokens FROM lex_space WHERE id = ?", (space,)).fetchone()
    return topk.Space(int(row[0]), int(row[1])) if row else topk.Space(0, 0)


def bounds(conn: Connection, space: int | None, terms: Iterable[str]) -> dict[str, topk.TermBound]:
    """Each term's document count and score bound in ``space`` (a term it lacks: absent)."""
    out: dict[str, topk.TermBound] = {}
    if space is None:
        return out
    for term in dict.fromkeys(terms):
        row = conn.execute(
            "SELECT docs, max_tf, min_len FROM lex_term WHERE space = ? AND term = ?",
            (space, bm25.fold(term)),
        ).fetchone()
        if row is not None and int(row[0]) > 0:
            out[term] = topk.TermBound(term, int(row[0]), int(row[1]), int(row[2]))
    return out


def postings(conn: Connection, space: int, term: str) -> list[topk.Posting]:
    """A term's whole posting list in ``space``: (doc, tf, length)."""
    return [
        (int(r[0]), int(r[1]), int(r[2]))
        for r in conn.execute(
            "SELECT doc, tf, len FROM lex_posting WHERE space = ? AND term = ?", (space, bm25.fold(term))
        )
    ]


def probe(conn: Connection, space: int, term: str, docs: Sequence[int]) -> list[topk.Posting]:
    """A term's postings among ``docs`` in ``space`` (index seeks)."""
    key = bm25.fold(term)
    out: list[topk.Posting] = []
    for chunk in chunks(docs):
        out.extend(
            (int(r[0]), int(r[1]), int(r[2]))
            for r in conn.execute(
                f"SELECT doc, tf, len FROM lex_posting WHERE space = ? AND term = ? AND doc IN ({marks(chunk)})",
                [space, key, *chunk],
            )
        )
    return out
