"""SQL for the lexicon: the scope-partitioned postings beside the FTS5 index, and the scope's statistics.

FTS5 (``memory_fts``, ``event_fts``) stays the index of record: what is searchable and its segmented
body. The lexicon is a rebuildable side structure in the same file (tables of schema v12 and v13), kept
in the same transactions by every write of :mod:`yiji.store.search` and rebuilt with it by ``reindex``.
For each *space* (a scope's memory index or its raw-event index) it holds what exact top-k retrieval
reads (:mod:`yiji.domain.topk`):

* ``lex_space``: the space's scope and index, its document count and its tokens in all, and its
  *recent* documents: those added since its terms' rows were last written, one line each
  (``doc length term tf term tf ...``), at most :data:`RECENT` bytes;
* ``lex_term``: per term of a space, its document count outside the recent documents and its *tail*:
  the postings written since its last blocks (the document and ``tf << 16 | length``, 8 bytes each),
  with their largest frequency and shortest length;
* ``lex_block``: per term, its postings in blocks of up to :data:`BLOCK` documents in document order,
  keyed by the block's first document: the document gaps, the frequencies and the lengths, each array of
  the narrowest width that holds it (the frequencies, nearly all 1, as the places and values of the
  others when that is shorter: schema v13 writes them so, and reads both); beside them the block's last
  document, its largest frequency and its shortest length (its impact bound).

Every posting is in exactly one of the three: a space's recent documents, a term's tail, a block. A
term's document count is its row's plus its recent documents'; a query reads the recent documents as
one more block of each of its terms (their bounds computed as read).

**Adding.** A document joins its space's recent documents: one statement on one row, however many terms
it has (a commit of one event writes one page of the lexicon, not one per term). When they would pass
:data:`RECENT` bytes, they go, with the documents being added, into their terms' rows in key order (a new
term's row is appended to its page rather than splitting one): short runs of new postings appended to the
tails by SQLite without reading the rows, then each tail that reached :data:`TAIL` postings, and each
longer run (a posting whose numbers do not fit a tail entry too), into the blocks. New documents have
increasing ids (``memories.pk``, ``events.seq``), so blocks grow at the end.

**Removing.** A removal of documents, however many (a derived batch takes its events out of the
raw-event index at once), rewrites its space's recent documents once, reads and writes each of the other
documents' terms once, and rewrites each block that holds one of them once. A term's rows go when its
last document goes, and a document's line goes with it, so deleted text leaves no word behind. The
statistics are the scope's own: another scope's data never changes them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import itemgetter

from yiji.db import Connection
from yiji.domain import bm25, topk
from yiji.store import postings as codec
from yiji.store._sql import chunks, marks

__all__ = [
    "BLOCK",
    "EVENTS",
    "RECENT",
    "TAIL",
    "MEMORIES",
    "add_documents",
    "blocks",
    "build_from_index",
    "clear",
    "doc_counts",
    "remove_documents",
    "scope",
    "space_of",
    "space_stats",
    "terms",
]

MEMORIES = 0
"""The memory index (documents are ``memories.pk``)."""
EVENTS = 1
"""The raw-event index (documents are ``events.seq``)."""
BLOCK = 128
"""Postings a block holds (at most), and a tail before it becomes a block."""

_TABLES = {MEMORIES: "memory_fts", EVENTS: "event_fts"}
_OWNERS = {
    MEMORIES: "SELECT pk, persona_id, project_id FROM memories WHERE pk IN ({})",
    EVENTS: "SELECT seq, persona_id, project_id FROM events WHERE seq IN ({})",
}
RECENT = 3072
"""Bytes of a space's recent documents (``lex_space.recent``) before they go into their terms' rows:
the row stays within one page."""
_FEW = 64
"""Documents added at once past which they go into their terms' rows (with the recent ones) without
trying to join the recent ones first (whose bytes they would pass anyway)."""
TAIL = 48
"""Postings a tail holds before it becomes a block (its 8-byte entries stay inside the row's page)."""


# -- writing ---------------------------------------------------------------------------------------


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


def _block_rows(space: int, term: str, postings: Sequence[topk.Posting]) -> list[tuple[object, ...]]:
    """``lex_block`` rows of ``postings`` (document order), :data:`BLOCK` at a time."""
    rows: list[tuple[object, ...]] = []
    for start in range(0, len(postings), BLOCK):
        # a block's postings transposed alone (a whole long list as arguments to zip costs far more)
        part, part_tfs, part_lengths = zip(*postings[start : start + BLOCK], strict=True)
        rows.append(
            (
                space,
                term,
                part[0],
                part[-1],
                len(part),
                max(part_tfs),
                min(part_lengths),
                codec.encoded(part, part_tfs, part_lengths),
            )
        )
    return rows


_INSERT_BLOCKS = "INSERT INTO lex_block (space, term, first, last, n, max_tf, min_len, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


def _write_blocks(conn: Connection, space: int, term: str, postings: Sequence[topk.Posting]) -> None:
    """Store ``postings`` (document order, none in another block's range) as new blocks."""
    conn.executemany(_INSERT_BLOCKS, _block_rows(space, term, postings))


def _block_holding(conn: Connection, space: int, term: str, doc: int) -> tuple[int, int, bytes] | None:
    """(first, count, data) of the block of ``term`` whose range holds ``doc`` (the first block for a
    document before every block), or None when the term has no block."""
    row = conn.execute(
        "SELECT first, n, data FROM lex_block WHERE space = ? AND term = ? AND first <= ? "
        "ORDER BY first DESC LIMIT 1",
        (space, term, doc),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT first, n, data FROM lex_block WHERE space = ? AND term = ? ORDER BY first LIMIT 1",
            (space, term),
        ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), bytes(row[2]))


