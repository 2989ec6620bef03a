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
Metrics are those of the baseline scripts (see :mod:`yiji.bench.metrics`). Beside yiji's figures, each
run prints plain BM25 over the same documents as the baseline scripts compute it
(:mod:`yiji.bench.baselines`), and yiji against it question by question (recall@10, with a sign test).
The data is read from the given path and never copied.
"""

from __future__ import annotations

import gc
import hashlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from yiji.bench.baselines import LocomoBm25, MadialBm25
from yiji.bench.datasets import (
    LocomoConversation,
    MadialSet,
    baseline_memory_text,
    baseline_turn_text,
    load_locomo,
    load_madial,
)
from yiji.bench.kept_vectors import CachedEmbedder
from yiji.bench.longmemeval import (
    BM25_VERSION,
    SCALE_VERSION,
    FillerSession,
    LmeQuestion,
    LmeReport,
    LmeTurn,
    bm25_ranking,
    from_outline,
    load_longmemeval,
    outline_of,
    question_metrics,
    scale_question,
    select,
)
from yiji.bench.longmemeval import corpus as lme_corpus
from yiji.bench.metrics import (
    MADIAL_COLUMNS,
    OVERALL_CATEGORIES,
    LocomoReport,
    approx_tokens,
    compared,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
)
from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn
from yiji.models.events import Cue
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.models.recall import RecallMode, RecallQuery
from yiji.models.resume import ResumeRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

__all__ = [
    "MEMORY_MODES",
    "PERSONA",
    "carried_turns",
    "cross_language_pairs",
    "index_fingerprint",
    "ingest_locomo",
    "locomo_events",
    "locomo_observations",
    "longmemeval_events",
    "percentiles",
    "ranked_turns",
    "run_locomo",
    "run_longmemeval",
    "run_madial",
]

MEMORY_MODES = ("none", "observations")
"""What ``yiji bench locomo --memories`` derives: nothing (raw turns only) or LoCoMo's observations."""

PERSONA = "bench"
LIMIT = 200
T = TypeVar("T")


