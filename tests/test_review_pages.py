"""The review UI's read model (:mod:`yiji.service.review_pages`): each page's data is read by one call in
one read transaction (recall: after the recall's own), counted on the real SQLite connection."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import InvalidInput, NotFound
from yiji.models import parse
from yiji.models.conversations import ConversationQuery, SessionQuery
from yiji.models.memories import MemoryQuery
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.service.review_pages import ReviewPages
from yiji.timeutil import FixedClock

from .factory import make_service
from .fakeprovider import FakeProvider
from .ui_helpers import Seeded, seed, seed_proposals

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)


class Archive:
    def __init__(self, service: MemoryService, seeded: Seeded, proposals: list[str]) -> None:
        self.service = service
        self.pages = ReviewPages(service.db, service.clock, service)
        self.seeded = seeded
        self.proposals = proposals

    def transactions(self, read: Callable[[], Any]) -> int:
        """How many transactions ``read`` began on this thread's connection."""
        statements: list[str] = []
        conn = self.service.db.connection()
        conn.set_trace_callback(statements.append)
        try:
            read()
        finally:
            conn.set_trace_callback(None)
        return sum(1 for s in statements if s.strip().upper().startswith("BEGIN"))


@pytest.fixture
def archive(db_path: Path, fake_provider: FakeProvider) -> Iterator[Archive]:
    seeded = seed(db_path, NOW)
    proposals = seed_proposals(db_path, fake_provider, 2)
    service = make_service(db_path, clock=FixedClock(NOW))
    yield Archive(service, seeded, proposals)
    service.close()


def test_each_page_is_read_in_one_transaction(archive: Archive) -> None:
    pages, s, p = archive.pages, archive.seeded, archive.proposals
    reads: dict[str, Callable[[], Any]] = {
        "memories": lambda: pages.memories(parse(MemoryQuery, {"view": "history"})),
        "memory": lambda: pages.memory(s.hangzhou, None, None, offset=0, limit=4000),
        "deletion": lambda: pages.deletion(s.hangzhou, None, None),
        "sessions": lambda: pages.sessions(parse(SessionQuery, {})),
        "conversation": lambda: pages.conversation(parse(ConversationQuery, {"session": "s-2026"})),
        "persona": lambda: pages.persona(None, None),
        "review": lambda: pages.review(None, None, after=None, turns=3),
        "review after": lambda: pages.review(None, None, after=p[0], turns=3),
    }
    for name, read in reads.items():
        assert archive.transactions(read) == 1, name


def test_a_page_holds_what_its_reads_hold(archive: Archive) -> None:
    pages, s, p = archive.pages, archive.seeded, archive.proposals
    memory = pages.memory(s.hangzhou, None, None, offset=0, limit=4000)
    assert memory.waiting == 2 and memory.read["memory"].id == s.hangzhou
    assert [f.id for f in memory.facts] == [s.hangzhou, s.shanghai]
    assert memory.read["text"]["content"].startswith("最近工作挺忙的") and memory.read["quote"]["start"] >= 0
    assert memory.read["co_derived"][0].id == s.tea and memory.presentation.text
    review = pages.review(None, None, after=None, turns=3)
    assert review.waiting == 2 and review.proposal is not None
    assert review.proposal["memory"].id == p[0] and [e.id for e in review.proposal["after"]] == [
        "cat-0-reply",
        "cat-1",
        "cat-1-reply",
    ]
    assert pages.review(None, None, after=p[1], turns=3).proposal is None
    persona = pages.persona(None, None)
    assert persona.emotion is not None and persona.felt_in is not None and persona.felt_in.id == s.emotion
    assert [v.version for v in persona.versions] == [2, 1]  # newest first
    deletion = pages.deletion(s.hike, None, None)
    assert [m.id for m in deletion.doomed] == [s.hike] and [e.id for e in deletion.events] == ["ev-hike"]


def test_a_persona_never_seen_gets_its_default_then_one_read(archive: Archive) -> None:
    before = archive.transactions(lambda: archive.pages.persona("newcomer", None))
    # the page's read that finds nothing, persona_get's read and its write of the default, the page's read
    assert before == 4
    again = archive.transactions(lambda: archive.pages.persona("newcomer", None))
    assert again == 1
    assert [v.version for v in archive.pages.persona("newcomer", None).versions] == [1]


def test_recall_reads_once_after_the_recall(archive: Archive) -> None:
    query = parse(RecallQuery, {"query": "猫"})
    alone = archive.transactions(lambda: archive.service.memory_recall(query))
    view = archive.pages.recall(query)
    assert archive.transactions(lambda: archive.pages.recall(query)) == alone + 1
    raw = [i.event.id for i in view.result.items if i.event is not None]
    assert view.proposed == {"cat-0", "cat-1"} <= set(raw) and view.waiting == 2


def test_errors_are_the_reads_own(archive: Archive) -> None:
    pages = archive.pages
    with pytest.raises(NotFound):
        pages.memory("mem_missing", None, None, offset=0, limit=10)
    with pytest.raises(NotFound):
        pages.review(None, None, after="mem_missing", turns=3)
    with pytest.raises(InvalidInput):
        pages.persona("bad id", None)
    # a failed read leaves no transaction open behind it
    assert not archive.service.db.connection().in_transaction