def _rewrite_block(
    conn: Connection, space: int, term: str, first: int, postings: Sequence[topk.Posting]
) -> None:
    conn.execute("DELETE FROM lex_block WHERE space = ? AND term = ? AND first = ?", (space, term, first))
    if postings:
        _write_blocks(conn, space, term, sorted(postings))


def _place(conn: Connection, space: int, term: str, postings: Sequence[topk.Posting]) -> None:
    """Put ``postings`` (document order) into the blocks: those past the last block as new blocks (the
    last block filled up first while it has room), any other (a document indexed again) into the block
    whose range holds it."""
    last_block = (  # blocks do not overlap: the last one ends past every other
        "SELECT first, last, n, data FROM lex_block WHERE space = ? AND term = ? ORDER BY first DESC LIMIT 1"
    )
    end = conn.execute(last_block, (space, term)).fetchone()
    last = -1 if end is None else int(end[1])
    early = [p for p in postings if p[0] <= last]
    for posting in early:
        held = _block_holding(conn, space, term, posting[0])
        assert held is not None
        first, count, data = held
        _rewrite_block(conn, space, term, first, [*codec.postings(first, count, data), posting])
    late = [p for p in postings if p[0] > last]
    if not late:
        return
    if early:
        end = conn.execute(last_block, (space, term)).fetchone()
    if end is None or int(end[2]) >= BLOCK:
        _write_blocks(conn, space, term, late)
        return
    first = int(end[0])  # the last block filled up in place (its key stays), the rest as new blocks
    rows = _block_rows(space, term, [*codec.postings(first, int(end[2]), bytes(end[3])), *late])
    conn.execute(
        "UPDATE lex_block SET last = ?, n = ?, max_tf = ?, min_len = ?, data = ? "
        "WHERE space = ? AND term = ? AND first = ?",
        (*rows[0][3:], space, term, first),
    )
    conn.executemany(_INSERT_BLOCKS, rows[1:])


def _fits(posting: topk.Posting) -> bool:
    """Whether a posting's numbers fit a tail entry."""
    return posting[0] < 1 << 32 and posting[1] < 1 << 16 and posting[2] < 1 << 16


Counted = tuple[int, int, Mapping[str, int]]
"""A document as the lexicon adds it: (doc, length, term -> frequency in first-seen order)."""


def _counted(doc: int, body: str) -> Counted:
    """A document's length and term frequencies (tokens folded as FTS5 folds them), counted once; a
    document without a repeated term (most) needs no counting at all."""
    tokens = bm25.folded_body(body).split()
    counts: Mapping[str, int] = dict.fromkeys(tokens, 1)
    if len(counts) < len(tokens):
        counts = Counter(tokens)
    return doc, len(tokens), counts


