"""``yiji bench exactness``: how often recall's list differs from exhaustive final scoring.

The reference scores **every** match of the scope with the final ranking: the same recall with a candidate
depth past the scope's documents (:class:`yiji.service.recall.Recall` with ``candidates`` =
:data:`EVERY_MATCH`), so each document holding a searched word is a candidate and each one's lexical
strength, context and factors are computed as the ranking defines them. Recall itself is run as a host
runs it (its own candidate depth). For each query the two lists are compared item by item (ids in order,
context items apart): a query *differs* when its list is not the reference's, whether by an item or by
order. Printed per data set: the queries, the share that differ, and the share whose items differ as a
set (order aside).

Data sets: LoCoMo (every question, raw turns), LongMemEval_S's dev half at 1x (the first ``questions``;
each haystack a database of its own), MADial-Bench zh and en (every dialogue). "Now" is each data set's
last date (LongMemEval: the question's), as in the quality benchmarks. The data is read, never copied.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from yiji.config import Config
from yiji.db import Database
from yiji.domain.recall import RecallRequest
from yiji.service import MemoryService
from yiji.service.recall import Recall
from yiji.timeutil import FixedClock
from yiji_bench.datasets import load_locomo, load_madial
from yiji_bench.evidence import PERSONA, ingest_locomo, madial_events, question_bar
from yiji_bench.longmemeval import load_longmemeval, select
from yiji_bench.longmemeval_run import LME_PROJECT, longmemeval_events

__all__ = ["EVERY_MATCH", "Differing", "differing", "listed", "run_exactness"]

EVERY_MATCH = 1 << 31
"""A candidate depth past any scope's documents: every match is a candidate."""


@dataclass
class Differing:
    """Queries compared on one data set, and how many lists differ (in order; as sets)."""

    name: str
    queries: int = 0
    lists: int = 0
    sets: int = 0

    def add(self, ours: Sequence[str], reference: Sequence[str]) -> None:
        self.queries += 1
        self.lists += list(ours) != list(reference)
        self.sets += set(ours) != set(reference)

    def as_dict(self) -> dict[str, Any]:
        def share(n: int) -> float:
            return round(n / self.queries, 4) if self.queries else 0.0

        return {
            "data": self.name,
            "queries": self.queries,
            "differ": self.lists,
            "share_differing": share(self.lists),
            "differ_as_sets": self.sets,
            "share_differing_as_sets": share(self.sets),
        }


def listed(recall: Recall, request: RecallRequest) -> list[str]:
    """The ids of a recall's list in order (hits, facts and weak matches; context items apart)."""
    return [item.id for item in recall.recall(request, presentations=False).items]


@contextmanager
def _pair(path: Path, now: datetime) -> Iterator[tuple[Recall, Recall]]:
    """Recall as a host runs it, and the reference, over the database at ``path`` with "now" fixed."""
    db = Database(path)
    config = Config(db=path, timezone="UTC")
    try:
        clock = FixedClock(now)
        yield Recall(db, config, clock=clock), Recall(db, config, clock=clock, candidates=EVERY_MATCH)
    finally:
        db.close()


def differing(pair: tuple[Recall, Recall], requests: Iterable[RecallRequest], into: Differing) -> Differing:
    """Compare recall with the reference for each request."""
    ours, reference = pair
    for request in requests:
        into.add(listed(ours, request), listed(reference, request))
    return into


def _service(path: Path, now: datetime) -> MemoryService:
    return MemoryService(
        Database(path, synchronous="OFF"), Config(db=path, timezone="UTC"), clock=FixedClock(now)
    )


def _locomo(data: Path, tmp: Path, limit: int, progress: bool) -> Differing:
    conversations = load_locomo(data)
    now = max(c.last_time for c in conversations)
    path = tmp / "locomo.db"
    service = _service(path, now)
    ingest_locomo(service, conversations)
    service.close()
    asked = [(c.sample_id, q.question or "?") for c in conversations for q in c.questions]
    requests = (RecallRequest(text, PERSONA, project, limit=limit) for project, text in asked)
    with _pair(path, now) as pair:
        bar = question_bar(requests, len(asked), "exactness locomo") if progress else requests
        return differing(pair, bar, Differing("locomo"))


def _longmemeval(data: Path, tmp: Path, limit: int, questions: int, progress: bool) -> Differing:
    loaded = load_longmemeval(data)
    chosen = select(loaded.questions, "dev", questions)
    out = Differing(f"longmemeval_s dev 1x (first {len(chosen)})")
    bar = question_bar(chosen, len(chosen), "exactness longmemeval") if progress else chosen
    for q in bar:
        path = tmp / f"lme-{q.question_id}.db"
        service = _service(path, q.question_date)
        service.event_submit_many(longmemeval_events(q, "both"))
        service.close()
        with _pair(path, q.question_date) as pair:
            differing(pair, [RecallRequest(q.question, PERSONA, LME_PROJECT, limit=limit)], out)
        path.unlink()
    return out


def _madial(data: Path, tmp: Path, lang: str, limit: int, progress: bool) -> Differing:
    bench = load_madial(data, lang)
    path = tmp / f"madial-{lang}.db"
    service = _service(path, bench.last_time)
    service.event_submit_many(madial_events(bench))
    service.close()
    dialogues = list(bench.dialogues)
    requests = (RecallRequest(d.query or "?", PERSONA, f"user-{d.user_id}", limit=limit) for d in dialogues)
    with _pair(path, bench.last_time) as pair:
        bar = question_bar(requests, len(dialogues), f"exactness madial {lang}") if progress else requests
        return differing(pair, bar, Differing(f"madial {lang}"))


def run_exactness(
    *,
    locomo: Path | None = None,
    longmemeval: Path | None = None,
    madial: Path | None = None,
    questions: int = 60,
    limit: int = 10,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """The share of queries whose list differs from exhaustive final scoring, per data set given."""
    out: list[Differing] = []
    with tempfile.TemporaryDirectory(prefix="yiji-exactness-") as folder:
        tmp = Path(folder)
        if locomo is not None:
            out.append(_locomo(locomo, tmp, limit, progress))
        if longmemeval is not None:
            out.append(_longmemeval(longmemeval, tmp, limit, questions, progress))
        if madial is not None:
            out.extend(_madial(madial, tmp, lang, limit, progress) for lang in ("zh", "en"))
    return [d.as_dict() for d in out]
