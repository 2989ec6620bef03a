"""The service layer: one method per use case, owning transactions.

Adapters (CLI, MCP, host capture) build a :class:`MemoryService` once through :func:`open_service` and make
one call per request. Use cases are grouped in mixins by area; they share :class:`ServiceBase` state.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from yiji.config import Config, default_db_path
from yiji.db import Database
from yiji.fileutil import tighten_folder
from yiji.providers.extraction import ExtractionConfig as ProviderExtractionConfig
from yiji.providers.extraction import Extractor, OpenAIExtractor
from yiji.service.archive import ArchiveOps
from yiji.service.base import ServiceBase
from yiji.service.capture import CaptureOps
from yiji.service.checkpoints import CheckpointOps
from yiji.service.events import EventOps
from yiji.service.extraction import ExtractionOps
from yiji.service.health import HealthOps
from yiji.service.lifecycle import LifecycleOps
from yiji.service.memories import MemoryOps
from yiji.service.personas import PersonaOps
from yiji.service.recall import RecallOps
from yiji.service.resume import ResumeOps
from yiji.timeutil import Clock

__all__ = ["MemoryService", "ServiceBase", "build_extractor", "open_service"]


class MemoryService(
    ResumeOps,
    PersonaOps,
    ExtractionOps,
    RecallOps,
    LifecycleOps,
    MemoryOps,
    CaptureOps,
    EventOps,
    CheckpointOps,
    HealthOps,
    ArchiveOps,
):
    """Every use case of yiji, over one database."""


def open_service(
    config: Config,
    *,
    clock: Clock | None = None,
    extraction: bool = True,
    notify: Callable[[str], None] | None = None,
) -> MemoryService:
    """The composition root used by the CLI and the MCP server.

    ``extraction=False`` never constructs the extraction provider, whatever the configuration says (host
    capture stores raw events offline).

    yiji's own data folder (the default database's folder) is kept ``0700``: one found readable by
    others is tightened, and ``notify`` is told so.
    """
    data_dir = default_db_path().parent
    if config.db.expanduser().parent == data_dir:
        notice = tighten_folder(data_dir)
        if notice and notify is not None:
            notify(notice)
    db = Database(config.db, synchronous=config.synchronous)
    service = MemoryService(db, config, clock=clock)
    section = config.extraction
    if extraction and section.base_url and section.model:
        http = httpx.Client(timeout=section.timeout_seconds)
        service.extractor = build_extractor(config, http)
        service.on_close(http.close)
    return service


def build_extractor(config: Config, http: httpx.Client) -> Extractor:
    """The configured OpenAI-compatible extractor over ``http``."""
    section = config.extraction
    assert section.base_url and section.model
    provider_config = ProviderExtractionConfig(
        base_url=section.base_url,
        model=section.model,
        api_key_env=section.api_key_env,
        timeout=section.timeout_seconds,
    )
    return OpenAIExtractor(provider_config, http)
