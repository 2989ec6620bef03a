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
from yiji.domain.grounding import dedupe_key, speaker_text
from yiji.domain.review import arrival_state
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.errors import InvalidInput
from yiji.models import EventIn, parse
from yiji.models.memories import MemoryRecord
from yiji.service import open_service
from yiji.service.base import ProgressFactory, progress_bar

__all__ = [
    "SHIPPED_SETS",
    "compare_response_formats",
    "default_data",
    "load_labelled",
    "run_extraction_bench",
    "restates_quote",
    "rule_history",
    "run_ablation",
    "run_extraction_sets",
    "score_turn",
    "set_name",
]

FORBIDDEN_TAGS = frozenset({"hypothetical", "question", "third_party", "plan", "sarcasm"})
SMALL_TALK_TAGS = frozenset({"small_talk", "thanks", "assistant_comfort"})
"""Turns tagged so are greetings, thanks or comfort: nothing on them is to be stored."""


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
class _Run:
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

    def add(self, other: _Run) -> None:
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
class _Options:
    """How each labelled set is run: at most ``limit`` turns, ``on_turn`` told of every turn, the
    endpoint's answers kept in (and replayed from) ``answers``, with the word rules of ``rules``."""

    limit: int | None = None
    progress: ProgressFactory | None = None
    on_turn: Callable[[dict[str, Any]], None] | None = None
    answers: Path | None = None
    rules: RulePlan = ALL_ON


def _run_set(config: Config, data: Path, options: _Options) -> _Run:
    """Submit every labelled turn of ``data`` (up to ``options.limit``) to a fresh database and score it."""
    turns = load_labelled(data)[: options.limit]
    run = _Run(turns=len(turns))
    cache = None
    with tempfile.TemporaryDirectory(prefix="yiji-bench-extraction-") as tmp:
        bench_config = replace(config, db=Path(tmp) / "bench.db")
        service = open_service(bench_config, extraction=options.answers is None, rules=options.rules)
        if options.answers is not None:
            import httpx

            from yiji.bench.answers import AnswerCache
            from yiji.service.compose import build_extractor

            cache = AnswerCache(options.answers)
            http = httpx.Client(transport=cache, timeout=config.extraction.timeout_seconds)
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
    if cache is not None:
        run.replayed, run.asked = cache.replayed, cache.asked
    return run


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _report(data: str, model: str | None, run: _Run) -> dict[str, Any]:
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
    rules: RulePlan = ALL_ON,
) -> dict[str, Any]:
    """:func:`run_extraction_bench` for each labelled set in ``sets``, each in its own fresh database.

    One set gives its report. Several give ``{"sets": [report, ...], "pooled": report}``, where the
    pooled report counts every turn of every set together (precision and recall over the pooled
    counts, latency over every event), so one command scores a model on all the shipped sets.
    ``rules`` switches extraction word rules off (:mod:`yiji.domain.rule_plan`)."""
    options = _Options(limit=limit, progress=progress, on_turn=on_turn, answers=answers, rules=rules)
    return _reports(config, sets, _runs(config, sets, options))


def _runs(config: Config, sets: Sequence[Path], options: _Options) -> list[_Run]:
    if not config.extraction.enabled:
        raise InvalidInput("extraction", "no extraction endpoint is configured (base_url and model)")
    if not sets:
        raise InvalidInput("data", "no labelled set was given")
    return [_run_set(config, data, options) for data in sets]


def _pooled(runs: Sequence[_Run]) -> _Run:
    pooled = _Run()
    for run in runs:
        pooled.add(run)
    return pooled


def _reports(config: Config, sets: Sequence[Path], runs: list[_Run]) -> dict[str, Any]:
    model = config.extraction.model
    if len(runs) == 1:
        return _report(str(sets[0]), model, runs[0])
    return {
        "sets": [_report(str(data), model, run) for data, run in zip(sets, runs, strict=True)],
        "pooled": _report(", ".join(set_name(data) for data in sets), model, _pooled(runs)),
    }


