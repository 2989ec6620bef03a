"""The context a hook hands its host when a session starts (``yiji hook HOST SessionStart``).

What goes in, in order (shaped and fitted by :mod:`yiji.domain.host_pack`):

1. the persona, for a companion profile only (read without writing: an absent persona is shown as the
   neutral default, never initialized here);
2. the scope's current decisions, preferences and facts (accepted, unrevoked, valid now), newest first,
   each with its time and quote;
3. the scope's newest valid checkpoint a host reported (capture records are left out);
4. the latest conversation turns of the scope;
5. how many proposed memories wait for review.

A session that resumes, continues or was compacted (``source`` ``resume`` or ``compact``) already holds
its own turns and the pack it was given before: its pack leaves out the session's turns and holds only
what the scope gained after the session's last capture; nothing at all when it gained nothing. A
session with no capture yet is treated as a new one.

The pack never writes: the database is opened read-only (:class:`yiji.db.Database` ``read_only``), so it
is read under another process's write lock and from a read-only file. No recall runs here (the model
asks with ``memory_recall`` once it knows what it works on), so the work is a handful of index seeks.
"""

from __future__ import annotations

from yiji.config import Config
from yiji.db import Database
from yiji.domain.capture_goals import CAPTURE_GOALS
from yiji.domain.host_pack import (
    HOST_CONTEXT_CHARS,
    LASTING_KINDS,
    MAX_MEMORIES,
    MAX_TURNS,
    HostPack,
    PackParts,
    PackPersona,
    Profile,
    fit,
)
from yiji.domain.limits import resolve_scope
from yiji.domain.personas import DEFAULT_PERSONA_TEXT
from yiji.store import packs
from yiji.timeutil import Clock, SystemClock, to_db

__all__ = ["SessionStartPack", "open_session_start_pack"]


class SessionStartPack:
    """The session-start pack over one database, read-only."""

    def __init__(self, db: Database, config: Config, *, clock: Clock | None = None) -> None:
        self.db = db
        self.config = config
        self.clock = clock or SystemClock()

    def close(self) -> None:
        self.db.close()

    def pack(  # noqa: PLR0913 - the scope, the session and the reader, all named
        self,
        profile: Profile,
        *,
        persona: str | None,
        project: str | None,
        session: str | None,
        resumed: bool,
    ) -> HostPack | None:
        """The pack for a session of the scope (``resumed``: it continues with its own context), or
        ``None`` when there is nothing to add."""
        persona_id, project_id = resolve_scope(persona, project, (self.config.persona, self.config.project))
        limit = min(self.config.hooks.resume_budget, HOST_CONTEXT_CHARS)
        at = to_db(self.clock.now())
        with self.db.read() as conn:
            mark = (
                packs.session_mark(conn, persona_id, project_id, session)
                if resumed and session is not None
                else None
            )
            memories = packs.lasting_memories(
                conn, persona_id, project_id, LASTING_KINDS, at, MAX_MEMORIES, since=mark
            )
            checkpoint = packs.reported_checkpoint(
                conn, persona_id, project_id, tuple(CAPTURE_GOALS.values()), since=mark
            )
            turns = packs.recent_turns(
                conn,
                persona_id,
                project_id,
                MAX_TURNS,
                leave_out_session=session if resumed else None,
                since=mark,
            )
            if mark is not None and not (memories or checkpoint or turns):
                return None  # nothing new since the session's last capture: it holds the rest
            proposals = packs.proposals_waiting(conn, persona_id, project_id)
            shown_persona = None
            if profile.persona:
                shown_persona = packs.latest_persona(conn, persona_id) or PackPersona(
                    persona_id, 1, DEFAULT_PERSONA_TEXT
                )
        parts = PackParts(
            persona=shown_persona,
            memories=memories,
            checkpoint=checkpoint,
            turns=turns,
            proposals=proposals,
        )
        return fit(parts, profile, limit)


def open_session_start_pack(config: Config) -> SessionStartPack:
    """The composition root of the session-start pack: the configured database, opened read-only."""
    return SessionStartPack(Database(config.db, read_only=True), config)
