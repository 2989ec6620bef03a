"""Extraction quality against a labelled conversation, through the configured endpoint.

The labelled file (one ships as ``yiji/bench/data/extraction_labelled.json``) holds sessions of turns;
each turn names the memories a careful person would store (``expect``: acceptable kinds, the words
the memory text must contain and, for a single-valued fact, its key), the other memories the turn
faithfully supports but that are not required (``also``: a detail of the same clause, a second clause,
the same statement under another fitting kind; never keyed), and tags for what must not be stored
(``hypothetical``, ``question``, ``third_party``, ``plan``, ``sarcasm``, ...). Every turn is
submitted as an event to a fresh database with automatic extraction on, exactly as a user's would be.

Scores:

* precision: accepted memories that match an ``expect`` or ``also`` entry of their turn / accepted
  memories. A match needs an acceptable kind, the basis of the turn's role (or ``inference``), every
  required word in the text, and the expected key (subject ``user``) when one is expected. A keyed
  memory where none is expected never matches. ``precision_expected_only`` counts ``expect``
  matches alone (what the first version of the labelled file, without ``also``, measured).
* recall: expected memories matched by at least one accepted memory / expected memories.
* ``assistant_as_user_fact``: accepted user-keyed facts from assistant turns (target 0).
* ``user_key_on_forbidden``: accepted user-keyed facts on turns tagged hypothetical, question,
  third_party, plan or sarcasm, other than an expected key (target 0).
* rejections by rule, duplicates (items dropped as duplicates, plus accepted memories matching an
  expected memory another accepted memory already matched), and latency per event.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, Final

from yiji.config import Config
from yiji.errors import InvalidInput
from yiji.models import EventIn, parse
from yiji.models.memories import MemoryRecord
from yiji.service import open_service
from yiji.service.base import ProgressFactory, progress_bar

__all__ = [
    "SHIPPED_SETS",
    "default_data",
    "load_labelled",
    "run_extraction_bench",
    "run_extraction_sets",
    "score_turn",
    "set_name",
]

FORBIDDEN_TAGS = frozenset({"hypothetical", "question", "third_party", "plan", "sarcasm"})


SHIPPED_SETS: Final = {
    "labelled": "extraction_labelled.json",
    "heldout": "extraction_heldout.json",
    "reserved": "extraction_reserved.json",
    "reserved2": "extraction_reserved2.json",
    "reserved3": "extraction_reserved3.json",
    "reserved4": "extraction_reserved4.json",
    "reserved5": "extraction_reserved5.json",
    "reserved6": "extraction_reserved6.json",
    "reserved7": "extraction_reserved7.json",
    "reserved8": "extraction_reserved8.json",
    "reserved9": "extraction_reserved9.json",
    "reserved10": "extraction_reserved10.json",
    "reserved11": "extraction_reserved11.json",
    "reserved12": "extraction_reserved12.json",
    "reserved13": "extraction_reserved13.json",
    "reserved14": "extraction_reserved14.json",
    "reserved15": "extraction_reserved15.json",
    "reserved16": "extraction_reserved16.json",
}
"""The labelled sets shipped with yiji, in the order they were written: the one the extraction rules
were first written against; then seventeen more (held-out, reserved, reserved2 to reserved16), each first
run once as a check on turns no rule had seen (docs/benchmarks.md tells when and what it gave),
after which its answers may be read. Checking a new change to the rules on unseen turns takes a new set."""


def default_data(name: str = "labelled") -> Path:
    """A labelled set shipped with yiji (:data:`SHIPPED_SETS`)."""
    return Path(str(resources.files("yiji.bench") / "data" / SHIPPED_SETS[name]))


@dataclass(frozen=True)
class Expected:
    kinds: tuple[str, ...]
    must: tuple[str, ...]
    key: str | None = None


@dataclass(frozen=True)
class Turn:
    session: str
    role: str
    text: str
    at: str
    expect: tuple[Expected, ...]
    tags: frozenset[str]
    also: tuple[Expected, ...] = ()


def _entries(raw: list[dict[str, Any]]) -> tuple[Expected, ...]:
    return tuple(Expected(tuple(e["kinds"]), tuple(e["must"]), e.get("key")) for e in raw)


def load_labelled(path: Path) -> list[Turn]:
    """The turns of a labelled file, in order. Raises InvalidInput (field ``data``) when malformed."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        turns = [
            Turn(
                session=str(s["id"]),
                role=str(t["role"]),
                text=str(t["text"]),
                at=str(t["at"]),
                expect=_entries(t.get("expect", [])),
                tags=frozenset(t.get("tags", [])),
                also=_entries(t.get("also", [])),
            )
            for s in raw["sessions"]
            for t in s["turns"]
        ]
    except (OSError, ValueError, KeyError, TypeError):
        raise InvalidInput("data", "not a labelled extraction file (sessions of turns)") from None
    if not turns:
        raise InvalidInput("data", "the labelled file has no turns")
    return turns


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower().replace(" ", "")


