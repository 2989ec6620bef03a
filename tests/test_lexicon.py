"""The lexicon's writes: what bulk derivation and removal cost, and that they leave the postings a
rebuild would give.

The postings are compared as the queries read them (every term's tail and blocks, decoded by
:func:`yiji.store.lexicon.blocks`), so two lexicons that cut their blocks differently but hold the same
postings are equal.
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.errors import YijiError
from yiji.models import EventIn, parse
from yiji.models.lifecycle import DeleteRequest
from yiji.models.memories import DeriveRequest
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.store import lexicon
from yiji.store import postings as codec
from yiji.timeutil import FixedClock

from .factory import make_service

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WORDS = "coffee river guitar garden tomato lisbon sister cake office doctor 咖啡 江边 吉他 花园 生日".split()

Postings = dict[tuple[str, str, int, str], list[tuple[int, int, int]]]


def _service(path: Path) -> MemoryService:
    return make_service(path, clock=FixedClock(T0, timedelta(milliseconds=1)))


def _texts(rng: random.Random, count: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(count)]


def _events(texts: list[str], project: str, start: datetime) -> list[EventIn]:
    return [
        parse(
            EventIn,
            {
                "id": f"{project}-{i}",
                "session": f"s{i // 50}",
                "role": "user",
                "text": text,
                "occurred_at": (start + timedelta(minutes=i)).isoformat(),
                "project": project,
            },
        )
        for i, text in enumerate(texts)
    ]


def _requests(texts: list[str], project: str, ids: range) -> list[DeriveRequest]:
    return [
        parse(
            DeriveRequest,
            {
                "event_id": f"{project}-{i}",
                "project": project,
                "memories": [
                    {"text": texts[i], "quote": texts[i], "kind": "episode", "basis": "user_statement"}
                ],
            },
        )
        for i in ids
    ]


def postings(service: MemoryService) -> tuple[Postings, list[tuple[Any, ...]]]:
    """Every term's postings per space (its scope and index), decoded as queries read them, and the
    spaces' statistics; each term's document count, as queries read it, is its number of postings."""
    out: Postings = {}
    with service.db.read() as conn:
        spaces = [tuple(r) for r in conn.execute("SELECT id, persona_id, project_id, tbl FROM lex_space")]
        for space, persona, project, tbl in spaces:
            terms = lexicon.terms(conn, space)
            counts = lexicon.doc_counts(conn, space, terms)
            for term, blocks in lexicon.blocks(conn, space, terms).items():
                found = []
                for block in blocks:
                    found.extend(block.triples())
                assert counts[term] == len(found) == len({d for d, _, _ in found}) > 0
                out[(persona, project, tbl, term)] = sorted(found)
        stats = sorted(
            tuple(r) for r in conn.execute("SELECT persona_id, project_id, tbl, docs, tokens FROM lex_space")
        )
    return out, stats


def _block_writes(conn: sqlite3.Connection) -> list[str]:
    statements: list[str] = []
    conn.set_trace_callback(
        lambda sql: statements.append(sql) if "lex_block" in sql and not sql.startswith("SELECT") else None
    )
    return statements


def test_deriving_a_batch_rewrites_each_block_once(tmp_path: Path) -> None:
    """Deriving a batch of memories takes their events out of the raw-event index together: each
    block of the index is rewritten at most once, however many of the batch's documents it holds
    (one document at a time rewrote one block per term per document)."""
    rng = random.Random(5)
    texts = _texts(rng, 400)
    service = _service(tmp_path / "yiji.db")
    try:
        service.event_submit_many(_events(texts, "a", T0 - timedelta(days=30)))
        conn = service.db.connection()
        blocks_before = conn.execute("SELECT COUNT(*) FROM lex_block").fetchone()[0]
        terms_before = conn.execute("SELECT COUNT(*) FROM lex_term").fetchone()[0]
        assert blocks_before >= len(WORDS)  # common words: several blocks each
        writes = _block_writes(conn)
        try:
            service.memory_derive_many(_requests(texts, "a", range(len(texts))))
        finally:
            conn.set_trace_callback(None)
        memory_blocks = conn.execute("SELECT COUNT(*) FROM lex_block").fetchone()[0]
        # one per block rewritten or emptied, one per term gone, and the memory index's own blocks
        assert len(writes) <= blocks_before + terms_before + 2 * memory_blocks
        assert len(writes) < len(texts)
    finally:
        service.close()


def test_a_derived_batch_leaves_the_postings_of_a_rebuild(tmp_path: Path) -> None:
    """Events derived in batches (and some one at a time, in another scope beside them) leave the
    lexicon holding the postings and statistics a rebuild from the tables gives."""
    rng = random.Random(11)
    service = _service(tmp_path / "yiji.db")
    try:
        for project in ("a", "b"):
            texts = _texts(rng, 300)
            service.event_submit_many(_events(texts, project, T0 - timedelta(days=60)))
            service.memory_derive_many(_requests(texts, project, range(0, 300, 3)))
            service.memory_derive_many(_requests(texts, project, range(1, 200, 3)))
            for request in _requests(texts, project, range(2, 60, 3)):
                service.memory_derive(request)
        incremental = postings(service)
        assert any(key[2] == lexicon.EVENTS for key in incremental[0])
        assert any(key[2] == lexicon.MEMORIES for key in incremental[0])
        service.reindex()
        assert postings(service) == incremental
    finally:
        service.close()


def test_a_failed_derive_batch_leaves_the_lexicon_as_it_was(tmp_path: Path) -> None:
    rng = random.Random(3)
    texts = _texts(rng, 200)
    service = _service(tmp_path / "yiji.db")
    try:
        service.event_submit_many(_events(texts, "a", T0 - timedelta(days=30)))
        before = postings(service)
        requests = _requests(texts, "a", range(150))
        requests[120] = parse(
            DeriveRequest,
            {
                "event_id": "a-120",
                "project": "a",
                "memories": [
                    {"text": "x", "quote": "not in the event", "kind": "episode", "basis": "user_statement"}
                ],
            },
        )
        with pytest.raises(YijiError):
            service.memory_derive_many(requests)
        assert postings(service) == before
        service.memory_derive_many(requests[:100])  # the index object is usable again
        assert postings(service) != before
    finally:
        service.close()


def test_storing_one_event_writes_one_row_of_the_lexicon(tmp_path: Path) -> None:
    """An event submitted alone joins its space's recent documents: one statement on one row, not one
    per term; the recent documents go into their terms' rows together, and queries read them all."""
    rng = random.Random(7)
    texts = _texts(rng, 200)
    service = _service(tmp_path / "yiji.db")
    try:
        service.event_submit_many(_events(texts[:100], "a", T0 - timedelta(days=30)))
        conn = service.db.connection()
        writes: list[str] = []
        conn.set_trace_callback(
            lambda sql: writes.append(sql) if "lex_" in sql and not sql.startswith("SELECT") else None
        )
        try:
            per_event = []
            for event in _events(texts, "a", T0 - timedelta(days=20))[100:]:
                before = len(writes)
                service.event_submit(event)
                per_event.append(len(writes) - before)
        finally:
            conn.set_trace_callback(None)
        assert per_event.count(1) > len(per_event) * 3 // 4  # most events: one statement
        assert max(per_event) > 1  # and now and then the recent documents go into their terms' rows
        incremental = postings(service)
        service.reindex()
        assert postings(service)[0] == incremental[0]
    finally:
        service.close()


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(min_value=1, max_value=2**40),
    rows=st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=2**33),
            st.one_of(st.just(1), st.integers(min_value=1, max_value=2**20)),
            st.integers(min_value=0, max_value=2**20),
        ),
        min_size=1,
        max_size=lexicon.BLOCK,
    ),
)
def test_a_block_decodes_to_the_postings_it_was_written_from(
    start: int, rows: list[tuple[int, int, int]]
) -> None:
    """Whatever the widths, and frequencies stored whole or as the places of those other than 1."""
    postings, doc = [], start
    for gap, tf, length in rows:
        postings.append((doc, tf, length))
        doc += gap
    data = codec.encode(postings)
    assert codec.postings(start, len(postings), data) == postings


