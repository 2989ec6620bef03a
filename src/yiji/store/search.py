"""SQL for the lexical index (FTS5) and the bounded candidate lookups that recall uses.

``memory_fts`` rowid = ``memories.pk``: the memory's text, quote and gist plus (capped) its source event's
text and cue labels, so a query that matches the source finds the memory (source-event keys).
``event_fts`` rowid = ``events.seq``: only conversation events that have no derived memory (the raw-event
fallback); an event leaves it when its first memory is derived. Bodies are pre-segmented by
:mod:`yiji.domain.segment`; ``meta`` records which segmenter built the index. Every lookup here is bounded
by a ``LIMIT`` or an index seek: recall never loads all memory text.

Candidates are exact (:func:`memory_candidates`, :func:`event_candidates`): the best eligible documents of
the scope by BM25 over the scope's own statistics, exactly the ones exhaustive scoring of every match in
the scope would give, found by MaxScore over the lexicon's blocks of postings (:mod:`yiji.domain.topk`,
:mod:`yiji.store.lexicon`). No match is left
out for its age: age counts only through the ranking's freshness factor. Every write to an FTS5 table here
(and the deletions of :mod:`yiji.store.lifecycle`) keeps the lexicon in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from yiji.db import Connection, Row
from yiji.domain import topk
from yiji.store import lexicon
from yiji.store import postings as codec
from yiji.store._sql import chunks, derived_from, marks

__all__ = [
    "SEGMENTER_KEY",
    "ScopeIndex",
    "clear_index",
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
    "keyed_memories",
    "index_memory",
    "iter_events_for_index",
    "iter_memories_for_index",
    "memories_of_events",
    "memory_candidates",
    "neighbours_of",
    "turns_beside",
    "turns_in_ranges",
    "raw_turns",
    "related_pairs",
    "set_meta",
    "scope_stats",
    "speakers",
    "unindex_event",
    "unindex_events",
    "unindex_memories",
]

SEGMENTER_KEY = "segmenter"


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


def index_event(conn: Connection, seq: int, body: str, scope: tuple[str, str] | None = None) -> None:
    index_events(conn, [(seq, body)], None if scope is None else [scope])


def index_events(
    conn: Connection, bodies: Sequence[tuple[int, str]], scopes: Sequence[tuple[str, str]] | None = None
) -> None:
    """Index several events: ``(seq, body)`` pairs; ``scopes``, when the caller holds them, each event's
    (persona, project), so the lexicon need not read them back."""
    conn.executemany("INSERT INTO event_fts (rowid, body) VALUES (?, ?)", bodies)
    lexicon.add_documents(conn, lexicon.EVENTS, bodies, scopes=scopes)


def index_memories(conn: Connection, bodies: Sequence[tuple[int, str]]) -> None:
    """Index several memories: ``(pk, body)`` pairs."""
    conn.executemany("INSERT INTO memory_fts (rowid, body) VALUES (?, ?)", bodies)
    lexicon.add_documents(conn, lexicon.MEMORIES, bodies)


def index_memory(conn: Connection, pk: int, body: str) -> None:
    index_memories(conn, [(pk, body)])


def unindex_event(conn: Connection, seq: int) -> None:
    unindex_events(conn, [seq])


def unindex_events(conn: Connection, seqs: Sequence[int]) -> None:
    """Remove these events from the raw-event index (before their rows are deleted, if they are)."""
    lexicon.remove_documents(conn, lexicon.EVENTS, seqs)
    for chunk in chunks(seqs):
        conn.execute(f"DELETE FROM event_fts WHERE rowid IN ({marks(chunk)})", chunk)


def unindex_memories(conn: Connection, pks: Sequence[int]) -> None:
    """Remove these memories from the memory index (before their rows are deleted, if they are)."""
    lexicon.remove_documents(conn, lexicon.MEMORIES, pks)
    for chunk in chunks(pks):
        conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({marks(chunk)})", chunk)


def clear_index(conn: Connection) -> None:
    conn.execute("DELETE FROM memory_fts")
    conn.execute("DELETE FROM event_fts")
    lexicon.clear(conn)
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO event_fts (event_fts) VALUES ('optimize')")


_TABLES = ("memory_fts", "event_fts")
_SPACES = {"memory_fts": lexicon.MEMORIES, "event_fts": lexicon.EVENTS}


@dataclass(frozen=True)
class ScopeIndex:
    """What one scope's index (``table``) knows about a query's terms: its lexicon space (None: the scope
    has no document there), its documents and tokens in all, and each term's document count."""

    table: str
    space: int | None
    stats: topk.Space
    doc_counts: dict[str, int]