def _bar(items: Iterable[T], total: int, desc: str) -> Iterable[T]:
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
        for c, q in _bar(questions, len(questions), "locomo") if progress else questions:
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
        service.close()
    return {
        "report": report,
        "overall": report.overall(),
        "bm25": {"overall": bm25.overall(), "table": bm25.table()},
        "compared": {"recall@10": compared(recall_at_10["yiji"], recall_at_10["bm25"])},
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
    label = "en->zh" if cross else lang
    with tempfile.TemporaryDirectory(prefix="yiji-madial-") as tmp:
        service = _service(tmp, f"madial-{bench.lang}", clock, mode)
        if service_hook is not None:
            service_hook(service)
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
        vectors = _build_vectors(service, sorted({f"user-{m.user_id}" for m in bench.memories}), mode)
        dialogues = list(queries.dialogues)
        for d in _bar(dialogues, len(dialogues), f"madial {label}") if progress else dialogues:
            t0 = time.perf_counter()
            result = service.memory_recall(
                RecallQuery(
                    query=d.query or "?", persona=PERSONA, project=f"user-{d.user_id}", limit=LIMIT, mode=mode
                )
            )
            latencies.append(time.perf_counter() - t0)
            rows.append(madial_metrics([int(i.id.split("-", 1)[1]) for i in result.items], d.relevant))
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
        theirs = [
            madial_metrics([users[d.user_id][i].id for i in engines[d.user_id].ranking(d.query)], d.relevant)
            for d in dialogues
        ]
        baseline = mean_metrics(theirs)
        out["bm25"] = {k: round(baseline[k], 4) for k in MADIAL_COLUMNS}
        out["compared"] = {
            "recall@10": compared([r["recall@10"] for r in rows], [r["recall@10"] for r in theirs])
        }
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


Progress = Callable[[int], Any]


LME_LIMIT = 200
"""Items asked of each LongMemEval recall (the API's maximum): session metrics at 50 need more than 50."""
LME_DUMP_TOP = 20
LME_PROJECT = "longmemeval"
LME_FORMAT = 1
"""Bump when the events a LongMemEval question is ingested as change: kept databases are rebuilt."""
OUTLINE_FORMAT = 1
_PROBE = "The user's running shoes were bought in March 2023; Cafés. 我上周搬到了杭州，住在西湖边上。"
"""A text whose index body stands for the segmentation rules (stemming, folding, Chinese words and
characters): if the rules change without a new segmenter version, kept databases are rebuilt anyway."""


def index_fingerprint() -> str:
    """What a kept LongMemEval database was built with: the bench's event format, the schema version, the
    segmenter (name, versions, scheme) and the index body of a probe text. Ranking and query code are not
    part of it: a change there re-runs on the kept databases."""
    from yiji.domain.segment import segmenter_id
    from yiji.schema import SCHEMA_VERSION
    from yiji.service.indexing import event_body

    stamp = f"{LME_FORMAT}|{SCHEMA_VERSION}|{segmenter_id()}|{event_body(_PROBE, [])}"
    return hashlib.sha256(stamp.encode()).hexdigest()[:16]


def longmemeval_events(question: LmeQuestion, protocol: str) -> list[EventIn]:
    """The events of one question's haystack: each non-empty corpus turn, at its session's date, in
    haystack order (so ``seq`` follows it), with the data's role and a stable id (``session:turn``)."""
    if question.outline:
        raise ValueError("an outline has no turn text: load the data file")
    return [
        EventIn(
            id=t.event_id,
            persona=PERSONA,
            project=LME_PROJECT,
            session=t.session,
            role=t.role,  # type: ignore[arg-type]
            source="longmemeval",
            text=t.text,
            occurred_at=t.occurred_at,
        )
        for t in lme_corpus(question, protocol)
        if t.text.strip()
    ]


class _Kept:
    """The database of one question, protocol and scale, with its marker (``<question id>.json``): a
    temporary file, or one kept under ``--keep`` (scaled archives under ``x<scale>/``) and reused while its
    marker says it is complete and current. A scaled archive's marker holds its outline, so a re-run never
    draws the archive again."""

    def __init__(
        self, folder: Path, question_id: str, protocol: str, fingerprint: str, data: str, scale: int = 1
    ) -> None:
        base = folder if scale == 1 else folder / f"x{scale}"
        self.path = base / protocol / f"{question_id}.db"
        self.marker_path = self.path.with_suffix(".json")
        self.expect: dict[str, Any] = {
            "fingerprint": fingerprint,
            "data": data,
            "question_id": question_id,
            "protocol": protocol,
        }
        if scale != 1:
            self.expect |= {"scale": scale, "scale_version": SCALE_VERSION}
        self.marker: dict[str, Any] | None = None
        try:
            marker = json.loads(self.marker_path.read_text("utf-8"))
        except (OSError, ValueError):
            marker = {}
        if self.path.exists() and all(marker.get(k) == v for k, v in self.expect.items()):
            self.marker = marker
        self.scale = scale

    @property
    def outline(self) -> LmeQuestion | None:
        """The scaled question kept with the database (turn texts empty), when there is one."""
        kept = (self.marker or {}).get("outline")
        return from_outline(kept) if self.scale != 1 and isinstance(kept, dict) else None

    @property
    def bm25(self) -> dict[str, Any] | None:
        """The BM25 ranking kept with the database, when it was computed by the current BM25 row."""
        kept = (self.marker or {}).get("bm25")
        return kept if isinstance(kept, dict) and kept.get("version") == BM25_VERSION else None

    def reset(self) -> None:
        """Remove a stale or partial database before building it again."""
        self.marker = None
        self.marker_path.unlink(missing_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def save(self, **fields: Any) -> None:
        self.marker = {**(self.marker or {}), **fields, **self.expect}
        tmp = self.marker_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.marker), "utf-8")
        tmp.replace(self.marker_path)


