"""The final ranking exact: how deep recall reads its lexical candidates, and when it may stop.

Recall returns the items that scoring **every** match of the scope with the final ranking
(:mod:`yiji.domain.ranking`) would return, in the same order, while reading only as much as a bound
says it must (Fagin's threshold algorithm, with the ranking's other factors bounded).

**Reading order.** A document's final lexical strength (:func:`yiji.domain.ranking.lexical`) is not
BM25's, but it is bounded above by a sum over the document's index terms of saturations
``w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))`` (:func:`lexical_bound`), which the
lexicon's MaxScore ranks exactly (:mod:`yiji.domain.topk`):

* a query word: ``weight / ideal`` at the ranking's ``k1``, ``b``;
* a CJK word found only as its characters, all of them: credited ``char_credit`` times the
  saturation of the rarest character's count, which is at most that of any one of its characters
  (every character of a text is indexed, so a character is counted at least as often as a word that
  holds it): ``char_credit * weight / ideal`` on the word's character with the fewest documents;
* a character of the query's words (``char_partial``): ``char_partial * weight / ideal`` at ``char_b``;
  a long query's characters: ``weight / ideal`` at ``long_char_k1``, ``long_char_b``;
* an echo only lowers a credit (``1 - echo``), and a document without an informative word has none.

Documents are read in the order of that bound, ``depth`` at a time per index; every document not read
has a lexical strength of at most ``unread`` (the next document's bound, plus the most the words too
common to search can add; 0 once every match is read).

**The other factors, each bounded.** With ``S`` the best strength of any item of the item's session
(its own included) and ``fmax`` the largest basis factor (every other factor is at most 1: confidence,
freshness, time, speaker and diversity only lower a score)::

    cue, fact, related, cosine     0 for a document no other lookup found (those lookups are exact:
                                   cue identifiers, asked fact keys, the links of the best memories,
                                   the scanned vectors); cosine at most the best found
    neighbour                      at most 2 * (1 + decay + ... + decay ** (window - 1)) * S
                                   (a decayed sum scaled to a whole window, each term at most S)
    session                        at most S
    score <= fmax * (w_lexical * lexical + w_cue * cue + w_fact * fact + w_related * related
                     + w_cosine * cosine + (w_session + w_neighbour * 2 * (1 + decay + ...)) * S)

With the defaults (session 0.4, neighbour 0.2, window 2, decay 0.5, basis at most 1.0) the context adds
at most ``1.0 * S``: an item with no lexical evidence of its own can still reach its session's best.

**Reading around.** Every match within the neighbour window of a candidate stronger than ``unread``
(and at its own turn) is read too, so nothing unread lends a neighbour more than ``unread``, and a
candidate stronger than ``unread`` has its neighbour and session credit exact.

**When to stop** (:func:`check`). A session is *complete* when every match in it is read (recall reads
a session whole when asked); its items' scores are then exact, as are those of a candidate stronger
than ``unread``. Every other score is only bounded, by its own weighting (basis, confidence, freshness,
time: :func:`yiji.domain.ranking.weighting`) times its own evidence plus ``w_session * max(S, unread)``
plus its neighbour credit as read plus ``w_neighbour * 2 * (1 + decay + ...) * unread`` (its neighbours
not read); an item not read by ``fmax * (w_lexical * unread + w_session * max(S, unread) + w_neighbour *
2 * (1 + decay + ...) * unread + w_cosine * best cosine)``, ``S = unread`` in a session nothing of which
was read. The list is exact when:

* every listed item's score is exact;
* no bounded item could enter the list: below the weak floor; or below the hit floor while the list is
  full and its weak matches all score more; or, in a list full of hits, below every listed score;
* the best memories that lend their ``related`` links were chosen among memories stronger than any
  not read. (The best turns whose neighbours come along as context change no listed score: a
  neighbour holding a searched word is a match, read or bounded as any other.)

Otherwise the sessions that fail are read whole, and when an item of a session nothing of which was
read could still enter, or the related rule saw too little, each index is read deeper: four times as
deep, or every match at once when the list is not full (then any match over the weak floor enters
it). Ties are broken the same way in both (newer turns first), so the list equals exhaustive scoring's,
item for item.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from yiji.domain.ranking import Candidate, Ranked, Thresholds, weighting
from yiji.domain.ranking_plan import RankingPlan, Weights
from yiji.domain.topk import Saturations

__all__ = ["Bounds", "Verdict", "check", "context_bound", "lexical_bound", "unsearched_ceiling"]

K = TypeVar("K", bound=Hashable)

_SLACK = 1e-9


def lexical_bound(plan: RankingPlan, index: str, doc_counts: Mapping[str, int]) -> dict[str, Saturations]:
    """Per index term, saturations whose sum over a document's terms is at least its lexical strength
    in index ``index`` (see the module notes); ``doc_counts`` pick each word's rarest character."""
    ideal = plan.ideal
    if ideal <= 0:
        return {}
    w = plan.weights
    parts: dict[str, list[tuple[float, float, float]]] = {}

    def add(term: str, weight: float, k1: float, b: float) -> None:
        if weight > 0:
            parts.setdefault(term, []).append((weight / ideal, k1, b))

    for term in plan.terms:
        add(term.word, term.weight, w.k1, w.b)
        if not plan.long and term.chars:
            rarest = min(term.chars, key=lambda c: (doc_counts.get(c, 0), c))
            add(rarest, w.char_credit * term.weight, w.k1, w.b)
    for char, weight in plan.char_weights.items():
        if plan.long:
            add(char, weight, w.long_char_k1, w.long_char_b)
        elif w.char_partial > 0:
            add(char, w.char_partial * weight, w.k1, w.char_b)
    del index  # one bound for both indexes: only the average length differs, and MaxScore is given it
    return {term: tuple(p) for term, p in parts.items()}


