"""The one writer of new events: every path that stores an event (``event submit`` and its batch, ``event
import``, corrections, ``remember``, host capture and the hooks) goes through :class:`EventWriter`.

For each event, in order, inside the caller's transaction:

1. secrets in its text and cue labels are replaced (the redactor) before anything else sees them;
2. the deletion ledger (:mod:`yiji.service.deletions`) is asked whether it repeats a deletion, with its text
   as it would be stored and, when that was redacted, as submitted (a deletion from before redaction);
3. with ``copies_once`` (host capture), a copy of a message the scope already holds under another session's
   id (a fork's inherited turn) is passed over;
4. idempotency by id: an id stored (or earlier in the same call) with the same payload is a no-op, with
   another payload a conflict; an omitted occurrence time matches the stored one;
5. the row and its cues are written and the lexical index takes it.

It imports no pydantic model: host capture, which must start without them, uses it as the service does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from yiji.db import Connection
from yiji.domain.secrets import Redacted
from yiji.service.deletions import DeletionLedger
from yiji.service.indexing import LexicalIndex
from yiji.store import events as store
from yiji.timeutil import to_db

__all__ = ["CONFLICT", "COPY", "PRESENT", "Deleted", "EventWriter", "NewEvent", "Outcome", "Written"]

CueTuple = tuple[str, str, str | None]
"""A cue as the writer takes it: ``(type, identifier, label)``."""


class NewEvent(NamedTuple):
    """An event to store, as submitted. ``occurred_at`` ``None``: now (and, for an id already stored, the
    stored time); ``state`` is its extraction state."""

    id: str
    persona: str
    project: str
    session: str
    role: str
    source: str
    category: str
    text: str
    occurred_at: datetime | None
    state: str
    cues: tuple[CueTuple, ...] = ()
    redacted: bool = False
    """Set by the writer on what it stored: secrets were replaced in ``text`` or a cue label."""

    def payload(self) -> tuple[object, ...]:
        """What decides whether a stored event is this one (as :func:`yiji.store.events.payload` reads it)."""
        when = None if self.occurred_at is None else to_db(self.occurred_at)
        fields = (self.persona, self.project, self.session, self.role, self.source, self.category, self.text)
        return (*fields, when, frozenset(self.cues))


class Written(NamedTuple):
    """A new event stored by this call: its seq, and the event as stored (redacted, its time filled)."""

    seq: int
    event: NewEvent


_REPEATS = {
    "event_id": "its id is a deleted event's",
    "text": "its text is a deleted event's",
    "identifier": "its text holds an identifier deleted with delete --matching",
}


class Deleted(NamedTuple):
    """An event not stored because it repeats a deletion; ``reason`` says which digest matched."""

    reason: str

    @property
    def warning(self) -> str:
        return f"not stored: {_REPEATS[self.reason]} (a deletion stays a deletion)"


PRESENT = "present"
"""The id is stored with the same payload: nothing was written."""
CONFLICT = "conflict"
"""The id is stored with another payload or scope: nothing was written."""
COPY = "copy"
"""A copy of a message the scope holds under another session's id (``copies_once``): passed over."""

Outcome = Written | Deleted | str
"""What writing one event gave: :class:`Written`, :class:`Deleted`, or :data:`PRESENT`, :data:`CONFLICT`
or :data:`COPY`."""


class Redacts(Protocol):
    def redact(self, text: str) -> Redacted: ...


def _same(stored: tuple[object, ...] | None, new: tuple[object, ...]) -> bool:
    if stored is None:
        return False
    return stored[:7] == new[:7] and (new[7] is None or stored[7] == new[7]) and stored[8] == new[8]


