"""The composition root: :class:`MemoryService` builds every use case once, over one :class:`Deps`, and
offers each public method as a one-line delegation (:func:`yiji.service.compose.open_service` builds it
with the configured providers).

Each use case is an object that names its collaborators in its constructor (:mod:`yiji.service.events`,
:mod:`yiji.service.memories`, ...); the lexical and vector indexes are objects of their own
(:class:`LexicalIndex`, :class:`VectorIndex`), and every event is stored by one :class:`EventWriter`.
Setting ``config``, ``clock``, ``extractor``, ``embedder``, ``rules`` or ``ranking_weights`` builds the
whole composition again (caches start empty).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from yiji.config import Config
from yiji.db import Database
from yiji.domain import ranking_plan
from yiji.domain.capture import CaptureBatch, CaptureResult
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.models.common import Scope
from yiji.service.archive import Archives
from yiji.service.base import Deps, ProgressFactory, ScopeResolver, is_generated_id, new_id
from yiji.service.capture import HostCapture
from yiji.service.checkpoints import Checkpoints
from yiji.service.conversations import Conversations
from yiji.service.event_writer import EventWriter
from yiji.service.events import IMPORT_BATCH, Events
from yiji.service.extraction import Extraction
from yiji.service.health import Health
from yiji.service.indexing import LexicalIndex
from yiji.service.lifecycle import Lifecycle
from yiji.service.memories import READ_PAGE, Memories
from yiji.service.personas import Personas
from yiji.service.recall_ops import Recaller
from yiji.service.redaction import ConfiguredRedactor
from yiji.service.remember import Remember
from yiji.service.resume import Resume
from yiji.service.review import Action, Review
from yiji.service.scopes import ScopeList, Scopes
from yiji.service.secret_scan import SecretScan
from yiji.service.vectors import VectorIndex
from yiji.timeutil import Clock, SystemClock

if TYPE_CHECKING:
    from yiji.domain.forgetting import Presentation
    from yiji.domain.recall import Recalled, RecallRequest
    from yiji.domain.secrets import Redactor
    from yiji.domain.validation import MemoryCandidate, Violation
    from yiji.models.archive import ArchiveResult
    from yiji.models.checkpoints import CheckpointIn, CheckpointResult, CheckpointView
    from yiji.models.conversations import ConversationPage, ConversationQuery, SessionPage, SessionQuery
    from yiji.models.events import EventFilter, EventIn, EventPage, EventRecord, ImportSummary, SubmitResult
    from yiji.models.lifecycle import (
        CorrectRequest,
        CorrectResult,
        DeleteRequest,
        DeleteResult,
        EmotionResult,
    )
    from yiji.models.memories import (
        DeriveRequest,
        DeriveResult,
        ListedMemory,
        MemoryPage,
        MemoryQuery,
        MemoryRecord,
        Rejection,
        RememberRequest,
        RememberResult,
        ReviewEdit,
        ReviewResult,
    )
    from yiji.models.personas import PersonaRecord
    from yiji.models.recall import RecallQuery
    from yiji.models.reports import (
        DoctorReport,
        ExtractionRetry,
        ExtractionRun,
        IndexStatus,
        MemoryEvidence,
        ReindexResult,
        ReviewAllResult,
        ReviewContext,
        ReviewQueue,
        SecretRedaction,
        SecretScanReport,
        VectorsReindexResult,
        VectorStatus,
    )
    from yiji.models.resume import ResumeRequest, ResumeResult
    from yiji.providers.embeddings import Embedder
    from yiji.providers.extraction import Extractor

__all__ = ["MemoryService"]


class MemoryService:
    """Every use case of yiji over one database: the composition root, and a facade of one-line
    delegations to the use cases it built."""

    def __init__(  # noqa: PLR0913 - the database and what the composition is built from, all named
        self,
        db: Database,
        config: Config | None = None,
        *,
        clock: Clock | None = None,
        extractor: Extractor | None = None,
        embedder: Embedder | None = None,
        rules: RulePlan = ALL_ON,
    ) -> None:
        self.db = db
        self._closers: list[Callable[[], None]] = []
        self._compose(config or Config(db=db.path), clock or SystemClock(), extractor, embedder, rules)

    def _compose(  # noqa: PLR0913 - what the composition is built from, all named
        self,
        config: Config,
        clock: Clock,
        extractor: Extractor | None,
        embedder: Embedder | None,
        rules: RulePlan,
        weights: ranking_plan.Weights = ranking_plan.DEFAULT_WEIGHTS,
    ) -> None:
        """Build every part once: the dependencies, the two indexes, the event writer and the use cases."""
        deps = Deps(
            self.db,
            config,
            clock,
            ScopeResolver(config.persona, config.project),
            ConfiguredRedactor(config),
            extractor,
            rules,
        )
        self._deps = deps
        self.lexical_index = LexicalIndex(self.db)
        """The FTS5 index; every writer updates it in its own transaction."""
        self.vector_index = VectorIndex(self.db, config, clock, embedder)
        """The vector cache for the configured embedder (the benchmarks use its public methods)."""
        self.event_writer = EventWriter(deps.redactor, self.lexical_index)
        """The one writer of new events (:mod:`yiji.service.event_writer`)."""
        self._events = Events(deps, self.event_writer)
        self._memories = Memories(deps, self.lexical_index)
        self._personas = Personas(deps)
        self._checkpoints = Checkpoints(deps)
        self._conversations = Conversations(deps)
        self._scopes = Scopes(deps)
        self._health = Health(deps)
        self._secret_scan = SecretScan(deps, self.lexical_index)
        self._archives = Archives(deps, self.lexical_index)
        self._recaller = Recaller(deps, self.lexical_index, self.vector_index, weights)
        self._extraction = Extraction(deps, self._events, self._memories, self.vector_index)
        self._lifecycle = Lifecycle(deps, self._events, self._memories)
        self._remember = Remember(deps, self._events, self._memories)
        self._review = Review(deps, self._memories)
        self._resume = Resume(
            deps,
            self._personas,
            self._recaller,
            self._lifecycle,
            self._memories,
            self._checkpoints,
            self.vector_index,
        )
        self._capture = HostCapture(
            self.db,
            persona=config.persona,
            project=config.project,
            clock=clock,
            extraction_pending=extractor is not None,
            writer=self.event_writer,
        )
        self._weights = weights

    def _recompose(self, config: Config | None = None, clock: Clock | None = None) -> None:
        self._compose(
            config or self.config,
            clock or self.clock,
            self.extractor,
            self.embedder,
            self.rules,
            self._weights,
        )

    # -- what the composition is built from ------------------------------------------------------

    @property
    def config(self) -> Config:
        return self._deps.config

    @config.setter
    def config(self, value: Config) -> None:
        self._recompose(config=value)

    @property
    def clock(self) -> Clock:
        return self._deps.clock

    @clock.setter
    def clock(self, value: Clock) -> None:
        self._recompose(clock=value)

    @property
    def extractor(self) -> Extractor | None:
        return self._deps.extractor

    @extractor.setter
    def extractor(self, value: Extractor | None) -> None:
        self._compose(self.config, self.clock, value, self.embedder, self.rules, self._weights)

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder (``None``: embedding is off)."""
        return self.vector_index.embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        self._compose(self.config, self.clock, self.extractor, value, self.rules, self._weights)

    @property
    def rules(self) -> RulePlan:
        """The extraction word rules switched off (none, but when the extraction bench measures one)."""
        return self._deps.rules

    @rules.setter
    def rules(self, value: RulePlan) -> None:
        self._compose(self.config, self.clock, self.extractor, self.embedder, value, self._weights)

    @property
    def ranking_weights(self) -> ranking_plan.Weights:
        """The ranking's weights (the freshness half-life comes from the configuration)."""
        return self._weights

    @ranking_weights.setter
    def ranking_weights(self, value: ranking_plan.Weights) -> None:
        self._compose(self.config, self.clock, self.extractor, self.embedder, self.rules, value)

    @property
    def redactor(self) -> Redactor:
        """What replaces secrets in an event's text before it is stored (``[redaction]``); built when
        first used."""
        return self._deps.redactor.get()

    # -- resources ---------------------------------------------------------------------------------

    def on_close(self, closer: Callable[[], None]) -> None:
        """Register a resource (an HTTP client, say) to release when the service closes."""
        self._closers.append(closer)

    def close(self) -> None:
        for closer in self._closers:
            closer()
        self._closers.clear()
        self.db.close()

    def check_database(self) -> None:
        """Raise :class:`yiji.errors.DatabaseGone` when the database file was deleted, moved or replaced
        since it was opened (a long-running adapter checks before each request)."""
        self.db.check_file()

    # -- shared helpers ----------------------------------------------------------------------------

    def scope(self, persona: str | None = None, project: str | None = None) -> Scope:
        return self._deps.scope(persona, project)

    @staticmethod
    def new_id(prefix: str) -> str:
        return new_id(prefix)

    @staticmethod
    def is_generated_id(text: str) -> bool:
        return is_generated_id(text)

    def known_secrets(self) -> tuple[str, ...]:
        return self._deps.known_secrets()

    def redacted_candidate(self, candidate: MemoryCandidate) -> MemoryCandidate:
        return self._deps.redacted_candidate(candidate)

    def host_ingest(self, batch: CaptureBatch) -> CaptureResult:
        """Host capture (:class:`yiji.service.capture.HostCapture`) over this service's database: events
        wait for extraction when an extractor is configured."""
        return self._capture.ingest(batch)

    # -- the use cases -----------------------------------------------------------------------------

    def archive_export(
        self, path: str | os.PathLike[str], fmt: str = "json", *, progress: ProgressFactory | None = None
    ) -> ArchiveResult:
        return self._archives.archive_export(path, fmt, progress=progress)

    def archive_import(
        self, path: str | os.PathLike[str], fmt: str | None = None, *, progress: ProgressFactory | None = None
    ) -> ArchiveResult:
        return self._archives.archive_import(path, fmt, progress=progress)

    def backup_create(self, path: str | os.PathLike[str]) -> ArchiveResult:
        return self._archives.backup_create(path)

    def backup_restore(
        self, path: str | os.PathLike[str], *, progress: ProgressFactory | None = None
    ) -> ArchiveResult:
        return self._archives.backup_restore(path, progress=progress)

    def checkpoint_save(self, checkpoint: CheckpointIn) -> CheckpointResult:
        return self._checkpoints.checkpoint_save(checkpoint)

    def checkpoint_show(
        self,
        session: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        history: bool = False,
        limit: int = 100,
    ) -> CheckpointView:
        return self._checkpoints.checkpoint_show(
            session, persona=persona, project=project, history=history, limit=limit
        )

    def conversation_page(self, query: ConversationQuery) -> ConversationPage:
        return self._conversations.conversation_page(query)

    def current_emotion(self, persona: str | None = None, project: str | None = None) -> EmotionResult:
        return self._lifecycle.current_emotion(persona, project)

    def doctor(self, scan_for: Sequence[str] = (), *, clean: bool = False) -> DoctorReport:
        return self._health.doctor(scan_for, clean=clean)

    def event_import(
        self,
        path: str | os.PathLike[str],
        *,
        persona: str | None = None,
        project: str | None = None,
        batch_size: int = IMPORT_BATCH,
        progress: ProgressFactory | None = None,
    ) -> ImportSummary:
        return self._events.event_import(
            path, persona=persona, project=project, batch_size=batch_size, progress=progress
        )

    def event_list(self, query: EventFilter) -> tuple[Scope, list[EventRecord]]:
        return self._events.event_list(query)

    def event_page(self, query: EventFilter, *, count: bool = True) -> EventPage:
        return self._events.event_page(query, count=count)

    def event_show(
        self, event_id: str, persona: str | None = None, project: str | None = None
    ) -> EventRecord:
        return self._events.event_show(event_id, persona, project)

    def event_submit(self, event: EventIn) -> SubmitResult:
        return self._extraction.event_submit(event)

    def event_submit_many(self, events: list[EventIn]) -> list[SubmitResult]:
        return self._events.event_submit_many(events)

    def events_with_proposals(
        self, event_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> set[str]:
        return self._review.events_with_proposals(event_ids, persona, project)

    def extraction_counts(self, persona: str | None = None, project: str | None = None) -> dict[str, int]:
        return self._extraction.extraction_counts(persona, project)

    def extraction_retry(
        self,
        event_id: str | None = None,
        *,
        persona: str | None = None,
        project: str | None = None,
        limit: int = 100,
    ) -> ExtractionRetry:
        return self._extraction.extraction_retry(event_id, persona=persona, project=project, limit=limit)

    def extraction_retry_all(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        batch_size: int = 50,
        progress: ProgressFactory | None = None,
    ) -> ExtractionRetry:
        return self._extraction.extraction_retry_all(
            persona=persona, project=project, batch_size=batch_size, progress=progress
        )

    def extraction_run(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        every_scope: bool = False,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        roles: Sequence[str] | None = None,
        limit: int | None = None,
        dry_run: bool = False,
        time_limit: float | None = None,
        progress: ProgressFactory | None = None,
        offline_vectors: bool = True,
    ) -> ExtractionRun:
        return self._extraction.extraction_run(
            persona=persona,
            project=project,
            every_scope=every_scope,
            session=session,
            since=since,
            until=until,
            roles=roles,
            limit=limit,
            dry_run=dry_run,
            time_limit=time_limit,
            progress=progress,
            offline_vectors=offline_vectors,
        )

    def fact_history(
        self, subject: str, fact_key: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]:
        return self._memories.fact_history(subject, fact_key, persona, project)

    def index_status(self) -> IndexStatus:
        return self._recaller.index_status()

    def memory_correct(self, request: CorrectRequest) -> CorrectResult:
        return self._lifecycle.memory_correct(request)

    def memory_delete(self, request: DeleteRequest) -> DeleteResult:
        return self._lifecycle.memory_delete(request)

    def memory_derive(self, request: DeriveRequest) -> DeriveResult:
        return self._memories.memory_derive(request)

    def memory_derive_many(self, requests: Sequence[DeriveRequest]) -> list[DeriveResult]:
        return self._memories.memory_derive_many(requests)

    def memory_get(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> MemoryRecord:
        return self._memories.memory_get(memory_id, persona, project)

    def memory_get_many(
        self, memory_ids: Sequence[str], persona: str | None = None, project: str | None = None
    ) -> dict[str, MemoryRecord]:
        return self._memories.memory_get_many(memory_ids, persona, project)

    def memory_lineage(
        self, memory_id: str, persona: str | None = None, project: str | None = None
    ) -> list[MemoryRecord]:
        return self._memories.memory_lineage(memory_id, persona, project)

    def memory_list(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        kinds: Sequence[str] | None = None,
        subject: str | None = None,
        fact_key: str | None = None,
        as_of: datetime | None = None,
        include_history: bool = False,
        include_revoked: bool = False,
        limit: int = 100,
    ) -> tuple[Scope, list[ListedMemory]]:
        return self._memories.memory_list(
            persona=persona,
            project=project,
            kinds=kinds,
            subject=subject,
            fact_key=fact_key,
            as_of=as_of,
            include_history=include_history,
            include_revoked=include_revoked,
            limit=limit,
        )

    def memory_page(self, query: MemoryQuery) -> MemoryPage:
        return self._memories.memory_page(query)

    def memory_read(
        self,
        memory_id: str,
        *,
        persona: str | None = None,
        project: str | None = None,
        offset: int = 0,
        limit: int = READ_PAGE,
    ) -> MemoryEvidence:
        return self._memories.memory_read(
            memory_id, persona=persona, project=project, offset=offset, limit=limit
        )

    def memory_recall(self, q: RecallQuery) -> Recalled:
        return self._recaller.memory_recall(q)

    def memory_remember(self, request: RememberRequest) -> RememberResult:
        return self._remember.memory_remember(request)

    def memory_review(
        self,
        memory_id: str,
        action: Action,
        *,
        persona: str | None = None,
        project: str | None = None,
        reviewer: str,
        note: str | None = None,
        edit: ReviewEdit | None = None,
        accept: bool = False,
    ) -> ReviewResult:
        return self._review.memory_review(
            memory_id,
            action,
            persona=persona,
            project=project,
            reviewer=reviewer,
            note=note,
            edit=edit,
            accept=accept,
        )

    def memory_review_all(
        self,
        action: Literal["accept", "reject"],
        *,
        persona: str | None = None,
        project: str | None = None,
        reviewer: str,
        note: str | None = None,
    ) -> ReviewAllResult:
        return self._review.memory_review_all(
            action, persona=persona, project=project, reviewer=reviewer, note=note
        )

    def persona_get(self, persona: str | None = None) -> PersonaRecord:
        return self._personas.persona_get(persona)

    def persona_history(self, persona: str | None = None) -> list[PersonaRecord]:
        return self._personas.persona_history(persona)

    def persona_rollback(self, to_version: int, persona: str | None = None) -> PersonaRecord:
        return self._personas.persona_rollback(to_version, persona)

    def persona_set(self, text: str, persona: str | None = None) -> PersonaRecord:
        return self._personas.persona_set(text, persona)

    def present_memory(self, record: MemoryRecord, now: datetime) -> Presentation:
        return self._memories.present_memory(record, now)

    def recall(self, request: RecallRequest, exclude_events: frozenset[int] = frozenset()) -> Recalled:
        return self._recaller.recall(request, exclude_events)

    def redact_stored_secrets(self) -> SecretRedaction:
        return self._secret_scan.redact_stored_secrets()

    def reindex(self, progress: ProgressFactory | None = None) -> ReindexResult:
        return self._recaller.reindex(progress)

    @staticmethod
    def rejections(verdicts: Sequence[Sequence[Violation]]) -> list[Rejection]:
        return Memories.rejections(verdicts)

    def review_context(
        self, memory_id: str, *, persona: str | None = None, project: str | None = None, turns: int = 3
    ) -> ReviewContext:
        return self._review.review_context(memory_id, persona=persona, project=project, turns=turns)

    def review_counts(self, persona: str | None = None, project: str | None = None) -> dict[str, int]:
        return self._review.review_counts(persona, project)

    def review_queue(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> ReviewQueue:
        return self._review.review_queue(persona=persona, project=project, limit=limit, after=after)

    def review_waiting(self, persona: str | None = None, project: str | None = None) -> int:
        return self._review.review_waiting(persona, project)

    def scope_list(
        self, persona: str | None = None, project: str | None = None, *, limit: int = 100, offset: int = 0
    ) -> ScopeList:
        return self._scopes.scope_list(persona, project, limit=limit, offset=offset)

    def secret_scan(self) -> SecretScanReport:
        return self._secret_scan.secret_scan()

    def session_page(self, query: SessionQuery) -> SessionPage:
        return self._conversations.session_page(query)

    def session_resume(self, request: ResumeRequest) -> ResumeResult:
        return self._resume.session_resume(request)

    def vector_status(self, persona: str | None = None, project: str | None = None) -> VectorStatus:
        return self._recaller.vector_status(persona, project)

    def vectors_reindex(
        self, persona: str | None = None, project: str | None = None, progress: ProgressFactory | None = None
    ) -> VectorsReindexResult:
        return self._recaller.vectors_reindex(persona, project, progress)
