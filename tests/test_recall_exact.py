"""Recall's list equals scoring every match of the scope with the final ranking.

The reference is the recall itself read to a depth past the scope's documents, so every document holding
a searched word is a candidate (:mod:`yiji.domain.exact`); recall read from a shallow depth must stop at
the same list, item for item and in order, whatever depth it starts from.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from yiji.domain import exact, ranking_plan
from yiji.domain.recall import RecallRequest
from yiji.models import parse
from yiji.models.lifecycle import DeleteRequest
from yiji.service import MemoryService
from yiji.service.recall import Recall
from yiji.timeutil import FixedClock

from .factory import make_service
from .lifecycle_helpers import derive, note, submit

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
EVERY_MATCH = 1 << 31

ENGLISH = (
    "coffee morning run river dog breed golden retriever doctor appointment guitar drum lisbon apartment "
    "moved job office project deadline sister birthday cake garden tomato painting lake sunrise"
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
    "海边",
]


def _text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return "I " + " ".join(rng.choice(ENGLISH) for _ in range(rng.randint(1, 14))) + "."
    return "我" + "，".join(rng.choice(CHINESE) for _ in range(rng.randint(1, 9))) + "。"


def _query(rng: random.Random) -> str:
    words = rng.sample(ENGLISH, rng.randint(1, 3)) + rng.sample(CHINESE, rng.randint(0, 2))
    return rng.choice(["", "what did I say about ", "我说过"]) + " ".join(words)


def _archive(path: Path, rng: random.Random) -> MemoryService:
    """Random conversations in three scopes, some turns derived as memories, some deleted."""
    service = make_service(path, clock=FixedClock(T0, timedelta(milliseconds=1)))
    when = T0 - timedelta(days=300)
    events: dict[str, list[str]] = {}
    for i in range(rng.randint(60, 160)):
        project = rng.choice(["a", "a", "b", "c"])
        when += timedelta(hours=rng.randint(1, 40))
        eid, text, role = f"e{i}", _text(rng), rng.choice(["user", "assistant"])
        submit(
            service, eid, text, when.isoformat(), role=role, project=project, session=f"s{rng.randint(1, 8)}"
        )
        events.setdefault(project, []).append(eid)
        if role == "user" and rng.random() < 0.2:
            derive(service, eid, note(_text(rng), text), project=project)
    for project, ids in events.items():
        for eid in rng.sample(ids, len(ids) // 10):
            service.memory_delete(parse(DeleteRequest, {"event_id": eid, "project": project}))
    return service


def _listed(recall: Recall, request: RecallRequest) -> list[tuple[str, float]]:
    return [(i.id, i.score) for i in recall.recall(request, presentations=False).items]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_recall_equals_exhaustive_final_scoring(tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("exact") / "yiji.db"
    service = _archive(path, rng)
    try:
        clock = FixedClock(T0)
        reference = Recall(service.db, service.config, clock=clock, candidates=EVERY_MATCH)
        recalls = [Recall(service.db, service.config, clock=clock, candidates=d) for d in (1, 3)]
        recalls.append(Recall(service.db, service.config, clock=clock))
        for _ in range(8):
            request = RecallRequest(
                _query(rng), project=rng.choice(["a", "b", "c"]), limit=rng.randint(1, 12)
            )
            want = _listed(reference, request)
            for recall in recalls:
                assert _listed(recall, request) == want, request
    finally:
        service.close()


def test_the_context_bound_is_the_most_a_whole_window_adds() -> None:
    weights = ranking_plan.Weights(session=0.4, neighbour=0.2, neighbour_window=2, neighbour_decay=0.5)
    # a session's best S lends at most S; a whole window of neighbours each at S: 2 * (1 + 0.5) * S
    assert exact.context_bound(weights) == pytest.approx(0.4 + 0.2 * 3.0)
    assert exact.context_bound(ranking_plan.Weights(neighbour_window=0, session=0.25)) == 0.25