def _matches(memory: MemoryRecord, expected: Expected, role: str) -> bool:
    own_basis = {"user": "user_statement", "assistant": "assistant_expression"}.get(role)
    if memory.kind not in expected.kinds or memory.basis not in {own_basis, "inference"}:
        return False
    if memory.fact_key is not None and (expected.key != memory.fact_key or memory.subject != "user"):
        return False
    if expected.key is not None and memory.fact_key not in (None, expected.key):
        return False
    text = _fold(memory.text)
    return all(_fold(word) in text for word in expected.must)


@dataclass
class TurnScore:
    accepted: int = 0
    faithful: int = 0
    faithful_expected: int = 0
    expected: int = 0
    recalled: int = 0
    duplicates: int = 0
    assistant_as_user_fact: int = 0
    user_key_on_forbidden: int = 0
    unfaithful: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: TurnScore) -> None:
        """Count ``other`` in with these (every count, and the unfaithful memories)."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def set_name(data: Path) -> str:
    """What a labelled set is called in reports: a shipped set's name, or a file's stem."""
    return data.stem.removeprefix("extraction_")


def score_turn(turn: Turn, memories: list[MemoryRecord]) -> TurnScore:
    """How the memories stored from one turn compare with its labels."""
    score = TurnScore(accepted=len(memories), expected=len(turn.expect))
    matched: set[int] = set()
    for memory in memories:
        hits = [i for i, e in enumerate(turn.expect) if _matches(memory, e, turn.role)]
        also = [len(turn.expect) + i for i, e in enumerate(turn.also) if _matches(memory, e, turn.role)]
        user_keyed = memory.fact_key is not None and memory.subject == "user"
        if user_keyed and turn.role != "user":
            score.assistant_as_user_fact += 1
        if user_keyed and turn.tags & FORBIDDEN_TAGS and not hits:
            score.user_key_on_forbidden += 1
        if hits or also:
            score.faithful += 1
            score.faithful_expected += bool(hits)
            if all(i in matched for i in hits + also):
                score.duplicates += 1
            matched.update(hits + also)
        else:
            score.unfaithful.append(
                {"turn": turn.text, "memory": memory.text, "kind": memory.kind, "key": memory.fact_key}
            )
    score.recalled = len(matched & set(range(len(turn.expect))))
    return score


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


@dataclass
class _Run:
    """What running one or more labelled sets gave, before it is reported."""

    turns: int = 0
    pending: int = 0
    totals: TurnScore = field(default_factory=TurnScore)
    rules: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    replayed: int | None = None
    asked: int | None = None

    def add(self, other: _Run) -> None:
        self.turns += other.turns
        self.pending += other.pending
        self.totals.add(other.totals)
        self.rules.update(other.rules)
        self.latencies.extend(other.latencies)
        if other.replayed is not None and other.asked is not None:
            self.replayed = (self.replayed or 0) + other.replayed
            self.asked = (self.asked or 0) + other.asked


def _run_set(
    config: Config,
    data: Path,
    *,
    limit: int | None,
    progress: ProgressFactory | None,
    on_turn: Callable[[dict[str, Any]], None] | None,
    answers: Path | None,
) -> _Run:
    """Submit every labelled turn of ``data`` (up to ``limit``) to a fresh database and score it."""
    turns = load_labelled(data)[:limit]
    run = _Run(turns=len(turns))
    cache = None
    with tempfile.TemporaryDirectory(prefix="yiji-bench-extraction-") as tmp:
        bench_config = replace(config, db=Path(tmp) / "bench.db")
        service = open_service(bench_config, extraction=answers is None)
        if answers is not None:
            import httpx

            from yiji.bench.answers import AnswerCache
            from yiji.service.compose import build_extractor

            cache = AnswerCache(answers)
            http = httpx.Client(transport=cache, timeout=config.extraction.timeout_seconds)
            service.extractor = build_extractor(bench_config, http)
            service.on_close(http.close)
        bar = progress_bar(progress, f"extracting {set_name(data)}", len(turns))
        try:
            for turn in turns:
                event = {
                    "session": turn.session,
                    "role": turn.role,
                    "text": turn.text,
                    "occurred_at": turn.at,
                }
                started = time.perf_counter()
                result = service.event_submit(parse(EventIn, event))
                run.latencies.append(time.perf_counter() - started)
                outcome: dict[str, Any] = dict(result.extraction or {})
                if outcome.get("state") != "done":
                    run.pending += 1
                rejected = outcome.get("rejected_rules", [])
                run.rules.update(str(rule) for rule in (rejected if isinstance(rejected, list) else []))
                memories = [service.memory_read(mid)["memory"] for mid in result.memory_ids]
                run.totals.add(score_turn(turn, memories))
                if on_turn is not None:
                    stored = [
                        {"text": m.text, "kind": m.kind, "key": m.fact_key, "quote": m.quote}
                        for m in memories
                    ]
                    on_turn({"data": str(data), "turn": turn.text, "stored": stored, "outcome": outcome})
                bar.update()
        finally:
            bar.close()
            service.close()
    if cache is not None:
        run.replayed, run.asked = cache.replayed, cache.asked
    return run


def _report(data: str, model: str | None, run: _Run) -> dict[str, Any]:
    totals, rules, latencies = run.totals, run.rules, run.latencies
    return {
        "data": data,
        "model": model,
        "turns": run.turns,
        "still_pending": run.pending,
        "accepted": totals.accepted,
        "faithful": totals.faithful,
        "precision": round(totals.faithful / totals.accepted, 3) if totals.accepted else None,
        "precision_expected_only": (
            round(totals.faithful_expected / totals.accepted, 3) if totals.accepted else None
        ),
        "expected": totals.expected,
        "recalled": totals.recalled,
        "recall": round(totals.recalled / totals.expected, 3) if totals.expected else None,
        "assistant_as_user_fact": totals.assistant_as_user_fact,
        "user_key_on_forbidden": totals.user_key_on_forbidden,
        "duplicates": totals.duplicates + rules.get("duplicate", 0),
        "rejections_by_rule": dict(rules.most_common()),
        "latency_s": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": round(max(latencies), 1) if latencies else 0.0,
            "mean": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        },
        "unfaithful": totals.unfaithful,
    } | ({"answers": {"replayed": run.replayed, "asked": run.asked}} if run.asked is not None else {})


def run_extraction_bench(
    config: Config,
    data: Path,
    *,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
    on_turn: Callable[[dict[str, Any]], None] | None = None,
    answers: Path | None = None,
) -> dict[str, Any]:
    """Submit every labelled turn (up to ``limit``) to a fresh database and score what is stored.

    With ``answers``, the endpoint's answers are kept in that folder and replayed for any request
    already answered there (:class:`yiji.bench.answers.AnswerCache`)."""
    return run_extraction_sets(
        config, [data], limit=limit, progress=progress, on_turn=on_turn, answers=answers
    )


def run_extraction_sets(
    config: Config,
    sets: Sequence[Path],
    *,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
    on_turn: Callable[[dict[str, Any]], None] | None = None,
    answers: Path | None = None,
) -> dict[str, Any]:
    """:func:`run_extraction_bench` for each labelled set in ``sets``, each in its own fresh database.

    One set gives its report. Several give ``{"sets": [report, ...], "pooled": report}``, where the
    pooled report counts every turn of every set together (precision and recall over the pooled
    counts, latency over every event), so one command scores a model on all the shipped sets."""
    if not config.extraction.enabled:
        raise InvalidInput("extraction", "no extraction endpoint is configured (base_url and model)")
    if not sets:
        raise InvalidInput("data", "no labelled set was given")
    model = config.extraction.model
    runs = [
        _run_set(config, data, limit=limit, progress=progress, on_turn=on_turn, answers=answers)
        for data in sets
    ]
    if len(runs) == 1:
        return _report(str(sets[0]), model, runs[0])
    pooled = _Run()
    for run in runs:
        pooled.add(run)
    return {
        "sets": [_report(str(data), model, run) for data, run in zip(sets, runs, strict=True)],
        "pooled": _report(", ".join(set_name(data) for data in sets), model, pooled),
    }
