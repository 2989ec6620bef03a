"""``yiji bench longmemeval``: LongMemEval_S evidence recall through yiji's real recall path.

Each question's haystack (both speakers, or the user's turns with ``--protocol user``) is ingested into a
database of its own, optionally inside an archive ``--scale`` times bigger (:mod:`yiji_bench.longmemeval`
draws the filler and computes plain BM25 over the same turns), and the question is recalled with "now" at
its date. Databases are temporary, or kept under ``--keep`` and reused while their marker says they are
current (:func:`index_fingerprint`). The data is read from the given path and never copied.
"""

from __future__ import annotations

import gc
import hashlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn
from yiji.models.recall import RecallMode, RecallQuery
from yiji.models.resume import ResumeRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock
from yiji_bench.evidence import PERSONA, percentiles, question_bar
from yiji_bench.kept_vectors import CachedEmbedder
from yiji_bench.longmemeval import (
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
from yiji_bench.longmemeval import corpus as lme_corpus
from yiji_bench.metrics import ListPrecision, bm25_list

__all__ = ["index_fingerprint", "longmemeval_events", "run_longmemeval"]


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
    """Score yiji's recall and the plain BM25 row on LongMemEval_S (see :mod:`yiji_bench.longmemeval`).

    Each question gets its own database (kept under ``keep`` and reused while current), its haystack
    (inside an archive ``scale`` times bigger, :func:`~yiji_bench.longmemeval.scale_question`) ingested as
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
    precision = ListPrecision()
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
            bar = question_bar(questions, len(questions), label) if progress else questions
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
                    # the list a host gets: a recall at the default limit (untimed)
                    listed = service.memory_recall(
                        RecallQuery(query=q.question, persona=PERSONA, project=LME_PROJECT, mode=mode)
                    )
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
                gold = [t.event_id for t in documents if t.has_answer]
                precision.add("yiji", (_event_of(item) for item in listed.items), gold)
                first = [documents[i].event_id for i in bm25["ranking"][: len(bm25["top_scores"])]]
                precision.add("bm25", bm25_list(first, bm25["top_scores"]), gold)
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
        "precision": precision.as_dict(),
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
