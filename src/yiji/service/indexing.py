"""The lexical index (FTS5) as an object: what it holds for an event or a memory, the stamp of the
segmenter that built it, and its rebuild from the authoritative tables.

Every writer updates it explicitly, inside the writer's own transaction (the event writer, the memory
writer, secret redaction); an import rebuilds it before its rows commit. Memories derived in bulk
(:meth:`LexicalIndex.together`) enter it together at the end of their transaction, and their source events
leave the raw-event index together: one statement per term and one rewrite per block touched, rather than
one per memory. It imports no pydantic model, so
host capture (:mod:`yiji.service.capture`) starts without the rest of the service.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from yiji.db import Connection, Database
from yiji.domain import segment
from yiji.service.progress import ProgressFactory, progress_bar
from yiji.store import search

if TYPE_CHECKING:
    from yiji.models.events import EventRecord
    from yiji.models.memories import MemoryRecord
    from yiji.models.reports import IndexStatus, ReindexResult

__all__ = [
    "SOURCE_CHARS",
    "LexicalIndex",
    "event_body",
    "index_event",
    "index_events",
    "memory_body",
    "stamp_new_index",
]

REINDEX_CHUNK = 1000
"""Rows read and indexed at a time by :meth:`LexicalIndex.rebuild`."""
T = TypeVar("T")
IndexedEvent = tuple[int, str, str, Sequence[str | None]]
"""An event as the index takes it: ``(seq, category, text, cue labels)``."""

SOURCE_CHARS = 2000
"""How much of a memory's source event text goes into the memory's index body."""


def event_body(text: str, labels: Sequence[str | None]) -> str:
    if not any(labels):
        return segment.document_body(text)
    return segment.document_body(" ".join([text, *(label for label in labels if label)]))


def memory_body(parts: Sequence[str | None]) -> str:
    """Index body of a memory: its text, quote and gist, its source text (capped) and cue labels.

    A part already contained in the source text (the quote always is) is not repeated, so term
    frequencies stay close to what a reader sees.
    """
    text, quote, gist, source, *labels = parts
    source = (source or "")[:SOURCE_CHARS]
    own = [p for p in dict.fromkeys((text, quote, gist)) if p and p not in source]
    return segment.document_body(" ".join([*own, source, *(label for label in labels if label)]))


def stamp_new_index(conn: Connection, first_seq: int) -> None:
    """Stamp the segmenter on a database whose very first events start at ``first_seq``.

    Any other database without a stamp (an import whose rebuild did not finish, an index built by an
    older yiji) stays unstamped, so recall and ``doctor`` keep saying ``yiji reindex`` is needed.
    """
    if search.get_meta(conn, search.SEGMENTER_KEY) is None and search.holds_only_events_from(conn, first_seq):
        search.set_meta(conn, search.SEGMENTER_KEY, segment.segmenter_id())


Scope = tuple[str, str]
"""An event's (persona, project)."""


def index_event(
    conn: Connection,
    seq: int,
    category: str,
    text: str,
    labels: Sequence[str | None],
    scope: Scope | None = None,
) -> None:
    """:func:`index_events` for one event (every single submit): no lists built."""
    if category == "conversation":
        search.index_event(conn, seq, event_body(text, labels), scope)


def index_events(
    conn: Connection, events: Sequence[IndexedEvent], scopes: Sequence[Scope] | None = None
) -> None:
    """Index newly stored events, each ``(seq, category, text, cue labels)``: a conversation turn is
    searchable as a raw event until a memory is derived from it. Each text is segmented once.
    ``scopes``: each event's scope, when the caller holds them (the event writer)."""
    kept = [category == "conversation" for _, category, _, _ in events]
    if len(events) > 1:
        segment.expect(text for (_, _, text, _), keep in zip(events, kept, strict=True) if keep)
    bodies = [
        (seq, event_body(text, labels))
        for (seq, _, text, labels), keep in zip(events, kept, strict=True)
        if keep
    ]
    if scopes is not None:
        scopes = [scope for scope, keep in zip(scopes, kept, strict=True) if keep]
    search.index_events(conn, bodies, scopes)


