"""Exact lexical candidates over the scope's own statistics.

The reference here shares nothing with the lexicon: it reads the FTS5 bodies and the scope columns with
plain SQL, counts the scope's statistics itself and scores every match with :func:`yiji.domain.bm25.scores`
(FTS5's formula). The candidates of :mod:`yiji.store.search` must be exactly its best ``k``.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.db import Database
from yiji.domain import bm25, segment, topk
from yiji.models import parse
from yiji.models.lifecycle import DeleteRequest
from yiji.models.recall import RecallQuery
from yiji.models.resume import ResumeRequest
from yiji.service import MemoryService
from yiji.store import lexicon, search
from yiji.store import postings as codec
from yiji.timeutil import FixedClock

from .factory import make_service
from .lifecycle_helpers import derive, note, submit

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

ENGLISH = (
    "coffee morning run river dog breed golden retriever doctor appointment guitar drum "
    "lisbon apartment moved job office project deadline sister birthday cake garden tomato"
).split()
CHINESE = [
    "咖啡",
    "跑步",
    "江边",
    "杭州",
    "西湖",
    "医生",
    "吉他",
    "搬家",
    "工作",
    "生日",
    "蛋糕",
    "花园",
    "番茄",
    "上海",
]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        words = [rng.choice(ENGLISH) for _ in range(rng.randint(1, 12))]
        return "I " + " ".join(words) + "."
    return "我" + "，".join(rng.choice(CHINESE) for _ in range(rng.randint(1, 8))) + "。"


def _service(path: Path) -> MemoryService:
    return make_service(path, clock=FixedClock(T0, timedelta(milliseconds=1)))


def _seeded(
    tmp_path_factory: pytest.TempPathFactory, folder: str, seed: int
) -> tuple[random.Random, Path, MemoryService]:
    """A generator seeded with ``seed`` and a service over a new database in a new folder ``folder``."""
    path = tmp_path_factory.mktemp(folder) / "yiji.db"
    return random.Random(seed), path, _service(path)


def _reference(
    path: Path, table: str, owner: str, key: str, persona: str, project: str, terms: list[str]
) -> list[tuple[int, float]]:
    """Every match of the scope scored by FTS5's formula over the scope's own statistics."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            f"SELECT f.rowid, f.body FROM {table} f JOIN {owner} o ON o.{key} = f.rowid "
            "WHERE o.persona_id = ? AND o.project_id = ?",
            (persona, project),
        ).fetchall()
    finally:
        conn.close()
    bodies = [(int(r[0]), str(r[1])) for r in rows]
    if not bodies:
        return []
    folded = [(doc, [bm25.fold(t) for t in body.split()]) for doc, body in bodies]
    counts = {t: sum(bm25.fold(t) in tokens for _, tokens in folded) for t in terms}
    average = sum(len(tokens) for _, tokens in folded) / len(folded)
    scored = bm25.scores(bodies, terms, counts, len(bodies), average)
    return sorted(((doc, -score) for doc, score in scored.items()), key=lambda x: (-x[1], -x[0]))


def _same(
    found: list[tuple[int, float]], expected: list[tuple[int, float]], truth: dict[int, float] | None = None
) -> None:
    """The same scores in the same order, each document with its true score (among equal scores at the
    boundary, which documents are listed is not fixed)."""
    assert len(found) == len(expected)
    truth = truth if truth is not None else dict(expected)
    for (doc, score), (_, want) in zip(found, expected, strict=True):
        assert score == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert doc in truth and truth[doc] == pytest.approx(score, rel=1e-9, abs=1e-12)
    assert len({doc for doc, _ in found}) == len(found)


def _bits(found: list[tuple[int, float]]) -> list[tuple[int, str]]:
    """Each document with its score's exact bits."""
    return [(doc, score.hex()) for doc, score in found]


