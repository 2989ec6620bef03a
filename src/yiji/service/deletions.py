"""The deletion ledger as every writer uses it: a deletion records what it removed, and every path that
stores events (host capture and the hooks, ``import-transcripts``, ``event submit``, ``event import``,
``event_submit``, a correction's statement) asks it before storing one.

:class:`DeletionLedger` is opened inside the writer's own transaction. An event is refused
(:meth:`DeletionLedger.refusal`) when its id, or its text in copy form at the same moment, is a deleted
event's, or when its
text (or a cue) holds an identifier forgotten with ``delete --matching`` in its scope; the digests and
the rules are :mod:`yiji.domain.deletions`. An event whose id is stored right now is never refused: it
was not deleted, and the writer's idempotent path answers it. A refused event is skipped, never an error
(a capture's cursor moves past it), and counted; nothing about it but the count and the reason kind is
reported. Deletion is permanent, so the ledger only grows.

Light on purpose: the capture hooks import this module, so it loads neither pydantic nor the service.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from yiji.db import Connection
from yiji.domain.deletions import Forgotten, event_digests, holds_forgotten, identifier_entry
from yiji.store import deletions as store

__all__ = ["DeletionLedger", "remember_deletion"]


class DeletionLedger:
    """The ledger read inside one transaction (an empty ledger answers without another query)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._active = store.has_entries(conn)
        self._forgotten: dict[tuple[str, str], Forgotten] = {}

    def refusal(
        self,
        persona: str,
        project: str,
        event_id: str,
        text: str,
        occurred_at: datetime,
        cues: Iterable[str | None] = (),
    ) -> str | None:
        """Why a new event must not be stored (``"event_id"``, ``"text"`` or ``"identifier"``), or
        ``None`` when it may be. An id stored right now is never refused."""
        if not self._active:
            return None
        by_id, by_text = event_digests(event_id, text, occurred_at)
        hits = store.known(self._conn, (by_id, by_text))
        reason = (
            "event_id"
            if ("event_id", by_id) in hits
            else "text"
            if ("text", by_text) in hits
            else "identifier"
            if holds_forgotten((text, *cues), self._identifiers(persona, project))
            else None
        )
        if reason is not None and store.is_stored(self._conn, event_id):
            return None
        return reason

    def _identifiers(self, persona: str, project: str) -> Forgotten:
        key = (persona, project)
        if key not in self._forgotten:
            self._forgotten[key] = store.forgotten_identifiers(self._conn, persona, project)
        return self._forgotten[key]


def remember_deletion(
    conn: Connection,
    event_ids: Iterable[str],
    *,
    persona: str,
    project: str,
    matching: str | None,
    at: str,
) -> int:
    """Record what a deletion is about to remove (call it before the rows go, in the same transaction):
    each event's id and text digests in the event's scope, and ``matching`` (an identifier deleted with
    ``delete --matching``) in the deletion's scope. Returns how many ledger rows are new."""
    rows: list[store.LedgerRow] = []
    for event_id, event_persona, event_project, text, occurred_at in store.deleted_texts(conn, event_ids):
        by_id, by_text = event_digests(event_id, text, occurred_at)
        rows.append(("event_id", by_id, None, None, event_persona, event_project, at))
        rows.append(("text", by_text, None, None, event_persona, event_project, at))
    entry = identifier_entry(matching) if matching is not None else None
    if entry is not None:
        span, bounded, value = entry
        rows.append(("identifier", value, span, int(bounded), persona, project, at))
    return store.remember(conn, rows)
