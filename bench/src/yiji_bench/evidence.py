"""``yiji bench locomo`` and ``yiji bench madial``: evidence recall through yiji's real recall path.

Each data set is ingested into a fresh database (a temporary file) with the service's own batch
submission, then every question is recalled with "now" at the data set's last date. No language model:
LoCoMo turns and MADial memories are raw events, so recall runs on the lexical index and the raw-event
fallback; in ``semantic`` or ``deep`` mode every scope's vectors are built first with the offline
embedder (``yiji reindex --vectors``), and cosine joins the ranking.

``--memories observations`` measures the path a companion uses: LoCoMo's own per-session observation
annotations are derived as memories of the turns they cite (text = the observation, quote = the whole turn
text, kind ``observation``, basis from the speaker's role) through the service's ``memory_derive_many``, so
every grounding rule applies; turns without an observation stay raw events. A memory hit counts as its
source turn (first occurrence), so the metrics are the same as for the raw-only run.
Metrics are those of the baseline scripts (see :mod:`yiji_bench.metrics`). Beside yiji's figures, each
run prints plain BM25 over the same documents as the baseline scripts compute it
(:mod:`yiji_bench.baselines`), and yiji against it question by question (recall@10, with a sign test).
The data is read from the given path and never copied.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn
from yiji.models.events import Cue
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.models.recall import RecallMode, RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock
from yiji_bench.baselines import LocomoBm25, MadialBm25
from yiji_bench.datasets import (
    LocomoConversation,
    MadialSet,
    baseline_memory_text,
    baseline_turn_text,
    load_locomo,
    load_madial,
)
from yiji_bench.metrics import (
    MADIAL_COLUMNS,
    OVERALL_CATEGORIES,
    ListPrecision,
    LocomoReport,
    approx_tokens,
    bm25_list,
    compared,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
)

__all__ = [
    "MEMORY_MODES",
    "PERSONA",
    "carried_turns",
    "cross_language_pairs",
    "ingest_locomo",
    "locomo_events",
    "locomo_observations",
    "madial_events",
    "percentiles",
    "question_bar",
    "ranked_turns",
    "run_locomo",
    "run_madial",
]

MEMORY_MODES = ("none", "observations")
"""What ``yiji bench locomo --memories`` derives: nothing (raw turns only) or LoCoMo's observations."""

PERSONA = "bench"
LIMIT = 200
T = TypeVar("T")


def question_bar(items: Iterable[T], total: int, desc: str) -> Iterable[T]:
    return tqdm(items, total=total, desc=desc, unit="q", disable=None, leave=False)


def _service(folder: str, name: str, clock: FixedClock, mode: RecallMode = "fast") -> MemoryService:
    path = Path(folder) / f"{name}.db"
    embedder = None
    if mode != "fast":
        from yiji.providers.embeddings import LocalEmbedder

        embedder = LocalEmbedder()
    # the data's times are read as UTC, and so is the calendar of a time a question names
    config = Config(db=path, timezone="UTC")
    return MemoryService(Database(path, synchronous="OFF"), config, clock=clock, embedder=embedder)


def _build_vectors(service: MemoryService, projects: Iterable[str], mode: str) -> dict[str, Any] | None:
    """Build every scope's vectors (semantic modes only); returns the reindex throughput."""
    if mode == "fast":
        return None
    count, seconds = 0, 0.0
    for project in projects:
        built = service.vectors_reindex(PERSONA, project)
        count += built["vectors"]
        seconds += built["seconds"]
    return {"vectors": count, "seconds": round(seconds, 2), "vectors_per_second": round(count / seconds, 1)}


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


def _turn(item: Any) -> str:
    """The LoCoMo turn id of a recall item: a memory counts as its source turn."""
    event_id: str = item.memory.event_id if item.memory is not None else item.id
    return event_id.split(":", 1)[1]


def ranked_turns(items: Iterable[Any]) -> list[str]:
    """LoCoMo turn ids of recall items in rank order: a memory counts as its source turn, first
    occurrence only."""
    return list(dict.fromkeys(_turn(item) for item in items))


def carried_turns(items: Iterable[Any]) -> dict[str, set[str]]:
    """For each ranked turn, the turns its items carry as their context."""
    carried: dict[str, set[str]] = {}
    for item in items:
        carried.setdefault(_turn(item), set()).update(_turn(c) for c in item.context)
    return carried


