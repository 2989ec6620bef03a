"""The service's recall methods: upkeep of the lexical index, and recall with the semantic part.

:class:`RecallOps` keeps the FTS5 index in step with every write of the service and rebuilds it
(``reindex``). Its ``recall`` runs the recall use case (:class:`yiji.service.recall.Recall`) with the
vectors seam filled: the query is embedded before the read transaction, and the scope's vectors are scanned
inside it (:mod:`yiji.service.vectors`). ``memory_recall`` is the same call at the boundary: it takes and
returns the pydantic models (:mod:`yiji.models.recall`) that the MCP server, the review UI and
``session_resume`` use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from yiji.db import Connection
from yiji.domain import ranking, segment
from yiji.domain.recall import Recalled, RecallRequest
from yiji.errors import ProviderError
from yiji.models.common import Scope
from yiji.models.events import EventRecord
from yiji.models.memories import MemoryRecord
from yiji.models.recall import RecallQuery, RecallResult, recall_result
from yiji.service import indexing
from yiji.service.base import ProgressFactory, progress_bar
from yiji.service.recall import Recall, RecallFilters, SemanticPart
from yiji.service.vectors import CANDIDATE_POOL, SemanticHits, VectorOps
from yiji.store import search

__all__ = ["RecallOps"]

REINDEX_CHUNK = 1000
"""Rows read and indexed at a time by :meth:`RecallOps.reindex`."""
T = TypeVar("T")


def _chunked(rows: Iterable[T]) -> Iterator[list[T]]:
    chunk: list[T] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == REINDEX_CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class RecallOps(VectorOps):
    _index_meta_ready = False

    # -- index maintenance --------------------------------------------------------------------

    def _ensure_index_meta(self, conn: Connection, first_seq: int) -> None:
        """Stamp the segmenter on a new database (see :func:`indexing.stamp_new_index`), once per service."""
        if self._index_meta_ready:
            return
        indexing.stamp_new_index(conn, first_seq)
        self._index_meta_ready = True

    def _on_events_inserted(self, conn: Connection, records: Sequence[EventRecord]) -> None:
        self._ensure_index_meta(conn, records[0].seq)
        indexing.index_events(conn, [(r.seq, r.category, r.text, [c.label for c in r.cues]) for r in records])

    def _on_event_inserted(self, conn: Connection, record: EventRecord) -> None:
        if not self._index_meta_ready:
            self._ensure_index_meta(conn, record.seq)
        indexing.index_event(conn, record.seq, record.category, record.text, [c.label for c in record.cues])

    def _on_memory_inserted(
        self, conn: Connection, pk: int, memory: MemoryRecord, event: EventRecord
    ) -> None:
        labels = [c.label for c in event.cues]
        search.index_memory(
            conn, pk, indexing.memory_body([memory.text, memory.quote, memory.gist, event.text, *labels])
        )
        search.unindex_event(conn, event.seq)

    def index_status(self) -> dict[str, Any]:
        with self.db.read() as conn:
            built_with = search.get_meta(conn, search.SEGMENTER_KEY)
        return {
            "segmenter": segment.segmenter_id(),
            "index_built_with": built_with,
            "current": built_with == segment.segmenter_id(),
        }

    def reindex(self, progress: ProgressFactory | None = None) -> dict[str, Any]:
        """Rebuild the lexical index from the authoritative tables (one transaction).

        Rows stream from the database to the index in chunks, so memory stays flat however large the
        archive."""
        with self.db.write() as conn:
            events, memories = self._build_index(conn, progress)
        self._index_meta_ready = True
        return {"events": events, "memories": memories, "segmenter": segment.segmenter_id()}

    @staticmethod
    def _build_index(conn: Connection, progress: ProgressFactory | None) -> tuple[int, int]:
        """Clear and rebuild the lexical index inside the caller's write transaction, then stamp the
        segmenter; returns how many events and memories were indexed."""
        search.clear_index(conn)
        events, memories = search.count_for_index(conn)
        bar = progress_bar(progress, "reindex", events + memories)
        try:
            for found in _chunked(search.iter_events_for_index(conn)):
                search.index_events(
                    conn, [(seq, indexing.event_body(text, cues)) for seq, text, cues in found]
                )
                bar.update(len(found))
            for derived in _chunked(search.iter_memories_for_index(conn)):
                search.index_memories(conn, [(pk, indexing.memory_body(parts)) for pk, parts in derived])
                bar.update(len(derived))
        finally:
            bar.close()
        search.set_meta(conn, search.SEGMENTER_KEY, segment.segmenter_id())
        return events, memories

    def _rebuild_indexes(self, conn: Connection, progress: ProgressFactory | None = None) -> None:
        self._build_index(conn, progress)

    # -- recall -----------------------------------------------------------------------------

    ranking_weights: ranking.Weights = ranking.DEFAULT_WEIGHTS
    """The ranking's weights (the freshness half-life comes from the configuration)."""

    def _recall_use_case(self) -> Recall:
        """The recall use case over this service's database, made once (it caches term statistics)."""
        found: Recall | None = self.__dict__.get("_recall")
        if found is None:
            found = self.__dict__["_recall"] = Recall(
                self.db, self.config, clock=self.clock, weights=self.ranking_weights
            )
        return found

    def recall(self, request: RecallRequest, exclude_events: frozenset[int] = frozenset()) -> Recalled:
        """Recall memories (and labeled raw events) for a query, in any mode; plain data in and out."""
        return self._recall_use_case().recall(request, self._semantic_part, exclude_events=exclude_events)

    def memory_recall(self, q: RecallQuery) -> RecallResult:
        """Recall memories (and labeled raw events) for a query; each item explains its score."""
        return recall_result(self.recall(q.request()))

    def _semantic_part(self, q: RecallRequest) -> SemanticPart:
        """Embed the query (no transaction is open) and offer the scan of the scope's vectors."""
        embedder = self._require_embedder()
        try:
            query_vector = self._embed_query(embedder, q.query)
        except ProviderError as exc:
            return SemanticPart([f"semantic part skipped: {exc.message}; results are lexical only"], None)
        # the scope's packed vectors, built first when missing or stale (outside the recall's read)
        self._refresh_pack_quietly(self.scope(q.persona, q.project), embedder.fingerprint, len(query_vector))

        def vector_search(conn: Connection, filters: RecallFilters, lexical_keys: list[str]) -> SemanticHits:
            return self._semantic_hits(
                conn,
                Scope.trusted(persona=filters.persona, project=filters.project),
                query_vector,
                embedder,
                deep=q.mode == "deep",
                pool_size=min(CANDIDATE_POOL, 2 * q.limit + 10),
                lexical_keys=lexical_keys,
                valid_at_time=filters.at,
                occurred_before=filters.occurred_before,
                kinds=filters.kinds,
                since=filters.since,
                until=filters.until,
                include_raw=q.include_raw,
            )

        return SemanticPart([], vector_search)
