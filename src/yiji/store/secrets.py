"""SQL of the secret scan and of redaction in place (:mod:`yiji.service.redaction`)."""

from __future__ import annotations

from collections.abc import Iterator

from yiji.db import Connection

__all__ = [
    "drop_event_vector",
    "drop_memory_vector",
    "event_texts",
    "memory_texts",
    "optimize_indexes",
    "set_event_text",
    "set_memory_texts",
]


def event_texts(conn: Connection) -> Iterator[tuple[int, str, str, str]]:
    """``(seq, id, category, text)`` of every event, in stored order (streamed)."""
    for row in conn.execute("SELECT seq, id, category, text FROM events ORDER BY seq"):
        yield int(row[0]), row[1], row[2], row[3]


def memory_texts(conn: Connection) -> Iterator[tuple[int, str, str, str, str, str | None]]:
    """``(pk, id, event_id, text, quote, gist)`` of every memory, in stored order (streamed)."""
    for row in conn.execute("SELECT pk, id, event_id, text, quote, gist FROM memories ORDER BY pk"):
        yield int(row[0]), row[1], row[2], row[3], row[4], row[5]


def set_event_text(conn: Connection, event_id: str, text: str) -> None:
    conn.execute("UPDATE events SET text = ?, redacted = 1 WHERE id = ?", (text, event_id))


def set_memory_texts(conn: Connection, pk: int, text: str, quote: str, gist: str | None) -> None:
    conn.execute("UPDATE memories SET text = ?, quote = ?, gist = ? WHERE pk = ?", (text, quote, gist, pk))


def drop_event_vector(conn: Connection, event_id: str) -> None:
    conn.execute("DELETE FROM event_embeddings WHERE event_id = ?", (event_id,))


def drop_memory_vector(conn: Connection, memory_id: str) -> None:
    conn.execute("DELETE FROM embeddings WHERE memory_id = ?", (memory_id,))


def optimize_indexes(conn: Connection) -> None:
    """Merge the FTS5 indexes' segments, so terms of rewritten rows leave the index's own data."""
    conn.execute("INSERT INTO event_fts (event_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