class _LmeQuestions:
    """The questions of a run. With ``--keep``, an outline of the file (no turn text) is kept beside the
    databases, so a re-run whose databases and BM25 rankings are all kept never parses the data file (it
    only hashes its bytes); otherwise (or when a question has to be built) the file is read, once."""

    def __init__(self, data: Path, keep: Path | None) -> None:
        self.data = data
        with data.open("rb") as f:
            self.source = {
                "sha256": hashlib.file_digest(f, "sha256").hexdigest(),
                "size": data.stat().st_size,
            }
        self.stamp = hashlib.sha256(json.dumps(self.source).encode()).hexdigest()[:16]
        """Which data file a kept database was built from: its content, not its path or time, so a copy
        of the file, or the same file downloaded again, finds the databases built from it."""
        self.outline_path = keep / "questions.json" if keep is not None else None
        self._full: dict[str, LmeQuestion] | None = None
        self._filler: tuple[FillerSession, ...] = ()
        outline = self._read_outline()
        if outline is not None:
            self.questions = [from_outline(q) for q in outline["questions"]]
            self.abstention = int(outline["abstention"])
        else:
            self.questions, self.abstention = self._load()

    def _read_outline(self) -> dict[str, Any] | None:
        if self.outline_path is None:
            return None
        try:
            outline: dict[str, Any] = json.loads(self.outline_path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        ok = outline.get("format") == OUTLINE_FORMAT and outline.get("source") == self.source
        return outline if ok else None

    def _load(self) -> tuple[list[LmeQuestion], int]:
        loaded = load_longmemeval(self.data)
        self._full = {q.question_id: q for q in loaded.questions}
        self._filler = loaded.filler
        if self.outline_path is not None:
            self.outline_path.parent.mkdir(parents=True, exist_ok=True)
            outline = {
                "format": OUTLINE_FORMAT,
                "source": self.source,
                "abstention": loaded.abstention,
                "questions": [outline_of(q) for q in loaded.questions],
            }
            tmp = self.outline_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(outline, ensure_ascii=False), "utf-8")
            tmp.replace(self.outline_path)
        return list(loaded.questions), loaded.abstention

    def full(self, question: LmeQuestion) -> LmeQuestion:
        """The question with its turns' text (reads the data file the first time it is needed)."""
        if not question.outline:
            return question
        if self._full is None:
            self._load()
        assert self._full is not None
        return self._full[question.question_id]

    def scaled(self, question: LmeQuestion, scale: int) -> LmeQuestion:
        """The question inside its archive ``scale`` times bigger, with every turn's text."""
        full = self.full(question)
        return scale_question(full, self._filler, scale)


def _lme_item(item: Any, turns: Mapping[str, LmeTurn], gold: set[str]) -> dict[str, Any]:
    event_id = _event_of(item)
    turn = turns.get(event_id)
    return {
        "event_id": event_id,
        "type": item.type,
        "role": turn.role if turn else None,
        "session": turn.session if turn else None,
        "gold": event_id in gold,
        "score": round(item.score, 4),
        "why": item.why,
    }


def _event_of(item: Any) -> str:
    """The source event of a recall item: a raw event's id, or a memory's event."""
    return str(item.memory.event_id if item.memory is not None else item.id)


def _dump_row(
    q: LmeQuestion, documents: list[LmeTurn], items: list[Any], bm25: list[int], bm25_top: list[float]
) -> dict[str, Any]:
    turns = {t.event_id: t for t in documents}
    gold = {t.event_id for t in documents if t.has_answer}
    seen: set[str] = set()
    ranked: list[dict[str, Any]] = []
    for item in items:
        event_id = _event_of(item)
        if event_id not in seen and len(ranked) < LME_DUMP_TOP:
            seen.add(event_id)
            ranked.append(_lme_item(item, turns, gold))
    return {
        "question_id": q.question_id,
        "question_type": q.question_type,
        "question": q.question,
        "question_date": q.question_date.isoformat(),
        "answer_session_ids": list(q.answer_session_ids),
        "gold": [t.event_id for t in documents if t.has_answer],
        "yiji": ranked,
        "bm25": [
            {
                "event_id": documents[i].event_id,
                "role": documents[i].role,
                "session": documents[i].session,
                "gold": documents[i].has_answer,
                "score": score,
            }
            for i, score in zip(bm25, bm25_top, strict=False)
        ],
    }


