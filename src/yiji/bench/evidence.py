"""``yiji bench locomo`` and ``yiji bench madial``: evidence recall through yiji's real recall path.

Each data set is ingested into a fresh database (a temporary file) with the service's own batch
submission, then every question is recalled with "now" at the data set's last date. No language model
and no embeddings: LoCoMo turns and MADial memories are raw events, so recall runs on the lexical index
and the raw-event fallback.

``--memories observations`` measures the path a companion uses: LoCoMo's own per-session observation
annotations are derived as memories of the turns they cite (text = the observation, quote = the whole turn
text, kind ``observation``, basis from the speaker's role) through the service's ``memory_derive_many``, so
every grounding rule applies; turns without an observation stay raw events. A memory hit counts as its
source turn (first occurrence), so the metrics are the same as for the raw-only run.
Metrics are those of the baseline scripts (see :mod:`yiji.bench.metrics`).
The data is read from the given path and never copied.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from yiji.bench.datasets import LocomoConversation, baseline_turn_text, load_locomo, load_madial
from yiji.bench.metrics import (
    MADIAL_COLUMNS,
    LocomoReport,
    approx_tokens,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
)
from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn
from yiji.models.events import Cue
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

__all__ = [
    "MEMORY_MODES",
    "PERSONA",
    "ingest_locomo",
    "locomo_events",
    "locomo_observations",
    "ranked_turns",
    "run_locomo",
    "run_madial",
]

MEMORY_MODES = ("none", "observations")
"""What ``yiji bench locomo --memories`` derives: nothing (raw turns only) or LoCoMo's observations."""

PERSONA = "bench"
LIMIT = 200
T = TypeVar("T")


def _bar(items: Iterable[T], total: int, desc: str) -> Iterable[T]:
    return tqdm(items, total=total, desc=desc, unit="q", disable=None, leave=False)


def _service(folder: str, name: str, clock: FixedClock) -> MemoryService:
    path = Path(folder) / f"{name}.db"
    return MemoryService(Database(path, synchronous="OFF"), Config(db=path), clock=clock)


def locomo_events(c: LocomoConversation) -> list[EventIn]:
    """The events of one LoCoMo conversation: each turn an event at its session's date (project: the
    conversation's sample id; id: ``sample_id:dia_id``), speakers mapped to roles, the speaker name and
    image captions as cues."""
    role = {c.speaker_a: "user", c.speaker_b: "assistant"}
    return [
        EventIn(
            id=f"{c.sample_id}:{t.dia_id}",
            persona=PERSONA,
            project=c.sample_id,
            session=f"session_{t.session}",
            role=role.get(t.speaker, "user"),  # type: ignore[arg-type]
            source="locomo",
            text=t.text,
            occurred_at=t.occurred_at,
            cues=[Cue(type="text", identifier=f"speaker:{t.speaker}", label=t.speaker)]
            + [
                Cue(type="photo", identifier=_photo_id(url, t.dia_id, i), label=caption)
                for i, (url, caption) in enumerate(
                    zip(t.image_urls or ("",) * len(t.captions), t.captions, strict=False)
                )
            ],
        )
        for t in c.turns
    ]


def locomo_observations(c: LocomoConversation) -> list[DeriveRequest]:
    """LoCoMo's observations of one conversation as derivations: one memory per cited turn (an
    observation citing several turns becomes a memory of each), grouped by source event."""
    role = {c.speaker_a: "user", c.speaker_b: "assistant"}
    turns = {t.dia_id: t for t in c.turns}
    by_event: dict[str, list[MemoryIn]] = {}
    for text, cited in c.observations:
        for dia_id in cited:
            turn = turns.get(dia_id)
            if turn is None or not turn.text.strip() or not text.strip():
                continue
            basis = "user_statement" if role.get(turn.speaker, "user") == "user" else "assistant_expression"
            by_event.setdefault(f"{c.sample_id}:{dia_id}", []).append(
                MemoryIn(text=text, quote=turn.text, kind="observation", basis=basis)  # type: ignore[arg-type]
            )
    return [
        DeriveRequest(event_id=event_id, persona=PERSONA, project=c.sample_id, memories=memories[:100])
        for event_id, memories in by_event.items()
    ]