def add_documents(
    conn: Connection,
    tbl: int,
    documents: Sequence[tuple[int, str]],
    *,
    recent: bool = True,
    scopes: Sequence[tuple[str, str]] | None = None,
) -> None:
    """Add ``(doc, body)`` pairs of index ``tbl``: each body's terms counted once, each scope's documents
    to its space. ``scopes``: each document's (persona, project) when the caller holds them (the event
    writer, which has just stored the rows); otherwise they are read from the rows.

    A space's new documents join its recent ones (one statement on one row, :func:`_join_recent`); when
    those would pass :data:`RECENT` bytes they all go into their terms' rows and blocks together
    (:func:`_add_to_space`). ``recent`` false: straight into the terms' rows (a fill of v12's tables, which
    have no recent documents)."""
    if not documents:
        return
    if scopes is None:
        owners = _owners(conn, tbl, [doc for doc, _ in documents])
        found = [owners.get(doc) for doc, _ in documents]
    else:
        found = list(scopes)
    added: dict[tuple[str, str], list[Counted]] = {}
    for (doc, body), owner in zip(documents, found, strict=True):
        if owner is not None:
            added.setdefault(owner, []).append(_counted(doc, body))
    for owner, docs in added.items():
        few = recent and len(docs) <= _FEW
        if few and _join_recent(conn, tbl, owner, docs):
            continue
        space = space_of(conn, owner[0], owner[1], tbl)
        if space is None:  # the scope's first documents: a new space, whose recent documents they start
            space = space_of(conn, owner[0], owner[1], tbl, create=True) or 0
            if few and _join_recent(conn, tbl, owner, docs):
                continue
        _add_to_space(conn, space, docs, with_recent=recent)


def _join_recent(conn: Connection, tbl: int, owner: tuple[str, str], docs: Sequence[Counted]) -> bool:
    """Append ``docs`` to their space's recent documents in one statement (found by its scope); False,
    with nothing written, when the space does not exist yet or the documents would pass :data:`RECENT`."""
    lines = "".join([codec.recent_line(*doc) for doc in docs])
    return (
        conn.execute(
            "UPDATE lex_space SET docs = docs + ?, tokens = tokens + ?, recent = recent || ? "
            "WHERE persona_id = ? AND project_id = ? AND tbl = ? AND length(CAST(recent AS BLOB)) + ? < ?",
            (len(docs), sum(doc[1] for doc in docs), lines, *owner, tbl, len(lines.encode()), RECENT),
        ).rowcount
        > 0
    )


def _add_to_space(conn: Connection, space: int, docs: Sequence[Counted], *, with_recent: bool) -> None:
    """Put ``docs`` into their terms' rows and blocks (:func:`_add`), with the space's recent documents
    when ``with_recent`` (so the blocks keep growing at the end), which leaves those empty."""
    ordered = docs
    if with_recent:
        row = conn.execute("SELECT recent FROM lex_space WHERE id = ?", (space,)).fetchone()
        held = [
            (doc, length, codec.recent_counts(words))
            for doc, length, words in codec.recent_lines(str(row[0]))
        ]
        if held:
            ordered = [*held, *docs]
    terms: defaultdict[str, list[topk.Posting]] = defaultdict(list)
    term_list = terms.__getitem__
    for doc, length, counts in sorted(ordered, key=itemgetter(0)):
        if len(counts) == length:  # every frequency 1: one posting shared by all its terms, appended in C
            deque(map(list.append, map(term_list, counts), repeat((doc, 1, length))), 0)
        else:
            for term, tf in counts.items():
                terms[term].append((doc, tf, length))
    # a document's id and length fit a tail entry, so do its postings (a frequency is at most the length)
    fits = max(map(itemgetter(0), ordered)) < 1 << 32 and max(map(itemgetter(1), ordered)) < 1 << 16
    _add(conn, space, terms, fits=fits)
    emptied = ", recent = ''" if with_recent else ""  # (v12's fill runs before the column exists)
    sql = f"UPDATE lex_space SET docs = docs + ?, tokens = tokens + ?{emptied} WHERE id = ?"
    conn.execute(sql, (len(docs), sum(doc[1] for doc in docs), space))


_APPEND = (
    "INSERT INTO lex_term (space, term, docs, tail, tail_tf, tail_len) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (space, term) DO UPDATE SET docs = docs + excluded.docs, "
    "tail = CAST(tail || excluded.tail AS BLOB), tail_tf = max(tail_tf, excluded.tail_tf), "
    "tail_len = min(tail_len, excluded.tail_len)"
)
"""A term's new postings appended to its tail, its row created when new: written, never read first
(one ``executemany``: a multi-row upsert whose ``RETURNING`` hands back the full tails measured 8-10%
slower per row than this and the lookup of the full tails after it)."""
_SET = (
    "INSERT INTO lex_term (space, term, docs, tail, tail_tf, tail_len) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (space, term) DO UPDATE SET docs = excluded.docs, tail = excluded.tail, "
    "tail_tf = excluded.tail_tf, tail_len = excluded.tail_len"
)


