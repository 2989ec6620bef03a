"""Fast recall: exact candidates, an explainable score, and the labeled raw-event fallback.

Candidates come from exact top-k lookups and index seeks (see :mod:`yiji.store.search`):

* the scope's best memories by BM25 over its own statistics (eligible ones: not revoked, valid at the
  asked time, kind/time filters), as exhaustive scoring of every match would find them;
* the same over conversation events: an event with derived memories contributes its memories
  (source-event keys); an event without any, and not amended, is itself a raw-event candidate;
* exact cue identifiers (photo/text cues submitted with events);
* the user's keyed facts (``home.city``...) that the query asks about (:mod:`yiji.domain.fact_questions`),
  valid at the asked time (their history with ``include_history``);
* one-hop ``related`` links of the best memory candidates, and session neighbours of the best raw events.

Fast recall never loads all memory text and never calls an embedding API. Semantic and deep recall add
vector candidates (see :mod:`yiji.service.vectors`): the query is embedded, up to
``recall.semantic_scan_limit`` most recent vectors (deep: all of them) are compared, and cosine enters the
ranking's cosine seam as a relative strength, half its own and half its session's best, at a weight under
lexical evidence's that is higher where the scope's vectors separate its conversations
(:mod:`yiji.domain.semantic`). A query with no evidence returns no items.
Raw text from amended or already-derived events is never returned, so revoked or expired facts cannot come
back through their source text.

``yiji recall`` is run by people and by hosts' hooks, so :class:`Recall` is a use case on its own, with
explicit dependencies (the database, the configuration, the clock, the ranking's weights), as host capture
is: it works on plain requests and results (:mod:`yiji.domain.recall`) and imports neither the rest of the
service nor any pydantic model. The vectors come in through a seam (:data:`Semantic`) that
:class:`yiji.service.recall_ops.Recaller` fills; :func:`open_recall` is the composition root of a lexical
recall (``--mode fast``, the default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from yiji.config import Config
from yiji.db import Connection, Database
from yiji.domain import forgetting, ranking, ranking_plan, segment, semantic
from yiji.domain.limits import resolve_scope
from yiji.domain.query import Query
from yiji.domain.query import parse as parse_query
from yiji.domain.recall import Recalled, RecallRequest
from yiji.domain.records import MemoryRecord
from yiji.errors import InvalidInput
from yiji.invocation import yiji_command
from yiji.service.recall_items import FoundItem as _Item
from yiji.service.recall_items import render_items
from yiji.service.storage import open_database
from yiji.store import search
from yiji.timeutil import Clock, SystemClock, display_zone, from_db, to_db

if TYPE_CHECKING:  # the vector scan lives with the rest of the service (numpy, the embedders)
    from yiji.service.vectors import SemanticHits

__all__ = [
    "CANDIDATES",
    "Candidates",
    "Recall",
    "RecallFilters",
    "Semantic",
    "SemanticPart",
    "VectorSearch",
    "open_recall",
]

CANDIDATES = 100
"""Most candidates taken from each index (its exact top k) for a large ``limit``; a small one takes fewer."""
MIN_CANDIDATES = 30
EXPAND_TOP = 20
RELATED_TOP = 20


def _age_days(now: Any, at: str) -> float:
    return float((now - from_db(at)).total_seconds() / 86400)


@dataclass(frozen=True)
class RecallFilters:
    """What a recall may return: its scope, validity time (``None``: history too), kinds and periods."""

    persona: str
    project: str
    at: str | None
    kinds: list[str] | None
    since: str | None
    until: str | None
    occurred_before: str | None


VectorSearch = Callable[[Connection, RecallFilters, list[str]], "SemanticHits"]
"""Scans the scope's vectors inside the recall's read transaction; given the lexical candidates' keys."""


@dataclass(frozen=True)
class SemanticPart:
    """What the semantic part of a recall brings: warnings (a query that could not be embedded) and, when
    the query was embedded, the vector search."""

    warnings: list[str]
    search: VectorSearch | None


Semantic = Callable[[RecallRequest], SemanticPart]
"""Called once per semantic or deep recall, after the request passed its checks and before the read
transaction (embedding is network or model work, never done inside one)."""


