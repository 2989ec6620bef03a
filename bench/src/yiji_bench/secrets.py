"""Secret redaction measured on a labelled set: secrets caught, lookalikes redacted, time per text.

The set is two JSON Lines files in one folder (``tests/data/secrets``, written by its ``make_set.py``):
``secrets.jsonl`` (``kind``, ``secret``, ``text``: a random secret in a provider's format, in context)
and ``lookalikes.jsonl`` (``kind``, ``text``: git hashes, UUIDs, base64 images, long identifiers, sums,
integrity strings, Chinese text with digits, references to secrets in code). A secret is caught when
no part of it of 8 characters or more survives redaction; a lookalike is redacted when anything in
its text is replaced.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from yiji.domain.secrets import default_redactor

__all__ = ["run_secrets_bench"]

_SURVIVING = 8
"""A run of this many characters of a secret left in the text counts as the secret not caught."""


def _leaks(secret: str, text: str) -> bool:
    core = secret.strip()
    if len(core) <= _SURVIVING:
        return core in text
    return any(core[i : i + _SURVIVING] in text for i in range(len(core) - _SURVIVING + 1))


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def run_secrets_bench(data: Path) -> dict[str, Any]:
    """Rates on the labelled set in ``data``, with the kinds missed and redacted by mistake."""
    redactor = default_redactor()
    secrets, lookalikes = _read(data / "secrets.jsonl"), _read(data / "lookalikes.jsonl")
    missed: Counter[str] = Counter()
    started = time.perf_counter()
    for item in secrets:
        if _leaks(item["secret"], redactor.redact(item["text"]).text):
            missed[item["kind"]] += 1
    wrong: Counter[str] = Counter()
    for item in lookalikes:
        if redactor.redact(item["text"]).changed:
            wrong[item["kind"]] += 1
    elapsed = time.perf_counter() - started
    caught = len(secrets) - sum(missed.values())
    return {
        "secrets": len(secrets),
        "caught": caught,
        "caught_rate": round(caught / len(secrets), 4),
        "lookalikes": len(lookalikes),
        "lookalikes_redacted": sum(wrong.values()),
        "lookalike_redacted_rate": round(sum(wrong.values()) / len(lookalikes), 4),
        "missed_kinds": dict(sorted(missed.items())),
        "redacted_lookalike_kinds": dict(sorted(wrong.items())),
        "microseconds_per_text": round(elapsed / (len(secrets) + len(lookalikes)) * 1e6, 1),
    }
