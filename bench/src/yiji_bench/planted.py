"""Quality at archive scale for ``yiji bench recall --data``: LongMemEval haystacks planted in the archive.

:data:`PLANTED` dev-half LongMemEval_S questions (a sample seeded by :data:`SEED`, in file order) have
their haystacks planted in the recall benchmark's synthetic archive, in its main scope, so they compete
with every event of it. Each haystack keeps its sessions' relative dates and is moved as a block to a
random age: its last session lands at a date drawn uniformly over the archive's span. Both speakers'
non-empty turns become raw events (``lme-<question>:<session>:<turn>``). Each question is then recalled
once, with "now" the archive's clock, and scored at turn level as ``yiji bench longmemeval`` scores it:
every other event of the archive (synthetic or another haystack's) taking a place in the ranking is a
non-gold id.

The BM25 row ranks the same documents (every event of the scope, synthetic and planted) with
:class:`~yiji_bench.longmemeval.Bm25Index`: exact, scoring only the documents that share a term with the
question. Metrics are computed on the documents either system ranked plus the gold turns, which gives the
same figures as the whole corpus (a document neither ranked nor gold adds nothing to any of them); BM25's
ranking is cut at :data:`BM25_DEPTH`, far below any cut-off reported.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from yiji.models import EventIn
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji_bench.evidence import percentiles
from yiji_bench.longmemeval import (
    Bm25Index,
    LmeData,
    LmeQuestion,
    LmeReport,
    LmeTurn,
    corpus,
    question_metrics,
    select,
)
from yiji_bench.metrics import ListPrecision, bm25_list

__all__ = ["BM25_DEPTH", "PLANTED", "SEED", "Planted", "plant", "planted_quality"]

PLANTED = 20
SEED = "yiji-planted-1"
BM25_DEPTH = 1000
RECALL_LIMIT = 200


@dataclass(frozen=True)
class Planted:
    """One planted question: the question with its turns at their planted dates and event ids."""

    question: LmeQuestion
    prefix: str

    def event_id(self, turn: LmeTurn) -> str:
        return f"{self.prefix}:{turn.event_id}"

    @property
    def turns(self) -> list[LmeTurn]:
        """The planted (non-empty) turns, both speakers."""
        return [t for t in corpus(self.question, "both") if t.text.strip()]


def plant(data: LmeData, start: datetime, end: datetime, count: int = PLANTED) -> list[Planted]:
    """The sample of ``count`` dev questions, each haystack moved so that its last session falls at a
    drawn date in ``[start + its own span, end]``."""
    rng = random.Random(hashlib.sha256(SEED.encode()).digest())
    dev = select(data.questions, "dev")
    chosen = sorted(rng.sample(range(len(dev)), min(count, len(dev))))
    planted = []
    for index in chosen:
        q = dev[index]
        first = min(t.occurred_at for t in q.turns)
        last = max(t.occurred_at for t in q.turns)
        earliest = start + (last - first)
        room = max(int((end - earliest).total_seconds() // 60), 0)
        shift = earliest + timedelta(minutes=rng.randint(0, room)) - last
        moved = replace(q, turns=tuple(replace(t, occurred_at=t.occurred_at + shift) for t in q.turns))
        planted.append(Planted(moved, f"lme-{q.question_id}"))
    return planted


def planted_events(planted: Sequence[Planted], persona: str, project: str) -> list[EventIn]:
    """Every planted turn as a raw event of the scope."""
    return [
        EventIn(
            id=p.event_id(t),
            persona=persona,
            project=project,
            session=f"{p.prefix}:{t.session}",
            role=t.role,  # type: ignore[arg-type]
            source="longmemeval",
            text=t.text,
            occurred_at=t.occurred_at,
        )
        for p in planted
        for t in p.turns
    ]


def _synthetic_turn(i: int) -> LmeTurn:
    """A synthetic archive event (``syn-<i>``, sessions of 50) as a scored document: never gold."""
    return LmeTurn(f"s{i // 50}", f"syn-s{i // 50}", i % 50, "user", "", False, datetime.min)


def planted_quality(
    service: MemoryService,
    planted: Sequence[Planted],
    synthetic_texts: Sequence[str],
    persona: str,
    project: str,
) -> dict[str, Any]:
    """Recall each planted question once and score it beside the exact BM25 row over the same events."""
    started = time.perf_counter()
    turns: dict[str, LmeTurn] = {}
    texts = list(synthetic_texts)
    ids = [f"syn-{i}" for i in range(len(texts))]
    for p in planted:
        for t in p.turns:
            ids.append(p.event_id(t))
            texts.append(t.text)
            turns[p.event_id(t)] = replace(t, session_id=f"{p.prefix}-{t.session_id}")
    index = Bm25Index(texts)
    del texts
    index_seconds = time.perf_counter() - started
    report = LmeReport()
    precision = ListPrecision()
    latencies: list[float] = []
    for p in planted:
        query = RecallQuery(query=p.question.question, persona=persona, project=project, limit=RECALL_LIMIT)
        t0 = time.perf_counter()
        result = service.memory_recall(query)
        latencies.append(time.perf_counter() - t0)
        ranked = list(
            dict.fromkeys(str(i.memory.event_id if i.memory is not None else i.id) for i in result.items)
        )
        bm25, bm25_scores = index.top(p.question.question, BM25_DEPTH)
        bm25_ids = [ids[i] for i in bm25]
        gold = [p.event_id(t) for t in p.turns if t.has_answer]
        # the list a host gets: a recall at the default limit (untimed), and BM25's first turns
        listed = service.memory_recall(
            RecallQuery(query=p.question.question, persona=persona, project=project)
        )
        precision.add(
            "yiji", (str(i.memory.event_id if i.memory is not None else i.id) for i in listed.items), gold
        )
        precision.add("bm25", bm25_list(bm25_ids, bm25_scores), gold)
        compact = list(dict.fromkeys([*ranked, *bm25_ids, *gold]))
        documents = [
            turns[e] if e in turns and e.startswith(p.prefix + ":") else _other(e, turns) for e in compact
        ]
        position = {e: k for k, e in enumerate(compact)}
        report.add(
            "yiji", p.question.question_type, question_metrics([position[e] for e in ranked], documents)
        )
        report.add(
            "bm25", p.question.question_type, question_metrics([position[e] for e in bm25_ids], documents)
        )
    return {
        "report": report,
        "questions": len(planted),
        "events_planted": sum(len(p.turns) for p in planted),
        "recall_limit": RECALL_LIMIT,
        "figures": report.as_dict(),
        "precision": precision.as_dict(),
        "recall_ms": percentiles(latencies),
        "bm25_index_seconds": round(index_seconds, 1),
    }


def _other(event_id: str, planted_turns: dict[str, LmeTurn]) -> LmeTurn:
    """A document that is no gold of this question: a synthetic event or another haystack's turn."""
    turn = planted_turns.get(event_id)
    if turn is not None:
        return replace(turn, has_answer=False)
    return _synthetic_turn(int(event_id.removeprefix("syn-")))
