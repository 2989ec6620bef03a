"""Recall ranking: one pure, explainable score for memories and raw events alike.

The store selects candidates (the exact BM25 top k of both indexes over the scope, cue identifiers,
the session neighbours of the best ones, one-hop relations, optionally vectors); the service describes
the query once in a :class:`RankingPlan` and each candidate in :class:`Components`; this module scores
them, orders them and says why. No I/O, no clock: ages come in as numbers.

**One evidence scale.** Lexical strength is measured the same way in both indexes, against the query
rather than against the best candidate of an index::

    weight(word)  = ln(1 + (N - n + 0.5) / (n + 0.5))          N, n: documents of both indexes
    credit(word)  = tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average length of its index))
                    (a word of two or more CJK characters found only as its characters, all of them:
                    char_credit * the same with the rarest character's tf; times ``1 - echo`` for a
                    word the other speaker's turn just before it also has: a reply's echo)
    lexical       = sum(weight * credit) / sum(weight)          1.0 = every query word found once

so a weak match stays weak whichever index it is in, and a memory is not promoted because the memory
index happens to be small.

**Short questions and long conversations.** In a question (fewer than ``long_query`` informative
words) a CJK character counts only through its word: the word itself, or all of its characters
(``char_credit``), so ``上海`` does not find ``早上``; the characters of the query's words add weak
support, never evidence alone. A long query (a stretch of conversation, ``long_query`` informative
words or more) spreads its topic over many characters, so there every character of its CJK words
(stopwords included, characters that are stopwords themselves such as 我 and 的 left out) is a term
of its own and can be evidence: weighed like a word (its rarity, how many of the query's words use
it), credited as BM25 credits a word but saturating later and weighing length more
(``long_char_k1``, ``long_char_b``: a long document shares characters with a conversation by
chance), and added to the words' evidence over the words' ideal, as character support is in a
question. A word found only through its characters gets no credit of its own there.

**Uninformative words.** A stopword, or a word found in more than ``common_share`` of the documents of
an index (the user's name or "用户" when every memory carries it), is *uninformative*: it adds to the
strength of an item that has other evidence, but cannot make an item a hit on its own. When every
searched word is uninformative by frequency (a one-word query about the archive's main topic), they
count as evidence after all; stopwords never do.

**The score**::

    relevance = w_lexical   * lexical        own evidence
              + w_cue       * cue            an exact cue identifier (photo/text) of its source event
              + w_fact      * fact           the value of a keyed property the query asks about
              + w_related   * related        best lexical strength among one-hop related memories
              + w_cosine    * cosine         the semantic seam: only when cosine >= threshold
              + w_neighbour * neighbour      context: decayed sum of neighbouring turns' strengths,
                                             scaled to a whole window at a conversation's edges
              + w_session   * session        context: best strength in the same session
    score = relevance * basis_factor * confidence_factor * freshness_factor * time_factor
            * speaker_factor

    time_factor = (1 - w_time) + w_time * closeness   when the query names a time (``time``: how close
                                                       the item's date is to its window, 0-1); else 1
    speaker_factor = 1 - w_speaker                     for what the assistant said (raw turn or
                                                       expression) when the query is about the user
                                                       alone ("what did I buy"), and for what another
                                                       speaker said when the query names speakers
                                                       ("what did Caroline paint"); else 1

A memory takes its neighbour and session context through its source event, so a derived memory and a
raw turn in the same place get the same context.

Invariants:

* **One item per piece of evidence.** An item with own evidence (lexical, cue, fact, related, cosine)
  whose score (a named speaker's counterpart's without its speaker factor) reaches the floor
  ``max(min_score, min_share * best hit)`` is a *hit* (with a related
  link as its only evidence, ``min_share * w_related * best hit``). Any other item that neighbours a
  listed hit (same session, within ``context_window`` turns) without evidence of its own travels with
  that hit as its *context*: shown with it, never in a slot of its own. Evidence under the floor is a
  *weak* match, ranked after the hits (its neighbour and session context lifting it), down to
  ``max(min_score, weak_share * best hit)``: the minimum that keeps near-zero padding out. A query
  without evidence returns nothing, not even context.
* **The list ends where the evidence ends** (:mod:`yiji.domain.list_end`). A weak match under
  ``cut_share * best hit`` stays only when it names a query word that no item before it names: it
  carries evidence the stronger ones lack. Otherwise it is padding and is left out, whatever room the
  limit leaves; a limit caps the list, never fills it. ``cut_share`` was measured on lexical evidence,
  so a weak match with a cosine over the threshold (semantic mode) is not cut by it.
* **Diversity over sessions.** Hits are picked greedily: each pick multiplies the scores of the
  remaining hits of its session by ``1 - diversity`` (the ``diversity`` factor of their explanation),
  so when scores are close the list covers more sessions, and a clearly better second hit of a session
  still comes before a weak first hit of another.
* **An asked-for fact first.** A memory holding the value of a keyed property the query asks about
  ("我住在哪里" asks for ``home.city``; :mod:`yiji.domain.fact_questions`) is a hit whatever words its
  text uses, and such hits come before every other hit: the value valid at the asked time (``fact``
  1) before earlier ones (``fact`` below 1, with ``include_history``), best first among equals.
* **Time in the query lifts, never filters.** When the query names a time ("上个月", "two weeks ago";
  :mod:`yiji.domain.timewindow`), an item dated outside its window keeps ``1 - w_time`` of its score;
  one inside keeps all of it. An item without evidence is not lifted into the list by its date. A long
  query names no time to lift: it is a stretch of conversation, whose "昨天" or "last week" tells when
  something in it happened, not which memories it asks for (the service resolves no window for it).
* **A question about the user is answered by what the user said.** A query in the first person with
  no word that speaks of the assistant or of both speakers (:func:`yiji.domain.fact_questions.about_user`:
  "what did I buy" and "can you remind me where I parked", not "what did you recommend" or "what did
  we decide") weighs the assistant's turns
  and expressions by ``1 - w_speaker``: its long replies restate the user's words and would otherwise
  take the places of the statements they restate. Still evidence, never dropped.
* **A question that names a speaker is answered by what that speaker said.** A host may name who said
  a turn (a ``speaker:`` text cue, whose label is the name). When the query holds every word of the
  name of some candidate's speaker ("what did Caroline research"), what the other named speakers said,
  and what was derived from it, is weighed by ``1 - w_speaker``: the name is on each of that speaker's
  turns and in the other's replies, so within one conversation it is too common to count as evidence,
  yet it says whose words answer. A turn whose speaker is not named by its host keeps all of its score.
  Here the factor orders the hits without deciding them: the other speaker's turn that reaches the
  floor on its evidence stays a hit, lower in the list, with its context (the reply beside it, which
  often holds the answer in none of the question's words). An assistant's restatement of the user is
  judged with its factor: it holds no answer the user's own turn does not.
* Freshness multiplies and is bounded below by ``1 - w_freshness``: old evidence is demoted, never
  dropped. Basis multiplies: a user statement beats an assistant's raw guess with equal evidence.
* The cosine term is a seam: absent (``None``) in fast recall; a semantic mode fills it.

Defaults were measured on LoCoMo (raw turns, and its observations derived as memories) and
MADial-Bench; see ``docs/benchmarks.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from yiji.domain.list_end import Listed, kept_positions
from yiji.domain.ranking_plan import DEFAULT_WEIGHTS, RankingPlan, Weights

__all__ = [
    "Candidate",
    "Components",
    "Lexical",
    "Ranked",
    "Scored",
    "freshness",
    "lexical",
    "neighbour_credit",
    "rank",
    "score",
    "session_strengths",
]

K = TypeVar("K", bound=Hashable)

ASSISTANT_BASES = frozenset({"assistant_expression", "raw_assistant"})
"""Bases of what the assistant said: the other speaker when a question is about the user."""


@dataclass(frozen=True)
class Lexical:
    """A document's lexical evidence: ``strength`` (0 without an informative match) and the words
    it matched (``uninformative`` ones apart)."""

    strength: float = 0.0
    matched: tuple[str, ...] = ()
    uninformative: tuple[str, ...] = ()


def _saturate(tf: int, norm: float, k1: float) -> float:
    return tf * (k1 + 1.0) / (tf + norm)


def lexical(
    plan: RankingPlan, tokens: Sequence[str], index: str, echoed: frozenset[str] = frozenset()
) -> Lexical:
    """The lexical evidence of a document (its index tokens) of index ``index`` for the plan.

    ``echoed`` are the tokens of the other speaker's turn just before it in its conversation: a query
    word found there too is credited ``1 - echo`` times (the turn that said it first is the evidence; a
    reply that repeats it is its echo)."""
    ideal = plan.ideal
    if not tokens or ideal <= 0:
        return Lexical()
    w = plan.weights
    counts = Counter(tokens)
    average = plan.average_length.get(index) or 1.0
    if plan.long:
        return _long_lexical(plan, counts, len(tokens) / average, ideal)
    norm = w.k1 * (1.0 - w.b + w.b * len(tokens) / average)
    total = 0.0
    matched: list[str] = []
    weak: list[str] = []
    for term in plan.terms:
        tf = counts.get(term.word, 0)
        if tf:
            credit = _saturate(tf, norm, w.k1)
        elif term.chars and all(counts.get(c, 0) for c in term.chars):
            credit = w.char_credit * _saturate(min(counts[c] for c in term.chars), norm, w.k1)
        else:
            continue
        if term.word in echoed:
            credit *= 1.0 - w.echo
        total += term.weight * credit
        (matched if term.informative else weak).append(term.word)
    if w.char_partial > 0:
        # characters of the query's words, each once: weak support, never evidence on its own; a long
        # document shares characters with a query by chance, so its length counts more (char_b)
        char_norm = w.k1 * (1.0 - w.char_b + w.char_b * len(tokens) / average)
        total += w.char_partial * sum(
            weight * _saturate(counts[c], char_norm, w.k1)
            for c, weight in plan.char_weights.items()
            if c in counts
        )
    if not matched:
        return Lexical(0.0, (), tuple(weak))
    return Lexical(total / ideal, tuple(matched), tuple(weak))


def _long_lexical(
    plan: RankingPlan, counts: Mapping[str, int], relative_length: float, ideal: float
) -> Lexical:
    """A long query's evidence: its words, and its characters as terms of their own."""
    w = plan.weights
    norm = w.k1 * (1.0 - w.b + w.b * relative_length)
    char_norm = w.long_char_k1 * (1.0 - w.long_char_b + w.long_char_b * relative_length)
    total = 0.0
    matched: list[str] = []
    weak: list[str] = []
    for term in plan.terms:
        tf = counts.get(term.word, 0)
        if tf:
            total += term.weight * _saturate(tf, norm, w.k1)
            (matched if term.informative else weak).append(term.word)
    for c, weight in plan.char_weights.items():
        tf = counts.get(c, 0)
        if tf:
            total += weight * _saturate(tf, char_norm, w.long_char_k1)
            matched.append(c)
    if not matched:
        return Lexical(0.0, (), tuple(weak))
    return Lexical(total / ideal, tuple(matched), tuple(weak))


