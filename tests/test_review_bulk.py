"""Bulk review beside other writers: bounded transactions, and a keyed fact placed by its neighbours only.

A real SQLite file; the bulk decision runs as the CLI in its own process while this process writes.
The proposals are inserted with SQL (extraction proposing them is not this test's subject); every row
is one yiji writes: origin ``extraction``, never reviewed, no end of validity.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn
from yiji.timeutil import FixedClock, to_db

from .factory import make_service

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _with_proposals(path: Path, keyed: int, other: int) -> list[str]:
    """A database with ``keyed`` proposals of ``user`` + ``home.city`` (one event each, later ones
    valid later) and ``other`` unkeyed ones; returns the proposal ids, oldest first."""
    service = make_service(path, clock=FixedClock(T0, timedelta(milliseconds=1)))
    count = max(keyed, other)
    events = [
        EventIn(
            id=f"e{i}",
            session="s",
            role="user",
            text=f"I live in city {i}. I run {i} km.",
            occurred_at=to_db(T0 + timedelta(hours=i)),
        )
        for i in range(count)
    ]
    service.event_submit_many(events)
    service.close()
    rows = []
    for i in range(count):
        at = to_db(T0 + timedelta(hours=i))
        made = to_db(T0 + timedelta(days=400, milliseconds=i))
        if i < keyed:
            text, quote = f"User lives in city {i}", f"I live in city {i}"
            rows.append((f"mem_k{i:05d}", f"e{i}", text, quote, "user", "home.city", at, made))
        if i < other:
            text, quote = f"User runs {i} km", f"I run {i} km"
            rows.append((f"mem_o{i:05d}", f"e{i}", text, quote, None, None, at, made))
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, subject, fact_key, valid_at, origin, created_at, review_state) "
            "VALUES (?, 'default', 'default', ?, 'fact', 'user_statement', ?, ?, 0.9, ?, ?, ?, "
            "'extraction', ?, 'proposed')",
            rows,
        )
    conn.close()
    return [r[0] for r in rows]


def _outcome(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT id, review_state, valid_at, invalid_at, revoked_at FROM memories ORDER BY id"
        ).fetchall()
    conn.close()
    return found


def _hold_seen(path: Path, deadline: float) -> bool:
    """Wait until another process holds the write lock (a ``BEGIN IMMEDIATE`` that cannot wait fails)."""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        while time.monotonic() < deadline:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            except sqlite3.OperationalError:
                return True
            time.sleep(0.002)
        return False
    finally:
        conn.close()


def test_bulk_accept_lets_a_waiting_writer_in_and_equals_accepting_one_by_one(tmp_path: Path) -> None:
    bulk_db, single_db = tmp_path / "bulk.db", tmp_path / "single.db"
    ids = _with_proposals(bulk_db, 600, 600)
    assert _with_proposals(single_db, 600, 600) == ids

    bulk = subprocess.Popen(
        [sys.executable, "-m", "yiji", "--db", str(bulk_db), "review", "accept", "--all", "--yes", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _hold_seen(bulk_db, time.monotonic() + 60), "the bulk accept never took the write lock"
        # a writer that waits at most 2 s: far less than the whole bulk decision, more than one batch
        writer = make_service(Database(bulk_db, busy_timeout_ms=2000), Config(db=bulk_db))
        try:
            sent = writer.event_submit(EventIn(id="beside", session="s", role="user", text="I like tea."))
        finally:
            writer.close()
        out, err = bulk.communicate(timeout=120)
    finally:
        if bulk.poll() is None:
            bulk.kill()
            bulk.wait()
    assert bulk.returncode == 0, err
    assert sent.created and sent.event.id == "beside"
    assert json.loads(out)["memory_ids"] == ids

    one_by_one = make_service(single_db)
    try:
        for memory_id in ids:
            one_by_one.memory_review(memory_id, "accept", reviewer="tester")
    finally:
        one_by_one.close()
    outcome = _outcome(bulk_db)
    assert outcome == _outcome(single_db)
    keyed = [row for row in outcome if str(row[0]).startswith("mem_k")]
    assert all(state == "accepted" for _, state, *_ in outcome)
    # each keyed fact ends where the next begins; the newest stays open
    assert [row[3] for row in keyed] == [row[2] for row in keyed[1:]] + [None]
    with sqlite3.connect(bulk_db) as conn:
        stored = conn.execute("SELECT count(*) FROM events WHERE id = 'beside'").fetchone()[0]
    conn.close()
    assert stored == 1


class _Steps:
    """A SQLite progress handler that counts how often it is called."""

    def __init__(self) -> None:
        self.count = 0

    def step(self) -> int:
        self.count += 1
        return 0


def test_accepting_a_keyed_fact_costs_the_same_however_many_facts_its_key_has(tmp_path: Path) -> None:
    """The SQLite work of one accept (virtual machine steps, counted by a progress handler on the
    connection the service uses in this thread) must not grow with the key's history. The median of five
    accepts is compared: FTS5 merges its segments every so many writes, in whichever commit comes then. Both
    archives are past the lexicon's recent documents (a few kilobytes), whose entries cost less to remove."""
    steps = {}
    for size in (400, 2000):
        path = tmp_path / f"k{size}.db"
        ids = _with_proposals(path, size, 0)
        service = make_service(path)
        try:
            with sqlite3.connect(path) as conn:  # the five oldest set aside while the rest are accepted
                conn.executemany(
                    "UPDATE memories SET review_state = 'rejected' WHERE id = ?", [(i,) for i in ids[:5]]
                )
            service.memory_review_all("accept", reviewer="setup")
            with sqlite3.connect(path) as conn:
                conn.executemany(
                    "UPDATE memories SET review_state = 'proposed' WHERE id = ?", [(i,) for i in ids[:5]]
                )
            conn.close()
            counter = _Steps()
            with service.db.read() as conn:  # connections are per thread: the accepts below use it
                conn.set_progress_handler(counter.step, 100)
            each = []
            for n in reversed(range(5)):  # newest first: each is closed by the one after it, accepted
                counter.count = 0
                service.memory_review(ids[n], "accept", reviewer="tester")
                each.append(counter.count)
                assert service.memory_get(ids[n]).invalid_at == service.memory_get(ids[n + 1]).valid_at
            steps[size] = sorted(each)[2]
        finally:
            service.close()
    # reading every fact of the key made the 2,000-fact accept about 40 times a 50-fact one
    assert steps[2000] < 2 * steps[400]
