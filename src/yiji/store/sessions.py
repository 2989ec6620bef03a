"""SQL that reads a recall's candidates by session: the documents of whole sessions, and memories' index
bodies by id (:mod:`yiji.service.recall_reading`). Bounded by the sessions and ids asked for."""

from __future__ import annotations

from collections.abc import Sequence

from yiji.db import Connection
from yiji.store._sql import chunks, marks

__all__ = ["memory_bodies", "session_documents"]

_TABLES = ("memory_fts", "event_fts")


def session_documents(
    conn: Connection, table: str, persona_id: str, project_id: str, sessions: Sequence[str]
) -> list[int]:
    """The documents of ``table`` whose (source) event is in one of the scope's ``sessions``: event seqs
    (``event_fts``; those not indexed are among them) or memory pks (``memory_fts``)."""
    if table not in _TABLES:
        raise ValueError("unknown index table")
    select = (
        "SELECT e.seq FROM events e"
        if table == "event_fts"
        else "SELECT m.pk FROM events e CROSS JOIN memories m ON m.event_id = e.id"
    )
    out: list[int] = []
    for chunk in chunks(list(sessions)):
        out.extend(
            int(r[0])
            for r in conn.execute(
                f"{select} WHERE e.persona_id = ? AND e.project_id = ? AND e.session_id IN ({marks(chunk)})",
                [persona_id, project_id, *chunk],
            )
        )
    return sorted(out)


def memory_bodies(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """The indexed bodies of these memories, by memory id (memories not indexed are absent)."""
    out: dict[str, str] = {}
    for chunk in chunks(list(dict.fromkeys(ids))):
        out.update(
            (str(r[0]), str(r[1]))
            for r in conn.execute(
                "SELECT m.id, f.body FROM memories m CROSS JOIN memory_fts f ON f.rowid = m.pk "
                f"WHERE m.id IN ({marks(chunk)})",
                chunk,
            )
        )
    return out
