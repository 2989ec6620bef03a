"""SQL for the lexical index (FTS5) and the bounded candidate lookups that recall uses.

``memory_fts`` rowid = ``memories.pk``: the memory's text, quote and gist plus (capped) its source event's
text and cue labels, so a query that matches the source finds the memory (source-event keys).
``event_fts`` rowid = ``events.seq``: only conversation events that have no derived memory (the raw-event
fallback); an event leaves it when its first memory is derived. Bodies are pre-segmented by
:mod:`yiji.domain.segment`; ``meta`` records which segmenter built the index. Every lookup here is bounded
by a ``LIMIT`` or an index seek: recall never loads all memory text.

Candidate queries take the FTS top-N first and filter scope and eligibility on those rows only (fast in
the usual one-scope database); when filtering leaves fewer than N while more matches exist, they repeat
with the filter joined into the FTS scan, so results never depend on other scopes' data.

Bounded candidates. Ranking every match by bm25 costs time in proportion to the posting lists of the
query's terms, which grow with the archive (a common word in a million events: hundreds of
milliseconds). When the terms' postings exceed :data:`BOUNDED_POSTINGS` (a :class:`Lexical` says so),
candidates come from two bounded stages, both scored with the full query's bm25, so scores stay
comparable and exact:

* *conjunctive*: the newest :data:`CONJUNCTIVE_WINDOW` documents holding two or more query terms, through
  the expression ``(a AND b) OR (a AND c) OR (b AND c) ...``. Each term appears in exactly ``k - 1``
  pairs, so this expression's bm25 is ``k - 1`` times the full query's for every document.
* *recent*: the newest :data:`RECENT_WINDOW` matches of the full query.

Each stage finds its window's start with ``ORDER BY rowid DESC LIMIT 1 OFFSET n`` (FTS5 walks posting
lists in rowid order and stops) and scores only ``rowid >=`` that start.

A document that holds a single common term and is older than the window is not a candidate: it is the
weakest lexical evidence there is. Below the bound, every match is ranked as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from yiji.db import Connection, Row
from yiji.domain import bm25
from yiji.store._sql import chunks, derived_from, marks

__all__ = [
    "BOUNDED_POSTINGS",
    "Lexical",
    "CONJUNCTIVE_WINDOW",
    "RECENT_WINDOW",
    "SEGMENTER_KEY",
    "clear_index",
    "doc_total",
    "cue_events",
    "event_positions",
    "event_candidates",
    "get_meta",
    "has_rows",
    "holds_only_events_from",
    "bodies",
    "index_event",
    "index_events",
    "index_memories",
    "count_for_index",
    "index_size",
    "keyed_memories",
    "index_memory",
    "iter_events_for_index",
    "iter_memories_for_index",
    "memories_of_events",
    "memory_candidates",
    "neighbours_of",
    "turns_in_ranges",
    "raw_turns",
    "related_pairs",
    "set_meta",
    "term_doc_counts",
    "top_rowid",
    "unindex_event",
]

SEGMENTER_KEY = "segmenter"

BOUNDED_POSTINGS = 5_000
"""Above this many postings (sum of the terms' document counts) candidates come from bounded stages."""
RECENT_WINDOW = 600
"""Matches of the full query scored by the recent stage, newest first."""
CONJUNCTIVE_WINDOW = 300
"""Documents holding two or more query terms scored by the conjunctive stage, newest first."""
MAX_PAIRED_TERMS = 4
"""The conjunctive stage pairs at most this many terms (6 pairs); longer queries use the recent stage."""


@dataclass(frozen=True)
class Lexical:
    """A query's FTS5 expression with its terms and their document counts in the table searched."""

    match: str
    terms: tuple[str, ...] = ()
    doc_counts: tuple[int, ...] = ()
    """Documents holding each term (same order as ``terms``); empty when unknown."""
    bound: int = BOUNDED_POSTINGS
    """Postings above which the candidate stages are bounded."""

    @property
    def postings(self) -> int:
        return sum(self.doc_counts)

    @property
    def bounded(self) -> bool:
        return self.postings > self.bound and len(self.doc_counts) == len(self.terms) > 0


def get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else None


def set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def holds_only_events_from(conn: Connection, first_seq: int) -> bool:
    """True when every event of the database has a seq of at least ``first_seq`` and there are no
    memories (the events just stored are all it holds)."""
    row = conn.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM events WHERE seq < ?) AND NOT EXISTS (SELECT 1 FROM memories)",
        (first_seq,),
    ).fetchone()
    return bool(row[0])


