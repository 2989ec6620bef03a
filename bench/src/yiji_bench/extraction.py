"""``yiji bench extraction``: extraction quality on the shipped labelled sets, through the endpoint.

Each set is scored in a fresh database by :mod:`yiji.evaluation.labelled` (which says what every figure
means); here the sets are run one by one or pooled, once per ``response_format``, with the endpoint's
answers kept and replayed (:class:`yiji_bench.answers.AnswerCache`), or with each switchable word rule
switched off in turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Final

from yiji.config import Config
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.errors import InvalidInput
from yiji.evaluation.labelled import (
    SMALL_TALK_TAGS,
    Expected,
    LabelledRun,
    RunOptions,
    Turn,
    labelled_report,
    load_labelled,
    restates_quote,
    run_labelled_set,
    score_turn,
    set_name,
)
from yiji.service.base import ProgressFactory

__all__ = [
    "SHIPPED_SETS",
    "SMALL_TALK_TAGS",
    "Expected",
    "Turn",
    "compare_response_formats",
    "default_data",
    "load_labelled",
    "restates_quote",
    "rule_history",
    "run_ablation",
    "run_extraction_bench",
    "run_extraction_sets",
    "score_turn",
    "set_name",
]

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
    "reserved17": "extraction_reserved17.json",
    "reserved18": "extraction_reserved18.json",
}
"""The labelled sets shipped with yiji, in the order they were written: the one the extraction rules
were first written against; then nineteen more (held-out, reserved, reserved2 to reserved18), each first
run once as a check on turns no rule had seen (docs/benchmarks.md tells when and what it gave),
after which its answers may be read. Checking a new change to the rules on unseen turns takes a new set."""


def default_data(name: str = "labelled") -> Path:
    """A labelled set shipped with yiji (:data:`SHIPPED_SETS`)."""
    return Path(str(resources.files("yiji_bench") / "data" / SHIPPED_SETS[name]))


@dataclass(frozen=True)
class _Options:
    """How each labelled set is run: at most ``limit`` turns, ``on_turn`` told of every turn, the
    endpoint's answers kept in (and replayed from) ``answers``, with the word rules of ``rules``."""

    limit: int | None = None
    progress: ProgressFactory | None = None
    on_turn: Callable[[dict[str, Any]], None] | None = None
    answers: Path | None = None
    rules: RulePlan = ALL_ON


def _run_set(config: Config, data: Path, options: _Options) -> LabelledRun:
    """One labelled set in a fresh database, the endpoint's answers replayed from ``options.answers``."""
    if options.answers is None:
        run_options = RunOptions(options.limit, options.progress, options.on_turn, rules=options.rules)
        return run_labelled_set(config, data, run_options)
    from yiji_bench.answers import AnswerCache

    cache = AnswerCache(options.answers)
    run_options = RunOptions(options.limit, options.progress, options.on_turn, cache, options.rules)
    run = run_labelled_set(config, data, run_options)
    run.replayed, run.asked = cache.replayed, cache.asked
    return run


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


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
    already answered there (:class:`yiji_bench.answers.AnswerCache`)."""
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


def _runs(config: Config, sets: Sequence[Path], options: _Options) -> list[LabelledRun]:
    if not config.extraction.enabled:
        raise InvalidInput("extraction", "no extraction endpoint is configured (base_url and model)")
    if not sets:
        raise InvalidInput("data", "no labelled set was given")
    return [_run_set(config, data, options) for data in sets]


def _pooled(runs: Sequence[LabelledRun]) -> LabelledRun:
    pooled = LabelledRun()
    for run in runs:
        pooled.add(run)
    return pooled


def _reports(config: Config, sets: Sequence[Path], runs: list[LabelledRun]) -> dict[str, Any]:
    model = config.extraction.model
    if len(runs) == 1:
        return labelled_report(str(sets[0]), model, runs[0])
    return {
        "sets": [labelled_report(str(data), model, run) for data, run in zip(sets, runs, strict=True)],
        "pooled": labelled_report(", ".join(set_name(data) for data in sets), model, _pooled(runs)),
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
    path = resources.files("yiji_bench") / "data" / RULE_HISTORY
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {rule: str(entry["first_unseen_set"]) for rule, entry in raw["rules"].items()}


def _figures(runs: Sequence[LabelledRun]) -> dict[str, Any]:
    t = _pooled(runs).totals
    return {
        "accepted": t.accepted,
        "precision": _share(t.faithful, t.accepted),
        "recall": _share(t.recalled, t.expected),
        "safety": t.assistant_as_user_fact + t.user_key_on_forbidden,
        "small_talk_stored": t.small_talk_stored,
    }


def _changed(base: Sequence[LabelledRun], other: Sequence[LabelledRun]) -> int:
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
