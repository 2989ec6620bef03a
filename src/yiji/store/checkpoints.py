"""SQL for task checkpoints. Rows are appended, never edited, except for invalidation (a correction or
deletion, in :mod:`yiji.store.lifecycle`).

Step lists are stored as JSON arrays of strings. "Latest" means the newest ``created_at``, and among equal
times the row inserted last (``rowid``), so two saves within one clock tick still order deterministically.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from yiji.db import Connection, Row
from yiji.timeutil import from_db

if TYPE_CHECKING:  # a pydantic model, imported where one is built: appending needs none
    from yiji.models.checkpoints import CheckpointRecord

__all__ = ["append", "get", "history", "latest"]

_COLUMNS = (
    "id, persona_id, project_id, session_id, goal, completed, pending, constraints, next_action, "
    "covered_seq, created_at, invalidated_at, invalid_reason"
)
_NEWEST_FIRST = "ORDER BY created_at DESC, rowid DESC"


def _record(row: Row) -> CheckpointRecord:
    from yiji.models.checkpoints import CheckpointRecord

    return CheckpointRecord(
        id=row["id"],
        persona=row["persona_id"],
        project=row["project_id"],
        session=row["session_id"],
        goal=row["goal"],
        completed=json.loads(row["completed"]),
        pending=json.loads(row["pending"]),
        constraints=json.loads(row["constraints"]),
        next_action=row["next_action"],
        covered_seq=row["covered_seq"],
        created_at=from_db(row["created_at"]),
        invalidated_at=from_db(row["invalidated_at"]) if row["invalidated_at"] else None,
        invalid_reason=row["invalid_reason"],
    )


def get(conn: Connection, checkpoint_id: str) -> CheckpointRecord | None:
    """One checkpoint as stored, by id."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM checkpoints WHERE id = ?", (checkpoint_id,)).fetchone()
    return None if row is None else _record(row)


def append(
    conn: Connection,
    *,
    checkpoint_id: str,
    persona_id: str,
    project_id: str,
    session_id: str,
    goal: str,
    completed: list[str],
    pending: list[str],
    constraints: list[str],
    next_action: str | None,
    covered_seq: int | None,
    created_at: str,
) -> None:
    """Append one checkpoint."""
    conn.execute(
        f"INSERT INTO checkpoints ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
        (
            checkpoint_id,
            persona_id,
            project_id,
            session_id,
            goal,
            json.dumps(completed, ensure_ascii=False),
            json.dumps(pending, ensure_ascii=False),
            json.dumps(constraints, ensure_ascii=False),
            next_action,
            covered_seq,
            created_at,
        ),
    )


def latest(conn: Connection, persona_id: str, project_id: str, session_id: str) -> CheckpointRecord | None:
    """The newest checkpoint of a session, valid or not."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE persona_id = ? AND project_id = ? AND session_id = ? "
        f"{_NEWEST_FIRST} LIMIT 1",
        (persona_id, project_id, session_id),
    ).fetchone()
    return _record(row) if row else None


def history(
    conn: Connection, persona_id: str, project_id: str, session_id: str, limit: int
) -> list[CheckpointRecord]:
    """Checkpoints of a session, newest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE persona_id = ? AND project_id = ? AND session_id = ? "
        f"{_NEWEST_FIRST} LIMIT ?",
        (persona_id, project_id, session_id, limit),
    ).fetchall()
    return [_record(r) for r in rows]