def compare_response_formats(
    config: Config,
    sets: Sequence[Path],
    formats: Sequence[str],
    *,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
    answers: Path | None = None,
) -> dict[str, Any]:
    """The same sets scored once per ``response_format`` (``json_schema``, ``json_object_schema``,
    ``json_object``), side by side: ``{"formats": {format: report}}``. The format is part of each
    request, so kept answers (``answers``) replay only the formats already run; any other asks the
    endpoint."""
    known = ("json_schema", "json_object_schema", "json_object")
    if not formats or any(f not in known for f in formats):
        raise InvalidInput("response_format", "must be json_schema, json_object_schema or json_object")
    out: dict[str, Any] = {}
    for fmt in dict.fromkeys(formats):
        section = replace(config.extraction, response_format=fmt)  # type: ignore[arg-type]
        out[fmt] = run_extraction_sets(
            replace(config, extraction=section), sets, limit=limit, progress=progress, answers=answers
        )
    return {"formats": out}


RULE_HISTORY: Final = "rule_history.json"
"""When each switchable rule was first written (its commit), and the first shipped set written after it:
that set and every later one were first run with the rule in place, on turns it was not written against."""


def rule_history() -> dict[str, str]:
    """Each switchable rule id -> the first shipped set written after the rule (:data:`RULE_HISTORY`)."""
    path = resources.files("yiji.bench") / "data" / RULE_HISTORY
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {rule: str(entry["first_unseen_set"]) for rule, entry in raw["rules"].items()}


def _figures(runs: Sequence[_Run]) -> dict[str, Any]:
    t = _pooled(runs).totals
    return {
        "accepted": t.accepted,
        "precision": _share(t.faithful, t.accepted),
        "recall": _share(t.recalled, t.expected),
        "safety": t.assistant_as_user_fact + t.user_key_on_forbidden,
        "small_talk_stored": t.small_talk_stored,
    }


def _changed(base: Sequence[_Run], other: Sequence[_Run]) -> int:
    """Turns whose stored memories differ between two runs of the same sets."""
    return sum(
        a != b for x, y in zip(base, other, strict=True) for a, b in zip(x.stored, y.stored, strict=True)
    )


def run_ablation(
    config: Config,
    sets: Sequence[Path],
    *,
    answers: Path,
    rules: Sequence[str] | None = None,
    limit: int | None = None,
    progress: ProgressFactory | None = None,
) -> dict[str, Any]:
    """Each switchable rule (or each of ``rules``) switched off in turn, every other rule on, over
    ``sets`` with the endpoint's answers kept in ``answers`` replayed.

    Per rule: ``fired`` (turns whose stored memories change when it is off), pooled precision, recall
    and safety count (assistant statements as user facts plus user keys on forbidden turns) with the
    rule and without it over every set, and the same over the sets first written after the rule
    (:func:`rule_history`; ``unseen_sets`` names them). ``keep`` is true when switching the rule off
    lowers pooled precision or raises the safety count on all sets; a rule that does neither does
    not pay for itself on these answers."""
    from yiji.domain.rule_plan import SWITCHABLE

    chosen = list(rules) if rules else list(SWITCHABLE)
    order = list(SHIPPED_SETS)
    history = rule_history()
    names = [set_name(data) for data in sets]
    options = _Options(limit=limit, progress=progress, answers=answers)
    base = _runs(config, sets, options)
    report: dict[str, Any] = {"sets": names, "with_all_rules": _figures(base), "rules": []}
    for rule in chosen:
        plan = RulePlan.without(rule)
        off = _runs(config, sets, replace(options, rules=plan))
        first = history.get(rule)
        later = {default_data(n).resolve() for n in order[order.index(first) :]} if first in order else set()
        unseen = [i for i, data in enumerate(sets) if Path(data).resolve() in later]
        on_all, off_all = _figures(base), _figures(off)
        report["rules"].append(
            {
                "rule": rule,
                "fired": _changed(base, off),
                "all_sets": {"with": on_all, "without": off_all},
                "unseen_sets": [names[i] for i in unseen],
                "unseen": {
                    "with": _figures([base[i] for i in unseen]),
                    "without": _figures([off[i] for i in unseen]),
                }
                if unseen
                else None,
                "keep": (off_all["precision"] or 0) < (on_all["precision"] or 0)
                or off_all["safety"] > on_all["safety"],
            }
        )
    report["answers"] = {
        "replayed": sum(r.replayed or 0 for r in base),
        "asked": sum(r.asked or 0 for r in base),
    }
    return report
