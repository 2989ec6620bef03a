"""Fast recall: bounded candidates, an explainable score, and the labeled raw-event fallback.

Candidates come only from bounded lookups (see :mod:`yiji.store.search`):

* FTS5 top-N over memories (eligible ones: not revoked, valid at the asked time, kind/time filters);
* FTS5 top-N over conversation events: an event with derived memories contributes its memories
  (source-event keys); an event without any, and not amended, is itself a raw-event candidate;
* exact cue identifiers (photo/text cues submitted with events);
* one-hop ``related`` links of the best memory candidates, and session neighbours of the best raw events.

Fast recall never loads all memory text and never calls an embedding API. A query with no evidence returns
no items. Raw text from amended or already-derived events is never returned, so revoked or expired facts
cannot come back through their source text.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from yiji.db import Connection
from yiji.domain import ranking, segment
from yiji.errors import InvalidInput
from yiji.models.events import EventRecord
from yiji.models.memories import MemoryRecord
from yiji.models.recall import RAW_EXCERPT_CHARS, RawEvent, RecallItem, RecallQuery, RecallResult
from yiji.service.base import ProgressFactory, progress_bar
from yiji.service.memories import MemoryOps
from yiji.store import events as event_store
from yiji.store import memories as memory_store
from yiji.store import search
from yiji.timeutil import from_db, to_db

__all__ = ["RecallOps", "SEGMENTER_ID"]

SEGMENTER_ID = segment.SEGMENTER_ID
CANDIDATES = 100
EXPAND_TOP = 20
RELATED_TOP = 20
SOURCE_SHARE = 0.8
"""A memory whose source event matches gets this share of the event's lexical strength."""


SOURCE_CHARS = 2000
"""How much of a memory's source event text goes into the memory's index body."""


def _event_body(text: str, labels: Sequence[str | None]) -> str:
    return segment.document_body(" ".join([text, *(label for label in labels if label)]))


def _memory_body(parts: Sequence[str | None]) -> str:
    """Index body of a memory: its text, quote and gist, its source text (capped) and cue labels.

    A part already contained in the source text (the quote always is) is not repeated, so term
    frequencies stay close to what a reader sees.
    """
    text, quote, gist, source, *labels = parts
    source = (source or "")[:SOURCE_CHARS]
    own = [p for p in dict.fromkeys((text, quote, gist)) if p and p not in source]
    return segment.document_body(" ".join([*own, source, *(label for label in labels if label)]))


def _age_days(now: Any, at: str) -> float:
    return float((now - from_db(at)).total_seconds() / 86400)