@dataclass(frozen=True)
class Components:
    """What is known about one candidate. ``None`` means "not applicable".

    ``lexical``, ``cue``, ``fact``, ``related`` and ``cosine`` are the candidate's own evidence; ``neighbour``
    and ``session`` its context (through its source event for a memory). ``basis`` is a memory's
    basis or ``raw_user``/``raw_assistant``/``raw_event``; ``confidence`` a memory's model-supplied
    confidence (``None`` for raw events); ``age_days`` is ``now - occurred_at`` (or ``valid_at``);
    ``time`` how close that date is to the time the query names (``None``: the query names none);
    ``speaker`` the name of who said its (source) turn, when the host gave one.
    """

    lexical: float = 0.0
    cue: float = 0.0
    fact: float = 0.0
    related: float = 0.0
    cosine: float | None = None
    neighbour: float = 0.0
    session: float = 0.0
    basis: str = "raw_event"
    confidence: float | None = None
    age_days: float = 0.0
    time: float | None = None
    speaker: str | None = None
    """Who said its (source) turn, when the host named the speaker."""


@dataclass(frozen=True)
class Scored:
    """A score with its parts: additive ``contributions`` and multiplicative ``factors``.

    ``evidence`` says whether the candidate has evidence of its own; ``context_of`` names the hit a
    context item is shown for.
    """

    score: float
    evidence: bool
    contributions: Mapping[str, float]
    factors: Mapping[str, float]
    context_of: str | None = None

    def explain(self) -> dict[str, object]:
        """A JSON-ready explanation: ``{"score", "evidence", "contributions", "factors"}`` (and
        ``context_of`` for a context item)."""
        out: dict[str, object] = {
            "score": round(self.score, 6),
            "evidence": self.evidence,
            "contributions": {k: round(v, 6) for k, v in self.contributions.items()},
            "factors": {k: round(v, 6) for k, v in self.factors.items()},
        }
        if self.context_of is not None:
            out["context_of"] = self.context_of
        return out