def has_rows(conn: Connection) -> bool:
    """True when the database holds any event or memory."""
    row = conn.execute("SELECT EXISTS (SELECT 1 FROM events) OR EXISTS (SELECT 1 FROM memories)").fetchone()
    return bool(row[0])


def index_event(conn: Connection, seq: int, body: str) -> None:
    conn.execute("INSERT INTO event_fts (rowid, body) VALUES (?, ?)", (seq, body))


def index_events(conn: Connection, bodies: Sequence[tuple[int, str]]) -> None:
    """Index several events: ``(seq, body)`` pairs."""
    conn.executemany("INSERT INTO event_fts (rowid, body) VALUES (?, ?)", bodies)


def index_memories(conn: Connection, bodies: Sequence[tuple[int, str]]) -> None:
    """Index several memories: ``(pk, body)`` pairs."""
    conn.executemany("INSERT INTO memory_fts (rowid, body) VALUES (?, ?)", bodies)


def index_memory(conn: Connection, pk: int, body: str) -> None:
    conn.execute("INSERT INTO memory_fts (rowid, body) VALUES (?, ?)", (pk, body))


def unindex_event(conn: Connection, seq: int) -> None:
    conn.execute("DELETE FROM event_fts WHERE rowid = ?", (seq,))


def clear_index(conn: Connection) -> None:
    conn.execute("DELETE FROM memory_fts")
    conn.execute("DELETE FROM event_fts")
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO event_fts (event_fts) VALUES ('optimize')")


_TABLES = ("memory_fts", "event_fts")


