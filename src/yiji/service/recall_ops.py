"""Recall with its semantic part, and the indexes' use cases (:class:`Recaller`).

``recall`` runs the recall use case (:class:`yiji.service.recall.Recall`) with the vectors seam filled: the
query is embedded before the read transaction, and the scope's vectors are scanned inside it
(:class:`yiji.service.vectors.VectorIndex`). ``memory_recall`` is the same call at the boundary: it takes
the boundary query (:class:`yiji.models.recall.RecallQuery`) and returns the same plain result.
``reindex`` rebuilds the lexical index (:class:`yiji.service.indexing.LexicalIndex`), ``vectors_reindex``
the scope's vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from yiji.db import Connection
from yiji.domain import ranking_plan
from yiji.domain.recall import Recalled, RecallRequest
from yiji.errors import ProviderError
from yiji.models.common import Scope
from yiji.models.recall import RecallQuery
from yiji.service.base import Deps
from yiji.service.indexing import LexicalIndex
from yiji.service.progress import ProgressFactory
from yiji.service.recall import Recall, RecallFilters, SemanticPart
from yiji.service.vectors import CANDIDATE_POOL, SemanticHits, VectorIndex

if TYPE_CHECKING:
    from yiji.models.reports import IndexStatus, ReindexResult, VectorsReindexResult, VectorStatus
    from yiji.providers.embeddings import Embedder

__all__ = ["EmbeddedQuery", "Recaller"]


class Recaller:
    """Recall with its semantic part, and the indexes' use cases."""

    def __init__(
        self,
        deps: Deps,
        lexical: LexicalIndex,
        vectors: VectorIndex,
        weights: ranking_plan.Weights = ranking_plan.DEFAULT_WEIGHTS,
    ) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.lexical = lexical
        self.vectors = vectors
        self.lexical_recall = Recall(self.db, self.config, clock=self.clock, weights=weights)
        """The recall use case over the database (it caches term statistics)."""

    # -- the indexes' use cases -------------------------------------------------------------------

    def index_status(self) -> IndexStatus:
        return self.lexical.status()

    def reindex(self, progress: ProgressFactory | None = None) -> ReindexResult:
        """Rebuild the lexical index from the authoritative tables (one transaction)."""
        return self.lexical.reindex(progress)

    def vectors_reindex(
        self,
        persona: str | None = None,
        project: str | None = None,
        progress: ProgressFactory | None = None,
    ) -> VectorsReindexResult:
        """Rebuild the scope's vectors (:meth:`yiji.service.vectors.VectorIndex.reindex`)."""
        return self.vectors.reindex(self.scope(persona, project), progress)

    def vector_status(self, persona: str | None = None, project: str | None = None) -> VectorStatus:
        """The scope's vector coverage for the configured embedder (no embedding work)."""
        return self.vectors.status(self.scope(persona, project))

    # -- recall -----------------------------------------------------------------------------

    def recall(
        self,
        request: RecallRequest,
        exclude_events: frozenset[int] = frozenset(),
        embedded: EmbeddedQuery | None = None,
        *,
        leave_out: frozenset[str] = frozenset(),
        take: int | None = None,
    ) -> Recalled:
        """Recall memories (and labeled raw events) for a query, in any mode; plain data in and out.

        A semantic or deep recall embeds its query before its read transaction; ``embedded`` (from
        :meth:`embed_query`) is a query embedded already, so a caller that recalls inside its own read
        transaction (``session_resume``) makes no network call there. ``leave_out`` and ``take``: see
        :meth:`yiji.service.recall.Recall.recall`."""
        part = self._semantic_part if embedded is None else partial(self._search_part, embedded)
        return self.lexical_recall.recall(
            request, part, exclude_events=exclude_events, leave_out=leave_out, take=take
        )

    def memory_recall(self, q: RecallQuery) -> Recalled:
        """Recall memories (and labeled raw events) for a query; each item explains its score."""
        return self.recall(q.request())

    def embed_query(self, query: str, scope: Scope, *, refresh_pack: bool = True) -> EmbeddedQuery:
        """Embed ``query`` for the configured embedder, with no transaction open (an HTTP call when an
        endpoint is configured). With ``refresh_pack`` the scope's packed vectors are built first when
        missing or stale; without, a recall reads what is there (row by row when there is no pack)."""
        vectors = self.vectors
        embedder = vectors.require_embedder()
        try:
            vector = vectors.embed_query(embedder, query)
        except ProviderError as exc:
            return EmbeddedQuery(
                embedder, None, [f"semantic part skipped: {exc.message}; results are lexical only"]
            )
        if refresh_pack:
            vectors.refresh_pack_quietly(scope, embedder.fingerprint, len(vector))
        return EmbeddedQuery(embedder, vector, [])

    def _semantic_part(self, q: RecallRequest) -> SemanticPart:
        """Embed the query (no transaction is open) and offer the scan of the scope's vectors."""
        return self._search_part(self.embed_query(q.query, self.scope(q.persona, q.project)), q)

    def _search_part(self, embedded: EmbeddedQuery, q: RecallRequest) -> SemanticPart:
        """The scan of the scope's vectors for a query already embedded (run inside the recall's read)."""
        query_vector = embedded.vector
        if query_vector is None:
            return SemanticPart(list(embedded.warnings), None)
        vectors, embedder = self.vectors, embedded.embedder

        def vector_search(conn: Connection, filters: RecallFilters, lexical_keys: list[str]) -> SemanticHits:
            return vectors.semantic_hits(
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


@dataclass(frozen=True)
class EmbeddedQuery:
    """A recall query embedded ahead of its read transaction: the embedder, the unit query vector
    (``None`` when embedding failed) and the warnings that say so."""

    embedder: Embedder
    vector: Any
    warnings: list[str]
