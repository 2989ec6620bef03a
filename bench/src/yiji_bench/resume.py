"""``yiji bench resume``: ``session_resume`` latency over a synthetic archive of 100,000 memories.

The archive: one event per memory, synthetic bilingual text (:mod:`yiji_bench.synthetic`), spread evenly
over three years up to the benchmark's clock, in sessions of 50 events, committed in batches through the
service's batch paths (``event_submit_many``, ``memory_derive_many``) so every validation rule and index
hook runs as in normal use. User events yield facts, preferences, episodes, observations and agreements;
assistant events yield episodes, role emotions, growth and observations; every other episode has an
authored gist. The persona is set, and each of the latest sessions has a checkpoint.

The measurement: ``resumes`` calls of ``session_resume`` on the latest sessions, after a short warm-up,
alternating a given query (the recall benchmark's query set) and the query built from the checkpoint and
recent events; wall time per call. The database lives in a temporary folder and is removed afterwards.

Pack share on LoCoMo (:func:`run_locomo_pack_share`): the conversations are ingested as the recall
benchmark ingests them (every turn a raw event, :func:`yiji_bench.evidence.locomo_events`), and each
question is the ``query`` of a ``session_resume`` of its conversation's scope, once per budget, counted in
real tokens (``gpt-4o``'s o200k encoding by default). A question's pack share is the fraction of its gold
evidence turns that appear anywhere in the pack (as recalled items or recent events), averaged as the
baseline averages recall: per category, "overall" over categories 1-4. Unlike the baseline's
``recall@Btok`` (turn texts alone, ranked, about four characters a token), a pack also carries the framing,
the persona and each item's labels, and holds at most 20 recalled items as one whole component.
Beside each ``pack@B``, ``bm25@B`` is plain BM25 in the same run (:class:`yiji_bench.baselines.LocomoBm25`
over the same turns): its ranking of the turn texts packed greedily, by the same token counter, into
the same budget, stopping at the first turn that does not fit, with no framing at all.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tqdm import tqdm

from yiji.config import Config
from yiji.domain.budget import counter_for_model
from yiji.models import EventIn
from yiji.models.checkpoints import CheckpointIn
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.models.resume import MAX_QUERY, ResumeRequest
from yiji.service import MemoryService, open_service
from yiji.timeutil import FixedClock
from yiji_bench.baselines import LocomoBm25
from yiji_bench.datasets import baseline_turn_text, load_locomo
from yiji_bench.evidence import PERSONA as LOCOMO_PERSONA
from yiji_bench.evidence import ingest_locomo
from yiji_bench.metrics import LocomoReport, packed_greedily
from yiji_bench.synthetic import sentences
from yiji_bench.synthetic_archive import QUERIES

__all__ = [
    "PACK_BUDGETS",
    "PACK_MODEL",
    "TARGET_P95_MS",
    "build_archive",
    "packed_ids",
    "run_locomo_pack_share",
    "run_resume_bench",
]

TARGET_P95_MS = 50.0
PACK_BUDGETS = (1000, 2000)
PACK_MODEL = "gpt-4o"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SPAN = timedelta(days=3 * 365)
SESSION_SIZE = 50
BATCH = 5000
WARMUP = 5
CHECKPOINTED_SESSIONS = 20

_USER_KINDS = ("fact", "preference", "episode", "observation", "agreement")
_ASSISTANT_KINDS = ("episode", "emotion", "growth", "observation")
PERSONA = (
    "你是小忆，一个温和、好奇、可靠的陪伴者。记得对方说过的话，但不编造共同经历。\n"
    "You are Xiaoyi, a warm, curious and reliable companion. Remember what was said; never invent "
    "shared history."
)


def _memory(i: int, text: str) -> MemoryIn:
    if i % 2 == 0:
        kind = _USER_KINDS[(i // 2) % len(_USER_KINDS)]
        basis = "user_statement"
    else:
        kind = _ASSISTANT_KINDS[(i // 2) % len(_ASSISTANT_KINDS)]
        basis = "assistant_expression"
    extra: dict[str, Any] = {}
    if kind == "emotion":
        extra = {"valence": round(((i % 21) - 10) / 10, 1), "arousal": round((i % 11) / 10, 1)}
    if kind == "episode" and i % 4 < 2:
        extra["gist"] = text[:16]
    return MemoryIn(text=text, quote=text, kind=kind, basis=basis, confidence=0.8, **extra)  # type: ignore[arg-type]


def build_archive(
    service: MemoryService, memories: int, progress: Callable[[int], object] | None = None
) -> list[str]:
    """Fill ``service`` with ``memories`` events and memories; return the checkpointed session ids."""
    service.persona_set(PERSONA)
    texts = sentences(memories, seed=23)
    step = SPAN / max(memories, 1)
    start = NOW - SPAN - timedelta(hours=1)
    for first in range(0, memories, BATCH):
        chunk = range(first, min(first + BATCH, memories))
        events = [
            EventIn(
                id=f"ev-{i}",
                session=f"s{i // SESSION_SIZE}",
                role="user" if i % 2 == 0 else "assistant",
                text=texts[i],
                occurred_at=start + step * i,
            )
            for i in chunk
        ]
        service.event_submit_many(events)
        service.memory_derive_many(
            [DeriveRequest(event_id=f"ev-{i}", memories=[_memory(i, texts[i])]) for i in chunk]
        )
        if progress is not None:
            progress(len(chunk))
    last_session = (memories - 1) // SESSION_SIZE
    sessions = [f"s{n}" for n in range(max(0, last_session - CHECKPOINTED_SESSIONS + 1), last_session + 1)]
    for session in sessions:
        last_seq = service.event_show(
            f"ev-{min(memories - 1, (int(session[1:]) + 1) * SESSION_SIZE - 1)}"
        ).seq
        service.checkpoint_save(
            CheckpointIn(
                session=session,
                goal="整理这段时间聊过的计划 / sort out the plans we talked about",
                completed=["按主题分组 / grouped by topic"],
                pending=["确认旅行日期 / confirm the trip dates", "挑选照片 / pick photos"],
                constraints=["不要删除原始记录 / keep the original records"],
                next_action="确认京都旅行的日期 / confirm the dates of the Kyoto trip",
                covered_seq=last_seq,
            )
        )
    service.db.checkpoint()
    return sessions


def _percentile(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def run_resume_bench(
    memories: int = 100_000,
    resumes: int = 200,
    budget: int = 2000,
    model: str | None = None,
) -> dict[str, Any]:
    """Build the archive in a temporary folder, then time ``resumes`` calls of ``session_resume``."""
    if memories < SESSION_SIZE or resumes < 2:
        raise ValueError("need at least one full session and two resumes")
    queries = QUERIES
    with tempfile.TemporaryDirectory(prefix="yiji-bench-") as tmp:
        path = Path(tmp) / "resume.db"
        # NORMAL: building is bulk writes; the timed part only reads
        service = open_service(Config(db=path, synchronous="NORMAL"), clock=FixedClock(NOW))
        try:
            t0 = time.perf_counter()
            with tqdm(
                total=memories, desc="building archive", unit="memory", disable=None, leave=False
            ) as bar:
                sessions = build_archive(service, memories, bar.update)
            build_seconds = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
            latencies: list[float] = []
            included: Counter[str] = Counter()
            omitted: Counter[str] = Counter()
            used: list[int] = []
            counter = ""
            for n in range(WARMUP + resumes):
                request = ResumeRequest(
                    session=sessions[n % len(sessions)],
                    budget=budget,
                    model=model,
                    query=queries[n % len(queries)] if n % 2 == 0 else None,
                )
                t1 = time.perf_counter()
                result = service.session_resume(request)
                elapsed = (time.perf_counter() - t1) * 1000
                if n < WARMUP:
                    continue
                latencies.append(elapsed)
                included.update(result.metadata.included)
                omitted.update(o.component for o in result.metadata.omitted)
                used.append(result.metadata.used)
                counter = result.metadata.counter
        finally:
            service.close()
    p95 = _percentile(latencies, 95)
    return {
        "memories": memories,
        "build_seconds": round(build_seconds, 1),
        "database_bytes": size,
        "resumes": resumes,
        "budget": budget,
        "counter": counter,
        "p50_ms": round(_percentile(latencies, 50), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(max(latencies), 2),
        "target_p95_ms": TARGET_P95_MS,
        "target_met": p95 <= TARGET_P95_MS,
        "mean_used": round(statistics.fmean(used), 1),
        "included": dict(included),
        "omitted": dict(omitted),
    }


def packed_ids(context: str) -> set[str]:
    """Ids of every stored record a context carries: recalled items, the turns each carries as its
    context, and recent events."""
    if not context:
        return set()
    doc = json.loads(context)
    recalled = doc.get("recalled_memories", {}).get("items", [])
    ids = {item["memory_id"] for item in recalled}
    ids.update(turn["event_id"] for item in recalled for turn in item.get("context", []))
    ids.update(item["event_id"] for item in doc.get("recent_events", {}).get("items", []))
    return ids


def run_locomo_pack_share(
    data: str | Path,
    errata: str | Path | None = None,
    budgets: tuple[int, ...] = PACK_BUDGETS,
    model: str | None = PACK_MODEL,
    memories: str = "none",
) -> dict[str, Any]:
    """Ingest LoCoMo (optionally with its observations derived as memories, as ``yiji bench locomo
    --memories observations`` does), resume once per question and budget, and report the gold evidence
    share per pack; a packed memory counts as its source turn."""
    conversations = load_locomo(data, errata)
    now = max(c.last_time for c in conversations)
    report = LocomoReport()
    recalled_omitted: Counter[int] = Counter()
    latencies: list[float] = []
    counter = ""
    with tempfile.TemporaryDirectory(prefix="yiji-bench-") as tmp:
        path = Path(tmp) / "locomo.db"
        service = open_service(Config(db=path, synchronous="NORMAL"), clock=FixedClock(now))
        try:
            sources: dict[str, str] = {}
            derived = ingest_locomo(service, conversations, memories, sources)
            questions = [(c, q) for c in conversations for q in c.questions]
            tokens = counter_for_model(model)
            texts = {c.sample_id: [baseline_turn_text(t) for t in c.turns] for c in conversations}
            baseline = {key: LocomoBm25(value) for key, value in texts.items()}
            costs = {
                c.sample_id: {
                    t.dia_id: tokens.count(text) for t, text in zip(c.turns, texts[c.sample_id], strict=True)
                }
                for c in conversations
            }
            for c, q in tqdm(questions, desc="locomo packs", unit="q", disable=None, leave=False):
                row: dict[str, float] = {}
                ranked = [c.turns[i].dia_id for i in baseline[c.sample_id].ranking(q.question)]
                for budget in budgets:
                    packed = set(packed_greedily(ranked, costs[c.sample_id], budget))
                    row[f"bm25@{budget}"] = sum(g in packed for g in q.evidence) / len(q.evidence)
                for budget in budgets:
                    request = ResumeRequest(
                        persona=LOCOMO_PERSONA,
                        project=c.sample_id,
                        budget=budget,
                        model=model,
                        query=(q.question or "?")[:MAX_QUERY],
                    )
                    t0 = time.perf_counter()
                    result = service.session_resume(request)
                    latencies.append((time.perf_counter() - t0) * 1000)
                    counter = result.metadata.counter
                    packed = {sources.get(i, i) for i in packed_ids(result.context)}
                    hits = sum(f"{c.sample_id}:{g}" in packed for g in q.evidence)
                    row[f"pack@{budget}"] = hits / len(q.evidence)
                    if any(o.component == "recalled_memories" for o in result.metadata.omitted):
                        recalled_omitted[budget] += 1
                report.add(q.category, row)
        finally:
            service.close()
    columns = tuple(f"pack@{b}" for b in budgets) + tuple(f"bm25@{b}" for b in budgets)
    overall = report.overall()
    return {
        "questions": report.count((1, 2, 3, 4, 5)),
        "memories": memories,
        "derived": derived,
        "counter": counter,
        "overall": {k: round(v, 4) for k, v in overall.items()},
        "by_category": {
            str(category): {k: round(v, 4) for k, v in report.mean([category]).items()}
            for category in sorted(report.rows)
        },
        "recalled_omitted_share": {
            str(b): round(recalled_omitted[b] / max(1, report.count((1, 2, 3, 4, 5))), 4) for b in budgets
        },
        "resume_p50_ms": round(_percentile(latencies, 50), 2),
        "resume_p95_ms": round(_percentile(latencies, 95), 2),
        "table": report.table(columns),
    }