def test_a_bulk_addition_takes_the_recent_documents_with_it(tmp_path: Path) -> None:
    """Events stored one by one, then a batch: the recent ones go into their terms' rows with the batch
    (older documents than the batch's never wait to be placed among its blocks), and the postings are
    those of a rebuild."""
    rng = random.Random(13)
    texts = _texts(rng, 400)
    service = _service(tmp_path / "yiji.db")
    try:
        events = _events(texts, "a", T0 - timedelta(days=30))
        for event in events[:10]:
            service.event_submit(event)
        conn = service.db.connection()
        assert conn.execute("SELECT recent FROM lex_space").fetchone()[0].count("\n") == 10
        service.event_submit_many(events[10:390])
        assert conn.execute("SELECT recent FROM lex_space").fetchone()[0] == ""
        for event in events[390:]:
            service.event_submit(event)
        incremental = postings(service)
        service.reindex()
        assert postings(service) == incremental
    finally:
        service.close()


def test_a_flush_of_many_terms_moves_every_tail_that_fills_up(tmp_path: Path) -> None:
    """Events stored one by one whose flushes append to hundreds of terms each, with common words whose
    tails fill up in those same flushes: every full tail goes into the blocks (no tail is left holding
    :data:`lexicon.TAIL` postings or more), and the postings are a rebuild's."""
    texts = [" ".join([*WORDS[:5], *(f"w{i}x{j}" for j in range(30))]) for i in range(300)]
    service = _service(tmp_path / "yiji.db")
    try:
        for event in _events(texts, "a", T0 - timedelta(days=30)):
            service.event_submit(event)
        conn = service.db.connection()
        longest = conn.execute("SELECT max(length(tail)) FROM lex_term").fetchone()[0]
        assert longest < lexicon.TAIL * codec.TAIL_ENTRY.size
        blocks = dict(conn.execute("SELECT term, count(*) FROM lex_block GROUP BY term").fetchall())
        assert all(blocks.get(word, 0) >= 1 for word in ("coffe", "river", "guitar", "garden", "tomato"))
        incremental = postings(service)
        service.reindex()
        assert postings(service) == incremental
    finally:
        service.close()


