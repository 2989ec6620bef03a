"""SQL for the lexicon: the scope-partitioned postings beside the FTS5 index, and the scope's statistics.

FTS5 (``memory_fts``, ``event_fts``) stays the index of record: what is searchable and its segmented
body. The lexicon is a rebuildable side structure in the same file (tables of schema v8), kept in the
same transactions by every write of :mod:`yiji.store.search` and rebuilt with it by ``reindex``. For each
*space* (a scope's memory index or its raw-event index) it holds what exact top-k retrieval reads
(:mod:`yiji.domain.topk`):

* ``lex_space``: the space's scope and index, its document count and its tokens in all;
* ``lex_term``: per term of a space, its document count;
* ``lex_posting``: per term and document, the frequency and the document's length, clustered by
  (space, term, frequency, length, newer document first), so a term's postings of one frequency are one
  range of the B-tree in impact order, whatever the average length.

A term's rows go when its last document goes, so deleted text leaves no word behind. The statistics are
the scope's own: another scope's data never changes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from yiji.db import Connection
from yiji.domain import bm25, topk
from yiji.store._sql import chunks, marks

__all__ = [
    "EVENTS",
    "MEMORIES",
    "add_documents",
    "build_from_index",
    "clear",
    "doc_counts",
    "frequencies",
    "groups",
    "remove_documents",
    "scan",
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
    terms: Counter[tuple[int, str]] = Counter()
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
            rows.append((space, term, tf, length, doc))
            terms[(space, term)] += 1
    conn.executemany(
        "INSERT OR IGNORE INTO lex_posting (space, term, tf, len, doc) VALUES (?, ?, ?, ?, ?)", rows
    )
    conn.executemany(
        "INSERT INTO lex_term (space, term, docs) VALUES (?, ?, ?) "
        "ON CONFLICT (space, term) DO UPDATE SET docs = docs + excluded.docs",
        [(space, term, n) for (space, term), n in terms.items()],
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
    postings: list[tuple[int, str, int, int, int]] = []
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
            for term, tf in counts.items():
                postings.append((space, term, tf, length, int(r[0])))
                terms[(space, term)] += 1
    conn.executemany(
        "DELETE FROM lex_posting WHERE space = ? AND term = ? AND tf = ? AND len = ? AND doc = ?", postings
    )
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


def doc_counts(conn: Connection, space: int | None, terms: Iterable[str]) -> dict[str, int]:
    """Each term's document count in ``space`` (0 for a term it lacks): one statement for all of them."""
    keys = {term: bm25.fold(term) for term in dict.fromkeys(terms)}
    found: dict[str, int] = {}
    if space is not None:
        for chunk in chunks(keys.values()):
            found.update(
                (str(r[0]), int(r[1]))
                for r in conn.execute(
                    f"SELECT term, docs FROM lex_term WHERE space = ? AND term IN ({marks(chunk)})",
                    [space, *chunk],
                )
            )
    return {term: max(found.get(key, 0), 0) for term, key in keys.items()}


def scan(conn: Connection, space: int) -> topk.Scan:
    """:data:`yiji.domain.topk.Scan` over ``space``: every posting of the weighted terms scored and
    summed per document inside SQLite, which hands back only the best (no row per posting crosses into
    Python)."""

    def best(
        weights: Mapping[str, float], average: float, n: int | None, required: Collection[str] = ()
    ) -> list[tuple[int, float]]:
        if not weights:
            return []
        values = ",".join("(?, ?)" for _ in weights)
        params: list[object] = [
            x for term, w in weights.items() for x in (bm25.fold(term), w * (bm25.K1 + 1))
        ]
        params += [bm25.K1 * (1 - bm25.B), bm25.K1 * bm25.B / average, space]
        holding = ""
        if required:  # the documents holding a required term: SQLite keeps them in a temporary index
            keys = [bm25.fold(term) for term in required]
            holding = (
                f"AND p.doc IN (SELECT doc FROM lex_posting WHERE space = ? AND term IN ({marks(keys)})) "
            )
            params += [space, *keys]
        cursor = conn.cursor()
        cursor.row_factory = None
        rows: list[tuple[int, float]] = cursor.execute(
            f"WITH q(term, lift) AS (VALUES {values}) "
            "SELECT p.doc, SUM(q.lift * p.tf / (p.tf + ? + ? * p.len)) AS s "
            f"FROM q JOIN lex_posting p ON p.space = ? AND p.term = q.term {holding}"
            "GROUP BY p.doc ORDER BY s DESC, p.doc DESC LIMIT ?",
            [*params, -1 if n is None else n],
        ).fetchall()
        return rows

    return best


_PAGE = 512


def _group(conn: Connection, space: int, term: str, tf: int) -> Iterator[tuple[int, int]]:
    """The postings of ``term`` with frequency ``tf``: (doc, length), shortest first, newer first among
    equals; read a page at a time, as the merge asks for them."""
    length, doc = -1, 0
    while True:
        page = conn.execute(
            "SELECT len, doc FROM lex_posting WHERE space = ? AND term = ? AND tf = ? "
            "AND (len > ? OR (len = ? AND doc < ?)) ORDER BY len, doc DESC LIMIT ?",
            (space, term, tf, length, length, doc if length >= 0 else 1 << 62, _PAGE),
        ).fetchall()
        for row in page:
            length, doc = int(row[0]), int(row[1])
            yield doc, length
        if len(page) < _PAGE:
            return


def groups(conn: Connection, space: int, term: str) -> list[topk.Group]:
    """A term's postings in ``space`` by frequency (:data:`yiji.domain.topk.Group`); the frequencies
    are found by skipping from one to the next along the index."""
    key = bm25.fold(term)
    out: list[topk.Group] = []
    tf = 0
    while True:
        row = conn.execute(
            "SELECT tf FROM lex_posting WHERE space = ? AND term = ? AND tf > ? ORDER BY tf LIMIT 1",
            (space, key, tf),
        ).fetchone()
        if row is None:
            return out
        tf = int(row[0])
        out.append((tf, _group(conn, space, key, tf)))


def frequencies(
    conn: Connection, tbl: int, docs: Sequence[int], terms: Sequence[str]
) -> dict[int, tuple[dict[str, int], int]]:
    """Each document's frequencies of ``terms`` and its length, from its index body (random access)."""
    keys = [(term, bm25.fold(term)) for term in terms]
    out: dict[int, tuple[dict[str, int], int]] = {}
    table = _TABLES[tbl]
    for chunk in chunks(docs):
        for r in conn.execute(f"SELECT rowid, body FROM {table} WHERE rowid IN ({marks(chunk)})", chunk):
            body = bm25.folded_body(str(r[1]))
            # the body's tokens counted once, each term then looked up (a term is one token: no space)
            tokens = Counter(body.split(" "))
            counts = {term: n for term, key in keys if (n := tokens.get(key, 0) if key else 0)}
            out[int(r[0])] = (counts, body.count(" ") + 1 if body else 0)
    return out