def freshness(age_days: float, half_life_days: float = 180.0) -> float:
    """``0.5 ** (age_days / half_life_days)``; a negative age (a future time) counts as 0 days."""
    if half_life_days <= 0:
        raise ValueError("half_life_days must be positive")
    return float(0.5 ** (max(age_days, 0.0) / half_life_days))


def neighbour_credit(
    neighbours: Iterable[tuple[int, float]],
    weights: Weights = DEFAULT_WEIGHTS,
    sides: tuple[int, int] | None = None,
) -> float:
    """Credit from neighbouring turns of the same session: ``(distance, lexical strength)`` pairs.

    A neighbour at distance d (1 = adjacent) within the window adds ``strength * decay ** (d - 1)``.
    ``sides`` says how many turns the session has before and after the turn (the window's positions
    that exist): the sum is scaled to a whole window, so a turn that opens or closes its conversation
    has the credit its neighbours would give a turn in the middle, not less for the turns it cannot
    have. A turn with no neighbour at all gets none.
    """
    window, decay = weights.neighbour_window, weights.neighbour_decay
    total = 0.0
    for distance, strength in neighbours:
        d = abs(distance)
        if 1 <= d <= window:
            total += strength * decay ** (d - 1)
    if sides is None or total <= 0.0:
        return total
    mass = [decay ** (d - 1) for d in range(1, window + 1)]
    present = sum(mass[: max(sides[0], 0)]) + sum(mass[: max(sides[1], 0)])
    return total * 2 * sum(mass) / present if present > 0 else 0.0