_RARE = [f"word{n}" for n in range(60)]
"""Rare words beside :data:`WORDS`: tails that stay short, others that pass :data:`lexicon.TAIL` over time."""
_STEP = st.tuples(
    st.sampled_from(["one", "many", "derive", "delete"]),
    st.sampled_from(["a", "b"]),
    st.integers(min_value=1, max_value=100),
    st.integers(min_value=0, max_value=2**32 - 1),
)


def _derive(event_id: str, project: str, text: str) -> DeriveRequest:
    text = text[:400]  # within a memory's limits, and still the event's own words
    return parse(
        DeriveRequest,
        {
            "event_id": event_id,
            "project": project,
            "memories": [{"text": text, "quote": text, "kind": "episode", "basis": "user_statement"}],
        },
    )


def _recalled(service: MemoryService, query: str, project: str) -> list[tuple[str, float]]:
    service.clock = FixedClock(T0)  # the same moment for every recall: the same recency weights
    found = service.memory_recall(parse(RecallQuery, {"query": query, "project": project, "limit": 30}))
    return [(item.id, item.score) for item in found.items]


def _step_texts(seed: int, count: int) -> list[str]:
    """Texts of every shape the lexicon writes: empty of terms, one word, repeats (frequencies above 1),
    long ones (lines that fill the recent documents at once)."""
    rng = random.Random(seed)
    words = WORDS + _RARE
    texts = []
    for _ in range(count):
        shape = rng.random()
        if shape < 0.05:
            texts.append("!!")
        elif shape < 0.1:
            texts.append(" ".join([rng.choice(words)] * rng.randint(1, 6)))
        elif shape < 0.12:
            texts.append(" ".join(rng.choice(words) for _ in range(rng.randint(150, 300))))
        else:
            texts.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))))
    return texts


@settings(max_examples=20, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=6))
def test_any_sequence_of_writes_leaves_the_postings_of_a_rebuild(
    steps: list[tuple[str, str, int, int]],
) -> None:
    """Events stored one by one (through the recent documents and their flushes) and in batches, in two
    scopes, derived into memories (leaving the raw-event index) and deleted, in any order: the lexicon
    holds exactly the postings, frequencies, lengths and statistics a rebuild from the tables gives, and
    recall over it returns the same items with the same scores."""
    with tempfile.TemporaryDirectory() as tmp:
        service = _service(Path(tmp) / "yiji.db")
        try:
            stored: dict[str, list[str]] = {"a": [], "b": []}
            texts_of: dict[str, str] = {}
            start = T0 - timedelta(days=90)
            for number, (kind, project, count, seed) in enumerate(steps):
                if kind in ("one", "many"):
                    texts = _step_texts(seed, count)
                    events = _events(texts, f"{project}{number}", start + timedelta(days=number))
                    events = [e.model_copy(update={"project": project}) for e in events]
                    for event, text in zip(events, texts, strict=True):
                        texts_of[event.id or ""] = text
                    if kind == "one":
                        for event in events:
                            service.event_submit(event)
                    else:
                        service.event_submit_many(events)
                    stored[project] += [event.id or "" for event in events]
                elif stored[project]:
                    rng = random.Random(seed)
                    chosen = rng.sample(stored[project], min(count, len(stored[project])))
                    for event_id in chosen:
                        stored[project].remove(event_id)
                    if kind == "delete":
                        for event_id in chosen:
                            service.memory_delete(
                                parse(DeleteRequest, {"event_id": event_id, "project": project})
                            )
                    else:
                        service.memory_derive_many(
                            [_derive(event_id, project, texts_of[event_id]) for event_id in chosen]
                        )
            incremental = postings(service)
            queries = [" ".join(WORDS[i : i + 3]) for i in range(0, len(WORDS), 5)] + _RARE[:3]
            answers = [_recalled(service, query, project) for query in queries for project in "ab"]
            service.reindex()
            rebuilt = postings(service)
            assert rebuilt[0] == incremental[0]
            assert rebuilt[1] == [space for space in incremental[1] if space[3]]  # a space emptied stays
            assert [_recalled(service, query, project) for query in queries for project in "ab"] == answers
        finally:
            service.close()
