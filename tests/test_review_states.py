"""The review states yiji writes: one rule table, applied by archive import and by ``doctor``.

Rows are written with SQL (states yiji itself never writes cannot be made through its use cases); the
archive is exported, edited and imported with the CLI as a user would.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.review import STATE_RULES, state_problems
from yiji.models import EventIn

from .factory import make_service
from .inprocess import run_cli

AT = "2026-06-01T12:00:00.000000Z"
FINE: dict[str, Any] = {
    "review_state": "proposed",
    "origin": "extraction",
    "reviewed_at": None,
    "reviewed_by": None,
    "review_note": None,
    "invalid_at": None,
    "revoked_at": None,
}
REVIEWED = {"reviewed_at": AT, "reviewed_by": "ann"}

# (what the row holds beyond FINE, the (column, rule) pairs it breaks)
CASES: list[tuple[dict[str, Any], list[tuple[str, str]]]] = [
    ({}, []),
    ({"review_state": "accepted"}, []),
    ({"review_state": "accepted", "origin": "manual", "invalid_at": AT, "revoked_at": AT}, []),
    ({"review_state": "accepted", **REVIEWED, "review_note": "ok"}, []),
    ({"review_state": "rejected", **REVIEWED}, []),
    ({"review_state": "rejected", **REVIEWED, "review_note": "no"}, []),
    ({"reviewed_at": AT}, [("reviewed_at", "proposed_never_reviewed")]),
    ({"reviewed_by": "ann"}, [("reviewed_by", "proposed_never_reviewed")]),
    ({"review_note": "hm"}, [("review_note", "proposed_never_reviewed")]),
    ({"invalid_at": AT}, [("invalid_at", "proposed_never_closed")]),
    ({"revoked_at": AT}, [("revoked_at", "proposed_never_revoked")]),
    ({"origin": "manual"}, []),  # memory derive --propose
    ({"origin": "import"}, [("origin", "origin_never_proposed")]),
    ({"origin": "correction"}, [("origin", "origin_never_proposed")]),
    ({"review_state": "rejected"}, [("reviewed_at", "rejected_always_reviewed")]),
    ({"review_state": "rejected", "reviewed_by": "ann"}, [("reviewed_at", "rejected_always_reviewed")]),
    ({"review_state": "rejected", **REVIEWED, "invalid_at": AT}, [("invalid_at", "rejected_never_closed")]),
    ({"review_state": "rejected", **REVIEWED, "revoked_at": AT}, [("revoked_at", "rejected_never_revoked")]),
    ({"review_state": "rejected", **REVIEWED, "origin": "import"}, [("origin", "origin_never_rejected")]),
    (
        {"review_state": "accepted", "reviewed_at": AT},
        [("reviewed_by", "reviewed_at_and_reviewed_by_together")],
    ),
    (
        {"review_state": "accepted", "reviewed_by": "ann"},
        [("reviewed_at", "reviewed_at_and_reviewed_by_together")],
    ),
    ({"review_state": "accepted", "review_note": "hm"}, [("review_note", "review_note_only_with_a_review")]),
    (
        {"review_state": "accepted", **REVIEWED, "origin": "correction"},
        [("origin", "reviewed_only_if_proposed")],
    ),
]


@pytest.mark.parametrize(("changes", "expected"), CASES)
def test_the_review_state_rule_table(changes: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert state_problems({**FINE, **changes}) == expected


def test_every_review_state_of_the_store_has_a_row() -> None:
    from yiji.store.memories import REVIEW_STATES

    assert set(STATE_RULES) == set(REVIEW_STATES)


def _database(path: Path) -> None:
    """One event with a waiting proposal, an accepted and a rejected memory of it (rows yiji writes)."""
    service = make_service(path)
    service.event_submit(EventIn(id="e1", session="s", role="user", text="I live in Hangzhou. I like tea."))
    service.close()
    rows = [
        ("mem_p", "User lives in Hangzhou", "I live in Hangzhou", "proposed", None, None),
        ("mem_a", "User likes tea", "I like tea", "accepted", None, None),
        ("mem_r", "User likes Hangzhou", "I live in Hangzhou", "rejected", AT, "ann"),
    ]
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, valid_at, origin, created_at, review_state, reviewed_at, reviewed_by) "
            "VALUES (?, 'default', 'default', 'e1', 'preference', 'user_statement', ?, ?, 0.9, "
            f"'{AT}', 'extraction', '{AT}', ?, ?, ?)",
            rows,
        )
    conn.close()


BROKEN = [
    ("mem_p", {"reviewed_at": AT, "reviewed_by": "ann"}, "reviewed_at", "proposed_never_reviewed"),
    ("mem_r", {"reviewed_at": None}, "reviewed_at", "rejected_always_reviewed"),
    ("mem_p", {"invalid_at": AT}, "invalid_at", "proposed_never_closed"),
    ("mem_p", {"revoked_at": AT, "revoked_reason": "correction"}, "revoked_at", "proposed_never_revoked"),
    ("mem_p", {"origin": "correction"}, "origin", "origin_never_proposed"),
    ("mem_p", {"origin": "import"}, "origin", "origin_never_proposed"),
]


@pytest.mark.parametrize(("memory_id", "changes", "column", "rule"), BROKEN)
def test_a_contradictory_review_state_is_refused_by_import_and_named_by_doctor(
    tmp_path: Path, memory_id: str, changes: dict[str, Any], column: str, rule: str
) -> None:
    source = tmp_path / "source.db"
    _database(source)
    archive = tmp_path / "out.jsonl"
    assert run_cli("--db", str(source), "export", str(archive)).code == 0
    lines = archive.read_text("utf-8").splitlines()
    index = -1
    for n, line in enumerate(lines):
        record = json.loads(line)
        if record.get("table") == "memories":
            index += 1
            if record["row"]["id"] == memory_id:
                record["row"].update(changes)
                lines[n] = json.dumps(record, ensure_ascii=False)
                break
    archive.write_text("\n".join(lines) + "\n", "utf-8")
    target = tmp_path / "target.db"
    refused = run_cli("--db", str(target), "import", str(archive))
    assert refused.code == 2, refused.err
    assert f"memories[{index}].{column}: {rule}" in refused.err
    assert "Hangzhou" not in refused.err and AT not in refused.err  # no stored value is echoed

    # the same row written into a database: doctor names it
    db = source
    assert json.loads(run_cli("--db", str(db), "doctor", "--json").out)["ok"] is True
    with sqlite3.connect(db) as conn:
        assignments = ", ".join(f"{k} = ?" for k in changes)
        conn.execute(f"UPDATE memories SET {assignments} WHERE id = ?", (*changes.values(), memory_id))
    conn.close()
    report = json.loads(run_cli("--db", str(db), "doctor", "--json").out)
    assert report["ok"] is False
    assert any(p.startswith(f"memory {memory_id}.{column}: {rule}") for p in report["problems"])


def test_accepting_a_revoked_proposal_is_a_conflict_not_an_internal_error(tmp_path: Path) -> None:
    db = tmp_path / "y.db"
    _database(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE memories SET revoked_at = ?, revoked_reason = 'x' WHERE id = 'mem_p'", (AT,))
    conn.close()
    accepted = run_cli("--db", str(db), "review", "accept", "mem_p")
    assert accepted.code == 3, accepted.err
    assert "internal error" not in accepted.err and "doctor" in accepted.err
    with sqlite3.connect(db) as conn:
        state = conn.execute("SELECT review_state, reviewed_at FROM memories WHERE id = 'mem_p'").fetchone()
    conn.close()
    assert state == ("proposed", None)
