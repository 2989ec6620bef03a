"""SQL for personas: immutable versions; new versions are appended, none is edited or deleted."""

from __future__ import annotations

from yiji.db import Connection, Row
from yiji.models.personas import PersonaRecord
from yiji.timeutil import from_db

__all__ = ["append_version", "get_latest", "get_version", "history"]


def _record(row: Row) -> PersonaRecord:
    return PersonaRecord(
        persona=row["persona_id"],
        version=row["version"],
        text=row["text"],
        note=row["note"],
        created_at=from_db(row["created_at"]),
    )


def get_latest(conn: Connection, persona_id: str) -> PersonaRecord | None:
    row = conn.execute(
        "SELECT * FROM personas WHERE persona_id = ? ORDER BY version DESC LIMIT 1", (persona_id,)
    ).fetchone()
    return _record(row) if row else None


def get_version(conn: Connection, persona_id: str, version: int) -> PersonaRecord | None:
    row = conn.execute(
        "SELECT * FROM personas WHERE persona_id = ? AND version = ?", (persona_id, version)
    ).fetchone()
    return _record(row) if row else None


def history(conn: Connection, persona_id: str) -> list[PersonaRecord]:
    rows = conn.execute(
        "SELECT * FROM personas WHERE persona_id = ? ORDER BY version", (persona_id,)
    ).fetchall()
    return [_record(r) for r in rows]


def append_version(
    conn: Connection, persona_id: str, text: str, note: str | None, created_at: str
) -> PersonaRecord:
    row = conn.execute(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM personas WHERE persona_id = ?", (persona_id,)
    ).fetchone()
    version = int(row[0])
    conn.execute(
        "INSERT INTO personas (persona_id, version, text, note, created_at) VALUES (?, ?, ?, ?, ?)",
        (persona_id, version, text, note, created_at),
    )
    record = get_version(conn, persona_id, version)
    assert record is not None
    return record
