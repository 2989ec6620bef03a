"""``yiji extraction check``: a few built-in turns through the configured endpoint, and a verdict.

Precision means little when recall silently drops: configured with a response format it handles badly, a
small model may answer ``{"memories": []}`` to almost every turn, and nothing fails. The check sends the
turns of ``yiji/bench/data/extraction_check.json`` (Chinese and English, each with the memories it
should give, and greetings and thanks that should give none) through the configured endpoint and
settings, exactly as events are extracted (a fresh temporary database; the user's is never opened), and
judges four things:

* ``answers_valid``: every answer was a well-shaped ``{"memories": [...]}`` (no turn left pending);
* ``not_silent``: the turns that state something got proposals (at least half of them);
* ``grounded``: at least half of the expected memories were stored, and nothing from the greetings;
* ``latency``: the slowest turn took under 80% of ``timeout_seconds``.

A failed check comes with the fix when a setting is the likely cause: an endpoint that answers nothing
under ``json_schema`` or ``json_object_schema`` is asked to use ``json_object`` (measured on
llama-cpp-python with a 1.5B model: the schema grammar gave empty answers, plain JSON did not).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Final

from yiji.bench.extraction import load_labelled, run_extraction_bench
from yiji.config import Config

__all__ = ["CHECK_DATA", "check_data", "run_extraction_check"]

CHECK_DATA: Final = "extraction_check.json"
SLOW_SHARE: Final = 0.8
"""A turn slower than this share of ``timeout_seconds`` makes the latency check fail."""


def check_data() -> Path:
    """The built-in turns of the check."""
    return Path(str(resources.files("yiji.bench") / "data" / CHECK_DATA))


def run_extraction_check(config: Config) -> dict[str, Any]:
    """Run the built-in turns through the configured endpoint; the verdict, with fixes and every turn.

    Raises InvalidInput (``extraction``) when no endpoint is configured."""
    section = config.extraction
    data = check_data()
    turns = load_labelled(data)
    seen: list[dict[str, Any]] = []
    report = run_extraction_bench(config, data, on_turn=seen.append)
    stating = [(t, s) for t, s in zip(turns, seen, strict=True) if t.expect]
    quiet = [(t, s) for t, s in zip(turns, seen, strict=True) if not t.expect]
    silent = sum(1 for _, s in stating if _proposed_nothing(s))
    errors = sorted({str(s["outcome"].get("error")) for s in seen if s["outcome"].get("state") != "done"})
    slowest = report["latency_s"]["max"]
    checks = {
        "answers_valid": report["still_pending"] == 0,
        "not_silent": silent * 2 <= len(stating),
        "grounded": (report["recall"] or 0) >= 0.5 and not any(s["stored"] for _, s in quiet),
        "latency": slowest < SLOW_SHARE * section.timeout_seconds,
    }
    fixes: list[str] = []
    if not checks["answers_valid"]:
        fixes.append(
            'the endpoint\'s answers are not {"memories": [...]} (errors: ' + ", ".join(errors) + "): "
            'check base_url and model, and try response_format = "json_object"'
        )
    if checks["answers_valid"] and not checks["not_silent"]:
        if section.response_format != "json_object":
            fixes.append(
                f"the model proposed nothing for {silent} of {len(stating)} turns that state something: "
                f'set response_format = "json_object" (now "{section.response_format}")'
            )
        else:
            fixes.append(
                f"the model proposed nothing for {silent} of {len(stating)} turns that state something: "
                "raise max_tokens, or try a larger model"
            )
    if not checks["latency"]:
        fixes.append(
            f"the slowest turn took {slowest} s of the {section.timeout_seconds:g} s allowed: "
            "raise timeout_seconds, or lower max_tokens"
        )
    if checks["answers_valid"] and checks["not_silent"] and not checks["grounded"]:
        fixes.append("few expected memories were stored: try another prompt version or a larger model")
    verdict = (
        "ok"
        if all(checks.values())
        else "invalid answers"
        if not checks["answers_valid"]
        else "silent model"
        if not checks["not_silent"]
        else "weak"
    )
    return {
        "verdict": verdict,
        "ok": verdict == "ok",
        "checks": checks,
        "fixes": fixes,
        "endpoint": {
            "model": section.model,
            "response_format": section.response_format,
            "prompt": section.prompt,
            "timeout_seconds": section.timeout_seconds,
        },
        "silent_turns": silent,
        "stating_turns": len(stating),
        "recall": report["recall"],
        "precision": report["precision"],
        "latency_s": report["latency_s"],
        "turns": [
            {
                "turn": t.text,
                "expected": len(t.expect),
                "stored": [m["text"] for m in s["stored"]],
                "state": s["outcome"].get("state"),
            }
            for t, s in zip(turns, seen, strict=True)
        ],
    }


def _proposed_nothing(turn: dict[str, Any]) -> bool:
    outcome = turn["outcome"]
    return outcome.get("state") == "done" and not turn["stored"] and not outcome.get("rejected")
