"""Recall with its semantic part, and the indexes' use cases (:class:`Recaller`).

``recall`` runs the recall use case (:class:`yiji.service.recall.Recall`) with the vectors seam filled: the
query is embedded before the read transaction, and the scope's vectors are scanned inside it
(:class:`yiji.service.vectors.VectorIndex`). ``memory_recall`` is the same call at the boundary: it takes
and returns the pydantic models (:mod:`yiji.models.recall`) that the MCP server, the review UI and
``session_resume`` use. ``reindex`` rebuilds the lexical index (:class:`yiji.service.indexing.LexicalIndex`),
``vectors_reindex`` the scope's vectors.
"""

from __future__ import annotations

from typing import Any

from yiji.db import Connection
from yiji.domain import ranking_plan
from yiji.domain.recall import Recalled, RecallRequest
from yiji.errors import ProviderError
from yiji.models.common import Scope
from yiji.models.recall import RecallQuery, RecallResult, recall_result
from yiji.service.base import Deps
from yiji.service.indexing import LexicalIndex
from yiji.service.progress import ProgressFactory
from yiji.service.recall import Recall, RecallFilters, SemanticPart
from yiji.service.vectors import CANDIDATE_POOL, SemanticHits, VectorIndex

__all__ = ["Recaller"]


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

    def index_status(self) -> dict[str, Any]:
        return self.lexical.status()

    def reindex(self, progress: ProgressFactory | None = None) -> dict[str, Any]:
        """Rebuild the lexical index from the authoritative tables (one transaction)."""
        return self.lexical.reindex(progress)

    def vectors_reindex(
        self,
        persona: str | None = None,
        project: str | None = None,
        progress: ProgressFactory | None = None,
    ) -> dict[str, Any]:
        """Rebuild the scope's vectors (:meth:`yiji.service.vectors.VectorIndex.reindex`)."""
        return self.vectors.reindex(self.scope(persona, project), progress)

    def vector_status(self, persona: str | None = None, project: str | None = None) -> dict[str, Any]:
        """The scope's vector coverage for the configured embedder (no embedding work)."""
        return self.vectors.status(self.scope(persona, project))

    # -- recall -----------------------------------------------------------------------------

    def recall(self, request: RecallRequest, exclude_events: frozenset[int] = frozenset()) -> Recalled:
        """Recall memories (and labeled raw events) for a query, in any mode; plain data in and out."""
        return self.lexical_recall.recall(request, self._semantic_part, exclude_events=exclude_events)

    def memory_recall(self, q: RecallQuery) -> RecallResult:
        """Recall memories (and labeled raw events) for a query; each item explains its score."""
        return recall_result(self.recall(q.request()))

    def _semantic_part(self, q: RecallRequest) -> SemanticPart:
        """Embed the query (no transaction is open) and offer the scan of the scope's vectors."""
        vectors = self.vectors
        embedder = vectors.require_embedder()
        try:
            query_vector = vectors.embed_query(embedder, q.query)
        except ProviderError as exc:
            return SemanticPart([f"semantic part skipped: {exc.message}; results are lexical only"], None)
        # the scope's packed vectors, built first when missing or stale (outside the recall's read)
        scope = self.scope(q.persona, q.project)
        vectors.refresh_pack_quietly(scope, embedder.fingerprint, len(query_vector))

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
