"""How the candidates stage of a recall reads its lexical candidates until its list is exact.

Documents are read best first by a bound of their final lexical strength (:mod:`yiji.domain.exact`),
``depth`` per index, with every match of the sessions read whole; every match beside a candidate
stronger than anything unread is read too; each document's evidence is computed once (the stage's
``lexicals``) while the recall reads deeper. These functions work on the stage
(:class:`yiji.service.recall.Candidates`), which keeps what was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from yiji.domain import bm25, exact, ranking
from yiji.store import search, sessions

if TYPE_CHECKING:
    from yiji.service.recall import Candidates

__all__ = ["around", "other_evidence", "read_lexical"]


def read_lexical(
    stage: Candidates, searched: Mapping[str, list[str]], depth: int, complete: frozenset[str]
) -> dict[str, float]:
    """Read each index's ``depth`` best documents by the bound of their lexical strength, and every
    match of the ``complete`` sessions; returns, per index, the bound of every match not read."""
    unread = {"memory": 0.0, "event": 0.0}
    for name, terms in searched.items():
        if not terms:
            continue
        index = stage.indexes[name]
        bound = exact.lexical_bound(stage.plan, name, index.doc_counts)
        impacts = {t: bound[t] for t in terms if t in bound}
        rows = _fetch(stage, name, terms, index, impacts, depth + 1, None)
        if len(rows) > depth:
            unread[name] = -float(rows[depth]["r"]) + exact.unsearched_ceiling(bound, terms)
            rows = rows[:depth]
        if complete and unread[name] > 0:
            whole = sessions.session_documents(
                stage.conn, index.table, stage.f.persona, stage.f.project, sorted(complete)
            )
            rows += _fetch(stage, name, terms, index, impacts, 0, whole)
        _read_rows(stage, name, rows, terms)
    return unread


def _fetch(
    stage: Candidates,
    name: str,
    terms: list[str],
    index: search.ScopeIndex,
    impacts: Mapping[str, tuple[tuple[float, float, float], ...]],
    limit: int,
    within: list[int] | None,
) -> list[Any]:
    """The best ``limit`` eligible documents of index ``name`` by ``impacts`` (or those of ``within``)."""
    f = stage.f
    if name == "memory":
        return search.memory_candidates(
            stage.conn,
            terms,
            persona_id=f.persona,
            project_id=f.project,
            limit=limit,
            index=index,
            impacts=impacts,
            within=within,
            **stage._memory_filters(),
        )
    return search.event_candidates(
        stage.conn,
        terms,
        persona_id=f.persona,
        project_id=f.project,
        occurred_before=f.occurred_before,
        since=f.since,
        until=f.until,
        limit=limit,
        index=index,
        impacts=impacts,
        within=within,
    )


def _read_rows(stage: Candidates, name: str, rows: list[Any], terms: list[str]) -> None:
    """The lexical evidence of these documents of index ``name`` that hold a searched term."""
    conn = stage.conn
    if name == "memory":
        fresh = [r for r in rows if f"m:{r['id']}" not in stage.read]
        body = search.bodies(
            conn, "memory_fts", [int(r["pk"]) for r in fresh if f"m:{r['id']}" not in stage.lexicals]
        )
        place = search.event_positions(conn, [r["event_id"] for r in fresh])
        for r in fresh:
            key = f"m:{r['id']}"
            if key not in stage.lexicals:
                _evidence(stage, key, body.get(int(r["pk"]), ""), terms, "memory")
            if stage.lexicals[key] is None:
                continue
            seq, session = place[r["event_id"]]
            item = stage._memory(r["id"], r["basis"], r["confidence"], r["valid_at"], seq, session)
            item.lexical = stage.lexicals[key] or ranking.Lexical()
            stage.read.add(key)
        return
    fresh = [r for r in rows if f"e:{int(r['seq'])}" not in stage.read]
    new = [r for r in fresh if f"e:{int(r['seq'])}" not in stage.lexicals]
    body = search.bodies(conn, "event_fts", [int(r["seq"]) for r in new])
    echoes = stage._echoes({int(r["seq"]): (str(r["session_id"]), str(r["role"])) for r in new})
    for r in fresh:
        seq = int(r["seq"])
        key = f"e:{seq}"
        if key not in stage.lexicals:
            _evidence(stage, key, body.get(seq, ""), terms, "event", echoes.get(seq, frozenset()))
        if stage.lexicals[key] is None:
            continue
        item = stage._event(seq, r["session_id"], r["occurred_at"], r["role"])
        item.lexical = stage.lexicals[key] or ranking.Lexical()
        stage.read.add(key)


def _evidence(
    stage: Candidates, key: str, body: str, terms: list[str], index: str, echoed: frozenset[str] = frozenset()
) -> None:
    """Remember the lexical evidence of candidate ``key`` (None when its body holds no searched term)."""
    tokens = body.split()
    held = not {bm25.fold(t) for t in terms}.isdisjoint(bm25.folded_body(body).split())
    stage.lexicals[key] = ranking.lexical(stage.plan, tokens, index, echoed) if held else None


def other_evidence(stage: Candidates, searched: Mapping[str, list[str]]) -> None:
    """The lexical evidence of the candidates other lookups found (cues, facts, related links) that
    hold a searched term: a match counts whichever way it was found."""
    others = [k for k in stage.found if k not in stage.read]
    memories = [k[2:] for k in others if k.startswith("m:") and k not in stage.lexicals]
    if memories and searched["memory"]:
        texts = sessions.memory_bodies(stage.conn, memories)
        for mid in memories:
            _evidence(stage, f"m:{mid}", texts.get(mid, ""), searched["memory"], "memory")
    events = [int(k[2:]) for k in others if k.startswith("e:") and k not in stage.lexicals]
    if events and searched["event"]:
        body = search.bodies(stage.conn, "event_fts", events)
        echoes = stage._echoes({seq: (stage.found[f"e:{seq}"].session, stage.roles[seq]) for seq in body})
        for seq in events:
            _evidence(
                stage, f"e:{seq}", body.get(seq, ""), searched["event"], "event", echoes.get(seq, frozenset())
            )
    for key in others:
        found = stage.lexicals.get(key)
        if found is not None:
            stage.found[key].lexical = found


def around(stage: Candidates) -> None:
    """Read every match within the neighbour window of each candidate stronger than anything unread
    (and beside it, at its own turn): what is left unread then lends no neighbour more than the
    unread bound (:mod:`yiji.domain.exact`)."""
    unread = max(stage.unread.values())
    if unread <= 0.0:
        return
    f = stage.f
    strong = sorted({(item.session, item.seq) for item in stage.found.values() if item.own > unread})
    if not strong:
        return
    session_of = {seq: session for session, seq in strong}
    # (event id, occurred at, role, eligible as a raw event, session) of each turn to read
    turns: dict[int, tuple[str, str, str, bool, str]] = {}
    for anchor, seq, _d, eid, at, eligible, role in search.neighbours_of(
        stage.conn, f.persona, f.project, strong, stage.plan.weights.neighbour_window
    ):
        turns[seq] = (eid, at, role, eligible, session_of[anchor])
    for seq, (eid, session, role, at, _text) in search.raw_turns(stage.conn, [q for _, q in strong]).items():
        turns.setdefault(seq, (eid, at, role, False, session))
    events = [
        seq
        for seq, (_, at, _, eligible, _) in turns.items()
        if eligible and stage.include_raw and stage._raw_allowed(at) and f"e:{seq}" not in stage.found
    ]
    if events and stage.searched["event"]:
        fresh = [seq for seq in events if f"e:{seq}" not in stage.lexicals]
        body = search.bodies(stage.conn, "event_fts", fresh)
        echoes = stage._echoes({seq: (turns[seq][4], turns[seq][2]) for seq in fresh})
        for seq in fresh:
            _evidence(
                stage,
                f"e:{seq}",
                body.get(seq, ""),
                stage.searched["event"],
                "event",
                echoes.get(seq, frozenset()),
            )
        for seq in events:
            found = stage.lexicals.get(f"e:{seq}")
            if found is not None:
                eid, at, role, _, session = turns[seq]
                stage._event(seq, session, at, role).lexical = found
                stage.read.add(f"e:{seq}")
    if not stage.searched["memory"]:
        return
    rows = [
        r
        for r in search.memories_of_events(
            stage.conn, sorted({t[0] for t in turns.values()}), **stage._memory_filters()
        )
        if f"m:{r['id']}" not in stage.found
    ]
    body = search.bodies(
        stage.conn, "memory_fts", [int(r["pk"]) for r in rows if f"m:{r['id']}" not in stage.lexicals]
    )
    for r in rows:
        key = f"m:{r['id']}"
        if key not in stage.lexicals:
            _evidence(stage, key, body.get(int(r["pk"]), ""), stage.searched["memory"], "memory")
        found = stage.lexicals[key]
        if found is not None:
            item = stage._memory(
                r["id"], r["basis"], r["confidence"], r["valid_at"], r["seq"], r["session_id"]
            )
            item.lexical = found
            stage.read.add(key)