def run_locomo(
    data: str | Path,
    errata: str | Path | None = None,
    progress: bool = True,
    memories: str = "none",
    service_hook: Callable[[MemoryService], None] | None = None,
    mode: RecallMode = "fast",
) -> dict[str, Any]:
    """Ingest LoCoMo (each turn an event at its session's date, speakers mapped to roles, captions and
    speaker names as cues, one project per conversation; optionally its observations derived as
    memories) and score recall for every question."""
    conversations = load_locomo(data, errata)
    now = max(c.last_time for c in conversations)
    clock = FixedClock(now)
    report, bm25 = LocomoReport(), LocomoReport()
    precision = ListPrecision()
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="yiji-locomo-") as tmp:
        service = _service(tmp, "locomo", clock, mode)
        if service_hook is not None:
            service_hook(service)
        started = time.perf_counter()
        derived = ingest_locomo(service, conversations, memories)
        ingest_seconds = time.perf_counter() - started
        vectors = _build_vectors(service, [c.sample_id for c in conversations], mode)
        questions = [(c, q) for c in conversations for q in c.questions]
        costs = {
            c.sample_id: {t.dia_id: approx_tokens(baseline_turn_text(t)) for t in c.turns}
            for c in conversations
        }
        baseline = {c.sample_id: LocomoBm25([baseline_turn_text(t) for t in c.turns]) for c in conversations}
        recall_at_10: dict[str, list[float]] = {"yiji": [], "bm25": []}
        for c, q in question_bar(questions, len(questions), "locomo") if progress else questions:
            t0 = time.perf_counter()
            result = service.memory_recall(
                RecallQuery(
                    query=q.question or "?", persona=PERSONA, project=c.sample_id, limit=LIMIT, mode=mode
                )
            )
            latencies.append(time.perf_counter() - t0)
            ranked = ranked_turns(result.items)
            carried = carried_turns(result.items)
            ours = locomo_metrics(ranked, q.evidence, costs[c.sample_id], carried)
            report.add(q.category, ours)
            turns = [c.turns[i].dia_id for i in baseline[c.sample_id].ranking(q.question)]
            theirs = locomo_metrics(turns, q.evidence, costs[c.sample_id])
            bm25.add(q.category, theirs)
            if q.category in OVERALL_CATEGORIES:
                recall_at_10["yiji"].append(ours["recall@10"])
                recall_at_10["bm25"].append(theirs["recall@10"])
                # the list a host gets: a recall at the default limit (untimed), and BM25's first turns
                listed = service.memory_recall(
                    RecallQuery(query=q.question or "?", persona=PERSONA, project=c.sample_id, mode=mode)
                )
                precision.add("yiji", ranked_turns(listed.items), q.evidence)
                scores = baseline[c.sample_id].scores(q.question)
                order = baseline[c.sample_id].ranking(q.question)
                precision.add(
                    "bm25",
                    bm25_list([c.turns[i].dia_id for i in order], [scores[i] for i in order]),
                    q.evidence,
                )
        service.close()
    return {
        "report": report,
        "overall": report.overall(),
        "bm25": {"overall": bm25.overall(), "table": bm25.table()},
        "compared": {"recall@10": compared(recall_at_10["yiji"], recall_at_10["bm25"])},
        "precision": precision.as_dict(),
        "questions": len(questions),
        "memories": memories,
        "derived": derived,
        "ingest_seconds": round(ingest_seconds, 2),
        "recall_ms": percentiles(latencies),
        "mode": mode,
        "reindex": vectors,
    }


def cross_language_pairs(data: str | Path) -> tuple[MadialSet, MadialSet]:
    """(Chinese memories, English dialogues) of MADial-Bench, checked to be parallel.

    The two languages share memory ids: every English memory must exist in Chinese with the same user
    and date (the Chinese archive has a few more memories, which stay as distractors), and English
    dialogue *i* must belong to the same user as Chinese dialogue *i*. The English gold ids then name
    Chinese memories. Raises ``ValueError`` when the data is not parallel.
    """
    zh, en = load_madial(data, "zh"), load_madial(data, "en")
    chinese = {m.id: m for m in zh.memories}
    for m in en.memories:
        twin = chinese.get(m.id)
        if twin is None or (twin.user_id, twin.occurred_at) != (m.user_id, m.occurred_at):
            raise ValueError("MADial-Bench memories are not parallel across languages")
    if len(zh.dialogues) != len(en.dialogues) or any(
        (a.id, a.user_id) != (b.id, b.user_id) for a, b in zip(zh.dialogues, en.dialogues, strict=True)
    ):
        raise ValueError("MADial-Bench dialogues are not parallel across languages")
    return zh, en