def unsearched_ceiling(bound: Mapping[str, Saturations], searched: Iterable[str]) -> float:
    """The most the terms of ``bound`` not in ``searched`` can add to a document's bound (a saturation
    never exceeds ``w * (k1 + 1)``)."""
    kept = set(searched)
    return sum(w * (k1 + 1) for term, p in bound.items() if term not in kept for w, k1, _ in p)


def context_bound(weights: Weights) -> float:
    """The most the context terms add to the relevance of an item whose session's best strength is 1:
    ``w_session + w_neighbour * 2 * (1 + decay + ... + decay ** (window - 1))``."""
    mass = sum(weights.neighbour_decay ** (d - 1) for d in range(1, weights.neighbour_window + 1))
    return weights.session + weights.neighbour * 2 * mass


@dataclass(frozen=True)
class Bounds:
    """What a bounded read left unknown: ``unread`` bounds the lexical strength of every match not read
    (``unread_memories``: of every memory); ``complete`` are the sessions read whole; ``lenders`` the
    strength of the last memory the related rule picked among (0 when it picked among fewer than it may)."""

    unread: float
    unread_memories: float
    complete: frozenset[Hashable]
    lenders: float


@dataclass(frozen=True)
class Verdict(Generic[K]):
    """``exact``: the list equals exhaustive scoring's; otherwise read ``complete`` sessions whole and,
    with ``deeper``, each index deeper: every match, with ``everything`` (a list that is not full takes
    any match over the weak floor, so nearly every match must be read anyway)."""

    exact: bool
    complete: frozenset[Hashable] = frozenset()
    deeper: bool = False
    everything: bool = False


def _relevance(c: Candidate[K], weights: Weights) -> float:
    p = weights
    parts = c.parts
    cosine = parts.cosine or 0.0
    return (
        p.lexical * parts.lexical
        + p.cue * parts.cue
        + p.fact * parts.fact
        + p.related * parts.related
        + p.cosine * (cosine if cosine >= p.cosine_threshold else 0.0)
    )


def check(
    plan: RankingPlan,
    candidates: Sequence[Candidate[K]],
    ranked: Sequence[Ranked[K]],
    thresholds: Thresholds,
    bounds: Bounds,
) -> Verdict[K]:
    """Whether ``ranked`` (the ranking of ``candidates``) is what scoring every match would give; see the
    module notes. Every match within the neighbour window of a candidate stronger than ``unread`` (or at
    its turn) must be among ``candidates``."""
    unread = bounds.unread
    if unread <= 0.0:
        return Verdict(True)
    w = plan.weights
    fmax = max([1.0, *w.basis.values()])
    around = 2 * sum(w.neighbour_decay ** (d - 1) for d in range(1, w.neighbour_window + 1))
    best_cosine = max((c.parts.cosine or 0.0 for c in candidates), default=0.0)
    best_in: dict[Hashable, float] = {}
    for c in candidates:
        best_in[c.group] = max(best_in.get(c.group, 0.0), c.parts.lexical, c.parts.cue)
    limit = len(candidates) if plan.limit is None else plan.limit
    full = len(ranked) >= limit
    weak = [r.scored.score for r in ranked if r.tier == "weak"]
    listed = [r.scored.score for r in ranked]

    def safe(bound: float, hit_floor: float = thresholds.floor) -> bool:
        if bound < thresholds.weak_floor - _SLACK:
            return True
        if not full:
            return False
        if bound < hit_floor - _SLACK:
            return not weak or bound < min(weak) - _SLACK
        return not weak and bound < min(listed) - _SLACK

    def unknown(session_best: float) -> float:
        # an item not read: no cue, fact or related link; no strong neighbour (those are read)
        return fmax * (
            w.lexical * unread
            + w.session * max(session_best, unread)
            + w.neighbour * around * unread
            + w.cosine * best_cosine
        )

    def strong(c: Candidate[K]) -> bool:
        return max(c.parts.lexical, c.parts.cue) > unread + _SLACK

    by_key = {c.key: c for c in candidates}
    # a listed item's score must be exact: its session read whole, or it is stronger than anything unread
    # (then every neighbour of it was read and its session's best is known)
    complete: set[Hashable] = {
        by_key[r.key].group
        for r in ranked
        if by_key[r.key].group not in bounds.complete and not strong(by_key[r.key])
    }
    for group, best in best_in.items():
        if group in bounds.complete or group in complete:
            continue
        if not safe(unknown(best)):
            complete.add(group)
    for c in candidates:
        if c.group in bounds.complete or c.group in complete:
            continue
        lent = c.parts.neighbour + (0.0 if strong(c) else around * unread)
        bound = weighting(plan, c.parts) * (
            _relevance(c, w) + w.session * max(best_in[c.group], unread) + w.neighbour * lent
        )
        hit_floor = min(thresholds.floor, thresholds.linked) if c.parts.related > 0 else thresholds.floor
        if not safe(bound, hit_floor):
            complete.add(c.group)
    deeper = not safe(unknown(0.0)) or (
        bounds.unread_memories > 0 and bounds.lenders <= bounds.unread_memories + _SLACK
    )
    complete.discard(None)
    return Verdict(not complete and not deeper, frozenset(complete), deeper, deeper and not full)
