"""What the lexical index holds for an event or a memory, and the stamp of the segmenter that built it.

Shared by every path that writes index rows in a use case's transaction: the service's index upkeep
(:class:`yiji.service.recall_ops.RecallOps`) and host capture (:mod:`yiji.service.capture`), which must
start without the rest of the service.
"""

from __future__ import annotations

from collections.abc import Sequence

from yiji.db import Connection
from yiji.domain import segment
from yiji.store import search

__all__ = ["SOURCE_CHARS", "event_body", "index_event", "index_events", "memory_body", "stamp_new_index"]

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


def index_event(conn: Connection, seq: int, category: str, text: str, labels: Sequence[str | None]) -> None:
    """:func:`index_events` for one event (every single submit): one statement, no lists built."""
    if category == "conversation":
        search.index_event(conn, seq, event_body(text, labels))


def index_events(conn: Connection, events: Sequence[tuple[int, str, str, Sequence[str | None]]]) -> None:
    """Index newly stored events, each ``(seq, category, text, cue labels)``: a conversation turn is
    searchable as a raw event until a memory is derived from it. Each text is segmented once."""
    search.index_events(
        conn,
        [
            (seq, event_body(text, labels))
            for seq, category, text, labels in events
            if category == "conversation"
        ],
    )
