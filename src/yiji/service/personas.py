"""Persona use cases: read (initializing the neutral default), set, history, rollback."""

from __future__ import annotations

from yiji.domain.personas import DEFAULT_PERSONA_TEXT
from yiji.errors import InvalidInput, NotFound
from yiji.models.personas import MAX_PERSONA_TEXT, PersonaRecord
from yiji.service.base import Deps
from yiji.store import personas as store
from yiji.timeutil import to_db

__all__ = ["DEFAULT_PERSONA_TEXT", "Personas"]


class Personas:
    """The persona use cases."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope

    def persona_get(self, persona: str | None = None) -> PersonaRecord:
        """The latest version; an absent persona is initialized with the neutral default (version 1)."""
        pid = self.scope(persona, None).persona
        with self.db.read() as conn:
            found = store.get_latest(conn, pid)
        if found is not None:
            return found
        with self.db.write() as conn:
            found = store.get_latest(conn, pid)  # another writer may have initialized it
            if found is not None:
                return found
            return store.append_version(
                conn, pid, DEFAULT_PERSONA_TEXT, "neutral default", to_db(self.clock.now())
            )

    def persona_set(self, text: str, persona: str | None = None) -> PersonaRecord:
        """Append a new version with ``text``; earlier versions stay as they were."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("text", "must not be empty or whitespace only")
        if len(text) > MAX_PERSONA_TEXT:
            raise InvalidInput("text", f"must be at most {MAX_PERSONA_TEXT} characters")
        pid = self.scope(persona, None).persona
        self.persona_get(pid)
        with self.db.write() as conn:
            return store.append_version(conn, pid, text, None, to_db(self.clock.now()))

    def persona_history(self, persona: str | None = None) -> list[PersonaRecord]:
        pid = self.scope(persona, None).persona
        self.persona_get(pid)
        with self.db.read() as conn:
            return store.history(conn, pid)

    def persona_rollback(self, to_version: int, persona: str | None = None) -> PersonaRecord:
        """Append a new version equal to version ``to_version``; history is never rewritten."""
        pid = self.scope(persona, None).persona
        if not isinstance(to_version, int) or to_version < 1:
            raise InvalidInput("to", "must be a version number >= 1")
        self.persona_get(pid)
        with self.db.write() as conn:
            target = store.get_version(conn, pid, to_version)
            if target is None:
                raise NotFound("persona version", "to", key="number")
            return store.append_version(
                conn, pid, target.text, f"rollback to version {to_version}", to_db(self.clock.now())
            )
