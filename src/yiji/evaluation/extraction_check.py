"""``yiji extraction check``: a few built-in turns through the configured endpoint, and a verdict.

Precision means little when recall silently drops: configured with a response format it handles badly, a
small model may answer ``{"memories": []}`` to almost every turn, and nothing fails. The check sends the
turns of ``yiji/evaluation/data/extraction_check.json`` (Chinese and English, each with the memories it
should give, and greetings, thanks and requests that hold nothing to remember) through the configured
endpoint and settings, exactly as events are extracted (a fresh temporary database; the user's is never
opened), and judges five things, in this order:

* ``reachable``: every call got an answer (no connection failure, timeout or HTTP error);
* ``answers_valid``: every answer was a well-shaped ``{"memories": [...]}``;
* ``not_silent``: the answered turns that state something got proposals (at least half of them);
* ``grounded``: at least half of the expected memories were stored, and nothing from the turns that hold
  nothing to remember;
* ``latency``: the slowest turn took under 80% of ``timeout_seconds``.

A check that nothing can be judged by is ``None`` ("n/a"), never a pass: when no call was answered,
neither the answers nor the model were seen. The verdict follows the kinds of failure
(:mod:`yiji.domain.endpoint_failures`): an endpoint that could not be reached, timed out or answered an
HTTP error is said to have failed, with base_url or the status code named, before anything is said about
the model's answers; an endpoint's answer body is never repeated.

The turns that hold nothing to remember keep the check honest about the model: yiji stores a memory whose
statement says more than its quote as the speaker's own words of the quoted clause, so a model that
answers the same memory for every turn would otherwise score full recall and precision. On a request
("帮我把这句话翻译成英文") such a model stores the speaker's words where nothing belongs, which precision
counts as wrong and ``grounded`` fails on. ``in_speakers_words`` counts the stored memories kept in the
speaker's words.

A failed check comes with the fix when a setting is the likely cause: an endpoint that answers nothing
under ``json_schema`` or ``json_object_schema`` is asked to use ``json_object`` (measured on
llama-cpp-python with a 1.5B model: the schema grammar gave empty answers, plain JSON did not).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from yiji.config import Config, ExtractionConfig
from yiji.domain.endpoint_failures import NO_ANSWER, failures
from yiji.evaluation.labelled import load_labelled, restates_quote, run_labelled

__all__ = ["CHECK_DATA", "check_data", "run_extraction_check"]

CHECK_DATA: Final = "extraction_check.json"
SLOW_SHARE: Final = 0.8
"""A turn slower than this share of ``timeout_seconds`` makes the latency check fail."""


def check_data() -> Path:
    """The built-in turns of the check."""
    return Path(str(resources.files("yiji.evaluation") / "data" / CHECK_DATA))


def run_extraction_check(config: Config) -> dict[str, Any]:
    """Run the built-in turns through the configured endpoint; the verdict, with fixes and every turn.

    Raises InvalidInput (``extraction``) when no endpoint is configured."""
    section = config.extraction
    data = check_data()
    turns = load_labelled(data)
    seen: list[dict[str, Any]] = []
    report = run_labelled(config, data, on_turn=seen.append)
    pairs = list(zip(turns, seen, strict=True))
    failed = failures(s["outcome"] for s in seen)
    unanswered = sum(f["events"] for f in failed if f["reason"] in NO_ANSWER)
    answered = len(turns) - unanswered
    judged = [(t, s) for t, s in pairs if s["outcome"].get("state") == "done"]
    stating = [(t, s) for t, s in judged if t.expect]
    quiet_stored = [t.text for t, s in judged if not t.expect and s["stored"]]
    silent = sum(1 for _, s in stating if _proposed_nothing(s))
    stored = [m for _, s in judged for m in s["stored"]]
    slowest = report["latency_s"]["max"]
    checks: dict[str, bool | None] = {
        "reachable": unanswered == 0,
        "answers_valid": answered == len(judged) if answered else None,
        "not_silent": silent * 2 <= len(stating) if stating else None,
        "grounded": (report["recall"] or 0) >= 0.5 and not quiet_stored if judged else None,
        "latency": slowest < SLOW_SHARE * section.timeout_seconds,
    }
    fixes = [_failure_fix(f, len(turns), section, seen) for f in failed]
    if checks["answers_valid"] and checks["not_silent"] is False:
        said = f"the model proposed nothing for {silent} of {len(stating)} turns that state something: "
        if section.response_format != "json_object":
            fixes.append(said + f'set response_format = "json_object" (now "{section.response_format}")')
        else:
            fixes.append(said + "raise max_tokens, or try a larger model")
    if not checks["latency"] and not any(f["reason"] == "timeout" for f in failed):
        fixes.append(
            f"the slowest turn took {slowest} s of the {section.timeout_seconds:g} s allowed: "
            "raise timeout_seconds, or lower max_tokens"
        )
    if checks["answers_valid"] and checks["not_silent"] and checks["grounded"] is False:
        if quiet_stored:
            fixes.append(
                f"memories were stored from {len(quiet_stored)} turns that hold nothing to remember "
                "(the model may answer without reading the turn): "
                "try another prompt version or a larger model"
            )
        else:
            fixes.append("few expected memories were stored: try another prompt version or a larger model")
    verdict = (
        "ok"
        if all(checks.values())
        else "endpoint failed"
        if not checks["reachable"]
        else "invalid answers"
        if checks["answers_valid"] is False
        else "silent model"
        if checks["not_silent"] is False
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
        "calls": len(turns),
        "answered": answered,
        "failures": failed,
        "silent_turns": silent,
        "stating_turns": len(stating),
        "stored_on_turns_without_memories": len(quiet_stored),
        "in_speakers_words": sum(1 for m in stored if restates_quote(m["text"], m["quote"])),
        "recall": report["recall"] if judged else None,
        "precision": report["precision"],
        "latency_s": report["latency_s"],
        "turns": [
            {
                "turn": t.text,
                "expected": len(t.expect),
                "stored": [m["text"] for m in s["stored"]],
                "state": s["outcome"].get("state"),
            }
            for t, s in pairs
        ],
    }


def _proposed_nothing(turn: dict[str, Any]) -> bool:
    outcome = turn["outcome"]
    return outcome.get("state") == "done" and not turn["stored"] and not outcome.get("rejected")


def _failure_fix(failure: dict[str, Any], calls: int, section: ExtractionConfig, seen: list[Any]) -> str:
    """One kind of failure in words, with what to do: the status code and base_url at most, never a
    remote body."""
    reason, status = failure["reason"], failure.get("status")
    share = f"on {failure['events']} of {calls} calls"
    if reason == "unreachable":
        url = _shown_url(section.base_url)
        return f"could not reach base_url {url} {share}: start the server, or correct base_url"
    if reason == "timeout":
        return (
            f"the endpoint did not answer within timeout_seconds ({section.timeout_seconds:g} s) {share}: "
            "raise timeout_seconds, or lower max_tokens"
        )
    if reason == "busy":
        return f"the endpoint was busy with another request {share}: run the check when nothing else uses it"
    if reason == "http":
        return f"the endpoint answered HTTP {status} {share}: {_http_advice(status)}"
    if reason == "setup":
        messages = sorted(
            {str(s["outcome"].get("message")) for s in seen if s["outcome"].get("reason") == "setup"}
        )
        return f"{'; '.join(messages)} ({share}): check base_url and api_key_env"
    return (
        f'the endpoint\'s answers were not {{"memories": [...]}} {share}: '
        'check model, and try response_format = "json_object"'
    )


def _http_advice(status: int | None) -> str:
    if status in (401, 403):
        return "check the API key (api_key_env names the variable that holds it)"
    if status == 404:
        return "check base_url (it usually ends in /v1) and model"
    if status == 429:
        return "wait, or use another plan or key (the endpoint limits the request rate)"
    if status is not None and status >= 500:
        return "look at the server's log, and check model"
    return "check base_url, model and response_format"


def _shown_url(url: str | None) -> str:
    """``base_url`` without any user name, password, query or fragment in it."""
    try:
        parts = urlsplit(url or "")
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(base_url)"
    if not parts.scheme or not host:
        return "(base_url)"
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}{port}{parts.path}"