class EventWriter:
    """Stores new events (see the module docstring) with one redactor, one lexical index and one clock's
    ``now`` per call, given by the caller."""

    def __init__(self, redactor: Redacts, index: LexicalIndex) -> None:
        self.redactor = redactor
        self.index = index

    def redacted(self, event: NewEvent) -> NewEvent:
        """``event`` with the secrets in its text and cue labels replaced (``redacted`` set when any were)."""
        redact = self.redactor.redact
        found = redact(event.text)
        labels = [redact(label) if label else None for _, _, label in event.cues]
        if not found.changed and not any(label is not None and label.changed for label in labels):
            return event
        cues = tuple(
            (kind, ident, label.text if label is not None else old)
            for (kind, ident, old), label in zip(event.cues, labels, strict=True)
        )
        return event._replace(text=found.text, cues=cues, redacted=True)

    @staticmethod
    def _refusal(ledger: DeletionLedger, event: NewEvent, submitted: NewEvent, now: datetime) -> str | None:
        when = event.occurred_at or now
        key = (event.persona, event.project, event.id)
        cue_texts = [text for _, ident, label in event.cues for text in (ident, label)]
        refused = ledger.refusal(*key, event.text, when, cue_texts)
        if refused is None and event.redacted:
            before = [text for _, ident, label in submitted.cues for text in (ident, label)]
            refused = ledger.refusal(*key, submitted.text, when, before)
        return refused

    @staticmethod
    def _row(event: NewEvent, seq: int | None, occurred: str, ingested_at: str) -> store.EventRow:
        return store.EventRow(
            seq,
            event.id,
            event.persona,
            event.project,
            event.session,
            event.role,
            event.source,
            event.category,
            event.text,
            occurred,
            ingested_at,
            event.state,
            int(event.redacted),
        )

    @staticmethod
    def _cue_rows(event: NewEvent) -> list[store.CueRow]:
        return [store.CueRow(event.id, kind, ident, label) for kind, ident, label in event.cues]

    def write(self, conn: Connection, submitted: NewEvent, now: datetime) -> Outcome:
        """Store one event (every single submit): written at once, its id looked up only when taken."""
        event = self.redacted(submitted)
        refused = self._refusal(DeletionLedger(conn), event, submitted, now)
        if refused is not None:
            return Deleted(refused)
        occurred = event.occurred_at or now
        row = self._row(event, None, to_db(occurred), to_db(now))
        seq = store.insert_new(conn, row, self._cue_rows(event) if event.cues else ())
        if seq is None:  # the id is taken: the same event again, or a conflict
            return PRESENT if _same(store.payload(conn, event.id), event.payload()) else CONFLICT
        labels = [label for _, _, label in event.cues]
        self.index.add_event(conn, seq, event.category, event.text, labels, (event.persona, event.project))
        return Written(seq, event if event.occurred_at is not None else event._replace(occurred_at=now))

    def write_many(
        self, conn: Connection, items: Sequence[NewEvent], now: datetime, *, copies_once: bool = False
    ) -> list[Outcome]:
        """Store the new events of ``items``, in order (see the module docstring). The stored ids are
        looked up in one query per few hundred, new rows written with prepared statements and seqs
        assigned up front; each text is segmented once, for the lexical index. With ``copies_once`` each
        row is written as it comes (host capture: a copy is recognised against the rows just written)."""
        known: dict[str, tuple[object, ...] | NewEvent] = (
            {} if copies_once else dict(store.payloads(conn, [event.id for event in items]))
        )
        ingested_at = to_db(now)
        ledger = DeletionLedger(conn)
        rows: list[store.EventRow] = []
        cues: list[store.CueRow] = []
        indexed: list[tuple[int, str, str, Sequence[str | None]]] = []
        scopes: list[tuple[str, str]] = []
        out: list[Outcome] = []
        seq = 0
        for submitted in items:
            event = self.redacted(submitted)
            stored = known.get(event.id)
            if stored is not None:
                before = stored.payload() if isinstance(stored, NewEvent) else stored
                out.append(PRESENT if _same(before, event.payload()) else CONFLICT)
                continue
            refused = self._refusal(ledger, event, submitted, now)
            if refused is not None:
                out.append(Deleted(refused))
                continue
            if event.occurred_at is None:
                event = event._replace(occurred_at=now)
            occurred = to_db(event.occurred_at or now)
            labels = [label for _, _, label in event.cues]
            if copies_once:  # each row written at once: a later copy of it in the same call is seen
                if store.holds_copy(
                    conn, event.persona, event.project, event.id, event.role, submitted.text, occurred
                ):
                    out.append(COPY)
                    continue
                row = self._row(event, None, occurred, ingested_at)
                got = store.insert_new(conn, row, self._cue_rows(event) if event.cues else ())
                if got is None:
                    same = _same(store.payload(conn, event.id), event.payload())
                    out.append(PRESENT if same else CONFLICT)
                    continue
                indexed.append((got, event.category, event.text, labels))
                scopes.append((event.persona, event.project))
                out.append(Written(got, event))
                continue
            seq = seq or store.next_seq(conn)
            rows.append(self._row(event, seq, occurred, ingested_at))
            if event.cues:
                cues += self._cue_rows(event)
            indexed.append((seq, event.category, event.text, labels))
            scopes.append((event.persona, event.project))
            known[event.id] = event
            out.append(Written(seq, event))
            seq += 1
        if rows:
            store.insert_many(conn, rows, cues)
        self.index.add_events(conn, indexed, scopes)
        return out