def _chunked(rows: Iterable[T]) -> Iterator[list[T]]:
    chunk: list[T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == REINDEX_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _Held:
    """What :meth:`LexicalIndex.together` holds back: memories to index, ``(pk, body)``, and the
    events they come from, which leave the raw-event index."""

    __slots__ = ("events", "memories")

    def __init__(self) -> None:
        self.memories: list[tuple[int, str]] = []
        self.events: list[int] = []

    def write(self, conn: Connection) -> None:
        memories, events = self.memories, self.events
        self.memories, self.events = [], []
        if memories:
            search.index_memories(conn, memories)
        if events:
            search.unindex_events(conn, events)


class LexicalIndex:
    """The FTS5 index of one database. The ``add_*`` and ``replace_*`` methods write inside the caller's
    transaction; :meth:`rebuild` too; :meth:`reindex` and :meth:`status` open their own."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._stamped = False
        """Whether the segmenter stamp was checked (once per index object: see :func:`stamp_new_index`)."""
        self._held: dict[Connection, _Held] = {}
        """Per connection inside :meth:`together`: the memories it holds back (connections are per
        thread, so each thread has its own)."""

    @contextmanager
    def together(self, conn: Connection) -> Iterator[None]:
        """Memories indexed inside (:meth:`add_memory`) are written to the index together when the block
        ends without an error, inside the same transaction: the memories' bodies in one call, their
        source events out of the raw-event index in one call. On an error nothing held is written (the
        caller's transaction rolls back). Any other change to the index inside writes what is held first,
        so the index's own order of changes is kept. Nested use joins the outer one."""
        if conn in self._held:
            yield
            return
        held = self._held[conn] = _Held()
        try:
            yield
        finally:
            del self._held[conn]
        held.write(conn)

    def _flush(self, conn: Connection) -> None:
        """Write what :meth:`together` holds for ``conn`` now (before another change to the index)."""
        held = self._held.get(conn)
        if held is not None:
            held.write(conn)

    def _stamp(self, conn: Connection, first_seq: int) -> None:
        if not self._stamped:
            stamp_new_index(conn, first_seq)
            self._stamped = True

    def add_event(
        self,
        conn: Connection,
        seq: int,
        category: str,
        text: str,
        labels: Sequence[str | None],
        scope: Scope | None = None,
    ) -> None:
        """Index one newly stored event (every single submit); ``scope``: its scope, when known."""
        if not self._stamped:
            self._stamp(conn, seq)
        if self._held:
            self._flush(conn)
        index_event(conn, seq, category, text, labels, scope)

    def add_events(
        self, conn: Connection, events: Sequence[IndexedEvent], scopes: Sequence[Scope] | None = None
    ) -> None:
        """Index newly stored events, each ``(seq, category, text, cue labels)`` (:func:`index_events`)."""
        if events:
            self._stamp(conn, events[0][0])
            self._flush(conn)
            index_events(conn, events, scopes)

    def add_records(self, conn: Connection, records: Sequence[EventRecord]) -> None:
        """:meth:`add_events` for stored event records."""
        if len(records) == 1:
            r = records[0]
            self.add_event(conn, r.seq, r.category, r.text, [c.label for c in r.cues])
        else:
            self.add_events(conn, [(r.seq, r.category, r.text, [c.label for c in r.cues]) for r in records])

    def add_memory(self, conn: Connection, pk: int, memory: MemoryRecord, event: EventRecord) -> None:
        """Index a memory just stored (or accepted); its source event leaves the raw-event fallback
        (both held until the end of :meth:`together` when inside it)."""
        labels = [c.label for c in event.cues]
        body = memory_body([memory.text, memory.quote, memory.gist, event.text, *labels])
        held = self._held.get(conn)
        if held is not None:
            held.memories.append((pk, body))
            held.events.append(event.seq)
            return
        search.index_memory(conn, pk, body)
        search.unindex_event(conn, event.seq)

    def replace_event(
        self, conn: Connection, seq: int, category: str, text: str, labels: Sequence[str | None]
    ) -> None:
        """Index an event's changed text in place of its old row."""
        self._flush(conn)
        search.unindex_event(conn, seq)
        index_event(conn, seq, category, text, labels)

    def replace_memory(self, conn: Connection, pk: int, parts: Sequence[str | None]) -> None:
        """Index a memory's changed text in place of its old row (``parts`` as :func:`memory_body`)."""
        self._flush(conn)
        search.unindex_memories(conn, [pk])
        search.index_memory(conn, pk, memory_body(parts))

    def rebuild(self, conn: Connection, progress: ProgressFactory | None = None) -> tuple[int, int]:
        """Clear and rebuild the index inside the caller's write transaction, then stamp the segmenter;
        returns how many events and memories were indexed. Rows stream in chunks, so memory stays flat
        however large the archive."""
        held = self._held.get(conn)
        if held is not None:  # rebuilt from the tables, which hold what was held back
            held.memories.clear()
            held.events.clear()
        search.clear_index(conn)
        events, memories = search.count_for_index(conn)
        bar = progress_bar(progress, "reindex", events + memories)
        try:
            for found in _chunked(search.iter_events_for_index(conn)):
                search.index_events(conn, [(seq, event_body(text, cues)) for seq, text, cues in found])
                bar.update(len(found))
            for derived in _chunked(search.iter_memories_for_index(conn)):
                search.index_memories(conn, [(pk, memory_body(parts)) for pk, parts in derived])
                bar.update(len(derived))
        finally:
            bar.close()
        search.set_meta(conn, search.SEGMENTER_KEY, segment.segmenter_id())
        self._stamped = True
        return events, memories

    def reindex(self, progress: ProgressFactory | None = None) -> ReindexResult:
        """Rebuild the index from the authoritative tables in one write transaction."""
        with self.db.write() as conn:
            events, memories = self.rebuild(conn, progress)
        return {"events": events, "memories": memories, "segmenter": segment.segmenter_id()}

    def status(self) -> IndexStatus:
        """The segmenter in use, the one the index was built with, and whether they are the same."""
        with self.db.read() as conn:
            built_with = search.get_meta(conn, search.SEGMENTER_KEY)
        return {
            "segmenter": segment.segmenter_id(),
            "index_built_with": built_with,
            "current": built_with == segment.segmenter_id(),
        }
