"""A database that exercises every authoritative table and state, for archive and backup tests.

Memories, relations, checkpoints and cursors are written with SQL because their use cases are not part of
this test's subject; every row obeys the rules an archive is checked against.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from yiji.models import EventIn
from yiji.models.memories import DeriveRequest, MemoryIn
from yiji.schema import AUTHORITATIVE_TABLES
from yiji.service import MemoryService
from yiji.service.deletions import remember_deletion
from yiji.store.events import raise_seq_floor
from yiji.timeutil import FixedClock

from .conftest import T0
from .factory import make_service

EVENT_TEXTS = {
    "e1": "我住在杭州，每天早上沿着西湖跑步。",
    "e2": "听起来很惬意！西湖边的早晨一定很美。",
    "e3": "I moved to Shanghai last week for a new job.",
    "e4": "Reference: the West Lake is 6.4 km² in area.",
    "e5": "更正：我其实住在苏州，不是杭州。",
    "e6": "Let us plan the trip to Kyoto together.",
    "e7": "this event is deleted before the export",
}
SECRET_WORDS = ("杭州", "西湖", "Shanghai", "苏州", "Kyoto", "惬意")
AUTHORITATIVE = AUTHORITATIVE_TABLES


def open_service(path: Path) -> MemoryService:
    return make_service(path, clock=FixedClock(T0))


def _memory(conn: sqlite3.Connection, **row: Any) -> None:
    base: dict[str, Any] = {
        "persona_id": "default",
        "project_id": "default",
        "subject": None,
        "fact_key": None,
        "invalid_at": None,
        "revoked_at": None,
        "revoked_reason": None,
        "valence": None,
        "arousal": None,
        "gist": None,
        "origin": "extraction",
        "created_at": "2026-06-01T12:00:01.000000Z",
        "confidence": 0.9,
    }
    base.update(row)
    names = ", ".join(base)
    conn.execute(
        f"INSERT INTO memories ({names}) VALUES ({', '.join('?' * len(base))})", tuple(base.values())
    )


def populate(service: MemoryService) -> dict[str, int]:
    """Fill every table; return the seq of each event id."""
    service.persona_set("Version two of the default persona.")
    service.persona_set("Aria, a travel companion.", persona="aria")
    service.persona_rollback(1, persona="aria")
    events = [
        EventIn(
            id="e1",
            session="s1",
            role="user",
            text=EVENT_TEXTS["e1"],
            occurred_at="2026-03-01T09:00:00+08:00",
            cues=[
                {"type": "photo", "identifier": "IMG_0001", "label": "西湖晨跑"},
                {"type": "text", "identifier": "run"},
            ],
        ),
        EventIn(
            id="e2",
            session="s1",
            role="assistant",
            text=EVENT_TEXTS["e2"],
            occurred_at="2026-03-01T01:00:30Z",
        ),
        EventIn(
            id="e3", session="s1", role="user", text=EVENT_TEXTS["e3"], occurred_at="2026-06-15T12:10:00Z"
        ),
        EventIn(
            id="e4",
            session="s1",
            role="tool",
            category="reference",
            source="wiki",
            text=EVENT_TEXTS["e4"],
            occurred_at="2026-06-15T12:11:00Z",
        ),
        EventIn(
            id="e5",
            session="s2",
            role="user",
            category="correction",
            text=EVENT_TEXTS["e5"],
            occurred_at="2026-06-16T08:00:00Z",
        ),
        EventIn(
            id="e6",
            persona="aria",
            project="travel",
            session="t1",
            role="user",
            text=EVENT_TEXTS["e6"],
            occurred_at="2026-06-17T08:00:00Z",
        ),
        EventIn(
            id="e7", session="s3", role="user", text=EVENT_TEXTS["e7"], occurred_at="2026-06-18T08:00:00Z"
        ),
    ]
    seqs = {r.event.id: r.event.seq for r in service.event_submit_many(events)}
    with service.db.write() as conn:
        conn.execute("UPDATE events SET amended = 1, extraction_state = 'done' WHERE id = 'e1'")
        conn.execute(
            "UPDATE events SET extraction_state = 'pending', extraction_attempts = 2, "
            "extraction_error = 'provider_transient: timeout' WHERE id = 'e3'"
        )
        # m1: an expired and then revoked fact (corrected by m5); m2: its current successor.
        _memory(
            conn,
            id="m1",
            event_id="e1",
            kind="fact",
            basis="user_statement",
            text="The user lives in Hangzhou.",
            quote="我住在杭州",
            subject="user",
            fact_key="home.city",
            valid_at="2026-03-01T01:00:00.000000Z",
            invalid_at="2026-06-15T12:10:00.000000Z",
            revoked_at="2026-06-16T08:00:01.000000Z",
            revoked_reason="corrected",
        )
        _memory(
            conn,
            id="m2",
            event_id="e3",
            kind="fact",
            basis="user_statement",
            text="The user lives in Shanghai.",
            quote="I moved to Shanghai",
            subject="user",
            fact_key="home.city",
            valid_at="2026-06-08T00:00:00.000000Z",
            confidence=0.75,
        )
        _memory(
            conn,
            id="m3",
            event_id="e2",
            kind="emotion",
            basis="assistant_expression",
            text="Delighted by the morning runs.",
            quote="听起来很惬意",
            valid_at="2026-03-01T01:00:30.000000Z",
            valence=0.6,
            arousal=0.4,
        )
        _memory(
            conn,
            id="m4",
            event_id="e1",
            kind="episode",
            basis="user_statement",
            text="The user runs along West Lake every morning.",
            quote="每天早上沿着西湖跑步",
            valid_at="2026-03-01T01:00:00.000000Z",
            gist="西湖晨跑",
        )
        _memory(
            conn,
            id="m5",
            event_id="e5",
            kind="fact",
            basis="user_statement",
            text="The user lives in Suzhou.",
            quote="我其实住在苏州",
            subject="user",
            fact_key="home.city",
            valid_at="2026-03-01T01:00:00.000000Z",
            origin="correction",
            confidence=1.0,
        )
        _memory(
            conn,
            id="m6",
            persona_id="aria",
            project_id="travel",
            event_id="e6",
            kind="agreement",
            basis="inference",
            text="A trip to Kyoto is being planned together.",
            quote="plan the trip to Kyoto",
            valid_at="2026-06-17T08:00:00.000000Z",
            origin="manual",
        )
        conn.execute(
            "INSERT INTO relations VALUES ('m5', 'm1', 'corrects', '2026-06-16T08:00:01.000000Z'), "
            "('m4', 'm2', 'related', '2026-06-16T08:00:02.000000Z')"
        )
        conn.execute(
            "INSERT INTO checkpoints VALUES ('cp1', 'default', 'default', 's1', 'Plan the move', "
            "?, '[\"pack books\"]', '[]', 'call the movers', ?, '2026-06-15T12:12:00.000000Z', NULL, NULL)",
            (json.dumps(["find a flat"]), seqs["e3"]),
        )
        conn.execute(
            "INSERT INTO checkpoints VALUES ('cp2', 'default', 'default', 's1', 'Old goal', '[]', '[]', "
            "'[]', NULL, ?, '2026-06-01T12:00:00.000000Z', '2026-06-16T08:00:01.000000Z', 'correction')",
            (seqs["e1"],),
        )
        conn.execute(
            "INSERT INTO checkpoints VALUES ('cp3', 'aria', 'travel', 't1', 'Trip', '[]', '[]', "
            "'[\"budget\"]', NULL, NULL, '2026-06-17T08:00:01.000000Z', NULL, NULL)"
        )
        conn.execute(
            "INSERT INTO capture_cursors VALUES ('harness-1', 'default', 'default', 's1', '42', "
            "'2026-06-15T12:12:00.000000Z')"
        )
        # Caches that an archive must leave out.
        conn.execute(
            "INSERT INTO embeddings (memory_id, fingerprint, dim, vector, created_at) VALUES "
            "('m2', 'fp', 2, X'0000803F00000000', '2026-06-16T00:00:00.000000Z')"
        )
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('cache-marker', 'not archived')")
        conn.execute("INSERT INTO memory_fts (rowid, body) VALUES (999999, '杭州')")
    # A memory derived through the service, related to an earlier one.
    derived = service.memory_derive(
        DeriveRequest(
            event_id="e2",
            memories=[
                MemoryIn(
                    text="The assistant finds the lake mornings beautiful.",
                    quote="西湖边的早晨一定很美",
                    kind="observation",
                    basis="assistant_expression",
                    related=["m4"],
                )
            ],
        )
    )
    assert len(derived.memory_ids) == 1
    with service.db.write() as conn:
        _memory(
            conn,
            id="m7",
            event_id="e7",
            kind="episode",
            basis="user_statement",
            text="deleted",
            quote="deleted",
            valid_at="2026-06-18T08:00:00.000000Z",
        )
        # A deleted tail event and memory: their numbers must never be reused after a restore. The
        # event's seq is kept from reuse as yiji's permanent deletion does (memories.pk by AUTOINCREMENT),
        # and the deletion ledger remembers it (and a forgotten identifier) as a deletion does.
        e7 = conn.execute("SELECT persona_id, project_id FROM events WHERE id = 'e7'").fetchone()
        remember_deletion(
            conn, ["e7"], persona=e7[0], project=e7[1], matching="A-7", at="2026-06-18T09:00:00.000000Z"
        )
        conn.execute("DELETE FROM memories WHERE id = 'm7'")
        conn.execute("DELETE FROM events WHERE id = 'e7'")
        raise_seq_floor(conn, seqs["e7"])
    return seqs


def table_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in AUTHORITATIVE}
    finally:
        conn.close()


def is_empty(path: Path) -> bool:
    return all(not rows for rows in table_rows(path).values())


def without_exported_at(text: str) -> str:
    """The archive text with its one ``exported_at`` value blanked (it is on the first line)."""
    first, _, rest = text.partition("\n")
    return re.sub(r'"exported_at": "[^"]*"', '"exported_at": ""', first, count=1) + "\n" + rest