def session_strengths(strength_by_session: Iterable[tuple[K, float]]) -> dict[K, float]:
    """The best strength seen in each session, from ``(session, strength)`` pairs."""
    best: dict[K, float] = {}
    for session, strength in strength_by_session:
        best[session] = max(best.get(session, 0.0), strength)
    return best


def _cosine(parts: Components, weights: Weights) -> float:
    if parts.cosine is not None and parts.cosine >= weights.cosine_threshold:
        return parts.cosine
    return 0.0


def _time_factor(closeness: float, weights: Weights) -> float:
    return (1.0 - weights.time) + weights.time * min(max(closeness, 0.0), 1.0)


def _restated(plan: RankingPlan, parts: Components) -> bool:
    """What the assistant said, when the query is about the user: its replies restate the user's words."""
    return plan.about_user and parts.basis in ASSISTANT_BASES


def _counterpart(plan: RankingPlan, parts: Components) -> bool:
    """What a speaker the query does not name said, when it names others."""
    return bool(plan.speakers) and parts.speaker is not None and parts.speaker not in plan.speakers


def _speaker_factor(plan: RankingPlan, parts: Components) -> float:
    """``1 - w_speaker`` for a restatement (:func:`_restated`) or a counterpart's turn
    (:func:`_counterpart`); else 1."""
    return 1.0 - plan.weights.speaker if _restated(plan, parts) or _counterpart(plan, parts) else 1.0


def _own(parts: Components, weights: Weights) -> bool:
    """Whether the candidate has evidence of its own (a related link alone is not)."""
    return parts.lexical > 0 or parts.cue > 0 or parts.fact > 0 or _cosine(parts, weights) > 0