def scope_stats(
    conn: Connection, persona_id: str, project_id: str, table: str, terms: Sequence[str]
) -> ScopeIndex:
    """The scope's statistics in ``table`` for ``terms`` (the lexicon's; index seeks, no scan). Handed to
    :func:`memory_candidates` or :func:`event_candidates`, they are not read again."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    space, stats = lexicon.scope(conn, persona_id, project_id, _SPACES[table])
    return ScopeIndex(table, space, stats, lexicon.doc_counts(conn, space, terms))


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


def _exact_top(
    conn: Connection,
    table: str,
    terms: Sequence[str],
    select: str,
    source: str,
    filters: str,
    params: list[Any],
    persona_id: str,
    project_id: str,
    limit: int,
    index: ScopeIndex | None,
) -> list[Row]:
    """The best ``limit`` documents of the scope's ``table`` passing ``filters`` (see the module notes):
    rows of ``select`` over ``f(fid, r)`` (``r`` the negated BM25, lower is better, as FTS5 ranks).
    ``index``: the scope's statistics already read for these terms (:func:`scope_stats`), or None."""
    if index is None or index.table != table or not set(terms) <= index.doc_counts.keys():
        index = scope_stats(conn, persona_id, project_id, table, terms)
    space = index.space
    if space is None or not terms or limit <= 0:
        return []
    found: dict[int, Row] = {}

    def eligible(docs: list[int]) -> set[int]:
        allowed: set[int] = set()
        for chunk in chunks(docs):
            values = ",".join("(?, 0)" for _ in chunk)
            for row in conn.execute(
                f"WITH f(fid, r) AS (VALUES {values}) SELECT f.fid AS doc, {select} FROM f {source} "
                f"WHERE {filters}",
                [*chunk, *params],
            ):
                allowed.add(int(row["doc"]))
                found[int(row["doc"])] = row
        return allowed

    top = topk.top_k(
        index.stats,
        {term: index.doc_counts[term] for term in dict.fromkeys(terms)},
        lambda wanted: lexicon.blocks(conn, space, wanted),
        eligible,
        limit,
        unpack=codec.unpack,
    )
    out = []
    for doc, score in top:
        row = dict(found[doc])
        row["r"] = -score
        out.append(row)
    return out  # type: ignore[return-value]


def memory_candidates(
    conn: Connection,
    terms: Sequence[str],
    *,
    persona_id: str,
    project_id: str,
    valid_at_time: str | None,
    kinds: Sequence[str] | None,
    since: str | None,
    until: str | None,
    limit: int,
    index: ScopeIndex | None = None,
) -> list[Row]:
    """The best ``limit`` eligible memories of the scope by BM25 for ``terms``: accepted, not revoked,
    valid at ``valid_at_time`` (unless None). ``index``: the scope's statistics if already read."""
    filters = "m.persona_id = ? AND m.project_id = ? AND m.revoked_at IS NULL AND m.review_state = 'accepted'"
    params: list[Any] = [persona_id, project_id]
    filters, params = _memory_window(filters, params, valid_at_time, kinds, since, until)
    return _exact_top(
        conn,
        "memory_fts",
        terms,
        "m.pk, m.id, m.event_id, m.basis, m.confidence, m.valid_at",
        "JOIN memories m ON m.pk = f.fid",
        filters,
        params,
        persona_id,
        project_id,
        limit,
        index,
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
    terms: Sequence[str],
    *,
    persona_id: str,
    project_id: str,
    occurred_before: str | None,
    since: str | None,
    until: str | None,
    limit: int,
    index: ScopeIndex | None = None,
) -> list[Row]:
    """The best ``limit`` raw-fallback events of the scope by BM25 for ``terms``: (seq, id, session_id,
    occurred_at, role, r). ``index``: the scope's statistics if already read."""
    filters = "e.persona_id = ? AND e.project_id = ? AND e.amended = 0"
    params: list[Any] = [persona_id, project_id]
    if occurred_before is not None:
        filters += " AND e.occurred_at <= ?"
        params.append(occurred_before)
    filters, params = _kind_and_range(filters, params, "e", "occurred_at", None, since, until)
    return _exact_top(
        conn,
        "event_fts",
        terms,
        "e.seq, e.id, e.session_id, e.occurred_at, e.role",
        "JOIN events e ON e.seq = f.fid",
        filters,
        params,
        persona_id,
        project_id,
        limit,
        index,
    )


_ELIGIBLE = f"e.amended = 0 AND NOT {derived_from()}"