def _add(conn: Connection, space: int, added: Mapping[str, list[topk.Posting]], *, fits: bool) -> None:
    """Add postings (term -> postings in document order; ``fits``: all known to fit a tail entry) to one
    space, the terms in key order (a new term's row is appended to its page rather than splitting one).
    A term with fewer than :data:`TAIL` new postings has them appended to its tail by SQLite (one
    ``executemany``, no row read into Python); the tails that reach :data:`TAIL` postings are then read
    and go into the blocks, as do the other terms' postings (with any tail they had)."""
    pack = codec.TAIL_ENTRY.pack
    appended: list[tuple[object, ...]] = []
    merged: list[str] = []
    for term in sorted(added):
        postings = added[term]
        if len(postings) == 1 and (fits or _fits(postings[0])):
            doc, tf, length = postings[0]
            appended.append((space, term, 1, pack(doc, tf << 16 | length), tf, length))
        elif len(postings) < TAIL and (fits or all(map(_fits, postings))):
            tail = b"".join([pack(doc, tf << 16 | length) for doc, tf, length in postings])
            tfs = [tf for _, tf, _ in postings]
            lengths = [length for _, _, length in postings]
            appended.append((space, term, len(postings), tail, max(tfs), min(lengths)))
        else:
            merged.append(term)
    conn.executemany(_APPEND, appended)
    full = [
        (str(r[0]), int(r[1]), codec.tail(bytes(r[2])))
        for chunk in chunks([str(row[1]) for row in appended])
        for r in conn.execute(
            f"SELECT term, docs, tail FROM lex_term WHERE space = ? AND term IN ({marks(chunk)}) "
            "AND length(tail) >= ?",
            [space, *chunk, TAIL * codec.TAIL_ENTRY.size],
        )
    ]
    for chunk in chunks(merged):
        stored = {
            str(r[0]): (int(r[1]), bytes(r[2]))
            for r in conn.execute(
                f"SELECT term, docs, tail FROM lex_term WHERE space = ? AND term IN ({marks(chunk)})",
                [space, *chunk],
            )
        }
        for term in chunk:
            docs, tail = stored.get(term, (0, b""))
            postings = added[term]
            merging = sorted([*codec.tail(tail), *postings]) if tail else postings
            full.append((term, docs + len(postings), merging))
    blocks: list[tuple[object, ...]] = []
    for term, docs, postings in full:
        if docs > len(postings):  # the term has blocks: fill its last one, place any earlier document
            _place(conn, space, term, postings)
        else:
            blocks.extend(_block_rows(space, term, postings))
    conn.executemany(_SET, [(space, term, docs, b"", 0, codec.NO_LENGTH) for term, docs, _ in full])
    conn.executemany(_INSERT_BLOCKS, blocks)


def remove_documents(conn: Connection, tbl: int, docs: Sequence[int]) -> None:
    """Remove these documents of index ``tbl``; call before their FTS5 rows (their bodies) and their
    authoritative rows (their scope) are deleted. Documents not in the index are ignored.

    However many documents go at once, each term is read and written once and each of its blocks that
    holds one of them is rewritten once (:func:`_remove`), so removing a batch costs about what adding
    it did; a recent document (:data:`RECENT`) only leaves its space's row."""
    if not docs:
        return
    owners = _owners(conn, tbl, docs)
    table = _TABLES[tbl]
    spaces: dict[tuple[str, str], int | None] = {}
    gone: dict[int, dict[int, Mapping[str, int]]] = {}
    totals: dict[int, list[int]] = {}
    for chunk in chunks(docs):
        for r in conn.execute(f"SELECT rowid, body FROM {table} WHERE rowid IN ({marks(chunk)})", chunk):
            doc = int(r[0])
            owner = owners.get(doc)
            if owner is None:
                continue
            if owner not in spaces:
                spaces[owner] = space_of(conn, owner[0], owner[1], tbl)
            space = spaces[owner]
            if space is None:
                continue
            _, length, counts = _counted(doc, str(r[1]))
            total = totals.setdefault(space, [0, 0])
            total[0] += 1
            total[1] += length
            gone.setdefault(space, {})[doc] = counts
    for space, removed in gone.items():
        recent = str(conn.execute("SELECT recent FROM lex_space WHERE id = ?", (space,)).fetchone()[0])
        if recent:
            lines = recent.split("\n")
            kept = [line for line in lines if line and int(line.split(" ", 1)[0]) not in removed]
            if len(kept) < len(lines) - 1:
                for line in lines:
                    if line:
                        removed.pop(int(line.split(" ", 1)[0]), None)
                conn.execute(
                    "UPDATE lex_space SET recent = ? WHERE id = ?",
                    ("".join(f"{line}\n" for line in kept), space),
                )
        terms: dict[str, list[int]] = {}
        for doc, counts in removed.items():
            for term in counts:
                terms.setdefault(term, []).append(doc)
        _remove(conn, space, terms)
    conn.executemany(
        "UPDATE lex_space SET docs = max(docs - ?, 0), tokens = max(tokens - ?, 0) WHERE id = ?",
        [(docs_, tokens, space) for space, (docs_, tokens) in totals.items()],
    )


