"""Research harness for yiji's raw-event recall recipe on LoCoMo and MADial-Bench.

A reference for the store: it writes events into a real yiji database (schema v3, temp dir), fills
``event_fts`` with :func:`yiji.domain.segment.document_body`, and recalls with the SQL shapes below
and :func:`yiji.domain.ranking.rank`. Nothing here is imported by yiji; the data is read from the
paths given.

Recipe (per query, scoped to persona + project)::

    1. q = match_query(text)                       -- quoted literals OR-ed; None -> no result
    2. SELECT e.seq, e.session_id, e.occurred_at, bm25(event_fts) AS r
         FROM event_fts JOIN events e ON e.seq = event_fts.rowid
        WHERE event_fts MATCH :q AND e.persona_id = :p AND e.project_id = :j
        ORDER BY r LIMIT 200                         -- lexical candidates
    3. for the top 20 candidates, add their session neighbours (window 2) as candidates;
       for every candidate, look up its neighbours (window 2) through events_session:
         SELECT seq FROM events WHERE persona_id=? AND project_id=? AND session_id=? AND seq < ?
          ORDER BY seq DESC LIMIT 2                -- and seq > ? ORDER BY seq LIMIT 2
    4. strengths = lexical_strengths(bm25); neighbour = neighbour_credit(...);
       session = best strength in the candidate's session; age = now - occurred_at
    5. rank(candidates) with DEFAULT_WEIGHTS

Usage::

    uv run python scripts/recall_research.py --locomo /path/locomo10.json --madial /path/madial \
        [--errata /path/locomo_audit_errors.json] [--table]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from yiji.db import Database
from yiji.domain import ranking, segment
from yiji.timeutil import from_db, to_db
from yiji_bench.datasets import (
    LocomoConversation,
    MadialSet,
    baseline_turn_text,
    load_locomo,
    load_madial,
)
from yiji_bench.metrics import (
    MADIAL_COLUMNS,
    LocomoReport,
    approx_tokens,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
)

CANDIDATES = 200
EXPAND_TOP = 20


@dataclass(frozen=True)
class Recipe:
    name: str
    weights: ranking.Weights
    expand_top: int = EXPAND_TOP
    limit: int = CANDIDATES


PLAIN = Recipe(
    "plain bm25",
    replace(ranking.DEFAULT_WEIGHTS, neighbour=0.0, session=0.0, freshness=0.0),
    expand_top=0,
)
RECIPE = Recipe("yiji recipe", ranking.DEFAULT_WEIGHTS)


@dataclass(frozen=True)
class Doc:
    id: str
    project: str
    session: str
    role: str
    text: str
    labels: tuple[str, ...]
    occurred_at: datetime


def build(path: Path, persona: str, docs: Sequence[Doc]) -> Database:
    db = Database(path, synchronous="OFF")
    now = to_db(max(d.occurred_at for d in docs))
    with db.write() as conn:
        for d in docs:
            cur = conn.execute(
                "INSERT INTO events (id, persona_id, project_id, session_id, role, source,"
                " category, text, occurred_at, ingested_at)"
                " VALUES (?, ?, ?, ?, ?, 'bench', 'conversation', ?, ?, ?)",
                (d.id, persona, d.project, d.session, d.role, d.text, to_db(d.occurred_at), now),
            )
            body = segment.document_body(" ".join((d.text, *d.labels)))
            conn.execute("INSERT INTO event_fts (rowid, body) VALUES (?, ?)", (cur.lastrowid, body))
    return db


def _neighbours(
    conn: sqlite3.Connection, persona: str, project: str, *, session: str, seq: int, window: int
) -> Iterator[tuple[int, int, str]]:
    """(seq, distance, occurred_at) of up to ``window`` turns each side in the same session."""
    scope = (persona, project, session, seq, window)
    before = conn.execute(
        "SELECT seq, occurred_at FROM events WHERE persona_id = ? AND project_id = ?"
        " AND session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
        scope,
    ).fetchall()
    after = conn.execute(
        "SELECT seq, occurred_at FROM events WHERE persona_id = ? AND project_id = ?"
        " AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        scope,
    ).fetchall()
    for distance, (n, at) in enumerate(before, 1):
        yield n, distance, at
    for distance, (n, at) in enumerate(after, 1):
        yield n, distance, at


def recall(
    conn: sqlite3.Connection, persona: str, project: str, *, text: str, now: datetime, r: Recipe
) -> list[tuple[int, ranking.Scored]]:
    query = segment.match_query(text)
    if query is None:
        return []
    rows = conn.execute(
        "SELECT e.seq, e.session_id, e.occurred_at, bm25(event_fts) AS r"
        " FROM event_fts JOIN events e ON e.seq = event_fts.rowid"
        " WHERE event_fts MATCH ? AND e.persona_id = ? AND e.project_id = ?"
        " ORDER BY r LIMIT ?",
        (query, persona, project, r.limit),
    ).fetchall()
    strength = ranking.lexical_strengths({seq: bm25 for seq, _, _, bm25 in rows})
    meta = {seq: (session, at) for seq, session, at, _ in rows}
    order = [seq for seq, *_ in rows]
    w = r.weights
    window = w.neighbour_window if (w.neighbour or r.expand_top) else 0
    near: dict[int, list[tuple[int, int]]] = {}

    def lookup(seq: int) -> list[tuple[int, int]]:
        if seq not in near:
            session = meta[seq][0]
            found = list(_neighbours(conn, persona, project, session=session, seq=seq, window=window))
            for n, _, at in found:
                meta.setdefault(n, (session, at))
            near[seq] = [(n, d) for n, d, _ in found]
        return near[seq]

    for seq in order[: r.expand_top]:
        order.extend(n for n, _ in lookup(seq) if n not in strength and n not in order)
    session_best = ranking.session_strengths((meta[s][0], v) for s, v in strength.items())
    candidates = []
    for seq in order:
        credit = 0.0
        if window:
            credit = ranking.neighbour_credit(((d, strength.get(n, 0.0)) for n, d in lookup(seq)), w)
        session, at = meta[seq]
        candidates.append(
            (
                seq,
                ranking.Components(
                    lexical=strength.get(seq, 0.0),
                    neighbour=credit,
                    session=session_best.get(session, 0.0),
                    age_days=(now - from_db(at)).total_seconds() / 86400,
                ),
            )
        )
    return ranking.rank(candidates, w)


def locomo_docs(conversations: Sequence[LocomoConversation]) -> list[Doc]:
    docs = []
    for c in conversations:
        role = {c.speaker_a: "user", c.speaker_b: "assistant"}
        docs.extend(
            Doc(
                id=f"{c.sample_id}:{t.dia_id}",
                project=c.sample_id,
                session=f"session_{t.session}",
                role=role.get(t.speaker, "user"),
                text=t.text,
                # cue labels: the speaker's name (text cue) and the image caption (photo cue);
                # identifiers (image URLs) stay in event_cues, not in the FTS body
                labels=(t.speaker, *t.captions),
                occurred_at=t.occurred_at,
            )
            for t in c.turns
        )
    return docs


def run_locomo(db: Database, conversations: Sequence[LocomoConversation], recipe: Recipe) -> LocomoReport:
    now = max(c.last_time for c in conversations)
    report = LocomoReport()
    with db.read() as conn:
        dia = {seq: id_.split(":", 1)[1] for seq, id_ in conn.execute("SELECT seq, id FROM events")}
        for c in conversations:
            cost = {t.dia_id: approx_tokens(baseline_turn_text(t)) for t in c.turns}
            for q in c.questions:
                found = recall(conn, "locomo", c.sample_id, text=q.question, now=now, r=recipe)
                report.add(q.category, locomo_metrics([dia[s] for s, _ in found], q.evidence, cost))
    return report


def madial_docs(data: MadialSet) -> list[Doc]:
    return [
        Doc(
            id=str(m.id),
            project=f"user-{m.user_id}",
            session=f"memory-{m.id}",
            role="user",
            text=m.event,
            labels=(),
            occurred_at=m.occurred_at,
        )
        for m in data.memories
    ]


def run_madial(db: Database, data: MadialSet, recipe: Recipe) -> dict[str, float]:
    rows = []
    with db.read() as conn:
        ids = {seq: int(id_) for seq, id_ in conn.execute("SELECT seq, id FROM events")}
        for d in data.dialogues:
            found = recall(conn, "madial", f"user-{d.user_id}", text=d.query, now=data.last_time, r=recipe)
            rows.append(madial_metrics([ids[s] for s, _ in found], d.relevant))
    return mean_metrics(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", type=Path, help="locomo10.json")
    ap.add_argument("--errata", type=Path, help="locomo-audit errors.json (optional)")
    ap.add_argument("--madial", type=Path, help="MADial-Bench repository folder")
    ap.add_argument("--table", action="store_true", help="print the full LoCoMo table")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.locomo:
            conversations = load_locomo(a.locomo, a.errata)
            db = build(Path(tmp) / "locomo.db", "locomo", locomo_docs(conversations))
            for recipe in (PLAIN, RECIPE):
                started = time.perf_counter()
                report = run_locomo(db, conversations, recipe)
                o = report.overall()
                print(
                    f"LoCoMo cat 1-4 {recipe.name:<12} n={report.count((1, 2, 3, 4))}"
                    f" recall@5={o['recall@5']:.4f} recall@10={o['recall@10']:.4f}"
                    f" mrr={o['mrr']:.4f} sess_recall@5={o['sess_recall@5']:.4f}"
                    f" recall@2000tok={o['recall@2000tok']:.4f}"
                    f" ({time.perf_counter() - started:.1f}s)"
                )
                if a.table:
                    print(report.table())
            db.close()
        if a.madial:
            for lang in ("zh", "en"):
                data = load_madial(a.madial, lang)
                db = build(Path(tmp) / f"madial-{lang}.db", "madial", madial_docs(data))
                for recipe in (PLAIN, RECIPE):
                    m = run_madial(db, data, recipe)
                    print(
                        f"MADial {lang} {recipe.name:<12} n={len(data.dialogues)} "
                        + " ".join(f"{k}={m[k]:.3f}" for k in MADIAL_COLUMNS)
                    )
                db.close()


if __name__ == "__main__":
    main()