class RecallOps(MemoryOps):
    _index_meta_ready = False

    # -- index maintenance --------------------------------------------------------------------

    def _ensure_index_meta(self, conn: Connection, first_seq: int) -> None:
        """Stamp the segmenter on a database whose very first event is ``first_seq``.

        Any other database without a stamp (an import whose rebuild did not finish, an index built by an
        older yiji) stays unstamped, so recall and ``doctor`` keep saying ``yiji reindex`` is needed.
        """
        if self._index_meta_ready:
            return
        if search.get_meta(conn, search.SEGMENTER_KEY) is None and search.holds_only_event(conn, first_seq):
            search.set_meta(conn, search.SEGMENTER_KEY, SEGMENTER_ID)
        self._index_meta_ready = True

    def _on_event_inserted(self, conn: Connection, record: EventRecord) -> None:
        self._ensure_index_meta(conn, record.seq)
        if record.category == "conversation":  # raw-event fallback: until a memory is derived from it
            search.index_event(conn, record.seq, _event_body(record.text, [c.label for c in record.cues]))

    def _on_memory_inserted(
        self, conn: Connection, pk: int, memory: MemoryRecord, event: EventRecord
    ) -> None:
        labels = [c.label for c in event.cues]
        search.index_memory(
            conn, pk, _memory_body([memory.text, memory.quote, memory.gist, event.text, *labels])
        )
        search.unindex_event(conn, event.seq)

    def index_status(self) -> dict[str, Any]:
        with self.db.read() as conn:
            built_with = search.get_meta(conn, search.SEGMENTER_KEY)
        return {
            "segmenter": SEGMENTER_ID,
            "index_built_with": built_with,
            "current": built_with == SEGMENTER_ID,
        }

    def reindex(self, progress: ProgressFactory | None = None) -> dict[str, Any]:
        """Rebuild the lexical index from the authoritative tables (one transaction)."""
        with self.db.write() as conn:
            search.clear_index(conn)
            events = list(search.iter_events_for_index(conn))
            memories = list(search.iter_memories_for_index(conn))
            bar = progress_bar(progress, "reindex", len(events) + len(memories))
            try:
                for seq, text, labels in events:
                    search.index_event(conn, seq, _event_body(text, labels))
                    bar.update(1)
                for pk, parts in memories:
                    search.index_memory(conn, pk, _memory_body(parts))
                    bar.update(1)
            finally:
                bar.close()
            search.set_meta(conn, search.SEGMENTER_KEY, SEGMENTER_ID)
        self._index_meta_ready = True
        return {"events": len(events), "memories": len(memories), "segmenter": SEGMENTER_ID}

    def _rebuild_indexes(self, progress: ProgressFactory | None = None) -> None:
        self.reindex(progress)

    # -- recall -----------------------------------------------------------------------------

    def memory_recall(self, q: RecallQuery) -> RecallResult:
        """Recall memories (and labeled raw events) for a query; each item explains its score."""
        scope = self.scope(q.persona, q.project)
        if q.since and q.until and q.since >= q.until:
            raise InvalidInput("until", "must be later than since")
        now = q.as_of or self.clock.now()
        weights = replace(ranking.DEFAULT_WEIGHTS, half_life_days=self.config.recall.freshness_half_life_days)
        at = None if q.include_history else to_db(now)
        kinds: list[str] | None = [str(k) for k in q.kinds] if q.kinds else None
        since = to_db(q.since) if q.since else None
        until = to_db(q.until) if q.until else None
        terms = segment.query_tokens(q.query)
        identifiers = sorted({q.query.strip(), *q.query.split()} - {""})
        with self.db.read() as conn:
            warnings = []
            warning = segment.index_warning(
                search.get_meta(conn, search.SEGMENTER_KEY), lambda: search.has_rows(conn)
            )
            if warning:
                warnings.append(warning)
            mem_match = self._match(conn, "memory_fts", terms)
            ev_match = self._match(conn, "event_fts", terms)
            mem_rows = (
                search.memory_candidates(
                    conn,
                    mem_match,
                    persona_id=scope.persona,
                    project_id=scope.project,
                    valid_at_time=at,
                    kinds=kinds,
                    since=since,
                    until=until,
                    limit=CANDIDATES,
                )
                if mem_match
                else []
            )
            ev_rows = (
                search.event_candidates(
                    conn,
                    ev_match,
                    persona_id=scope.persona,
                    project_id=scope.project,
                    occurred_before=to_db(q.as_of) if q.as_of else None,
                    since=since,
                    until=until,
                    limit=CANDIDATES,
                )
                if ev_match
                else []
            )
            cue_rows = search.cue_events(conn, identifiers[:16], scope.persona, scope.project)
            items = self._rank(
                conn,
                q,
                scope.persona,
                scope.project,
                now,
                at,
                kinds,
                since,
                until,
                mem_rows,
                ev_rows,
                cue_rows,
                weights,
            )
        return RecallResult(scope=scope, query=q.query, mode=q.mode, items=items, warnings=warnings)

    def _match(self, conn: Connection, table: str, terms: list[str]) -> search.Lexical | None:
        """The MATCH expression for ``table``, without terms too common there to be worth scoring, with
        the kept terms' document counts (large counts make the store bound its candidate stages).

        Document counts are cached per process and refreshed when the index grows by 5% or after
        five minutes, so a long-running server looks them up rarely.
        """
        if not terms:
            return None
        cache: dict[str, Any] = self.__dict__.setdefault("_term_cache", {})
        top = search.top_rowid(conn, table)
        entry = cache.get(table)
        clock = time.monotonic()
        if entry is None or top > entry["top"] * 1.05 + 10 or clock - entry["at"] > 300:
            entry = {"top": top, "at": clock, "total": search.doc_total(conn, table), "df": {}}
            cache[table] = entry
        if entry["total"] < segment.COMMON_MIN_DOCS:
            match = segment.match_terms(terms)
            return search.Lexical(match) if match else None
        missing = [t for t in terms if t not in entry["df"]]
        if missing:
            entry["df"].update(search.term_doc_counts(conn, table, missing))
        kept = segment.prune_common(terms, entry["df"], entry["total"])
        match = segment.match_terms(kept)
        if match is None:
            return None
        return search.Lexical(match, tuple(kept), tuple(entry["df"].get(t, 0) for t in kept))

    def _rank(
        self,
        conn: Connection,
        q: RecallQuery,
        persona: str,
        project: str,
        now: Any,
        at: str | None,
        kinds: list[str] | None,
        since: str | None,
        until: str | None,
        mem_rows: list[Any],
        ev_rows: list[Any],
        cue_rows: list[Any],
        weights: ranking.Weights,
    ) -> list[RecallItem]:
        matched: dict[str, set[str]] = {}
        mem_strength: dict[str, float] = ranking.lexical_strengths({r["id"]: float(r["r"]) for r in mem_rows})
        facts: dict[str, tuple[str, float, str]] = {
            r["id"]: (r["basis"], float(r["confidence"]), r["valid_at"]) for r in mem_rows
        }
        for mid in mem_strength:
            matched.setdefault(f"m:{mid}", set()).add("lexical")
        ev_strength = ranking.lexical_strengths({int(r["seq"]): float(r["r"]) for r in ev_rows})
        ev_meta: dict[int, tuple[str, str, str]] = {
            int(r["seq"]): (r["id"], r["session_id"], r["occurred_at"]) for r in ev_rows
        }
        # exact cue identifiers count as full strength: for a raw event itself, or for its memories
        cue_sources = []
        for r in cue_rows:
            if r["eligible"]:
                ev_strength[int(r["seq"])] = 1.0
                ev_meta[int(r["seq"])] = (r["id"], r["session_id"], r["occurred_at"])
                matched.setdefault(f"e:{r['seq']}", set()).add("cue")
            else:
                cue_sources.append(r["id"])
        for row in search.memories_of_events(
            conn, cue_sources, valid_at_time=at, kinds=kinds, since=since, until=until
        ):
            mem_strength[row["id"]] = 1.0
            facts[row["id"]] = (row["basis"], float(row["confidence"]), row["valid_at"])
            matched.setdefault(f"m:{row['id']}", set()).add("cue")
        # one-hop related links of the best memory candidates
        top = sorted(mem_strength, key=lambda k: -mem_strength[k])[:RELATED_TOP]
        related: dict[str, float] = {}
        for known, other, basis, confidence, valid_at in search.related_pairs(
            conn, top, valid_at_time=at, kinds=kinds, since=since, until=until
        ):
            related[other] = max(related.get(other, 0.0), mem_strength.get(known, 0.0))
            facts.setdefault(other, (basis, confidence, valid_at))
            matched.setdefault(f"m:{other}", set()).add("related")
        candidates: list[tuple[str, ranking.Components]] = [
            (
                f"m:{mid}",
                ranking.Components(
                    lexical=mem_strength.get(mid, 0.0),
                    related=related.get(mid, 0.0),
                    basis=basis,
                    confidence=confidence,
                    age_days=_age_days(now, valid_at),
                ),
            )
            for mid, (basis, confidence, valid_at) in facts.items()
        ]
        if q.include_raw and not kinds:
            candidates += self._raw_candidates(
                conn, persona, project, now, ev_strength, ev_meta, matched, weights
            )
        ranked = ranking.rank(candidates, weights, q.limit)
        records = memory_store.get_many(conn, [key[2:] for key, _ in ranked if key.startswith("m:")])
        events = event_store.get_many_by_seq(
            conn, [int(key[2:]) for key, _ in ranked if key.startswith("e:")]
        )
        items = [self._item(key, scored, records, events, matched) for key, scored in ranked]
        return [
            i.model_copy(update={"presentation": self.present_memory(i.memory, now)}) if i.memory else i
            for i in items
        ]

    def _raw_candidates(
        self,
        conn: Connection,
        persona: str,
        project: str,
        now: Any,
        strength: dict[int, float],
        ev_meta: dict[int, tuple[str, str, str]],
        matched: dict[str, set[str]],
        weights: ranking.Weights,
    ) -> list[tuple[str, ranking.Components]]:
        """Raw-event candidates with neighbour and session credit; the best ones bring their neighbours."""
        window = weights.neighbour_window
        order = sorted(strength, key=lambda s: -strength[s])
        by_session: dict[str, list[int]] = {}
        for seq in strength:
            by_session.setdefault(ev_meta[seq][1], []).append(seq)
        # A neighbour lends credit only when it is itself a candidate, so turn positions are needed only
        # in sessions with two or more candidates and around the best candidates (they bring neighbours).
        # Each session's turns get positions on one line: the range between its candidates, then the
        # neighbours found around the best candidates, placed by their distance.
        anchors = order[:EXPAND_TOP]
        expand = {ev_meta[seq][1] for seq in anchors}
        ranges = [
            (session, min(seqs), max(seqs))
            for session, seqs in by_session.items()
            if len(seqs) > 1 or session in expand
        ]
        index: dict[int, int] = {}
        line: dict[str, dict[int, int]] = {}
        per_session: dict[str, list[int]] = {}
        for session, seq, _eid, _at, _ok in search.turns_in_ranges(conn, persona, project, ranges):
            per_session.setdefault(session, []).append(seq)
        for session, seqs in per_session.items():
            seqs.sort()
            line[session] = {seq: i for i, seq in enumerate(seqs)}
            index.update(line[session])
        known = set(order)
        for anchor, seq, distance, eid, at, eligible in search.neighbours_of(
            conn, persona, project, [(ev_meta[a][1], a) for a in anchors], window
        ):
            session = ev_meta[anchor][1]
            if seq not in index and anchor in index:
                index[seq] = index[anchor] + distance
                line.setdefault(session, {})[seq] = index[seq]
            if eligible and seq not in known:
                ev_meta[seq] = (eid, session, at)
                order.append(seq)
                known.add(seq)
                matched.setdefault(f"e:{seq}", set()).add("neighbour")
        by_position: dict[str, dict[int, int]] = {
            session: {i: seq for seq, i in positions.items()} for session, positions in line.items()
        }

        def near(seq: int) -> list[tuple[int, int]]:
            session = ev_meta[seq][1]
            if seq not in index or session not in by_position:
                return []
            at_index = by_position[session]
            here = index[seq]
            return [
                (at_index[here + d], abs(d)) for d in range(-window, window + 1) if d and here + d in at_index
            ]

        session_best = ranking.session_strengths((ev_meta[s][1], v) for s, v in strength.items())
        out = []
        for seq in order:
            if strength.get(seq, 0.0) > 0:
                matched.setdefault(f"e:{seq}", set()).add("lexical")
            credit = ranking.neighbour_credit(((d, strength.get(n, 0.0)) for n, d in near(seq)), weights)
            out.append(
                (
                    f"e:{seq}",
                    ranking.Components(
                        lexical=strength.get(seq, 0.0),
                        neighbour=credit,
                        session=session_best.get(ev_meta[seq][1], 0.0),
                        age_days=_age_days(now, ev_meta[seq][2]),
                    ),
                )
            )
        return out

    @staticmethod
    def _item(
        key: str,
        scored: ranking.Scored,
        records: dict[str, MemoryRecord],
        events: dict[int, EventRecord],
        matched: dict[str, set[str]],
    ) -> RecallItem:
        why = scored.explain()
        how = sorted(matched.get(key, set()))
        if key.startswith("m:"):
            m = records[key[2:]]
            return RecallItem(type="memory", id=m.id, score=scored.score, why=why, matched_by=how, memory=m)
        event = events[int(key[2:])]
        excerpt = event.text[:RAW_EXCERPT_CHARS]
        return RecallItem(
            type="raw_event",
            id=event.id,
            score=scored.score,
            why=why,
            matched_by=how,
            event=RawEvent(
                id=event.id,
                seq=event.seq,
                session=event.session,
                role=event.role,
                occurred_at=event.occurred_at,
                text=excerpt,
                truncated=len(event.text) > RAW_EXCERPT_CHARS,
                total_chars=len(event.text),
            ),
        )