def _remove(conn: Connection, space: int, removed: Mapping[str, Sequence[int]]) -> None:
    """Remove documents from the tails and blocks of the terms of one space (term -> its documents):
    the terms' rows are read in one statement per :data:`~yiji.store._sql.CHUNK` terms and written in
    one ``executemany``; a block is read and rewritten once, whatever number of the documents it holds."""
    rows: list[tuple[str, int, bytes]] = []
    for chunk in chunks(removed):
        rows.extend(
            (str(r[0]), int(r[1]), bytes(r[2]))
            for r in conn.execute(
                f"SELECT term, docs, tail FROM lex_term WHERE space = ? AND term IN ({marks(chunk)})",
                [space, *chunk],
            )
        )
    emptied: list[tuple[int, str]] = []
    updates: list[tuple[int, bytes, int, int, int, str]] = []
    for term, count, data in rows:
        docs = set(removed[term])
        tail = codec.tail(data)
        kept = [p for p in tail if p[0] not in docs]
        found = (
            len(tail)
            - len(kept)
            + _remove_from_blocks(conn, space, term, sorted(docs - {p[0] for p in tail}))
        )
        if count - found <= 0:
            emptied.append((space, term))
            continue
        if found:
            updates.append(
                (
                    found,
                    b"".join(codec.TAIL_ENTRY.pack(doc, tf << 16 | length) for doc, tf, length in kept),
                    max((tf for _, tf, _ in kept), default=0),
                    min((length for _, _, length in kept), default=codec.NO_LENGTH),
                    space,
                    term,
                )
            )
    conn.executemany("DELETE FROM lex_term WHERE space = ? AND term = ?", emptied)
    conn.executemany("DELETE FROM lex_block WHERE space = ? AND term = ?", emptied)
    conn.executemany(
        "UPDATE lex_term SET docs = docs - ?, tail = ?, tail_tf = ?, tail_len = ? WHERE space = ? AND term = ?",
        updates,
    )


def _remove_from_blocks(conn: Connection, space: int, term: str, docs: Sequence[int]) -> int:
    """Remove ``docs`` (in document order) from the blocks of one term; returns how many were there.
    Each block that holds one of them is found by one lookup and rewritten once."""
    found = 0
    at = 0
    while at < len(docs):
        row = conn.execute(
            "SELECT first, last, n, data FROM lex_block WHERE space = ? AND term = ? AND first <= ? "
            "ORDER BY first DESC LIMIT 1",
            (space, term, docs[at]),
        ).fetchone()
        if row is None or int(row[1]) < docs[at]:  # in no block's range
            at += 1
            continue
        first, last = int(row[0]), int(row[1])
        end = bisect_right(docs, last, at)
        held = set(docs[at:end])
        at = end
        postings = codec.postings(first, int(row[2]), bytes(row[3]))
        left = [p for p in postings if p[0] not in held]
        if len(left) < len(postings):
            found += len(postings) - len(left)
            _rewrite_block(conn, space, term, first, left)
    return found


def clear(conn: Connection) -> None:
    conn.execute("DELETE FROM lex_block")
    conn.execute("DELETE FROM lex_term")
    conn.execute("DELETE FROM lex_space")


def _bodies(conn: Connection, table: str) -> Iterator[list[tuple[int, str]]]:
    batch: list[tuple[int, str]] = []
    for r in conn.execute(f"SELECT rowid, body FROM {table} ORDER BY rowid"):
        batch.append((int(r[0]), str(r[1])))
        if len(batch) >= 2000:
            yield batch
            batch = []
    if batch:
        yield batch


