"""What went wrong with an endpoint, counted and said in words, from the outcomes of its calls.

An extraction that failed leaves its event pending with an outcome naming the failure's ``reason``
(:class:`yiji.errors.ProviderError`: ``unreachable``, ``timeout``, ``busy``, ``http`` with its
``status``, ``setup`` or ``answer``). :func:`failures` groups such outcomes, most frequent first;
:func:`describe` says one group in words. The words come from the reason and the status code alone,
never from an endpoint's answer. :data:`NO_ANSWER` are the reasons under which the endpoint gave no
usable answer at all (nothing about the model can be judged from them); ``answer`` is the one reason
under which it did answer, in the wrong shape.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["NO_ANSWER", "describe", "failures"]

NO_ANSWER: Final = frozenset({"unreachable", "timeout", "busy", "http", "setup"})
"""Reasons under which no answer came back to judge."""

_WORDS: Final = {
    "unreachable": "the endpoint could not be reached",
    "timeout": "the endpoint did not answer in time",
    "busy": "the endpoint was busy with another request",
    "setup": "the endpoint settings cannot work",
    "answer": 'the endpoint\'s answers were not {"memories": [...]}',
}


def failures(outcomes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The failed outcomes (state ``pending`` with an ``error``) grouped by reason and status:
    ``[{"reason": ..., "status": ..., "events": n}]``, most events first (``status`` only for ``http``)."""
    counts: Counter[tuple[str, int | None]] = Counter()
    for outcome in outcomes:
        if outcome.get("state") == "pending" and outcome.get("error"):
            status = outcome.get("status")
            counts[(str(outcome.get("reason") or "answer"), status if isinstance(status, int) else None)] += 1
    return [
        {"reason": reason, **({"status": status} if status is not None else {}), "events": n}
        for (reason, status), n in counts.most_common()
    ]


def describe(reason: str, status: int | None = None) -> str:
    """One failure in words: "the endpoint could not be reached", "the endpoint answered HTTP 500"."""
    if reason == "http":
        return (
            f"the endpoint answered HTTP {status}"
            if status is not None
            else "the endpoint answered an HTTP error"
        )
    return _WORDS.get(reason, "the endpoint failed")