class Recall:
    """The recall use case over one database.

    ``config`` gives the default scope, the freshness half-life (``recall``) and ordinary forgetting's
    thresholds (``forgetting``); ``weights`` are the ranking's other weights. Every statistic the ranking
    reads (documents, lengths, each term's document count) is the scope's own, read from the lexicon in
    the recall's read transaction (:func:`yiji.store.search.scope_stats`).
    """

    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        clock: Clock | None = None,
        weights: ranking_plan.Weights = ranking_plan.DEFAULT_WEIGHTS,
        candidates: int | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self.clock = clock or SystemClock()
        self.weights = weights
        self.candidates = candidates
        """Candidates taken from each index; ``None``: the recall's own depth. A reference that scores
        every match of the scope with the final ranking passes a depth past the scope's documents."""

    def close(self) -> None:
        """Close the database (a recall from :func:`open_recall` owns it)."""
        self.db.close()

    def recall(
        self,
        q: RecallRequest,
        semantic_part: Semantic | None = None,
        *,
        presentations: bool = True,
        exclude_events: frozenset[int] = frozenset(),
        leave_out: frozenset[str] = frozenset(),
        take: int | None = None,
    ) -> Recalled:
        """Recall memories (and labeled raw events) for a query; each item explains its score.

        A ``semantic`` or ``deep`` request needs ``semantic_part`` (the service provides it). Each memory
        carries its presentation now (ordinary forgetting: an old episode shows its gist or topic cues);
        ``presentations=False`` leaves it unset, for a caller that shows only the stored record: topic cues
        are cut by the segmenter's tagger, whose dictionary an English query would not otherwise load.
        ``exclude_events`` (by seq) are neither evidence nor context: what the caller already shows, such
        as the turns of a resume pack and the question being answered (memories derived from them count).
        ``leave_out`` (memory ids) are ranked as usual, then left out of the list with their context: what
        the caller shows already; ``take`` keeps the list's first items only. Only the items returned
        are read and presented (a resume pack takes its first 20 of a longer ranking).
        """
        persona, project = resolve_scope(q.persona, q.project, (self.config.persona, self.config.project))
        if q.since and q.until and q.since >= q.until:
            raise InvalidInput("until", "must be later than since")
        now = q.as_of or self.clock.now()
        weights = replace(self.weights, half_life_days=self.config.recall.freshness_half_life_days)
        query = parse_query(q.query, self._local(now), weights)
        filters = RecallFilters(
            persona=persona,
            project=project,
            at=None if q.include_history else to_db(now),
            kinds=list(q.kinds) if q.kinds else None,
            since=to_db(q.since) if q.since else None,
            until=to_db(q.until) if q.until else None,
            occurred_before=to_db(q.as_of) if q.as_of else None,
        )
        warnings: list[str] = []
        vector_search: VectorSearch | None = None
        if q.mode != "fast":
            if semantic_part is None:
                raise ValueError("a semantic recall needs the service's vectors (MemoryService.recall)")
            part = semantic_part(q)
            warnings.extend(part.warnings)
            vector_search = part.search
        if vector_search is not None:
            # the cosine's weight comes with the vector hits (Candidates._vector_hits)
            weights = replace(weights, cosine_threshold=0.0)
        with self.db.read() as conn:
            warning = segment.index_warning(
                search.get_meta(conn, search.SEGMENTER_KEY),
                lambda: search.has_rows(conn),
                yiji_command("reindex"),
            )
            if warning:
                warnings.append(warning)
            vectors: Callable[[list[str]], SemanticHits] | None = None
            if vector_search is not None:
                found_search = vector_search

                def vectors(lexical_keys: list[str]) -> SemanticHits:
                    hits = found_search(conn, filters, lexical_keys)
                    warnings.extend(hits.warnings)
                    return hits

            stage = Candidates(
                conn,
                filters,
                query,
                weights,
                q.limit,
                now,
                include_raw=q.include_raw and not q.kinds,
                exclude=exclude_events,
                candidates=self.candidates or min(CANDIDATES, max(MIN_CANDIDATES, 3 * q.limit)),
                vectors=vectors,
            )
            found = stage.collect()  # the vector hits and the speakers found complete the plan
            ranked = ranking.rank(stage.plan, found)
            if leave_out:
                ranked = [r for r in ranked if not (r.key.startswith("m:") and r.key[2:] in leave_out)]
            items = render_items(conn, stage.found, ranked[:take])
        if presentations:
            items = [
                i if i.memory is None else replace(i, presentation=self._present(i.memory, now))
                for i in items
            ]
        return Recalled(persona, project, q.query, q.mode, items, warnings)

    def _local(self, now: datetime) -> datetime:
        """``now`` in the person's zone, the calendar a query's times ("yesterday", "上周") are read in:
        the configured ``timezone`` (the one relative dates in events are read in), else ``[display]
        timezone``, else the system's."""
        return now.astimezone(display_zone(self.config.timezone or self.config.display_timezone))

    def _present(self, memory: MemoryRecord, now: Any) -> forgetting.Presentation:
        """How ``memory`` is shown at ``now`` under ordinary forgetting (``config.forgetting``)."""
        return forgetting.present_memory(memory, now, self.config.forgetting)