def build_from_index(conn: Connection) -> None:
    """Fill the lexicon from the FTS5 bodies (a new lexicon beside an existing index: schema v12's
    step, which runs before v13's recent documents exist, so every posting goes into its term's rows)."""
    clear(conn)
    for tbl, table in _TABLES.items():
        for batch in _bodies(conn, table):
            add_documents(conn, tbl, batch, recent=False)


def superseded(conn: Connection) -> None:
    """Schema v8's fill of its lexicon tables, which schema v12 replaces and fills itself: nothing."""
    del conn


# -- reading ---------------------------------------------------------------------------------------


def scope(conn: Connection, persona_id: str, project_id: str, tbl: int) -> tuple[int | None, topk.Space]:
    """The scope's space in index ``tbl`` and its statistics: one statement."""
    row = conn.execute(
        "SELECT id, docs, tokens FROM lex_space WHERE persona_id = ? AND project_id = ? AND tbl = ?",
        (persona_id, project_id, tbl),
    ).fetchone()
    if row is None:
        return None, topk.Space(0, 0)
    return int(row[0]), topk.Space(int(row[1]), int(row[2]))


def space_stats(conn: Connection, space: int | None) -> topk.Space:
    if space is None:
        return topk.Space(0, 0)
    row = conn.execute("SELECT docs, tokens FROM lex_space WHERE id = ?", (space,)).fetchone()
    return topk.Space(int(row[0]), int(row[1])) if row else topk.Space(0, 0)


def _recent(conn: Connection, space: int, keys: Iterable[str]) -> dict[str, list[topk.Posting]]:
    """The postings of ``keys`` (folded terms) among the space's recent documents, in document order."""
    row = conn.execute("SELECT recent FROM lex_space WHERE id = ?", (space,)).fetchone()
    wanted = set(keys)
    out: dict[str, list[topk.Posting]] = {}
    if row is None or not row[0] or not wanted:
        return out
    for doc, length, terms in sorted(codec.recent_lines(str(row[0]))):
        for term, tf in zip(terms[::2], terms[1::2], strict=True):
            if term in wanted:
                out.setdefault(term, []).append((doc, int(tf), length))
    return out


def terms(conn: Connection, space: int) -> list[str]:
    """Every term the space holds (its rows, and its recent documents'), in order."""
    found = {
        str(r[0])
        for r in conn.execute(
            "SELECT term FROM lex_term WHERE space = ? UNION SELECT term FROM lex_block WHERE space = ?",
            (space, space),
        )
    }
    row = conn.execute("SELECT recent FROM lex_space WHERE id = ?", (space,)).fetchone()
    for _, _, words in codec.recent_lines(str(row[0]) if row else ""):
        found.update(words[::2])
    return sorted(found)


def doc_counts(conn: Connection, space: int | None, terms: Iterable[str]) -> dict[str, int]:
    """Each term's document count in ``space`` (0 for a term it lacks): one statement for all of them,
    and one for the space's recent documents."""
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
        for term, postings in _recent(conn, space, keys.values()).items():
            found[term] = found.get(term, 0) + len(postings)
    return {term: max(found.get(key, 0), 0) for term, key in keys.items()}


def blocks(conn: Connection, space: int, terms: Sequence[str]) -> Mapping[str, list[topk.Block]]:
    """Each term's blocks in ``space`` (its tail as one more, and its postings among the space's recent
    documents as one more), decoded only when asked: one statement for all of them, and one for the
    recent documents."""
    keys: dict[str, list[str]] = {}
    for term in terms:
        keys.setdefault(bm25.fold(term), []).append(term)
    out: dict[str, list[topk.Block]] = {term: [] for term in terms}
    cursor = conn.cursor()
    cursor.row_factory = None
    for chunk in chunks(list(keys)):
        listed = marks(chunk)
        for term, first, last, count, max_tf, min_len, data in cursor.execute(
            "SELECT term, first, last, n, max_tf, min_len, data FROM lex_block "
            f"WHERE space = ? AND term IN ({listed}) UNION ALL "
            "SELECT term, -1, -1, 0, tail_tf, tail_len, tail FROM lex_term "
            f"WHERE space = ? AND term IN ({listed}) AND length(tail) > 0",
            [space, *chunk, space, *chunk],
        ):
            if count:
                block = codec.block(first, last, count, max_tf, min_len, data)
            else:
                block = codec.tail_block(data, max_tf, min_len)
            for name in keys[term]:
                out[name].append(block)
    for term, postings in _recent(conn, space, keys).items():
        block = topk.block_of(postings)
        for name in keys[term]:
            out[name].append(block)
    return out
