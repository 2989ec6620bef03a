"""Bounded candidate stages: on an index whose matches they cover, they return what ranking every match
with FTS5's bm25 returns, with the same scores; other scopes cannot crowd them out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from yiji.domain import segment
from yiji.models import EventIn
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.service import MemoryService
from yiji.store import search

WORDS = ["杭州", "喜欢", "茶", "湖", "散步", "tea", "lake", "walk", "周末", "咖啡"]


def _fill(service: MemoryService, count: int, project: str = "p") -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    texts = [
        "我" + "".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7)[: 1 + i % 3]) + f" 第{i}次"
        for i in range(count)
    ]
    service.event_submit_many(
        [
            EventIn(
                id=f"{project}-{i}",
                project=project,
                session="s",
                role="user",
                text=t,
                occurred_at=start + timedelta(hours=i),
            )
            for i, t in enumerate(texts)
        ]
    )
    service.memory_derive_many(
        [
            DeriveRequest(
                event_id=f"{project}-{i}",
                project=project,
                memories=[MemoryIn(text=t, quote=t, kind="episode", basis="user_statement")],
            )
            for i, t in enumerate(texts)
        ]
    )


def _candidates(service: MemoryService, lexical: search.Lexical, project: str = "p") -> dict[str, float]:
    with service.db.read() as conn:
        rows = search.memory_candidates(
            conn,
            lexical,
            persona_id="default",
            project_id=project,
            valid_at_time=None,
            kinds=None,
            since=None,
            until=None,
            limit=500,
        )
    return {r["id"]: round(float(r["r"]), 9) for r in rows}


def _bounded(service: MemoryService, query: str) -> tuple[search.Lexical, search.Lexical]:
    terms = tuple(segment.query_tokens(query))
    match = segment.match_terms(terms)
    assert match is not None
    with service.db.read() as conn:
        counts = search.term_doc_counts(conn, "memory_fts", terms)
    bounded = search.Lexical(match, terms, tuple(counts[t] for t in terms), bound=0)
    assert bounded.bounded
    return search.Lexical(match), bounded


def test_bounded_stages_equal_full_ranking_when_they_cover_every_match(service: MemoryService) -> None:
    _fill(service, 300)
    for query in ("在杭州喜欢什么", "tea lake walk", "周末", "杭州 咖啡 湖 散步"):
        exact, bounded = (_candidates(service, lexical) for lexical in _bounded(service, query))
        assert exact and bounded == exact


def test_bounded_stages_fall_back_when_other_scopes_crowd_them_out(service: MemoryService) -> None:
    _fill(service, 200, project="busy")
    _fill(service, 3, project="quiet")
    exact, bounded = _bounded(service, "杭州 喜欢")
    found = _candidates(service, bounded, project="quiet")
    assert found and found == _candidates(service, exact, project="quiet")