def score(plan: RankingPlan, parts: Components) -> Scored:
    """Score one candidate; see the module docstring for the formula."""
    w = plan.weights
    contributions = {
        "lexical": w.lexical * parts.lexical,
        "cue": w.cue * parts.cue,
        "fact": w.fact * parts.fact,
        "related": w.related * parts.related,
        "cosine": w.cosine * _cosine(parts, w),
        "neighbour": w.neighbour * parts.neighbour,
        "session": w.session * parts.session,
    }
    fresh = freshness(parts.age_days, w.half_life_days)
    confidence = 1.0 if parts.confidence is None else min(max(parts.confidence, 0.0), 1.0)
    factors = {
        "basis": w.basis.get(parts.basis, min(w.basis.values(), default=1.0)),
        "confidence": (1.0 - w.confidence) + w.confidence * confidence,
        "freshness": (1.0 - w.freshness) + w.freshness * fresh,
    }
    if parts.time is not None:
        factors["time"] = _time_factor(parts.time, w)
    if (speaker := _speaker_factor(plan, parts)) < 1.0:
        factors["speaker"] = speaker
    evidence = _own(parts, w) or parts.related > 0
    total = sum(contributions.values()) * math.prod(factors.values())
    return Scored(total, evidence, contributions, factors)


def _fast(plan: RankingPlan, parts: Components) -> tuple[float, bool, float]:
    """``(score, evidence, the score a hit is judged by)`` as :func:`score` computes them, without
    building the explanation; a counterpart's turn is judged without its speaker factor."""
    w = plan.weights
    cosine = _cosine(parts, w)
    relevance = (
        w.lexical * parts.lexical
        + w.cue * parts.cue
        + w.fact * parts.fact
        + w.related * parts.related
        + w.cosine * cosine
        + w.neighbour * parts.neighbour
        + w.session * parts.session
    )
    confidence = 1.0 if parts.confidence is None else min(max(parts.confidence, 0.0), 1.0)
    basis = w.basis.get(parts.basis, min(w.basis.values(), default=1.0))
    fresh = freshness(parts.age_days, w.half_life_days)
    heard = (
        relevance
        * basis
        * ((1.0 - w.confidence) + w.confidence * confidence)
        * ((1.0 - w.freshness) + w.freshness * fresh)
        * (1.0 if parts.time is None else _time_factor(parts.time, w))
    )
    evidence = parts.lexical > 0 or parts.cue > 0 or parts.fact > 0 or parts.related > 0 or cosine > 0
    restated, counterpart = _restated(plan, parts), _counterpart(plan, parts)
    total = heard * (1.0 - w.speaker) if restated or counterpart else heard
    # a counterpart's turn is a hit on its evidence (its reply beside it may hold the answer); an
    # assistant's restatement is judged with its factor
    return total, evidence, heard if counterpart and not restated else total


@dataclass(frozen=True)
class Candidate(Generic[K]):
    """A candidate: its key, its components, the candidates that travel with it as its context when it
    is a hit (``near``: its neighbouring turns within ``context_window``, in conversation order, and
    what was derived from the same event), its ``group`` (its session) for the diversity rule, and the
    query ``words`` its own lexical evidence matches (where the list ends, :mod:`yiji.domain.list_end`)."""

    key: K
    parts: Components
    near: tuple[K, ...] = ()
    group: Hashable | None = None
    words: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Ranked(Generic[K]):
    """A ranked candidate: ``tier`` is ``hit`` or ``weak``; a hit carries its ``context`` (ranked
    candidates of tier ``context`` with ``context_of`` set to the hit)."""

    key: K
    scored: Scored
    context_of: K | None = None
    tier: str = "hit"
    context: tuple[Ranked[K], ...] = ()


def _diversify(
    hits: list[tuple[Candidate[K], float]], diversity: float
) -> list[tuple[Candidate[K], float, float]]:
    """Greedy re-ranking over groups: each pick multiplies the remaining hits of its group by
    ``1 - diversity``, so a second hit of a covered session needs a clearly better score than a first
    hit of another one. Asked-for facts keep their place in front. Each hit comes back with the factor
    it was ranked with (1 when it was not held back)."""
    if diversity <= 0.0 or len(hits) < 2:
        return [(c, total, 1.0) for c, total in hits]
    keep = 1.0 - diversity
    out = [(c, total, 1.0) for c, total in hits if c.parts.fact > 0]
    rest = [h for h in hits if h[0].parts.fact <= 0]
    seen: Counter[Hashable] = Counter()

    def factor(c: Candidate[K]) -> float:
        return 1.0 if c.group is None else float(keep ** seen[c.group])

    while rest:
        i = max(range(len(rest)), key=lambda j: rest[j][1] * factor(rest[j][0]))
        c, total = rest.pop(i)
        out.append((c, total, factor(c)))
        if c.group is not None:
            seen[c.group] += 1
    return out