def ingest_locomo(
    service: MemoryService,
    conversations: list[LocomoConversation],
    memories: str = "none",
    sources: dict[str, str] | None = None,
) -> dict[str, int]:
    """Submit every conversation's turns; with ``memories="observations"`` derive its observations too.

    Returns how many memories were derived and rejected; ``sources`` (when given) receives each derived
    memory's source event id, by memory id.
    """
    if memories not in MEMORY_MODES:
        raise ValueError(f"memories must be one of {', '.join(MEMORY_MODES)}")
    derived = rejected = 0
    for c in conversations:
        service.event_submit_many(locomo_events(c))
        if memories == "observations":
            for result in service.memory_derive_many(locomo_observations(c)):
                derived += len(result.memory_ids)
                rejected += len(result.rejected)
                if sources is not None:
                    sources.update(dict.fromkeys(result.memory_ids, result.event_id))
    return {"memories": derived, "rejected": rejected}


def ranked_turns(items: Iterable[Any]) -> list[str]:
    """LoCoMo turn ids of recall items in rank order: a memory counts as its source turn, first
    occurrence only."""
    turns = (item.memory.event_id if item.memory is not None else item.id for item in items)
    return list(dict.fromkeys(turn.split(":", 1)[1] for turn in turns))


def run_locomo(
    data: str | Path,
    errata: str | Path | None = None,
    progress: bool = True,
    memories: str = "none",
    service_hook: Callable[[MemoryService], None] | None = None,
) -> dict[str, Any]:
    """Ingest LoCoMo (each turn an event at its session's date, speakers mapped to roles, captions and
    speaker names as cues, one project per conversation; optionally its observations derived as
    memories) and score recall for every question."""
    conversations = load_locomo(data, errata)
    now = max(c.last_time for c in conversations)
    clock = FixedClock(now)
    report = LocomoReport()
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="yiji-locomo-") as tmp:
        service = _service(tmp, "locomo", clock)
        if service_hook is not None:
            service_hook(service)
        started = time.perf_counter()
        derived = ingest_locomo(service, conversations, memories)
        ingest_seconds = time.perf_counter() - started
        questions = [(c, q) for c in conversations for q in c.questions]
        costs = {
            c.sample_id: {t.dia_id: approx_tokens(baseline_turn_text(t)) for t in c.turns}
            for c in conversations
        }
        for c, q in _bar(questions, len(questions), "locomo") if progress else questions:
            t0 = time.perf_counter()
            result = service.memory_recall(
                RecallQuery(query=q.question or "?", persona=PERSONA, project=c.sample_id, limit=LIMIT)
            )
            latencies.append(time.perf_counter() - t0)
            ranked = ranked_turns(result.items)
            report.add(q.category, locomo_metrics(ranked, q.evidence, costs[c.sample_id]))
        service.close()
    return {
        "report": report,
        "overall": report.overall(),
        "questions": len(questions),
        "memories": memories,
        "derived": derived,
        "ingest_seconds": round(ingest_seconds, 2),
        "recall_ms": _percentiles(latencies),
    }


def run_madial(data: str | Path, lang: str = "zh", progress: bool = True) -> dict[str, Any]:
    """Ingest one MADial-Bench language (each memory an event at its date, each user a project) and
    score recall for every dialogue."""
    bench = load_madial(data, lang)
    clock = FixedClock(bench.last_time)
    latencies: list[float] = []
    rows = []
    with tempfile.TemporaryDirectory(prefix="yiji-madial-") as tmp:
        service = _service(tmp, f"madial-{lang}", clock)
        service.event_submit_many(
            [
                EventIn(
                    id=f"madial-{m.id}",
                    persona=PERSONA,
                    project=f"user-{m.user_id}",
                    session=f"memory-{m.id}",
                    role="user",
                    source="madial",
                    text=m.event,
                    occurred_at=m.occurred_at,
                )
                for m in bench.memories
            ]
        )
        dialogues = list(bench.dialogues)
        for d in _bar(dialogues, len(dialogues), f"madial {lang}") if progress else dialogues:
            t0 = time.perf_counter()
            result = service.memory_recall(
                RecallQuery(query=d.query or "?", persona=PERSONA, project=f"user-{d.user_id}", limit=LIMIT)
            )
            latencies.append(time.perf_counter() - t0)
            rows.append(madial_metrics([int(i.id.split("-", 1)[1]) for i in result.items], d.relevant))
        service.close()
    metrics = mean_metrics(rows)
    return {
        "lang": lang,
        "dialogues": len(dialogues),
        "metrics": {k: round(metrics[k], 4) for k in MADIAL_COLUMNS},
        "recall_ms": _percentiles(latencies),
    }


def _photo_id(url: str, dia_id: str, index: int) -> str:
    """The image URL as the cue identifier, or a stable local name when there is none (or it is inline)."""
    return url if url and len(url) <= 512 else f"photo:{dia_id}:{index}"


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {"p50": at(0.5), "p95": at(0.95)}


Progress = Callable[[int], Any]