def term_doc_counts(conn: Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
    """How many documents of ``table`` contain each term (fts5vocab; cost grows with the count)."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_terms USING fts5vocab(main, {table}, row)")
    out = {}
    for term in terms:
        row = conn.execute(f"SELECT doc FROM temp.{table}_terms WHERE term = ?", (term,)).fetchone()
        out[term] = int(row[0]) if row else 0
    return out


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """SQLite's variable-length integer at ``at``: (value, next offset)."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def index_size(conn: Connection, table: str) -> tuple[int, int]:
    """(documents, tokens) of ``table``, read from FTS5's own totals record (one row, no scan)."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    blob = bytes(row[0])
    docs, at = _varint(blob, 0)
    tokens, _ = _varint(blob, at)
    return docs, tokens


def bodies(conn: Connection, table: str, rowids: Sequence[int]) -> dict[int, str]:
    """The indexed bodies (space-separated tokens) of these rows of ``table``."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    out: dict[int, str] = {}
    ids = list(dict.fromkeys(rowids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(
            (int(r[0]), str(r[1]))
            for r in conn.execute(f"SELECT rowid, body FROM {table} WHERE rowid IN ({marks})", chunk)
        )
    return out


def doc_total(conn: Connection, table: str) -> int:
    """Documents in ``table`` (counts its docsize rows; callers cache it)."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}_docsize").fetchone()[0])


def top_rowid(conn: Connection, table: str) -> int:
    if table not in _TABLES:
        raise ValueError("unknown index table")
    return int(conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {table}").fetchone()[0])


def _labels(conn: Connection) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for row in conn.execute("SELECT event_id, label FROM event_cues WHERE label IS NOT NULL ORDER BY rowid"):
        labels.setdefault(row[0], []).append(row[1])
    return labels


def count_for_index(conn: Connection) -> tuple[int, int]:
    """How many rows :func:`iter_events_for_index` and :func:`iter_memories_for_index` yield."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM events e WHERE e.category = 'conversation' "
        f"AND NOT {derived_from()}), "
        "(SELECT count(*) FROM memories m JOIN events e ON e.id = m.event_id WHERE m.review_state = 'accepted')"
    ).fetchone()
    return int(row[0]), int(row[1])


def iter_events_for_index(conn: Connection) -> Iterable[tuple[int, str, list[str]]]:
    """(seq, text, cue labels) of every conversation event without derived memories, in seq order."""
    labels = _labels(conn)
    for row in conn.execute(
        "SELECT e.seq, e.id, e.text FROM events e WHERE e.category = 'conversation' "
        f"AND NOT {derived_from()} ORDER BY e.seq"
    ):
        yield int(row[0]), str(row[2]), labels.get(row[1], [])


def iter_memories_for_index(conn: Connection) -> Iterable[tuple[int, list[str]]]:
    """(pk, [text, quote, gist, source text, cue labels...]) of every accepted memory, in pk order
    (proposals and rejected memories are not indexed)."""
    labels = _labels(conn)
    for row in conn.execute(
        "SELECT m.pk, m.text, m.quote, m.gist, e.text, e.id FROM memories m JOIN events e ON e.id = m.event_id "
        "WHERE m.review_state = 'accepted' ORDER BY m.pk"
    ):
        yield int(row[0]), [row[1], row[2], row[3] or "", row[4], *labels.get(row[5], [])]


def _validity(alias: str, at: str | None) -> tuple[str, list[Any]]:
    if at is None:
        return "", []
    return f" AND {alias}.valid_at <= ? AND ({alias}.invalid_at IS NULL OR {alias}.invalid_at > ?)", [at, at]


def _literal(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _newest(conn: Connection, table: str, match: str, window: int) -> list[int]:
    """Rowids of the newest ``window`` matches (FTS5 walks posting lists in rowid order and stops)."""
    return [
        int(r[0])
        for r in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?", (match, window)
        )
    ]


def _bounded_top(conn: Connection, table: str, lexical: Lexical, fetch: int) -> list[tuple[int, float]]:
    """The best ``fetch`` (rowid, bm25) of the conjunctive and recent stages (see the module notes)."""
    rowids = set(_newest(conn, table, lexical.match, RECENT_WINDOW))
    if 2 <= len(lexical.terms) <= MAX_PAIRED_TERMS:
        pairs = " OR ".join(
            f"({_literal(a)} AND {_literal(b)})"
            for i, a in enumerate(lexical.terms)
            for b in lexical.terms[i + 1 :]
        )
        rowids.update(_newest(conn, table, pairs, CONJUNCTIVE_WINDOW))
    if not rowids:
        return []
    bodies: list[tuple[int, str]] = []
    for chunk in chunks(sorted(rowids)):
        bodies += [
            (int(r[0]), str(r[1]))
            for r in conn.execute(f"SELECT id, c0 FROM {table}_content WHERE id IN ({marks(chunk)})", chunk)
        ]
    documents, tokens = index_size(conn, table)
    scored = bm25.scores(
        bodies,
        lexical.terms,
        dict(zip(lexical.terms, lexical.doc_counts, strict=True)),
        documents,
        tokens / documents if documents else 0.0,
    )
    return sorted(scored.items(), key=lambda item: item[1])[:fetch]


def _two_step(
    conn: Connection,
    table: str,
    lexical: Lexical,
    select: str,
    source: str,
    filters: str,
    params: list[Any],
    limit: int,
) -> list[Row]:
    """FTS top-``limit`` then filter; if filtering lost rows and more matches exist, filter in the scan."""
    fetch = limit + limit // 2
    match = lexical.match
    if lexical.bounded:
        top = _bounded_top(conn, table, lexical, fetch)
        if top:
            values = ",".join("(?, ?)" for _ in top)
            rows = conn.execute(
                f"WITH f(fid, r) AS (VALUES {values}) SELECT {select} FROM f {source} WHERE {filters} "
                "ORDER BY f.r",
                [*(x for pair in top for x in pair), *params],
            ).fetchall()
            if len(rows) >= limit:
                return rows[:limit]
        # other scopes' rows crowded the bounded stages out: rank every match of this scope instead
    fast = conn.execute(
        f"SELECT {select} FROM (SELECT rowid AS fid, bm25({table}) AS r FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY r LIMIT ?) f {source} WHERE {filters} ORDER BY f.r",
        [match, fetch, *params],
    ).fetchall()
    if len(fast) >= limit:
        return fast[:limit]
    seen = conn.execute(
        f"SELECT COUNT(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)", (match, fetch + 1)
    ).fetchone()[0]
    if seen <= fetch:
        return fast  # every match was looked at: the fast result is complete
    return conn.execute(
        f"SELECT {select} FROM (SELECT rowid AS fid, bm25({table}) AS r FROM {table} WHERE {table} MATCH ?) f "
        f"{source} WHERE {filters} ORDER BY f.r LIMIT ?",
        [match, *params, limit],
    ).fetchall()


def memory_candidates(
    conn: Connection,
    match: str | Lexical,
    *,
    persona_id: str,
    project_id: str,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
    limit: int,
) -> list[Row]:
    """Top ``limit`` eligible memories by bm25: accepted, not revoked, valid at ``valid_at_time`` (unless
    None)."""
    filters = "m.persona_id = ? AND m.project_id = ? AND m.revoked_at IS NULL AND m.review_state = 'accepted'"
    params: list[Any] = [persona_id, project_id]
    filters, params = _memory_window(filters, params, valid_at_time, kinds, since, until)
    return _two_step(
        conn,
        "memory_fts",
        match if isinstance(match, Lexical) else Lexical(match),
        "m.pk, m.id, m.event_id, m.basis, m.confidence, m.valid_at, f.r",
        "JOIN memories m ON m.pk = f.fid",
        filters,
        params,
        limit,
    )


def _memory_window(
    sql: str,
    params: list[Any],
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> tuple[str, list[Any]]:
    """``sql`` narrowed to memories (alias ``m``) valid at ``valid_at_time`` (unless None), of ``kinds``,
    whose ``valid_at`` falls in [``since``, ``until``)."""
    clause, extra = _validity("m", valid_at_time)
    return _kind_and_range(sql + clause, [*params, *extra], "m", "valid_at", kinds, since, until)


def _kind_and_range(
    sql: str,
    params: list[Any],
    alias: str,
    time_column: str,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> tuple[str, list[Any]]:
    if kinds:
        sql += f" AND {alias}.kind IN ({','.join('?' * len(kinds))})"
        params = [*params, *kinds]
    if since is not None:
        sql += f" AND {alias}.{time_column} >= ?"
        params = [*params, since]
    if until is not None:
        sql += f" AND {alias}.{time_column} < ?"
        params = [*params, until]
    return sql, params


def event_candidates(
    conn: Connection,
    match: str | Lexical,
    *,
    persona_id: str,
    project_id: str,
    occurred_before: str | None,
    since: str | None,
    until: str | None,
    limit: int,
) -> list[Row]:
    """Top ``limit`` raw-fallback events by bm25: (seq, id, session_id, occurred_at, r)."""
    filters = "e.persona_id = ? AND e.project_id = ? AND e.amended = 0"
    params: list[Any] = [persona_id, project_id]
    if occurred_before is not None:
        filters += " AND e.occurred_at <= ?"
        params.append(occurred_before)
    filters, params = _kind_and_range(filters, params, "e", "occurred_at", None, since, until)
    return _two_step(
        conn,
        "event_fts",
        match if isinstance(match, Lexical) else Lexical(match),
        "e.seq, e.id, e.session_id, e.occurred_at, e.role, f.r",
        "JOIN events e ON e.seq = f.fid",
        filters,
        params,
        limit,
    )


_ELIGIBLE = f"e.amended = 0 AND NOT {derived_from()}"


def turns_in_ranges(
    conn: Connection,
    persona_id: str,
    project_id: str,
    ranges: Sequence[tuple[str, int, int]],
    limit: int = 20000,
) -> list[tuple[str, int, str, str, bool]]:
    """Conversation turns of each ``(session, low, high)`` range: (session, seq, id, occurred_at, eligible).

    ``eligible`` means a raw-fallback candidate (not amended, no derived memory). One statement for all
    ranges, bounded by ``limit`` rows.
    """
    if not ranges:
        return []
    values = ",".join("(?, ?, ?)" for _ in ranges)
    rows = conn.execute(
        f"WITH r(session, lo, hi) AS (VALUES {values}) "
        f"SELECT e.session_id, e.seq, e.id, e.occurred_at, {_ELIGIBLE} FROM r CROSS JOIN events e "
        "ON e.persona_id = ? AND e.project_id = ? AND e.session_id = r.session AND e.seq BETWEEN r.lo AND r.hi "
        "WHERE e.category = 'conversation' LIMIT ?",
        [*(x for rng in ranges for x in rng), persona_id, project_id, limit],
    ).fetchall()
    return [(str(r[0]), int(r[1]), str(r[2]), str(r[3]), bool(r[4])) for r in rows]


def neighbours_of(
    conn: Connection,
    persona_id: str,
    project_id: str,
    anchors: Sequence[tuple[str, int]],
    window: int,
    *,
    after: bool = True,
) -> list[tuple[int, int, int, str, str, bool, str]]:
    """Up to ``window`` conversation turns on each side of each ``(session, seq)`` anchor, in its session
    (before it only, with ``after=False``).

    Rows are (anchor, seq, distance, id, occurred_at, eligible, role); distance is -1, -2, ... before the
    anchor and 1, 2, ... after it.
    """
    if not anchors:
        return []
    values = ",".join("(?, ?)" for _ in anchors)
    where = (
        "x.persona_id = ? AND x.project_id = ? AND x.session_id = a.session AND x.category = 'conversation'"
    )
    rows = conn.execute(
        f"WITH a(session, seq) AS (VALUES {values}) "
        f"SELECT a.seq, -1, e.seq, e.id, e.occurred_at, {_ELIGIBLE}, e.role FROM a CROSS JOIN events e ON e.seq IN "
        f"(SELECT x.seq FROM events x WHERE {where} AND x.seq < a.seq ORDER BY x.seq DESC LIMIT ?) "
        f"UNION ALL SELECT a.seq, 1, e.seq, e.id, e.occurred_at, {_ELIGIBLE}, e.role FROM a CROSS JOIN events e ON e.seq IN "
        f"(SELECT x.seq FROM events x WHERE {where} AND x.seq > a.seq ORDER BY x.seq LIMIT ?)",
        [
            *(x for anchor in anchors for x in anchor),
            persona_id,
            project_id,
            window,
            persona_id,
            project_id,
            window if after else 0,
        ],
    ).fetchall()
    by_side: dict[tuple[int, int], list[Row]] = {}
    for r in rows:
        by_side.setdefault((int(r[0]), int(r[1])), []).append(r)
    out: list[tuple[int, int, int, str, str, bool, str]] = []
    for (anchor, side), found in by_side.items():
        found.sort(key=lambda r: int(r[2]) * side)  # nearest first on either side
        out.extend(
            (anchor, int(r[2]), side * distance, str(r[3]), str(r[4]), bool(r[5]), str(r[6]))
            for distance, r in enumerate(found, 1)
        )
    return out


def event_positions(conn: Connection, event_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """(seq, session_id) of each of these events (a memory's place in its conversation)."""
    ids = list(dict.fromkeys(event_ids))
    out: dict[str, tuple[int, str]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        out.update(
            (str(r[0]), (int(r[1]), str(r[2])))
            for r in conn.execute(f"SELECT id, seq, session_id FROM events WHERE id IN ({marks})", chunk)
        )
    return out


def raw_turns(conn: Connection, seqs: Sequence[int]) -> dict[int, tuple[str, str, str, str, str]]:
    """(id, session_id, role, occurred_at, text) of each of these events, for the raw-event fallback."""
    out: dict[int, tuple[str, str, str, str, str]] = {}
    for chunk in chunks(list(seqs)):
        out.update(
            (int(r[0]), (str(r[1]), str(r[2]), str(r[3]), str(r[4]), str(r[5])))
            for r in conn.execute(
                f"SELECT seq, id, session_id, role, occurred_at, text FROM events WHERE seq IN ({marks(chunk)})",
                chunk,
            )
        )
    return out


def cue_events(conn: Connection, identifiers: Sequence[str], persona_id: str, project_id: str) -> list[Row]:
    """Events of the scope carrying a cue with one of these exact identifiers: (seq, id, eligible)."""
    if not identifiers:
        return []
    marks = ",".join("?" * len(identifiers))
    return conn.execute(
        "SELECT DISTINCT e.seq, e.id, e.session_id, e.occurred_at, e.role, e.category = 'conversation' AND e.amended = 0 "
        f"AND NOT {derived_from()} AS eligible "
        f"FROM event_cues c CROSS JOIN events e ON e.id = c.event_id WHERE c.identifier IN ({marks}) "
        "AND e.persona_id = ? AND e.project_id = ? ORDER BY e.seq LIMIT 50",
        [*identifiers, persona_id, project_id],
    ).fetchall()


def memories_of_events(
    conn: Connection,
    event_ids: Sequence[str],
    *,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> list[Row]:
    """Eligible memories derived from these events (source-event keys): pk, id, event_id, basis,
    confidence, valid_at, and the source's seq and session_id."""
    if not event_ids:
        return []
    marks = ",".join("?" * len(event_ids))
    sql = (
        "SELECT m.pk, m.id, m.event_id, m.basis, m.confidence, m.valid_at, e.seq, e.session_id "
        "FROM memories m JOIN events e ON e.id = m.event_id "
        f"WHERE m.event_id IN ({marks}) AND m.revoked_at IS NULL AND m.review_state = 'accepted'"
    )
    params: list[Any] = list(event_ids)
    sql, params = _memory_window(sql, params, valid_at_time, kinds, since, until)
    return conn.execute(sql + " ORDER BY m.pk LIMIT 200", params).fetchall()


def keyed_memories(
    conn: Connection,
    persona_id: str,
    project_id: str,
    fact_keys: Sequence[str],
    *,
    subject: str,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> list[Row]:
    """Eligible memories of ``subject`` under these fact keys (the ``memories_fact`` index), newest
    validity first: pk, id, event_id, basis, confidence, valid_at, invalid_at, fact_key, and the source's
    seq and session_id. Eligible: accepted (a proposal is not brought by a question until a person accepts
    it) and not revoked. With ``valid_at_time`` only the values valid then; without it their whole
    history."""
    if not fact_keys:
        return []
    marks = ",".join("?" * len(fact_keys))
    sql = (
        "SELECT m.pk, m.id, m.event_id, m.basis, m.confidence, m.valid_at, m.invalid_at, m.fact_key, e.seq, "
        "e.session_id "
        "FROM memories m JOIN events e ON e.id = m.event_id "
        f"WHERE m.persona_id = ? AND m.project_id = ? AND m.subject = ? AND m.fact_key IN ({marks}) "
        "AND m.revoked_at IS NULL AND m.review_state = 'accepted'"
    )
    params: list[Any] = [persona_id, project_id, subject, *fact_keys]
    sql, params = _memory_window(sql, params, valid_at_time, kinds, since, until)
    return conn.execute(sql + " ORDER BY m.valid_at DESC, m.pk DESC LIMIT 20", params).fetchall()


def related_pairs(
    conn: Connection,
    memory_ids: Sequence[str],
    *,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
) -> list[tuple[str, str, str, float, str, int, str]]:
    """(known id, neighbour id, basis, confidence, valid_at, source seq, source session) for eligible
    one-hop ``related`` neighbours."""
    if not memory_ids:
        return []
    marks = ",".join("?" * len(memory_ids))
    out: list[tuple[str, str, str, float, str, int, str]] = []
    for near, far in (("from_id", "to_id"), ("to_id", "from_id")):
        sql = (
            f"SELECT r.{near}, m.id, m.basis, m.confidence, m.valid_at, e.seq, e.session_id FROM relations r "
            f"JOIN memories m ON m.id = r.{far} JOIN events e ON e.id = m.event_id "
            f"WHERE r.type = 'related' AND r.{near} IN ({marks}) AND m.revoked_at IS NULL "
            "AND m.review_state = 'accepted'"
        )
        params: list[Any] = list(memory_ids)
        sql, params = _memory_window(sql, params, valid_at_time, kinds, since, until)
        out.extend(
            (str(r[0]), str(r[1]), str(r[2]), float(r[3]), str(r[4]), int(r[5]), str(r[6]))
            for r in conn.execute(sql + " LIMIT 400", params)
        )
    return out