def run_longmemeval(
    data: str | Path,
    split: str = "dev",
    protocol: str = "both",
    mode: RecallMode = "fast",
    limit: int | None = None,
    keep: Path | None = None,
    dump: Path | None = None,
    progress: bool = True,
    service_hook: Callable[[MemoryService], None] | None = None,
    scale: int = 1,
) -> dict[str, Any]:
    """Score yiji's recall and the plain BM25 row on LongMemEval_S (see :mod:`yiji.bench.longmemeval`).

    Each question gets its own database (kept under ``keep`` and reused while current), its haystack
    (inside an archive ``scale`` times bigger, :func:`~yiji.bench.longmemeval.scale_question`) ingested as
    raw events in one transaction, one recall with "now" at the question's date, then one
    ``session_resume`` in a new session of the scope with the question as its query. Only the recall call
    and the resume call are timed; BM25 ranks exactly the documents the scope holds (and the empty turns,
    which are no events, as the reference script does)."""
    started_all = time.perf_counter()
    source = _LmeQuestions(Path(data), keep)
    questions = select(source.questions, split, limit)
    fingerprint = index_fingerprint()
    embedder = None
    if mode != "fast":
        from yiji.providers.embeddings import LocalEmbedder

        embedder = LocalEmbedder()
    cache = CachedEmbedder(embedder, keep / "vectors") if embedder is not None and keep is not None else None
    report = LmeReport()
    latencies: list[float] = []
    resumes: list[float] = []
    sizes: list[int] = []
    timing = {"load": time.perf_counter() - started_all, "ingest": 0.0, "vectors": 0.0, "bm25": 0.0}
    built = reused = no_gold = 0
    warned: Counter[str] = Counter()
    out = dump.open("w", encoding="utf-8") if dump is not None else None
    try:
        with tempfile.TemporaryDirectory(prefix="yiji-longmemeval-") as tmp:
            folder = keep if keep is not None else Path(tmp)
            label = f"longmemeval {split} {protocol}" + (f" x{scale}" if scale != 1 else "")
            bar = _bar(questions, len(questions), label) if progress else questions
            for q in bar:
                kept = _Kept(folder, q.question_id, protocol, fingerprint, source.stamp, scale)
                if kept.marker is None:
                    kept.reset()
                whole = kept.marker is None or kept.bm25 is None
                if scale == 1:
                    full = source.full(q) if whole else q
                else:
                    full = (None if whole else kept.outline) or source.scaled(q, scale)
                documents = lme_corpus(full, protocol)
                no_gold += not any(t.has_answer for t in documents)
                if kept.marker is None:
                    built += 1
                else:
                    reused += 1
                _build(kept, full, protocol, cache or embedder, timing)
                sizes.append(int((kept.marker or {}).get("events", 0)))
                service = _question_service(kept, q, embedder)
                try:
                    if service_hook is not None:
                        service_hook(service)
                    query = RecallQuery(
                        query=q.question, persona=PERSONA, project=LME_PROJECT, limit=LME_LIMIT, mode=mode
                    )
                    resume = ResumeRequest(
                        persona=PERSONA,
                        project=LME_PROJECT,
                        session=f"resume-{q.question_id}",
                        query=q.question,
                    )
                    if not latencies:  # the first calls load code and caches: untimed
                        service.memory_recall(query)
                        service.session_resume(resume)
                    # the benchmark's own data (the file's sessions, the BM25 corpus) is no part of a
                    # recall: the collector leaves it alone during the timed calls
                    gc.collect()
                    gc.freeze()
                    t0 = time.perf_counter()
                    result = service.memory_recall(query)
                    latencies.append(time.perf_counter() - t0)
                    # such as a semantic recall that missed vectors: counted by the warning's lead words
                    warned.update(warning.split(":")[0] for warning in result.warnings)
                    t0 = time.perf_counter()
                    service.session_resume(resume)
                    resumes.append(time.perf_counter() - t0)
                finally:
                    gc.unfreeze()
                    service.close()
                position = {t.event_id: i for i, t in enumerate(documents)}
                ranked = dict.fromkeys(_event_of(item) for item in result.items)
                ranking = [position[e] for e in ranked if e in position]
                report.add("yiji", q.question_type, question_metrics(ranking, documents))
                bm25 = kept.bm25
                if bm25 is None:
                    t0 = time.perf_counter()
                    order, scores = bm25_ranking(q.question, [t.text for t in documents])
                    top = [round(scores[i], 4) for i in order[:LME_DUMP_TOP]]
                    bm25 = {"version": BM25_VERSION, "ranking": order, "top_scores": top}
                    timing["bm25"] += time.perf_counter() - t0
                    kept.save(bm25=bm25)
                report.add("bm25", q.question_type, question_metrics(bm25["ranking"], documents))
                if out is not None:
                    row = _dump_row(q, documents, result.items, bm25["ranking"], bm25["top_scores"])
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out is not None:
            out.close()
    return {
        "report": report,
        "figures": report.as_dict(),
        "split": split,
        "protocol": protocol,
        "mode": mode,
        "scale": scale,
        "questions": len(questions),
        "abstention_skipped": source.abstention,
        "without_gold_in_corpus": no_gold,
        "events_per_scope": _spread(sizes),
        "databases": {"built": built, "reused": reused, "kept_in": str(keep) if keep is not None else None},
        "seconds": {k: round(v, 2) for k, v in timing.items()}
        | {"total": round(time.perf_counter() - started_all, 2)},
        "recall_ms": percentiles(latencies),
        "resume_ms": percentiles(resumes),
        "recall_warnings": dict(warned),
        "paired": {"turn:recall_all@10": report.paired("turn:recall_all@10")},
        "vectors_cache": None if cache is None else {"embedded": cache.embedded, "reused": cache.reused},
    }


