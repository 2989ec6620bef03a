"""The one place the tests build a :class:`yiji.service.MemoryService`.

:func:`make_service` builds the service as the composition root (:func:`yiji.service.open_service`)
does, over a real SQLite file, except that the providers are the ones a test hands in (a loopback
endpoint's extractor, a recording embedder) and never the configured ones: a test of the configured
providers opens the service with ``open_service`` itself. When the service's construction changes, this
module is what follows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from yiji.config import Config
from yiji.db import Database
from yiji.service import MemoryService

if TYPE_CHECKING:
    from yiji.providers.embeddings import Embedder
    from yiji.providers.extraction import Extractor
    from yiji.timeutil import Clock

__all__ = ["make_service"]


def make_service(
    db: Path | str | Database | None = None,
    config: Config | None = None,
    *,
    clock: Clock | None = None,
    extractor: Extractor | None = None,
    embedder: Embedder | None = None,
) -> MemoryService:
    """A service over ``db`` (a path, or an open :class:`Database` for its options or to share it), or
    over ``config.db`` when ``db`` is ``None``.

    ``config`` defaults to the configuration of that database alone (``Config(db=...)``); ``clock`` to the
    system clock. ``extractor`` and ``embedder`` are the providers (none by default: a service without
    extraction or vectors). The caller closes the service.
    """
    if db is None:
        if config is None:
            raise TypeError("make_service needs a database or a configuration")
        db = config.db
    if isinstance(db, Database):
        database = db
    else:
        path = Path(db)
        synchronous = config.synchronous if config is not None else Config.synchronous
        database = Database(path, synchronous=synchronous)
    return MemoryService(
        database,
        config if config is not None else Config(db=database.path),
        clock=clock,
        extractor=extractor,
        embedder=embedder,
    )
