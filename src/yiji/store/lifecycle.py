"""SQL for a memory's lifecycle: amended events, correction lineage, permanent deletion, checkpoint
invalidation and the latest role emotion.

Deletion removes rows from every table that can hold a deleted event or memory: ``relations``,
``embeddings``, ``memories``, ``event_embeddings``, ``event_cues``, ``events`` and the FTS5 indexes (``memory_fts`` rowid =
``memories.pk``, ``event_fts`` rowid = ``events.seq``, deleted by rowid). FTS5 records a deletion as a
tombstone in its segment data; :func:`optimize_search` merges the segments so no deleted token survives
in the shadow tables. :func:`erasing` wraps the deletion so that what it removes is overwritten, and
so are the pages freed earlier (by FTS5 merges, under ``secure_delete=FAST``) that may still hold a
deleted event's words. The floor of ``events.seq`` is raised to the highest deleted seq in the same
transaction, so no later event gets a deleted event's number. ``capture_cursors`` is never touched here,
and neither is any surviving memory's validity interval.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from yiji.db import SECURE_DELETE, Connection
from yiji.models.memories import MemoryRecord
from yiji.store import search
from yiji.store._sql import chunks, marks
from yiji.store.events import raise_seq_floor
from yiji.store.memories import MEMORY_COLUMNS, record
from yiji.store.vectors import bump_generation

__all__ = [
    "count_live_checkpoints",
    "delete_footprint",
    "delete_rows",
    "erasing",
    "events_of_memories",
    "invalidate_checkpoints",
    "latest_role_emotion",
    "lineage_neighbours",
    "mark_amended",
    "memories_of_events",
    "optimize_search",
    "scope_texts",
]


def mark_amended(conn: Connection, event_id: str) -> None:
    """Flag a raw event whose derived memory was corrected. Its text stays as it was."""
    conn.execute("UPDATE events SET amended = 1 WHERE id = ?", (event_id,))


def memories_of_events(conn: Connection, event_ids: Iterable[str]) -> set[str]:
    """Ids of every memory derived from any of ``event_ids`` (revoked ones included)."""
    out: set[str] = set()
    for chunk in chunks(event_ids):
        rows = conn.execute(f"SELECT id FROM memories WHERE event_id IN ({marks(chunk)})", chunk)
        out.update(r[0] for r in rows)
    return out


def events_of_memories(conn: Connection, memory_ids: Iterable[str]) -> set[str]:
    """Ids of the source events of ``memory_ids``."""
    out: set[str] = set()
    for chunk in chunks(memory_ids):
        rows = conn.execute(f"SELECT event_id FROM memories WHERE id IN ({marks(chunk)})", chunk)
        out.update(r[0] for r in rows)
    return out


def lineage_neighbours(conn: Connection, memory_ids: Iterable[str]) -> set[str]:
    """Memories joined to any of ``memory_ids`` by a ``corrects`` edge, in either direction."""
    out: set[str] = set()
    for chunk in chunks(memory_ids):
        in_list = marks(chunk)
        rows = conn.execute(
            f"SELECT to_id FROM relations WHERE type = 'corrects' AND from_id IN ({in_list}) "
            f"UNION SELECT from_id FROM relations WHERE type = 'corrects' AND to_id IN ({in_list})",
            chunk + chunk,
        )
        out.update(r[0] for r in rows)
    return out


def scope_texts(
    conn: Connection, persona_id: str, project_id: str
) -> Iterator[tuple[str, str, tuple[str | None, ...]]]:
    """Every event and memory of a scope with the text it holds, streamed one row at a time:
    ``("event", id, (text,))``, then ``("memory", id, (text, quote, gist))``. For a search no index can
    answer (an identifier in every spelling); the caller keeps only what matches."""
    for row in conn.execute(
        "SELECT id, text FROM events WHERE persona_id = ? AND project_id = ? ORDER BY seq",
        (persona_id, project_id),
    ):
        yield "event", str(row[0]), (row[1],)
    for row in conn.execute(
        "SELECT id, text, quote, gist FROM memories WHERE persona_id = ? AND project_id = ? ORDER BY pk",
        (persona_id, project_id),
    ):
        yield "memory", str(row[0]), (row[1], row[2], row[3])


def delete_footprint(conn: Connection, event_ids: Iterable[str], memory_ids: Iterable[str]) -> dict[str, int]:
    """How many relation edges, vectors and cues a deletion of these events and memories removes."""
    memories = sorted(set(memory_ids))
    events = sorted(set(event_ids))
    edges: set[tuple[str, str, str]] = set()
    vectors = 0
    for chunk in chunks(memories):
        in_list = marks(chunk)
        edges.update(
            (r[0], r[1], r[2])
            for r in conn.execute(
                f"SELECT from_id, to_id, type FROM relations "
                f"WHERE from_id IN ({in_list}) OR to_id IN ({in_list})",
                chunk + chunk,
            )
        )
        vectors += int(
            conn.execute(f"SELECT COUNT(*) FROM embeddings WHERE memory_id IN ({in_list})", chunk).fetchone()[
                0
            ]
        )
    cues = 0
    for chunk in chunks(events):
        vectors += int(
            conn.execute(
                f"SELECT COUNT(*) FROM event_embeddings WHERE event_id IN ({marks(chunk)})", chunk
            ).fetchone()[0]
        )
        cues += int(
            conn.execute(
                f"SELECT COUNT(*) FROM event_cues WHERE event_id IN ({marks(chunk)})", chunk
            ).fetchone()[0]
        )
    return {"relations": len(edges), "embeddings": vectors, "cues": cues}


def delete_rows(conn: Connection, event_ids: Iterable[str], memory_ids: Iterable[str]) -> None:
    """Delete the memories and events with every row that refers to them, children first.

    The caller guarantees closure: every memory of a deleted event is among ``memory_ids``.
    """
    memories = sorted(set(memory_ids))
    events = sorted(set(event_ids))
    for chunk in chunks(memories):
        in_list = marks(chunk)
        conn.execute(
            f"DELETE FROM relations WHERE from_id IN ({in_list}) OR to_id IN ({in_list})", chunk + chunk
        )
        conn.execute(f"DELETE FROM embeddings WHERE memory_id IN ({in_list})", chunk)
        search.unindex_memories(
            conn, [int(r[0]) for r in conn.execute(f"SELECT pk FROM memories WHERE id IN ({in_list})", chunk)]
        )
        conn.execute(f"DELETE FROM memories WHERE id IN ({in_list})", chunk)
    highest = 0
    for chunk in chunks(events):
        in_list = marks(chunk)
        top = conn.execute(f"SELECT max(seq) FROM events WHERE id IN ({in_list})", chunk).fetchone()[0]
        highest = max(highest, top or 0)
        conn.execute(f"DELETE FROM event_cues WHERE event_id IN ({in_list})", chunk)
        conn.execute(f"DELETE FROM event_embeddings WHERE event_id IN ({in_list})", chunk)
        search.unindex_events(
            conn, [int(r[0]) for r in conn.execute(f"SELECT seq FROM events WHERE id IN ({in_list})", chunk)]
        )
        conn.execute(f"DELETE FROM events WHERE id IN ({in_list})", chunk)
    if highest:
        raise_seq_floor(conn, highest)
    bump_generation(conn)


WIPE_CHUNK_PAGES = 2048
"""Free pages taken per row of zeros by :func:`wipe_free_pages` (8 MiB with 4 KiB pages)."""


@contextlib.contextmanager
def erasing(conn: Connection) -> Iterator[None]:
    """Inside a write transaction: deleted content is overwritten with zeros (``secure_delete=ON``), and
    at the end every page on the free list is too (:func:`wipe_free_pages`)."""
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
        wipe_free_pages(conn)
    finally:
        conn.execute(f"PRAGMA secure_delete = {SECURE_DELETE}")


def wipe_free_pages(conn: Connection) -> None:
    """Overwrite every page on the free list with zeros, inside the caller's transaction.

    A scratch table takes the free pages with blobs of zeros (SQLite reuses free pages before it grows
    the file) and is dropped again, which under ``secure_delete=ON`` zeroes them once more on their way
    back to the free list. The file may grow by a few pages: the overflow pages' own headers.
    """
    free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    if not free:
        return
    usable = int(conn.execute("PRAGMA page_size").fetchone()[0]) - 4  # an overflow page's link
    conn.execute("CREATE TABLE yiji_wipe (zeros BLOB NOT NULL)")
    while free > 0:
        conn.execute(
            "INSERT INTO yiji_wipe (zeros) VALUES (zeroblob(?))", (min(free, WIPE_CHUNK_PAGES) * usable,)
        )
        left = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if left >= free:  # never expected: SQLite takes free pages first
            break
        free = left
    conn.execute("DROP TABLE yiji_wipe")


def optimize_search(conn: Connection) -> None:
    """Merge each FTS5 index into one segment, dropping deleted entries from the shadow tables."""
    conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    conn.execute("INSERT INTO event_fts(event_fts) VALUES ('optimize')")


def count_live_checkpoints(conn: Connection, persona_id: str, project_id: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM checkpoints WHERE persona_id = ? AND project_id = ? "
            "AND invalidated_at IS NULL",
            (persona_id, project_id),
        ).fetchone()[0]
    )


def invalidate_checkpoints(conn: Connection, persona_id: str, project_id: str, at: str, reason: str) -> int:
    """Invalidate every still-valid checkpoint of a scope; return how many."""
    cur = conn.execute(
        "UPDATE checkpoints SET invalidated_at = ?, invalid_reason = ? "
        "WHERE persona_id = ? AND project_id = ? AND invalidated_at IS NULL",
        (at, reason, persona_id, project_id),
    )
    return int(cur.rowcount)


def latest_role_emotion(conn: Connection, persona_id: str, project_id: str, at: str) -> MemoryRecord | None:
    """The most recent live role emotion expressed at or before ``at``: kind ``emotion``, basis
    ``assistant_expression``, valence and arousal set, accepted and not revoked. Ties go to the later
    insertion."""
    row = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE persona_id = ? AND project_id = ? "
        "AND kind = 'emotion' AND basis = 'assistant_expression' AND valence IS NOT NULL "
        "AND arousal IS NOT NULL AND revoked_at IS NULL AND review_state = 'accepted' AND valid_at <= ? "
        "ORDER BY valid_at DESC, created_at DESC, pk DESC LIMIT 1",
        (persona_id, project_id, at),
    ).fetchone()
    return record(row) if row else None
