"""SQL for the context a hook hands its host at session start (:mod:`yiji.service.host_pack`): reads
only, as plain values (no pydantic model is built on this path), each one bounded index seek.

``since`` narrows every read to what a scope gained after a session's last capture
(:func:`session_mark`): events by ``seq``, memories and checkpoints by ``created_at``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from yiji.db import Connection
from yiji.domain.host_pack import PackCheckpoint, PackMemory, PackPersona, PackTurn
from yiji.timeutil import from_db

__all__ = [
    "SessionMark",
    "latest_persona",
    "lasting_memories",
    "proposals_waiting",
    "recent_turns",
    "reported_checkpoint",
    "session_mark",
]


@dataclass(frozen=True)
class SessionMark:
    """A session's last capture: its newest event's ``seq`` and when that event was stored."""

    seq: int
    ingested_at: str


def session_mark(conn: Connection, persona_id: str, project_id: str, session_id: str) -> SessionMark | None:
    """The session's last captured event (``None`` when it has none), by the session index."""
    row = conn.execute(
        "SELECT seq, ingested_at FROM events INDEXED BY events_session "
        "WHERE persona_id = ? AND project_id = ? AND session_id = ? ORDER BY seq DESC LIMIT 1",
        (persona_id, project_id, session_id),
    ).fetchone()
    return None if row is None else SessionMark(int(row[0]), str(row[1]))


def latest_persona(conn: Connection, persona_id: str) -> PackPersona | None:
    row = conn.execute(
        "SELECT version, text FROM personas WHERE persona_id = ? ORDER BY version DESC LIMIT 1", (persona_id,)
    ).fetchone()
    return None if row is None else PackPersona(persona_id, int(row[0]), str(row[1]))


def lasting_memories(  # noqa: PLR0913 - the scope, the kinds, the time and the bounds, all named
    conn: Connection,
    persona_id: str,
    project_id: str,
    kinds: Sequence[str],
    at: str,
    limit: int,
    since: SessionMark | None = None,
) -> list[PackMemory]:
    """Up to ``limit`` accepted, unrevoked memories of ``kinds`` valid at ``at``, newest ``valid_at``
    first (one bounded backward scan of the scope-kind index per kind); with ``since``, only those
    stored after it."""
    newer = " AND created_at > ?" if since is not None else ""
    found: list[tuple[str, int, PackMemory]] = []
    for kind in kinds:
        params: list[object] = [persona_id, project_id, kind, at, at]
        if since is not None:
            params.append(since.ingested_at)
        rows = conn.execute(
            "SELECT pk, id, kind, basis, text, quote, valid_at FROM memories "
            "WHERE persona_id = ? AND project_id = ? AND kind = ? AND revoked_at IS NULL "
            "AND review_state = 'accepted' AND valid_at <= ? AND (invalid_at IS NULL OR invalid_at > ?)"
            f"{newer} ORDER BY valid_at DESC, pk DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
        found += [
            (
                str(r["valid_at"]),
                int(r["pk"]),
                PackMemory(r["id"], r["kind"], r["basis"], r["text"], r["quote"], from_db(r["valid_at"])),
            )
            for r in rows
        ]
    found.sort(key=lambda x: (x[0], x[1]), reverse=True)
    return [m for _, _, m in found[:limit]]


def reported_checkpoint(
    conn: Connection,
    persona_id: str,
    project_id: str,
    capture_goals: Sequence[str],
    since: SessionMark | None = None,
) -> PackCheckpoint | None:
    """The scope's newest valid checkpoint a host reported (the records captures leave, whose goals are
    ``capture_goals``, are not task state); with ``since``, only one saved after it."""
    marks = ", ".join("?" for _ in capture_goals) or "NULL"
    newer = " AND created_at > ?" if since is not None else ""
    params: list[object] = [persona_id, project_id, *capture_goals]
    if since is not None:
        params.append(since.ingested_at)
    row = conn.execute(
        "SELECT id, session_id, goal, completed, pending, constraints, next_action, created_at FROM checkpoints "
        f"WHERE persona_id = ? AND project_id = ? AND invalidated_at IS NULL AND goal NOT IN ({marks}){newer} "
        "ORDER BY created_at DESC, rowid DESC LIMIT 1",
        params,
    ).fetchone()
    if row is None:
        return None
    return PackCheckpoint(
        checkpoint_id=row["id"],
        session_id=row["session_id"],
        saved_at=from_db(row["created_at"]),
        goal=row["goal"],
        completed=tuple(json.loads(row["completed"])),
        pending=tuple(json.loads(row["pending"])),
        constraints=tuple(json.loads(row["constraints"])),
        next_action=row["next_action"],
    )


def recent_turns(  # noqa: PLR0913 - the scope, the session left out and the bounds, all named
    conn: Connection,
    persona_id: str,
    project_id: str,
    limit: int,
    *,
    leave_out_session: str | None = None,
    since: SessionMark | None = None,
) -> list[PackTurn]:
    """The scope's latest ``limit`` conversation turns, newest first. Left out: amended turns, turns a
    remembered memory already quotes (the pack shows the memory), the turns of ``leave_out_session`` and
    (with ``since``) every turn stored up to it."""
    where = (
        "persona_id = ? AND project_id = ? AND category = 'conversation' AND amended = 0 AND NOT EXISTS "
        "(SELECT 1 FROM memories AS m WHERE m.event_id = events.id AND m.review_state = 'accepted' "
        "AND m.revoked_at IS NULL)"
    )
    params: list[object] = [persona_id, project_id]
    if leave_out_session is not None:
        where += " AND session_id <> ?"
        params.append(leave_out_session)
    if since is not None:
        where += " AND seq > ?"
        params.append(since.seq)
    rows = conn.execute(
        f"SELECT id, role, occurred_at, text FROM events INDEXED BY events_scope_time WHERE {where} "
        "ORDER BY occurred_at DESC, seq DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [PackTurn(r["id"], r["role"], from_db(r["occurred_at"]), r["text"]) for r in rows]


def proposals_waiting(conn: Connection, persona_id: str, project_id: str) -> int:
    """How many proposed memories of the scope wait for a person (the partial index answers it)."""
    row = conn.execute(
        "SELECT count(*) FROM memories WHERE persona_id = ? AND project_id = ? AND review_state = 'proposed'",
        (persona_id, project_id),
    ).fetchone()
    return int(row[0])
