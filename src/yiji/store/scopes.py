"""SQL for ``yiji scopes``: every scope (persona and project) the database holds something in, with its
counts.

A scope holds something when an event, a memory, a checkpoint or a capture cursor names it. Counts come
from the authoritative tables: events and their sessions, memories that stand (accepted and not revoked)
memories waiting for review, and events that wait for extraction. Each table is grouped once by scope, so the cost is one pass over each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from yiji.db import Connection

__all__ = ["ScopeRow", "count_scopes", "list_scopes"]


class ScopeRow(NamedTuple):
    """One scope: its events and sessions, its memories that stand (accepted, not revoked), its memories
    waiting for review, its checkpoints, and its newest event's occurrence time."""

    persona: str
    project: str
    events: int
    sessions: int
    memories: int
    proposed: int
    checkpoints: int
    newest_event_at: str | None
    """The newest event's occurrence time as stored (UTC text), ``None`` when the scope holds no event."""
    to_extract: int = 0
    """Conversation events of the given roles without memories yet (extraction state ``none`` or
    ``pending``): what ``yiji extraction run`` would send."""


_SCOPES = (
    "SELECT persona_id, project_id FROM events "
    "UNION SELECT persona_id, project_id FROM memories "
    "UNION SELECT persona_id, project_id FROM checkpoints "
    "UNION SELECT persona_id, project_id FROM capture_cursors"
)


def _filter(persona: str | None, project: str | None) -> tuple[str, list[str]]:
    where, params = [], []
    for column, value in (("persona_id", persona), ("project_id", project)):
        if value is not None:
            where.append(f"s.{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def list_scopes(
    conn: Connection,
    *,
    persona: str | None,
    project: str | None,
    limit: int,
    offset: int,
    roles: Sequence[str] = ("user",),
) -> list[ScopeRow]:
    """A page of the scopes (only ``persona``'s, ``project``'s when given), the most recently active
    first (by their newest event; scopes without events last), ties by persona and project; events to
    extract count the conversation turns of ``roles``."""
    where, params = _filter(persona, project)
    marks = ", ".join("?" * len(roles)) or "NULL"
    rows = conn.execute(
        "WITH e AS (SELECT persona_id, project_id, count(*) AS n, max(occurred_at) AS newest, "
        "                  sum(category = 'conversation' AND extraction_state IN ('none', 'pending') "
        f"                     AND role IN ({marks})) AS waiting "
        "           FROM events GROUP BY persona_id, project_id), "
        "     s_ AS (SELECT persona_id, project_id, count(*) AS n "
        "            FROM (SELECT DISTINCT persona_id, project_id, session_id FROM events) "
        "            GROUP BY persona_id, project_id), "
        "     m AS (SELECT persona_id, project_id, "
        "                  sum(review_state = 'accepted' AND revoked_at IS NULL) AS standing, "
        "                  sum(review_state = 'proposed') AS proposed "
        "           FROM memories GROUP BY persona_id, project_id), "
        "     c AS (SELECT persona_id, project_id, count(*) AS n FROM checkpoints "
        "           GROUP BY persona_id, project_id) "
        "SELECT s.persona_id, s.project_id, coalesce(e.n, 0), coalesce(s_.n, 0), coalesce(m.standing, 0), "
        "       coalesce(m.proposed, 0), coalesce(c.n, 0), e.newest, coalesce(e.waiting, 0) "
        f"FROM ({_SCOPES}) AS s "
        "LEFT JOIN e ON e.persona_id = s.persona_id AND e.project_id = s.project_id "
        "LEFT JOIN s_ ON s_.persona_id = s.persona_id AND s_.project_id = s.project_id "
        "LEFT JOIN m ON m.persona_id = s.persona_id AND m.project_id = s.project_id "
        "LEFT JOIN c ON c.persona_id = s.persona_id AND c.project_id = s.project_id"
        f"{where} "
        "ORDER BY e.newest IS NULL, e.newest DESC, s.persona_id, s.project_id LIMIT ? OFFSET ?",
        [*roles, *params, limit, offset],
    ).fetchall()
    return [
        ScopeRow(str(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]), int(r[6]), r[7], int(r[8]))
        for r in rows
    ]


def count_scopes(conn: Connection, *, persona: str | None, project: str | None) -> int:
    where, params = _filter(persona, project)
    return int(conn.execute(f"SELECT count(*) FROM ({_SCOPES}) AS s{where}", params).fetchone()[0])