def madial_events(bench: MadialSet) -> list[EventIn]:
    """MADial-Bench's memories as events: one user turn each, in a project per user."""
    return [
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


def run_madial(
    data: str | Path,
    lang: str = "zh",
    progress: bool = True,
    mode: RecallMode = "fast",
    cross: bool = False,
    service_hook: Callable[[MemoryService], None] | None = None,
) -> dict[str, Any]:
    """Ingest one MADial-Bench language (each memory an event at its date, each user a project) and
    score recall for every dialogue. ``cross``: English dialogues as queries over the Chinese memories."""
    if cross:
        memories, queries = cross_language_pairs(data)
    else:
        memories = queries = load_madial(data, lang)
    bench = memories
    clock = FixedClock(bench.last_time)
    latencies: list[float] = []
    rows = []
    precision = ListPrecision()
    label = "en->zh" if cross else lang
    with tempfile.TemporaryDirectory(prefix="yiji-madial-") as tmp:
        service = _service(tmp, f"madial-{bench.lang}", clock, mode)
        if service_hook is not None:
            service_hook(service)
        service.event_submit_many(madial_events(bench))
        vectors = _build_vectors(service, sorted({f"user-{m.user_id}" for m in bench.memories}), mode)
        dialogues = list(queries.dialogues)
        for d in question_bar(dialogues, len(dialogues), f"madial {label}") if progress else dialogues:
            t0 = time.perf_counter()
            result = service.memory_recall(
                RecallQuery(
                    query=d.query or "?", persona=PERSONA, project=f"user-{d.user_id}", limit=LIMIT, mode=mode
                )
            )
            latencies.append(time.perf_counter() - t0)
            rows.append(madial_metrics([int(i.id.split("-", 1)[1]) for i in result.items], d.relevant))
            # the list a host gets: a recall at the default limit (untimed)
            listed = service.memory_recall(
                RecallQuery(query=d.query or "?", persona=PERSONA, project=f"user-{d.user_id}", mode=mode)
            )
            precision.add("yiji", (i.id for i in listed.items), (f"madial-{g}" for g in d.relevant))
        service.close()
    metrics = mean_metrics(rows)
    out: dict[str, Any] = {
        "lang": label,
        "dialogues": len(dialogues),
        "metrics": {k: round(metrics[k], 4) for k in MADIAL_COLUMNS},
        "recall_ms": percentiles(latencies),
        "mode": mode,
        "reindex": vectors,
        "bm25": None,
        "compared": None,
    }
    if not cross:  # plain BM25 shares no word between two languages: no row for the cross run
        users = {d.user_id: bench.candidates(d.user_id) for d in dialogues}
        engines = {
            u: MadialBm25([baseline_memory_text(m) for m in ms], bench.lang) for u, ms in users.items()
        }
        theirs = []
        for d in dialogues:
            scores, order = engines[d.user_id].scores(d.query), engines[d.user_id].ranking(d.query)
            ids = [users[d.user_id][i].id for i in order]
            theirs.append(madial_metrics(ids, d.relevant))
            listed_ids = [f"madial-{i}" for i in ids]
            precision.add(
                "bm25", bm25_list(listed_ids, [scores[i] for i in order]), (f"madial-{g}" for g in d.relevant)
            )
        baseline = mean_metrics(theirs)
        out["bm25"] = {k: round(baseline[k], 4) for k in MADIAL_COLUMNS}
        out["compared"] = {
            "recall@10": compared([r["recall@10"] for r in rows], [r["recall@10"] for r in theirs])
        }
    out["precision"] = precision.as_dict()
    return out


def _photo_id(url: str, dia_id: str, index: int) -> str:
    """The image URL as the cue identifier, or a stable local name when there is none (or it is inline)."""
    return url if url and len(url) <= 512 else f"photo:{dia_id}:{index}"


def percentiles(values: list[float]) -> dict[str, float]:
    """p50 and p95 of ``values`` (seconds) in milliseconds; zeros when there are none."""
    if not values:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000, 2)

    return {"p50": at(0.5), "p95": at(0.95)}
