"""The ``yiji scopes`` use case: which scopes (persona and project) a database holds, with their counts.

Every other use case works inside one scope, the configured one unless ``--persona``/``--project`` say
otherwise; a scope the hooks filed a folder's sessions under (``atlas-1a2b3c4d``) is found here. Read
only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yiji.service.base import Deps
from yiji.store import capture as capture_store
from yiji.store import scopes as store
from yiji.store.scopes import ScopeRow

__all__ = ["ScopeList", "Scopes", "ScopeRow"]


@dataclass(frozen=True)
class ScopeList:
    """A page of scopes, most recently active first; ``current`` is the scope commands given the same
    ``--persona``/``--project`` use (the configured one when neither is given)."""

    current: dict[str, str]
    current_holds: bool
    """Whether the current scope holds anything (is listed, on this page or another)."""
    total: int
    offset: int
    limit: int
    next_offset: int | None
    scopes: list[ScopeRow]
    unread_transcripts: dict[str, int]
    """Per host, transcripts that showed the model answered but held no conversation yiji reads."""

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "scopes": [s._asdict() for s in self.scopes]}


class Scopes:
    """The scope listing."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope

    def scope_list(
        self, persona: str | None = None, project: str | None = None, *, limit: int = 100, offset: int = 0
    ) -> ScopeList:
        """The scopes the database holds anything in (an event, memory, checkpoint or capture cursor),
        only ``persona``'s or ``project``'s when given, with their counts."""
        current = self.scope(persona, project)
        with self.db.read() as conn:
            rows = store.list_scopes(
                conn,
                persona=persona,
                project=project,
                limit=limit,
                offset=offset,
                roles=self.config.extraction.run_roles,
            )
            total = store.count_scopes(conn, persona=persona, project=project)
            holds = store.count_scopes(conn, persona=current.persona, project=current.project) > 0
            unread = capture_store.unread_counts(conn)
        end = offset + len(rows)
        return ScopeList(
            current={"persona": current.persona, "project": current.project},
            current_holds=holds,
            total=total,
            offset=offset,
            limit=limit,
            next_offset=end if end < total else None,
            scopes=rows,
            unread_transcripts=unread,
        )
