"""Extraction quality against a labelled conversation, through the configured endpoint.

The labelled file (``yiji extraction check`` ships one, the benchmarks twenty) holds sessions of turns;
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

What a reviewer would keep, beside precision (which counts a true but empty memory as faithful):

* ``small_talk_stored``: accepted memories that match nothing on turns tagged ``small_talk``,
  ``thanks`` or ``assistant_comfort`` (greetings, thanks and comfort are nothing to store);
* ``restates_quote``: accepted memories whose text only restates their quote: equal to it but for
  case, width, spaces and punctuation, or the quote wrapped as the speaker's words
  (``The user said: "..."``, ``用户说：“……”``);
* ``kind_accuracy``: of the accepted memories whose text, basis and key match an ``expect`` or
  ``also`` entry of their turn in all but the kind, the share whose kind the entry accepts.

And what ``[extraction] review = "facts"`` would do: ``review_facts.waiting_share`` is the share of
accepted memories that would wait for review (single-valued keyed facts and agreements, as
:func:`yiji.domain.review.arrival_state` decides for extraction), and
``review_facts.precision_accepted_at_once`` the precision of the rest, stored at once.

This module scores one labelled set in a fresh database: ``yiji extraction check`` runs its built-in turns
through it, and the benchmarks (``yiji bench extraction``) their labelled sets, pooled, per response
format or with a rule switched off.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yiji.config import Config
from yiji.domain.grounding import dedupe_key, speaker_text
from yiji.domain.review import arrival_state
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.errors import InvalidInput
from yiji.models import EventIn, parse
from yiji.models.memories import MemoryRecord
from yiji.service import open_service
from yiji.service.base import ProgressFactory, progress_bar

if TYPE_CHECKING:
    import httpx

__all__ = [
    "FORBIDDEN_TAGS",
    "SMALL_TALK_TAGS",
    "Expected",
    "LabelledRun",
    "RunOptions",
    "Turn",
    "TurnScore",
    "labelled_report",
    "load_labelled",
    "restates_quote",
    "run_labelled",
    "run_labelled_set",
    "score_turn",
    "set_name",
]

FORBIDDEN_TAGS = frozenset({"hypothetical", "question", "third_party", "plan", "sarcasm"})
SMALL_TALK_TAGS = frozenset({"small_talk", "thanks", "assistant_comfort"})
"""Turns tagged so are greetings, thanks or comfort: nothing on them is to be stored."""


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


def _matches(memory: MemoryRecord, expected: Expected, role: str, *, any_kind: bool = False) -> bool:
    own_basis = {"user": "user_statement", "assistant": "assistant_expression"}.get(role)
    if not (any_kind or memory.kind in expected.kinds) or memory.basis not in {own_basis, "inference"}:
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
    small_talk_stored: int = 0
    restates_quote: int = 0
    kind_judged: int = 0
    kind_right: int = 0
    waiting: int = 0
    waiting_faithful: int = 0
    unfaithful: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: TurnScore) -> None:
        """Count ``other`` in with these (every count, and the unfaithful memories)."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def set_name(data: Path) -> str:
    """What a labelled set is called in reports: a shipped set's name, or a file's stem."""
    return data.stem.removeprefix("extraction_")


def restates_quote(text: str, quote: str) -> bool:
    """Whether a memory ``text`` says only its ``quote``: the same words but for case, width, spaces and
    punctuation, or the quote as a speaker's words (``The user said: "..."``)."""
    said = {dedupe_key(quote)} | {dedupe_key(speaker_text(quote, role)) for role in ("user", "assistant")}
    return dedupe_key(text) in said


def score_turn(turn: Turn, memories: list[MemoryRecord]) -> TurnScore:
    """How the memories stored from one turn compare with its labels."""
    score = TurnScore(accepted=len(memories), expected=len(turn.expect))
    matched: set[int] = set()
    entries = turn.expect + turn.also
    for memory in memories:
        hits = [i for i, e in enumerate(turn.expect) if _matches(memory, e, turn.role)]
        also = [len(turn.expect) + i for i, e in enumerate(turn.also) if _matches(memory, e, turn.role)]
        if any(_matches(memory, e, turn.role, any_kind=True) for e in entries):
            score.kind_judged += 1
            score.kind_right += bool(hits or also)
        score.restates_quote += restates_quote(memory.text, memory.quote)
        waits = arrival_state("facts", memory.kind, memory.subject, memory.fact_key) == "proposed"
        score.waiting += waits
        score.waiting_faithful += waits and bool(hits or also)
        if turn.tags & SMALL_TALK_TAGS and not (hits or also):
            score.small_talk_stored += 1
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
class LabelledRun:
    """What running one or more labelled sets gave, before it is reported."""

    turns: int = 0
    pending: int = 0
    totals: TurnScore = field(default_factory=TurnScore)
    rules: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    replayed: int | None = None
    asked: int | None = None
    stored: list[frozenset[tuple[str, str, str | None]]] = field(default_factory=list)
    """Per turn, in order: what was stored (text, kind, key), to tell which turns a rule changed."""

    def add(self, other: LabelledRun) -> None:
        self.stored.extend(other.stored)
        self.turns += other.turns
        self.pending += other.pending
        self.totals.add(other.totals)
        self.rules.update(other.rules)
        self.latencies.extend(other.latencies)
        if other.replayed is not None and other.asked is not None:
            self.replayed = (self.replayed or 0) + other.replayed
            self.asked = (self.asked or 0) + other.asked


