"""SQL for the deletion ledger: digests of what permanent deletions removed (see
:mod:`yiji.domain.deletions`). Rows are only ever added (``INSERT OR IGNORE``: one row per digest, kind
and scope); nothing here reads or writes text, except :func:`deleted_texts`, which reads the events a
deletion is about to remove so that their digests can be written in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from yiji.db import Connection
from yiji.store._sql import chunks, marks
from yiji.timeutil import from_db

__all__ = [
    "LedgerRow",
    "deleted_texts",
    "forgotten_identifiers",
    "has_entries",
    "is_stored",
    "known",
    "remember",
]

LedgerRow = tuple[str, str, int | None, int | None, str, str, str]
"""``(kind, digest, span, bounded, persona_id, project_id, deleted_at)``"""


def has_entries(conn: Connection) -> bool:
    """Whether anything was ever deleted (an empty ledger makes every check free)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM deletion_ledger)").fetchone()[0])


def known(conn: Connection, digests: Iterable[str]) -> set[tuple[str, str]]:
    """The ``(kind, digest)`` pairs of the ledger among ``digests`` (any kind, any scope)."""
    out: set[tuple[str, str]] = set()
    for chunk in chunks(digests):
        rows = conn.execute(
            f"SELECT DISTINCT kind, digest FROM deletion_ledger WHERE digest IN ({marks(chunk)})", chunk
        )
        out.update((str(r[0]), str(r[1])) for r in rows)
    return out


def is_stored(conn: Connection, event_id: str) -> bool:
    """Whether an event with this id is stored right now."""
    return conn.execute("SELECT 1 FROM events WHERE id = ?", (event_id,)).fetchone() is not None


def forgotten_identifiers(
    conn: Connection, persona_id: str, project_id: str
) -> dict[tuple[int, bool], frozenset[str]]:
    """The digests of identifiers forgotten in a scope, by ``(span, bounded)``."""
    found: dict[tuple[int, bool], set[str]] = {}
    for span, bounded, value in conn.execute(
        "SELECT span, bounded, digest FROM deletion_ledger "
        "WHERE persona_id = ? AND project_id = ? AND kind = 'identifier'",
        (persona_id, project_id),
    ):
        found.setdefault((int(span), bool(bounded)), set()).add(str(value))
    return {key: frozenset(values) for key, values in found.items()}


def deleted_texts(
    conn: Connection, event_ids: Iterable[str]
) -> Iterator[tuple[str, str, str, str, datetime]]:
    """``(id, persona_id, project_id, text, occurred_at)`` of the given stored events."""
    for chunk in chunks(event_ids):
        for row in conn.execute(
            f"SELECT id, persona_id, project_id, text, occurred_at FROM events WHERE id IN ({marks(chunk)})",
            chunk,
        ):
            yield str(row[0]), str(row[1]), str(row[2]), str(row[3]), from_db(str(row[4]))


def remember(conn: Connection, rows: Sequence[LedgerRow]) -> int:
    """Add ledger rows (one already there is left as it is); return how many were new."""
    before = conn.total_changes
    conn.executemany(
        "INSERT OR IGNORE INTO deletion_ledger "
        "(kind, digest, span, bounded, persona_id, project_id, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return int(conn.total_changes - before)