def rank(plan: RankingPlan, candidates: Sequence[Candidate[K]]) -> list[Ranked[K]]:
    """Hits (asked-for facts first, then by score under the diversity rule), each with its context;
    then weak matches best first.

    A *hit* has evidence of its own and reaches the floor (see the module docstring). A candidate without
    evidence of its own that is ``near`` a listed hit (its own ``near`` names it) travels with the
    best-ranked such hit as its *context*, in the order of the hit's ``near`` (conversation order), and
    takes no place in the list. A *weak* match has evidence of its own below the floor but at least
    ``max(min_score, weak_share * best hit)``, and reaches ``cut_share * best hit`` or names a query
    word no item before it names (:func:`yiji.domain.list_end.kept_positions`). Nothing else is
    returned. The sort is stable: equal scores keep the caller's order. At most ``plan.limit`` items
    (context not counted): a limit caps the list, never fills it.
    """
    quick = [(c, *_fast(plan, c.parts)) for c in candidates]
    best = max((total for _, total, evidence, _ in quick if evidence), default=0.0)
    if best <= 0.0:
        return []
    w = plan.weights
    floor = max(w.min_score, w.min_share * best)
    # evidence only through a related link is measured against what a link to the best hit gives
    linked = max(w.min_score, w.min_share * w.related * best)

    def kept(parts: Components, heard: float, evidence: bool) -> bool:
        # whose words they are orders the hits (the speaker factor), it does not pick them
        if parts.fact > 0:
            return True
        return evidence and heard >= (floor if _own(parts, w) else linked)

    hits = [(c, total) for c, total, evidence, heard in quick if kept(c.parts, heard, evidence)]
    hits.sort(key=lambda item: (-item[0].parts.fact, -item[1]))
    limit = len(candidates) if plan.limit is None else plan.limit
    listed = _diversify(hits, w.diversity)[:limit]
    order = {c.key: i for i, (c, _, _) in enumerate(listed)}
    # a candidate without evidence of its own near a listed hit travels with the best-ranked such hit
    # (one with weak evidence keeps a place of its own among the weak matches)
    context: dict[K, list[Candidate[K]]] = {}
    for c, _, evidence, _ in quick:
        anchors = [k for k in c.near if k in order]
        if c.key not in order and anchors and not evidence:
            context.setdefault(min(anchors, key=order.__getitem__), []).append(c)
    out: list[Ranked[K]] = []
    for c, _, held in listed:
        scored = score(plan, c.parts)
        if held < 1.0:
            scored = replace(scored, score=scored.score * held, factors={**scored.factors, "diversity": held})
        position = {k: i for i, k in enumerate(c.near)}
        beside = sorted(context.get(c.key, ()), key=lambda n: position.get(n.key, len(position)))
        out.append(
            Ranked(
                c.key,
                scored,
                None,
                "hit",
                tuple(
                    Ranked(n.key, replace(score(plan, n.parts), context_of=str(c.key)), c.key, "context")
                    for n in beside
                ),
            )
        )
    attached = {n.key for near in context.values() for n in near}
    weak_floor = max(w.min_score, w.weak_share * best)
    weak = [
        (c, total)
        for c, total, evidence, _ in quick
        if evidence and total >= weak_floor and c.key not in order and c.key not in attached
    ]
    weak.sort(key=lambda item: -item[1])
    # the list ends where the evidence ends: a weak match stays above the cut's floor, or when it names
    # a query word no item before it names; the limit caps what is left. The floor was measured on
    # lexical evidence: a semantic match (its cosine over the threshold) is not cut by it
    asked = frozenset(t.word for t in plan.terms)
    seen = [Listed(total, c.words & asked, True) for c, total, _ in listed]
    seen += [Listed(total, c.words & asked, _cosine(c.parts, w) > 0) for c, total in weak]
    stay = [weak[i - len(listed)][0] for i in kept_positions(seen, w.cut_share) if i >= len(listed)]
    out += [Ranked(c.key, score(plan, c.parts), None, "weak") for c in stay[: max(limit - len(out), 0)]]
    return out
