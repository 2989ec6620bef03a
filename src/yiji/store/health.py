"""SQL for ``doctor``: integrity, foreign keys, table counts, pending work."""

from __future__ import annotations

from yiji.db import Connection

__all__ = [
    "AUTHORITATIVE_TABLES",
    "foreign_key_problems",
    "integrity",
    "pending_extractions",
    "table_counts",
]

AUTHORITATIVE_TABLES = (
    "personas",
    "events",
    "event_cues",
    "memories",
    "relations",
    "checkpoints",
    "capture_cursors",
)
CACHE_TABLES = ("embeddings", "memory_fts", "event_fts")


def integrity(conn: Connection) -> list[str]:
    """``PRAGMA integrity_check`` lines; ``["ok"]`` when healthy."""
    return [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]


def foreign_key_problems(conn: Connection) -> int:
    return len(conn.execute("PRAGMA foreign_key_check").fetchall())


def table_counts(conn: Connection) -> dict[str, int]:
    return {
        t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
        for t in (*AUTHORITATIVE_TABLES, *CACHE_TABLES)
    }


def pending_extractions(conn: Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM events WHERE extraction_state = 'pending'").fetchone()[0])


def index_segmenter(conn: Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'segmenter'").fetchone()
    return str(row[0]) if row else None
