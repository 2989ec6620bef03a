"""Opening the configured database for a use case (shared by :func:`yiji.service.open_service` and the
host capture, which opens it without the rest of the service)."""

from __future__ import annotations

from collections.abc import Callable

from yiji.config import Config, default_db_path
from yiji.db import Database
from yiji.fileutil import tighten_folder

__all__ = ["open_database"]


def open_database(config: Config, notify: Callable[[str], None] | None = None) -> Database:
    """The configured database, migrated on open.

    yiji's own data folder (the default database's folder) is kept ``0700``: one found readable by
    others is tightened, and ``notify`` is told so.
    """
    data_dir = default_db_path().parent
    if config.db.expanduser().parent == data_dir:
        notice = tighten_folder(data_dir)
        if notice and notify is not None:
            notify(notice)
    return Database(config.db, synchronous=config.synchronous)