@dataclass(frozen=True)
class RunOptions:
    """How each labelled set is run: at most ``limit`` turns, ``on_turn`` told of every turn, with the
    word rules of ``rules``; the endpoint is asked through ``transport`` when one is given (the
    benchmarks' kept answers, replayed), else as configured."""

    limit: int | None = None
    progress: ProgressFactory | None = None
    on_turn: Callable[[dict[str, Any]], None] | None = None
    transport: httpx.BaseTransport | None = None
    rules: RulePlan = ALL_ON


def run_labelled_set(config: Config, data: Path, options: RunOptions) -> LabelledRun:
    """Submit every labelled turn of ``data`` (up to ``options.limit``) to a fresh database and score it."""
    turns = load_labelled(data)[: options.limit]
    run = LabelledRun(turns=len(turns))
    with tempfile.TemporaryDirectory(prefix="yiji-bench-extraction-") as tmp:
        bench_config = replace(config, db=Path(tmp) / "bench.db")
        service = open_service(bench_config, extraction=options.transport is None, rules=options.rules)
        if options.transport is not None:
            import httpx

            from yiji.service.compose import build_extractor

            http = httpx.Client(transport=options.transport, timeout=config.extraction.timeout_seconds)
            service.extractor = build_extractor(bench_config, http)
            service.on_close(http.close)
        bar = progress_bar(options.progress, f"extracting {set_name(data)}", len(turns))
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
                run.stored.append(frozenset((m.text, m.kind, m.fact_key) for m in memories))
                if options.on_turn is not None:
                    stored = [
                        {"text": m.text, "kind": m.kind, "key": m.fact_key, "quote": m.quote}
                        for m in memories
                    ]
                    options.on_turn(
                        {"data": str(data), "turn": turn.text, "stored": stored, "outcome": outcome}
                    )
                bar.update()
        finally:
            bar.close()
            service.close()
    return run


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def labelled_report(data: str, model: str | None, run: LabelledRun) -> dict[str, Any]:
    """The figures of a run (one set, or several pooled) as the benchmarks and the check report them."""
    totals, rules, latencies = run.totals, run.rules, run.latencies
    at_once = totals.accepted - totals.waiting
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
        "small_talk_stored": totals.small_talk_stored,
        "restates_quote": totals.restates_quote,
        "kind_accuracy": _share(totals.kind_right, totals.kind_judged),
        "kind_judged": totals.kind_judged,
        "review_facts": {
            "waiting": totals.waiting,
            "waiting_share": _share(totals.waiting, totals.accepted),
            "accepted_at_once": at_once,
            "precision_accepted_at_once": _share(totals.faithful - totals.waiting_faithful, at_once),
        },
        "rejections_by_rule": dict(rules.most_common()),
        "latency_s": {
            "p50": _percentile(latencies, 0.5),
            "p95": _percentile(latencies, 0.95),
            "max": round(max(latencies), 1) if latencies else 0.0,
            "mean": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        },
        "unfaithful": totals.unfaithful,
    } | ({"answers": {"replayed": run.replayed, "asked": run.asked}} if run.asked is not None else {})


def run_labelled(
    config: Config, data: Path, *, on_turn: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Submit every labelled turn of ``data`` to a fresh database through the configured endpoint and
    score what is stored (:func:`labelled_report`). Raises InvalidInput (``extraction``) when no endpoint
    is configured."""
    if not config.extraction.enabled:
        raise InvalidInput("extraction", "no extraction endpoint is configured (base_url and model)")
    run = run_labelled_set(config, data, RunOptions(on_turn=on_turn))
    return labelled_report(str(data), config.extraction.model, run)