def turns_in_ranges(
    conn: Connection,
    persona_id: str,
    project_id: str,
    ranges: Sequence[tuple[str, int, int]],
    limit: int = 20000,
) -> list[tuple[str, int]]:
    """Conversation turns of each ``(session, low, high)`` range: (session, seq), what places a turn on
    its conversation's line. One statement for all ranges, bounded by ``limit`` rows; nothing else is
    read per turn (a range spans whole stretches of conversation)."""
    if not ranges:
        return []
    values = ",".join("(?, ?, ?)" for _ in ranges)
    cursor = conn.cursor()
    cursor.row_factory = None
    rows: list[tuple[str, int]] = cursor.execute(
        f"WITH r(session, lo, hi) AS (VALUES {values}) "
        "SELECT e.session_id, e.seq FROM r CROSS JOIN events e "
        "ON e.persona_id = ? AND e.project_id = ? AND e.session_id = r.session AND e.seq BETWEEN r.lo AND r.hi "
        "WHERE e.category = 'conversation' LIMIT ?",
        [*(x for rng in ranges for x in rng), persona_id, project_id, limit],
    ).fetchall()
    return rows


def _turns_beside_sql(side: int, columns: str) -> str:
    """``columns`` of the conversation turns of anchor ``a``'s session (``WITH a(session, seq)``) before it
    (``side`` -1) or after it (1), nearest first, at most ``?``; its parameters: persona, project, limit."""
    op, order = ("<", "DESC") if side < 0 else (">", "ASC")
    return (
        f"SELECT {columns} FROM events x WHERE x.persona_id = ? AND x.project_id = ? "
        f"AND x.session_id = a.session AND x.category = 'conversation' AND x.seq {op} a.seq "
        f"ORDER BY x.seq {order} LIMIT ?"
    )


def _beside_params(
    anchors: Sequence[tuple[str, int]], persona_id: str, project_id: str, before: int, after: int
) -> list[object]:
    """The parameters of the anchors' values, then of a :func:`_turns_beside_sql` before and one after."""
    return [
        *(x for anchor in anchors for x in anchor),
        persona_id,
        project_id,
        before,
        persona_id,
        project_id,
        after,
    ]


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
    columns = f"e.seq, e.id, e.occurred_at, {_ELIGIBLE}, e.role"
    rows = conn.execute(
        f"WITH a(session, seq) AS (VALUES {values}) "
        f"SELECT a.seq, -1, {columns} FROM a CROSS JOIN events e ON e.seq IN ({_turns_beside_sql(-1, 'x.seq')}) "
        f"UNION ALL SELECT a.seq, 1, {columns} FROM a CROSS JOIN events e ON e.seq IN ({_turns_beside_sql(1, 'x.seq')})",
        _beside_params(anchors, persona_id, project_id, window, window if after else 0),
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


def turns_beside(
    conn: Connection,
    persona_id: str,
    project_id: str,
    anchors: Sequence[tuple[str, int]],
    window: int,
) -> dict[int, tuple[int, int]]:
    """How many conversation turns each ``(session, seq)`` anchor has before and after it in its session,
    counting at most ``window`` on each side: ``seq -> (before, after)``."""
    if not anchors or window <= 0:
        return {}
    values = ",".join("(?, ?)" for _ in anchors)
    rows = conn.execute(
        f"WITH a(session, seq) AS (VALUES {values}) SELECT a.seq, "
        f"(SELECT count(*) FROM ({_turns_beside_sql(-1, '1')})), "
        f"(SELECT count(*) FROM ({_turns_beside_sql(1, '1')})) FROM a",
        _beside_params(anchors, persona_id, project_id, window, window),
    ).fetchall()
    return {int(r[0]): (int(r[1]), int(r[2])) for r in rows}


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


def speakers(conn: Connection, seqs: Sequence[int]) -> dict[int, str]:
    """The speaker of each of these events that the host named with a ``speaker:`` text cue (its label;
    the event's first such cue, the one its embedded text names)."""
    out: dict[int, str] = {}
    for chunk in chunks(list(seqs)):
        out.update(
            (int(r[0]), str(r[1]))
            for r in conn.execute(
                "SELECT e.seq, c.label FROM events e CROSS JOIN event_cues c ON c.event_id = e.id "
                f"WHERE e.seq IN ({marks(chunk)}) AND c.cue_type = 'text' "
                "AND c.identifier LIKE 'speaker:%' AND c.label IS NOT NULL ORDER BY c.rowid DESC",  # first wins
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
