"""The service's shared state: database, configuration, clock, providers, and scope resolution."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from yiji.config import Config
from yiji.db import Database
from yiji.domain.limits import resolve_scope
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.models.common import Scope
from yiji.service.event_writer import EventWriter
from yiji.service.indexing import LexicalIndex
from yiji.service.progress import Progress, ProgressFactory, collector_paused, progress_bar
from yiji.service.redaction import ConfiguredRedactor
from yiji.service.vectors import VectorIndex
from yiji.timeutil import Clock, SystemClock

if TYPE_CHECKING:  # the providers are imported where they are built (yiji.service.compose)
    from yiji.domain.secrets import Redactor
    from yiji.domain.validation import MemoryCandidate
    from yiji.providers.embeddings import Embedder
    from yiji.providers.extraction import Extractor

GENERATED_ID = re.compile(r"[a-z]+_[0-9a-f]{32}")

__all__ = ["Progress", "ProgressFactory", "ServiceBase", "collector_paused", "progress_bar"]


MAX_REMEMBERED_SCOPES = 256


class ServiceBase:
    """State every use case needs. Use-case methods live in the mixins of :mod:`yiji.service`."""

    def __init__(
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
        self.config = config or Config(db=db.path)
        self.clock = clock or SystemClock()
        self.extractor: Extractor | None = extractor
        self.lexical_index = LexicalIndex(db)
        """The FTS5 index; every writer updates it in its own transaction."""
        self._redactor = ConfiguredRedactor(self.config)
        self.event_writer = EventWriter(self._redactor, self.lexical_index)
        """The one writer of new events (:mod:`yiji.service.event_writer`)."""
        self.vector_index = VectorIndex(db, self.config, self.clock, embedder)
        """The vector cache for the configured embedder."""
        self.rules = rules
        """The extraction word rules switched off (none, but when the extraction bench measures one)."""
        self._closers: list[Callable[[], None]] = []
        self._scopes: dict[tuple[str | None, str | None, str, str], Scope] = {}

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder (``None``: embedding is off); setting it starts a new vector cache."""
        return self.vector_index.embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        self.vector_index = VectorIndex(self.db, self.config, self.clock, value)

    def known_secrets(self) -> tuple[str, ...]:
        """Credential values the configuration knows (the API keys it names): never stored in a memory."""
        names = {self.config.extraction.api_key_env, self.config.embedding.api_key_env}
        return tuple(v for v in (os.environ.get(n) for n in names if n) if v)

    @property
    def redactor(self) -> Redactor:
        """What replaces secrets in an event's text before it is stored (``[redaction]``); built when
        first used."""
        return self._redactor.get()

    def redacted_candidate(self, candidate: MemoryCandidate) -> MemoryCandidate:
        """``candidate`` with secrets replaced in its text, quote and gist, as in its source event's text
        (so a quote copied from the text as submitted still matches the text as stored)."""
        import dataclasses

        redact = self.redactor.redact
        text, quote = redact(candidate.text).text, redact(candidate.quote).text
        gist = None if candidate.gist is None else redact(candidate.gist).text
        if (text, quote, gist) == (candidate.text, candidate.quote, candidate.gist):
            return candidate
        return dataclasses.replace(candidate, text=text, quote=quote, gist=gist)

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

    def scope(self, persona: str | None = None, project: str | None = None) -> Scope:
        """Resolve a scope, filling omitted parts from configuration; validates the identifiers.

        Resolved scopes are remembered (a few hundred at most): every use case resolves one per call.
        """
        key = (persona, project, self.config.persona, self.config.project)
        scope = self._scopes.get(key)
        if scope is None:
            p, q = resolve_scope(persona, project, key[2:])
            scope = Scope.trusted(persona=p, project=q)  # both checked by resolve_scope
            if len(self._scopes) >= MAX_REMEMBERED_SCOPES:
                self._scopes.clear()
            self._scopes[key] = scope
        return scope

    @staticmethod
    def new_id(prefix: str) -> str:
        return f"{prefix}_{uuid.uuid4().hex}"

    @staticmethod
    def is_generated_id(text: str) -> bool:
        """Whether ``text`` has the shape of an id :meth:`new_id` makes: random, so never a secret to hide."""
        return GENERATED_ID.fullmatch(text) is not None
