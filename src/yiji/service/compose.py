"""The entry points' composition: :func:`open_service` opens the configured database and builds
:class:`yiji.service.memory_service.MemoryService` (the composition root of every use case) with the
configured providers (:func:`build_extractor`, :func:`build_embedder`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from yiji.config import Config
from yiji.db import IdleCheckpointer
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.errors import InvalidInput
from yiji.service.memory_service import MemoryService
from yiji.service.storage import open_database
from yiji.timeutil import Clock

if TYPE_CHECKING:
    import httpx

    from yiji.providers.embeddings import Embedder
    from yiji.providers.extraction import Extractor

__all__ = [
    "IdleCheckpointer",
    "MemoryService",
    "build_embedder",
    "build_extractor",
    "open_service",
]


def open_service(
    config: Config,
    *,
    clock: Clock | None = None,
    extraction: bool = True,
    notify: Callable[[str], None] | None = None,
    rules: RulePlan = ALL_ON,
) -> MemoryService:
    """The composition root used by the CLI and the MCP server.

    ``extraction=False`` never constructs the extraction provider, whatever the configuration says (host
    capture stores raw events offline).

    yiji's own data folder (the default database's folder) is kept ``0700``: one found readable by
    others is tightened, and ``notify`` is told so. ``rules`` switches extraction word rules off, for
    the extraction bench's measurements only (:mod:`yiji.domain.rule_plan`).
    """
    service = MemoryService(open_database(config, notify), config, clock=clock, rules=rules)
    section = config.extraction
    if extraction and section.base_url and section.model:
        import httpx

        http = httpx.Client(timeout=section.timeout_seconds)
        service.extractor = build_extractor(config, http)
        service.on_close(http.close)
    embedding = config.embedding
    if _embedding_provider(config) == "openai":
        import httpx

        http = httpx.Client(timeout=embedding.timeout_seconds)
        service.embedder = build_embedder(config, http)
        service.on_close(http.close)
    elif _embedding_provider(config) == "local":
        service.embedder = build_embedder(config, None)
    return service


def _embedding_provider(config: Config) -> str:
    """``openai``, ``local`` or ``off``: ``auto`` prefers a configured endpoint, then the offline model."""
    section = config.embedding
    if section.provider == "auto":
        if section.enabled:
            return "openai"
        from yiji.providers.embeddings import local_available

        return "local" if local_available() else "off"
    return section.provider


def build_embedder(config: Config, http: httpx.Client | None) -> Embedder | None:
    """The configured embedder (``None`` when embedding is off); ``http`` is used by the endpoint."""
    from yiji.providers.embeddings import LocalEmbedder, OpenAIEmbedder, local_available

    section = config.embedding
    provider = _embedding_provider(config)
    if provider == "off":
        return None
    if provider == "local":
        if not local_available():
            from yiji.invocation import install_hint

            raise InvalidInput("embedding.provider", f"local needs the embed extra ({install_hint('embed')})")
        return LocalEmbedder(section.version)
    if not (section.base_url and section.model) or http is None:
        raise InvalidInput("embedding.provider", "openai needs embedding.base_url and embedding.model")
    return OpenAIEmbedder(section, http)


def build_extractor(config: Config, http: httpx.Client) -> Extractor:
    """The configured OpenAI-compatible extractor over ``http``."""
    from yiji.providers.extraction import OpenAIExtractor

    return OpenAIExtractor(config.extraction, http)