def _blocks_top_k(service: MemoryService, project: str, terms: list[str], k: int) -> list[tuple[int, float]]:
    """The raw-event index's top ``k`` through the lexicon's blocks (every event of the scope
    eligible), the way every archive is searched."""
    with service.db.read() as conn:
        space, stats = lexicon.scope(conn, "default", project, lexicon.EVENTS)
        if space is None:
            return []
        return topk.top_k(
            stats, lexicon.doc_counts(conn, space, terms), lambda t: lexicon.blocks(conn, space, t), set, k
        )


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_candidates_equal_exhaustive_scoring_of_the_scope(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    rng, path, service = _seeded(tmp_path_factory, "exact", seed)
    try:
        when = T0 - timedelta(days=400)
        for i in range(rng.randint(40, 140)):
            project = rng.choice(["a", "a", "b"])
            when += timedelta(hours=rng.randint(1, 50))
            submit(service, f"e{i}", _text(rng), when.isoformat(), project=project)
        # some turns become memories: they leave the raw-event index and enter the memory one
        conn = sqlite3.connect(path)
        chosen = [r for r in conn.execute("SELECT id, text, project_id FROM events") if rng.random() < 0.3]
        conn.close()
        for eid, text, project in chosen:
            derive(service, eid, note(text[:6] + " noted", text[:6]), project=project)
        for _ in range(4):
            query = " ".join(rng.sample(ENGLISH, 2) + rng.sample(CHINESE, 1))
            terms = segment.unit_terms(segment.query_units(query))
            k = rng.choice([1, 3, 10, 30])
            for project in ("a", "b"):
                with service.db.read() as rc:
                    events = search.event_candidates(
                        rc,
                        terms,
                        persona_id="default",
                        project_id=project,
                        occurred_before=None,
                        since=None,
                        until=None,
                        limit=k,
                    )
                    memories = search.memory_candidates(
                        rc,
                        terms,
                        persona_id="default",
                        project_id=project,
                        valid_at_time=None,
                        kinds=None,
                        since=None,
                        until=None,
                        limit=k,
                    )
                ranked = _reference(path, "event_fts", "events", "seq", "default", project, terms)
                _same([(int(r["seq"]), -float(r["r"])) for r in events], ranked[:k], dict(ranked))
                _same(_blocks_top_k(service, project, terms, k), ranked[:k], dict(ranked))
                ranked = _reference(path, "memory_fts", "memories", "pk", "default", project, terms)
                _same([(int(r["pk"]), -float(r["r"])) for r in memories], ranked[:k], dict(ranked))
    finally:
        service.close()


def test_blocks_equal_exhaustive_scoring_past_a_refusing_filter(tmp_path: Path) -> None:
    """The lexicon's blocks give exhaustive scoring's top k, also when the filter refuses the best
    documents (more than the first look at the best hands back), and once more after a tenth of the
    documents are deleted (blocks rewritten, tails emptied) and more are added."""
    path = tmp_path / "yiji.db"
    service = _service(path)
    rng = random.Random(7)
    try:
        when = T0 - timedelta(days=300)
        for i in range(900):
            when += timedelta(hours=rng.randint(1, 30))
            submit(
                service,
                f"e{i}",
                _text(rng) if i % 2 else "I " + " ".join(rng.sample(ENGLISH, 4)),
                when.isoformat(),
            )
        terms = segment.unit_terms(segment.query_units(" ".join(ENGLISH[:3])))
        for round_ in range(2):
            ranked = _reference(path, "event_fts", "events", "seq", "default", "default", terms)
            assert len(ranked) > 200
            refused = {doc for doc, _ in ranked[:70]}  # the first look hands back 64
            expected = [(doc, score) for doc, score in ranked if doc not in refused][:10]
            with service.db.read() as conn:
                space, stats = lexicon.scope(conn, "default", "default", lexicon.EVENTS)
                assert space is not None
                assert conn.execute("SELECT COUNT(*) FROM lex_block WHERE n > 100").fetchone()[0] > 0
                found, summed = (
                    topk.top_k(
                        stats,
                        lexicon.doc_counts(conn, space, terms),
                        lambda t, s=space: lexicon.blocks(conn, s, t),
                        lambda docs, r=refused: {doc for doc in docs if doc not in r},
                        10,
                        arrays=arrays,
                    )
                    for arrays in (False, True)
                )
            _same(found, expected, dict(ranked))
            assert _bits(summed) == _bits(found)  # numpy's sums: the same bits
            _same(_blocks_top_k(service, "default", terms, 30), ranked[:30], dict(ranked))
            if round_ == 0:
                for i in rng.sample(range(900), 90):
                    service.memory_delete(parse(DeleteRequest, {"event_id": f"e{i}"}))
                for i in range(900, 1000):
                    when += timedelta(hours=1)
                    submit(service, f"e{i}", "I " + " ".join(rng.sample(ENGLISH, 5)), when.isoformat())
    finally:
        service.close()


def _every_way(
    space: topk.Space,
    counts: dict[str, int],
    fixed: dict[str, list[tuple[int, int, int]]],
    cuts: list[int],
    eligible: Callable[[list[int]], set[int]],
    k: int,
    floor_costs: tuple[float, ...],
    impacts: dict[str, topk.Saturations] | None = None,
) -> list[list[tuple[int, float]]]:
    """``top_k`` over ``fixed``'s postings cut into blocks at ``cuts``, once per way through them: the
    terms after the floor looked up or read whole (each lookup cost), a floor sought as each cost says,
    the terms read whole summed in Python, with numpy, or with numpy over blocks as the store encodes
    them and decodes many at once (:func:`yiji.store.postings.unpack`). Three results per pair of costs,
    in that order."""
    return [
        topk.top_k(
            space,
            counts,
            lambda terms, encoded=unpack is not None: {
                t: _split(fixed[t], cuts, encoded=encoded) for t in terms
            },
            eligible,
            k,
            lookup_cost=lookup_cost,
            floor_cost=floor_cost,
            impacts=impacts,
            arrays=arrays,
            unpack=unpack,
        )
        for lookup_cost, floor_cost, (arrays, unpack) in itertools.product(
            (0, topk.LOOKUP_COST, 10**9), floor_costs, ((False, None), (True, None), (True, codec.unpack))
        )
    ]


def _split(
    postings: list[tuple[int, int, int]], cuts: list[int], *, encoded: bool = False
) -> list[topk.Block]:
    """A term's postings as blocks in document order, cut where ``cuts`` say (as the store keeps
    them; ``encoded``: as the store encodes them, each block's bytes beside it)."""
    rows = sorted(postings)
    out: list[topk.Block] = []
    start = 0
    for cut in [*sorted({c % (len(rows) + 1) for c in cuts}), len(rows)]:
        if cut > start:
            part = rows[start:cut]
            if encoded:
                out.append(
                    codec.block(
                        part[0][0],
                        part[-1][0],
                        len(part),
                        max(tf for _, tf, _ in part),
                        min(n for _, _, n in part),
                        codec.encode(part),
                    )
                )
            else:
                out.append(topk.block_of(part))
            start = cut
    return out


def _drawn_lists(
    lists: dict[str, list[tuple[int, int]]], lengths: list[int], banned: set[int]
) -> tuple[dict[str, list[topk.Posting]], topk.Space, dict[str, int], Callable[[list[int]], set[int]]]:
    """Drawn posting lists with their documents' lengths, a space holding them (and 20 more documents),
    the terms' document counts, and the filter that leaves ``banned`` out."""
    fixed = {t: [(d, tf, lengths[d]) for d, tf in entries] for t, entries in lists.items()}
    documents = {doc for entries in fixed.values() for doc, _, _ in entries}
    space = topk.Space(len(documents) + 20, sum(lengths[d] for d in documents) + 20 * 8)
    counts = {t: len(e) for t, e in fixed.items()}

    def eligible(docs: list[int]) -> set[int]:
        return {d for d in docs if d not in banned}

    return fixed, space, counts, eligible


@settings(max_examples=300, deadline=None)
@given(
    lists=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.lists(st.tuples(st.integers(1, 60), st.integers(1, 5)), max_size=40, unique_by=lambda p: p[0]),
        min_size=1,
    ),
    lengths=st.lists(st.integers(1, 30), min_size=61, max_size=61),
    k=st.integers(1, 12),
    banned=st.sets(st.integers(1, 60), max_size=20),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_maxscore_over_blocks_equals_exhaustive(
    lists: dict[str, list[tuple[int, int]]], lengths: list[int], k: int, banned: set[int], cuts: list[int]
) -> None:
    fixed, space, counts, eligible = _drawn_lists(lists, lengths, banned)

    everything = dict(topk.exhaustive(space, counts, lambda t: fixed[t], set, 10**6))
    expected = topk.exhaustive(space, counts, lambda t: fixed[t], eligible, k)
    # the terms after the floor looked up, or read whole; a floor sought never, as the costs say, or
    # after every term
    for found in _every_way(space, counts, fixed, cuts, eligible, k, (0, topk.FLOOR_COST, 10**9)):
        _same(found, expected, everything)


@settings(max_examples=200, deadline=None)
@given(
    lists=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]),
        st.lists(st.tuples(st.integers(1, 60), st.integers(1, 5)), max_size=40, unique_by=lambda p: p[0]),
        min_size=1,
    ),
    parts=st.dictionaries(
        st.sampled_from(["a", "b", "c", "d"]),
        st.lists(
            st.tuples(st.floats(0.01, 3.0), st.floats(0.2, 2.5), st.floats(0.0, 1.0)), min_size=1, max_size=3
        ).map(tuple),
    ),
    lengths=st.lists(st.integers(1, 30), min_size=61, max_size=61),
    k=st.integers(1, 12),
    banned=st.sets(st.integers(1, 60), max_size=20),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_maxscore_with_other_saturations_equals_exhaustive(
    lists: dict[str, list[tuple[int, int]]],
    parts: dict[str, topk.Saturations],
    lengths: list[int],
    k: int,
    banned: set[int],
    cuts: list[int],
) -> None:
    """Terms weighed by sums of saturations of their own (k1, b), a term without any left unread."""
    fixed, space, counts, eligible = _drawn_lists(lists, lengths, banned)

    everything = dict(topk.exhaustive(space, counts, lambda t: fixed[t], set, 10**6, parts))
    expected = topk.exhaustive(space, counts, lambda t: fixed[t], eligible, k, parts)
    # the reference's scores are the saturations summed, term by term
    for doc, score in expected:
        by_hand = sum(
            topk.saturated(parts[t], tf, length, space.average_length)
            for t in fixed
            if t in parts
            for d, tf, length in fixed[t]
            if d == doc
        )
        assert score == pytest.approx(by_hand)
    for found in _every_way(space, counts, fixed, cuts, eligible, k, (0, topk.FLOOR_COST, 10**9), parts):
        _same(found, expected, everything)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_every_way_through_long_lists_gives_the_same_bits(seed: int) -> None:
    """Lists long enough for the sampled bars (thousands of documents met), drawn from few frequencies
    and lengths so that many scores tie: whether a floor is sought, when, whether the terms after it
    are looked up or read whole, and whether the terms read whole are summed in Python or with numpy, the
    result is the same list, bit for bit, newer first among equal scores, and it is exhaustive scoring's."""
    rng = random.Random(seed)
    documents = rng.randint(600, 4000)
    # few lengths: scores tie in large groups, at times more of them than the head holds
    palette = rng.choice(((3, 8), (3, 5, 8, 8, 13)))
    lengths = [rng.choice(palette) for _ in range(documents + 1)]
    lists = {  # rare terms and common ones
        term: [
            (doc, rng.choice((1, 1, 1, 2)))
            for doc in sorted(
                rng.sample(range(1, documents + 1), rng.randint(1, rng.choice((30, documents))))
            )
        ]
        for term in "abcdef"[: rng.randint(1, 6)]
    }
    banned = set(rng.sample(range(1, documents + 1), rng.randint(0, documents // 2)))
    fixed, space, counts, eligible = _drawn_lists(lists, lengths, banned)
    cuts = [rng.randint(0, documents) for _ in range(rng.randint(0, 40))]
    k = rng.choice((1, 10, 30, 100, 150))

    everything = dict(topk.exhaustive(space, counts, lambda t: fixed[t], set, 10**6))
    expected = topk.exhaustive(space, counts, lambda t: fixed[t], eligible, k)
    results = _every_way(space, counts, fixed, cuts, eligible, k, (0, 0.01, 1, 10**9))
    assert all(_bits(found) == _bits(results[0]) for found in results)
    _same(results[0], expected, everything)
    assert all(
        (a[1], a[0]) > (b[1], b[0]) for a, b in itertools.pairwise(results[0])
    )  # best first, the newer first among equal scores


def _recall(service: MemoryService, query: str, **kw: Any) -> list[tuple[str, float]]:
    # a fixed "now": the test clock moves a millisecond a call, which would move freshness
    fields = {"query": query, "persona": "pa", "as_of": T0.isoformat(), **kw}
    result = service.memory_recall(parse(RecallQuery, fields))
    return [(item.id, item.score) for item in result.items]


def _flood(service: MemoryService, text: str, n: int, *, at: datetime) -> None:
    """``n`` events of another persona, each holding ``text``."""
    for i in range(n):
        submit(service, f"b{i}", f"{text} 第{i}次", (at + timedelta(minutes=i)).isoformat(), persona="pb")


def test_another_scope_never_changes_results_or_scores(tmp_path: Path) -> None:
    service = _service(tmp_path / "yiji.db")
    try:
        submit(service, "a1", "早上一杯咖啡，下午又一杯咖啡。", "2026-05-01T08:00:00+08:00", persona="pa")
        submit(service, "a2", "晚上在江边慢慢跑步，风很舒服。", "2026-05-01T21:00:00+08:00", persona="pa")
        before = _recall(service, "咖啡 跑步")
        assert len(before) == 2
        _flood(service, "今天又喝了咖啡", 1500, at=T0 - timedelta(days=30))
        after = _recall(service, "咖啡 跑步")
        assert after == before  # same items, same order, same scores
    finally:
        service.close()


def test_resume_of_a_small_scope_is_not_changed_by_another_persona(tmp_path: Path) -> None:
    service = _service(tmp_path / "yiji.db")
    try:
        turns = [
            ("user", "我今天刚搬到杭州，住在西湖边上。"),
            ("assistant", "恭喜乔迁！西湖边的风景很好。"),
            ("user", "是啊，每天可以去散步。"),
            ("assistant", "记得带上相机。"),
        ]
        for i, (role, text) in enumerate(turns):
            submit(
                service,
                f"a{i}",
                text,
                f"2026-05-01T{8 + i:02d}:00:00+08:00",
                role=role,
                persona="pa",
                session="old",
            )

        def recalled() -> list[str]:
            result = service.session_resume(
                parse(
                    ResumeRequest,
                    {"persona": "pa", "session": "new", "query": "你还记得我住在哪里吗？", "budget": 100_000},
                )
            )
            doc = json.loads(result.context)
            return [
                json.dumps(m, ensure_ascii=False) for m in doc.get("recalled_memories", {}).get("items", [])
            ]

        before = recalled()
        assert any("杭州" in text for text in before)
        for i in range(30):
            submit(
                service,
                f"b{i}",
                f"我住在第{i}个城市的老房子里。",
                f"2026-04-0{1 + i % 9}T10:{i:02d}:00+08:00",
                persona="pb",
            )
        assert recalled() == before
    finally:
        service.close()


def test_an_old_match_is_found_in_a_large_archive(tmp_path: Path) -> None:
    """Age counts only through freshness: a turn a year older than 3,000 others that share a word with
    the query is still the first item when it alone holds the query's rare word."""
    service = _service(tmp_path / "yiji.db")
    try:
        submit(
            service,
            "old",
            "My sister's golden retriever is called Biscuit.",
            "2025-05-01T10:00:00+00:00",
            persona="pa",
        )
        for i in range(3000):
            submit(
                service,
                f"n{i}",
                f"My sister called about dinner plans number {i}.",
                (T0 - timedelta(days=100) + timedelta(minutes=i)).isoformat(),
                persona="pa",
            )
        items = _recall(service, "what is the name of my sister's golden retriever")
        assert items and items[0][0] == "old"
    finally:
        service.close()


def test_the_lexicon_follows_deletion_and_equals_a_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "yiji.db"
    service = _service(path)
    try:
        submit(service, "e1", "我住在苏州，喜欢评弹。", "2026-05-01T08:00:00+08:00")
        submit(service, "e2", "I play the oboe on Sundays.", "2026-05-02T08:00:00+08:00")
        submit(service, "e3", "周末去苏州看评弹。", "2026-05-03T08:00:00+08:00")
        derive(service, "e2", note("plays the oboe", "I play the oboe"))

        def lexicon() -> tuple[list[Any], ...]:
            conn = sqlite3.connect(path)
            try:
                return tuple(
                    sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in ("lex_term", "lex_block")
                ) + (sorted(r[1:] for r in conn.execute("SELECT * FROM lex_space")),)
            finally:
                conn.close()

        service.memory_delete(parse(DeleteRequest, {"event_id": "e1"}))
        incremental = lexicon()
        assert not any("评弹" == row[1] and row[2] > 1 for row in incremental[0])
        service.reindex()
        assert lexicon() == incremental
        service.memory_delete(parse(DeleteRequest, {"event_id": "e3"}))
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT COUNT(*) FROM lex_block WHERE term = '评弹'").fetchone()[0] == 0
            assert (
                conn.execute("SELECT COUNT(*) FROM lex_term WHERE term IN ('评弹', '苏州')").fetchone()[0]
                == 0
            )
        finally:
            conn.close()
    finally:
        service.close()


def test_an_upgraded_database_fills_its_lexicon(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    old = Database(path, target_version=7)
    with old.write() as conn:
        conn.execute(
            "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, text, "
            "occurred_at, ingested_at) VALUES ('e1', 'default', 'default', 's', 'user', 'chat', "
            "'conversation', '我住在杭州', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')"
        )
        seq = conn.execute("SELECT seq FROM events WHERE id = 'e1'").fetchone()[0]
        conn.execute(
            "INSERT INTO event_fts (rowid, body) VALUES (?, ?)", (seq, segment.document_body("我住在杭州"))
        )
        conn.execute("INSERT INTO meta (key, value) VALUES ('segmenter', ?)", (segment.segmenter_id(),))
    old.close()
    service = _service(path)
    try:
        items = service.memory_recall(parse(RecallQuery, {"query": "杭州"})).items
        assert [i.id for i in items] == ["e1"]
    finally:
        service.close()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_document_counts_of_many_terms_equal_counting_the_scope_bodies(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """A query's document counts, read for all its terms at once (past one statement's worth of terms,
    with words the scope lacks and words that fold to the same key), equal counting the scope's own
    FTS5 bodies."""
    rng, path, service = _seeded(tmp_path_factory, "counts", seed)
    try:
        when = T0 - timedelta(days=100)
        for i in range(rng.randint(20, 60)):
            when += timedelta(hours=rng.randint(1, 30))
            submit(service, f"e{i}", _text(rng), when.isoformat(), project=rng.choice(["a", "b"]))
        words = [*ENGLISH, *CHINESE, *(w.upper() for w in ENGLISH), *(f"absent{i}" for i in range(500))]
        terms = rng.sample(words, len(words))
        conn = sqlite3.connect(path)
        try:
            for project in ("a", "b"):
                bodies = [
                    {bm25.fold(t) for t in str(r[0]).split()}
                    for r in conn.execute(
                        "SELECT f.body FROM event_fts f JOIN events e ON e.seq = f.rowid "
                        "WHERE e.persona_id = 'default' AND e.project_id = ?",
                        (project,),
                    )
                ]
                expected = {t: sum(bm25.fold(t) in body for body in bodies) for t in terms}
                with service.db.read() as rc:
                    found = search.scope_stats(rc, "default", project, "event_fts", terms).doc_counts
                assert found == expected
                assert any(n > 0 for n in found.values())
        finally:
            conn.close()
    finally:
        service.close()


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_blocks_stay_exact_through_deletions_and_another_scope_never_moves_them(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """Random Chinese and English archives in two scopes, past a block's worth of postings per common
    word: after deletions in scope A, A's candidates equal exhaustive scoring of A; then any
    writes and deletions in scope B leave A's results and scores exactly as they were."""
    rng, path, service = _seeded(tmp_path_factory, "blocks", seed)
    try:
        when = T0 - timedelta(days=400)
        ids: dict[str, list[str]] = {"a": [], "b": []}
        for i in range(rng.randint(200, 320)):
            project = rng.choice(["a", "a", "b"])
            when += timedelta(hours=rng.randint(1, 20))
            submit(service, f"e{i}", _text(rng), when.isoformat(), project=project)
            ids[project].append(f"e{i}")
        for eid in rng.sample(ids["a"], len(ids["a"]) // 8):
            service.memory_delete(parse(DeleteRequest, {"event_id": eid, "project": "a"}))
            ids["a"].remove(eid)
        queries = [
            segment.unit_terms(segment.query_units(" ".join(rng.sample(ENGLISH, 2) + rng.sample(CHINESE, 2))))
            for _ in range(4)
        ]
        before = []
        for terms in queries:
            ranked = _reference(path, "event_fts", "events", "seq", "default", "a", terms)
            found = _blocks_top_k(service, "a", terms, 10)
            _same(found, ranked[:10], dict(ranked))
            before.append(found)
        for i in range(rng.randint(50, 150)):
            when += timedelta(hours=1)
            submit(service, f"x{i}", _text(rng), when.isoformat(), project="b")
        for eid in rng.sample(ids["b"], len(ids["b"]) // 3):
            service.memory_delete(parse(DeleteRequest, {"event_id": eid, "project": "b"}))
        assert [_blocks_top_k(service, "a", terms, 10) for terms in queries] == before
    finally:
        service.close()
