"""What every use case depends on, in one small frozen object: :class:`Deps` (the database, the clock, the
configuration, the scope resolver, the redactor, the extractor and the extraction word rules).

It is built once, by the composition root (:class:`yiji.service.compose.MemoryService`), and handed to every
use case's constructor with the collaborators that use case names.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from yiji.config import Config
from yiji.db import Database
from yiji.domain.limits import resolve_scope
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.models.common import Scope
from yiji.service.progress import Progress, ProgressFactory, collector_paused, progress_bar
from yiji.service.redaction import ConfiguredRedactor
from yiji.timeutil import Clock

if TYPE_CHECKING:  # the providers are imported where they are built (yiji.service.compose)
    from yiji.domain.validation import MemoryCandidate
    from yiji.providers.extraction import Extractor

GENERATED_ID = re.compile(r"[a-z]+_[0-9a-f]{32}")

__all__ = [
    "Deps",
    "Progress",
    "ProgressFactory",
    "ScopeResolver",
    "collector_paused",
    "is_generated_id",
    "new_id",
    "progress_bar",
]

MAX_REMEMBERED_SCOPES = 256


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def is_generated_id(text: str) -> bool:
    """Whether ``text`` has the shape of an id :func:`new_id` makes: random, so never a secret to hide."""
    return GENERATED_ID.fullmatch(text) is not None


class ScopeResolver:
    """Resolves a scope, filling omitted parts from the configured defaults; validates the identifiers.

    Resolved scopes are remembered (a few hundred at most): every use case resolves one per call."""

    def __init__(self, persona: str, project: str) -> None:
        self._defaults = (persona, project)
        self._scopes: dict[tuple[str | None, str | None], Scope] = {}

    def __call__(self, persona: str | None = None, project: str | None = None) -> Scope:
        key = (persona, project)
        scope = self._scopes.get(key)
        if scope is None:
            p, q = resolve_scope(persona, project, self._defaults)
            scope = Scope.trusted(persona=p, project=q)  # both checked by resolve_scope
            if len(self._scopes) >= MAX_REMEMBERED_SCOPES:
                self._scopes.clear()
            self._scopes[key] = scope
        return scope


@dataclass(frozen=True)
class Deps:
    """The dependencies every use case shares. ``rules``: the extraction word rules switched off (none,
    but when the extraction bench measures one)."""

    db: Database
    config: Config
    clock: Clock
    scope: ScopeResolver
    redactor: ConfiguredRedactor
    extractor: Extractor | None = None
    rules: RulePlan = ALL_ON

    def known_secrets(self) -> tuple[str, ...]:
        """Credential values the configuration knows (the API keys it names): never stored in a memory."""
        names = {self.config.extraction.api_key_env, self.config.embedding.api_key_env}
        return tuple(v for v in (os.environ.get(n) for n in names if n) if v)

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