def open_recall(config: Config, notify: Callable[[str], None] | None = None) -> Recall:
    """The composition root of a lexical recall (``yiji recall``): the configured database and ranking,
    nothing else (no embedder is constructed)."""
    return Recall(open_database(config, notify), config)


_INDEXES = {"memory": "memory_fts", "event": "event_fts"}
_RAW_BASIS = {"user": "raw_user", "assistant": "raw_assistant"}


class Candidates:
    """The candidates stage of one recall over one read transaction: the exact lookups for a parsed
    :class:`~yiji.domain.query.Query` and the context around them, each candidate described for the
    ranking (:func:`yiji.domain.ranking.rank`).

    :meth:`collect` reads the scope's statistics for the query's terms, weighs the query against them
    (:attr:`plan`, which the vector hits and the speakers found complete), then looks up the candidates;
    :attr:`found` keeps what was learnt of each, for the presentation stage.
    """

    def __init__(
        self,
        conn: Connection,
        filters: RecallFilters,
        query: Query,
        weights: ranking_plan.Weights,
        limit: int,
        now: Any,
        *,
        include_raw: bool,
        candidates: int,
        exclude: frozenset[int] = frozenset(),
        vectors: Callable[[list[str]], SemanticHits] | None = None,
    ) -> None:
        self.candidates = candidates
        self.vectors = vectors
        self.conn = conn
        self.f = filters
        self.query = query
        self.indexes = {
            name: search.scope_stats(conn, filters.persona, filters.project, table, list(query.terms))
            for name, table in _INDEXES.items()
        }
        """The scope's statistics per index, read once (``memory``, ``event``)."""
        self.plan = ranking_plan.build_plan(
            query.words,
            {
                name: ranking_plan.IndexStats(st.stats.docs, st.stats.tokens, st.doc_counts)
                for name, st in self.indexes.items()
            },
            weights,
            limit,
            query.characters,
            about_user=query.about_user,
        )
        self.now = now
        self.include_raw = include_raw
        self.exclude = exclude
        # a long query is a stretch of conversation: the times it names are told in passing
        self.window = None if self.plan.long else query.window
        """The time the query names, if any: items dated near it are lifted (``Components.time``)."""
        self.found: dict[str, _Item] = {}
        """Candidates by key: ``m:<memory id>`` or ``e:<event seq>``."""

    def _memory_filters(self) -> dict[str, Any]:
        f = self.f
        return {"valid_at_time": f.at, "kinds": f.kinds, "since": f.since, "until": f.until}

    def collect(self) -> list[ranking.Candidate[str]]:
        """Every candidate of the query, described for the ranking."""
        conn, f, plan = self.conn, self.f, self.plan
        mem_match, ev_match = (
            segment.prune_common(list(self.query.terms), st.doc_counts, st.stats.docs)
            if plan.has_evidence
            else []
            for st in (self.indexes["memory"], self.indexes["event"])
        )
        if mem_match:
            rows = search.memory_candidates(
                conn,
                mem_match,
                persona_id=f.persona,
                project_id=f.project,
                limit=self.candidates,
                index=self.indexes.get("memory"),
                **self._memory_filters(),
            )
            body = search.bodies(conn, "memory_fts", [int(r["pk"]) for r in rows])
            place = search.event_positions(conn, [r["event_id"] for r in rows])
            for r in rows:
                seq, session = place[r["event_id"]]
                item = self._memory(r["id"], r["basis"], r["confidence"], r["valid_at"], seq, session)
                item.lexical = ranking.lexical(self.plan, body.get(int(r["pk"]), "").split(), "memory")
        if ev_match and self.include_raw:
            rows = search.event_candidates(
                conn,
                ev_match,
                persona_id=f.persona,
                project_id=f.project,
                occurred_before=f.occurred_before,
                since=f.since,
                until=f.until,
                limit=self.candidates,
                index=self.indexes.get("event"),
            )
            body = search.bodies(conn, "event_fts", [int(r["seq"]) for r in rows])
            echoes = self._echoes({int(r["seq"]): (str(r["session_id"]), str(r["role"])) for r in rows})
            for r in rows:
                seq = int(r["seq"])
                item = self._event(seq, r["session_id"], r["occurred_at"], r["role"])
                item.lexical = ranking.lexical(
                    self.plan, body.get(seq, "").split(), "event", echoes.get(seq, frozenset())
                )
        self._cues(list(self.query.identifiers))
        self._facts(self.query.asked_keys)
        if self.vectors is not None:
            self._vector_hits(self.vectors(list(self.found)))
        self._related()
        return self._positions()

    def _echoes(self, turns: dict[int, tuple[str, str]]) -> dict[int, frozenset[str]]:
        """For each turn (seq: its session and role), the index tokens of the turn just before it in its
        conversation when the other speaker said that one: what a reply may repeat (none when the ranking
        does not discount echoes)."""
        if self.plan.weights.echo <= 0 or not turns:
            return {}
        before = {
            anchor: seq
            for anchor, seq, distance, _id, _at, _ok, role in search.neighbours_of(
                self.conn,
                self.f.persona,
                self.f.project,
                [(s, q) for q, (s, _) in turns.items()],
                1,
                after=False,
            )
            if distance == -1 and role != turns[anchor][1]
        }
        body = search.bodies(self.conn, "event_fts", list(set(before.values())))
        return {anchor: frozenset(body.get(seq, "").split()) for anchor, seq in before.items()}

    def _memory(
        self, mid: str, basis: str, confidence: float, valid_at: str, seq: int, session: str
    ) -> _Item:
        return self.found.setdefault(
            f"m:{mid}", _Item(int(seq), str(session), str(basis), float(confidence), str(valid_at))
        )

    def _event(self, seq: int, session: str, occurred_at: str, role: str) -> _Item:
        basis = _RAW_BASIS.get(role, "raw_event")
        return self.found.setdefault(f"e:{seq}", _Item(seq, str(session), basis, None, str(occurred_at)))

    def _cues(self, identifiers: list[str]) -> None:
        """Exact cue identifiers count as full strength: for a raw event itself, or for its memories."""
        sources = []
        for r in search.cue_events(self.conn, identifiers, self.f.persona, self.f.project):
            if r["eligible"]:
                if self.include_raw and self._raw_allowed(r["occurred_at"]):
                    self._event(int(r["seq"]), r["session_id"], r["occurred_at"], r["role"]).cue = 1.0
            else:
                sources.append(r["id"])
        for r in search.memories_of_events(self.conn, sources, **self._memory_filters()):
            self._memory(
                r["id"], r["basis"], r["confidence"], r["valid_at"], r["seq"], r["session_id"]
            ).cue = 1.0

    def _facts(self, fact_keys: tuple[str, ...]) -> None:
        """The user's values of the keys the query asks about are candidates with evidence of their own: the
        value valid at the asked time weighs 1, an earlier one (``include_history``) half of that."""
        at = to_db(self.now)
        for r in search.keyed_memories(
            self.conn, self.f.persona, self.f.project, fact_keys, subject="user", **self._memory_filters()
        ):
            current = r["valid_at"] <= at and (r["invalid_at"] is None or r["invalid_at"] > at)
            self._memory(
                r["id"], r["basis"], r["confidence"], r["valid_at"], r["seq"], r["session_id"]
            ).fact = 1.0 if current else 0.5

    def _vector_hits(self, hits: SemanticHits) -> None:
        """Vector finds join the candidates; every candidate gets its cosine strength, half its own and half
        its session's best (:func:`yiji.domain.semantic.session_blend`), weighed by how well the scope's
        vectors separate its conversations (:func:`yiji.domain.semantic.fusion_weight`)."""
        self.plan = replace(
            self.plan, weights=replace(self.plan.weights, cosine=semantic.fusion_weight(hits.separation))
        )
        for r in hits.memories:
            self._memory(r["id"], r["basis"], r["confidence"], r["valid_at"], r["seq"], r["session_id"])
        if self.include_raw:
            for r in hits.events:
                self._event(int(r["seq"]), r["session_id"], r["occurred_at"], r["role"])
        strengths = semantic.cosine_strengths(hits.cosines, hits.threshold)
        # the event being answered is no evidence for itself, nor for its session
        sessions = {
            key: item.session
            for key, item in self.found.items()
            if not (key.startswith("e:") and item.seq in self.exclude)
        }
        for key, strength in semantic.session_blend(strengths, sessions).items():
            self.found[key].cosine = strength

    def _raw_allowed(self, occurred_at: str) -> bool:
        f = self.f
        return (
            (f.occurred_before is None or occurred_at <= f.occurred_before)
            and (f.since is None or occurred_at >= f.since)
            and (f.until is None or occurred_at < f.until)
        )

    def _related(self) -> None:
        """One-hop ``related`` links of the best memory hits lend them their strength."""
        memories = [k for k in self.found if k.startswith("m:") and self.found[k].own > 0]
        top = sorted(memories, key=lambda k: -self.found[k].own)[
            : min(RELATED_TOP, max(5, self.plan.limit or 0))
        ]
        strength = {k[2:]: self.found[k].own for k in top}
        for known, other, basis, confidence, valid_at, seq, session in search.related_pairs(
            self.conn, list(strength), **self._memory_filters()
        ):
            item = self._memory(other, basis, confidence, valid_at, seq, session)
            item.related = max(item.related, strength.get(known, 0.0))

    def _positions(self) -> list[ranking.Candidate[str]]:
        """Place every candidate at its (source) turn, bring the best turns' neighbours as context, and
        describe each candidate for the ranking rules."""
        conn, f, w = self.conn, self.f, self.plan.weights
        for seq in self.exclude:
            self.found.pop(f"e:{seq}", None)
        window = w.neighbour_window
        strength: dict[int, float] = {}
        session_of: dict[int, str] = {}
        at_seq: dict[int, list[str]] = {}
        for key, item in self.found.items():
            strength[item.seq] = max(strength.get(item.seq, 0.0), item.own)
            session_of[item.seq] = item.session
            at_seq.setdefault(item.seq, []).append(key)
        order = sorted((s for s in strength if strength[s] > 0), key=lambda s: -strength[s])
        anchors = order[:EXPAND_TOP]
        expand = {session_of[s] for s in anchors}
        # the best anchors bring their neighbours as context candidates; a small limit needs fewer
        bring = set(anchors[: max(5, min(EXPAND_TOP, (self.plan.limit or EXPAND_TOP) // 2))])
        # only turns with evidence lend credit: sessions need a line where two of them (or an anchor) are
        by_session: dict[str, list[int]] = {}
        for seq in order:
            by_session.setdefault(session_of[seq], []).append(seq)
        ranges = [
            (session, min(seqs), max(seqs))
            for session, seqs in by_session.items()
            if len(seqs) > 1 or session in expand
        ]
        index: dict[int, int] = {}
        line: dict[str, dict[int, int]] = {}
        per_session: dict[str, list[int]] = {}
        for session, seq in search.turns_in_ranges(conn, f.persona, f.project, ranges):
            per_session.setdefault(session, []).append(seq)
        for session, seqs in per_session.items():
            seqs.sort()
            line[session] = {seq: i for i, seq in enumerate(seqs)}
            index.update(line[session])
        derived: list[str] = []
        derived_near: dict[str, int] = {}
        for anchor, seq, distance, eid, at, eligible, role in search.neighbours_of(
            conn, f.persona, f.project, [(session_of[a], a) for a in anchors], window
        ):
            session = session_of[anchor]
            if seq not in index and anchor in index:
                index[seq] = index[anchor] + distance
                line.setdefault(session, {})[seq] = index[seq]
            if seq in at_seq or anchor not in bring or seq in self.exclude:
                continue
            if eligible:
                if self.include_raw and self._raw_allowed(at):
                    key = f"e:{seq}"
                    self._event(seq, session, at, role)
                    at_seq.setdefault(seq, []).append(key)
                    session_of[seq] = session
            elif eid not in derived_near:
                derived.append(eid)
                derived_near[eid] = seq
        for r in search.memories_of_events(conn, derived, **self._memory_filters()):
            key = f"m:{r['id']}"
            if key in self.found:
                continue
            self._memory(r["id"], r["basis"], r["confidence"], r["valid_at"], r["seq"], r["session_id"])
            at_seq.setdefault(int(r["seq"]), []).append(key)
            session_of[int(r["seq"])] = str(r["session_id"])
        by_position = {
            session: {i: seq for seq, i in positions.items()} for session, positions in line.items()
        }

        def near(seq: int) -> list[tuple[int, int]]:
            session = session_of[seq]
            if seq not in index or session not in by_position:
                return []
            at_index = by_position[session]
            here = index[seq]
            return [
                (at_index[here + d], abs(d)) for d in range(-window, window + 1) if d and here + d in at_index
            ]

        session_best = ranking.session_strengths((session_of[s], v) for s, v in strength.items())
        # a turn at the edge of its conversation has fewer neighbours: its credit is scaled to a whole window
        beside = {item.seq: near(item.seq) for item in self.found.values()}
        lent = sorted(s for s, close in beside.items() if any(strength.get(n, 0.0) > 0 for n, _ in close))
        sides = search.turns_beside(conn, f.persona, f.project, [(session_of[s], s) for s in lent], window)
        said_by = self._speakers()
        ages: dict[str, float] = {}
        asked = self.window
        closeness: dict[str, float] = {}
        out = []
        for key, item in self.found.items():
            close = beside[item.seq]
            out.append(
                ranking.Candidate(
                    key,
                    ranking.Components(
                        lexical=item.lexical.strength,
                        cue=item.cue,
                        fact=item.fact,
                        related=item.related,
                        cosine=item.cosine,
                        neighbour=ranking.neighbour_credit(
                            ((d, strength.get(n, 0.0)) for n, d in close), w, sides.get(item.seq)
                        ),
                        session=session_best.get(item.session, 0.0),
                        basis=item.basis,
                        confidence=item.confidence,
                        age_days=ages[item.at]
                        if item.at in ages
                        else ages.setdefault(item.at, _age_days(self.now, item.at)),
                        time=None
                        if asked is None
                        else closeness[item.at]
                        if item.at in closeness
                        else closeness.setdefault(item.at, asked.closeness(from_db(item.at))),
                        speaker=said_by.get(item.seq),
                    ),
                    # the raw turns beside it travel with it as its context
                    tuple(
                        k
                        for n, d in close
                        if d <= w.context_window
                        for k in at_seq.get(n, ())
                        if k.startswith("e:")
                    ),
                    item.session,
                    frozenset(item.lexical.matched),
                )
            )
        return out

    def _speakers(self) -> dict[int, str]:
        """Who said each candidate's (source) turn, where the host named the speaker; when the query names
        some of them, the plan learns which (the ranking's ``speaker`` factor)."""
        said_by = search.speakers(self.conn, sorted({item.seq for item in self.found.values()}))
        names = {n: segment.name_words(n) for n in {*said_by.values()}}
        named = ranking_plan.named_speakers((t.word for t in self.plan.terms), names)
        if named:
            self.plan = replace(self.plan, speakers=named)
        return said_by