def _build(
    kept: _Kept, question: LmeQuestion, protocol: str, embedder: Any, timing: dict[str, float]
) -> None:
    """Ingest the question's events into its database when it is not built, and build the vectors when
    ``embedder`` is given and the kept ones are of another (or no) embedder."""
    fresh = kept.marker is None
    stale = embedder is not None and (kept.marker or {}).get("vectors") != embedder.fingerprint
    if not (fresh or stale):
        return
    service = _question_service(kept, question, embedder)
    try:
        if fresh:
            t0 = time.perf_counter()
            events = longmemeval_events(question, protocol)
            service.event_submit_many(events)
            timing["ingest"] += time.perf_counter() - t0
            kept.save(events=len(events), **({"outline": outline_of(question)} if kept.scale != 1 else {}))
        if stale:
            t0 = time.perf_counter()
            service.vectors_reindex(PERSONA, LME_PROJECT)
            if isinstance(embedder, CachedEmbedder):
                embedder.flush()
            timing["vectors"] += time.perf_counter() - t0
            kept.save(vectors=embedder.fingerprint)
    finally:
        service.close()


def _question_service(kept: _Kept, question: LmeQuestion, embedder: Any) -> MemoryService:
    """A service over the question's database, with "now" at the question's date."""
    return MemoryService(
        Database(kept.path, synchronous="OFF"),
        Config(db=kept.path, timezone="UTC"),
        clock=FixedClock(question.question_date),
        embedder=embedder,
    )


def _spread(values: list[int]) -> dict[str, float]:
    """Smallest, mean and largest of ``values`` (zeros when there are none)."""
    if not values:
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": min(values), "mean": round(sum(values) / len(values), 1), "max": max(values)}
