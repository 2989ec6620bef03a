"""Reading a scope's conversations: its sessions, and one session's events in order with the memories
derived from each. Read-only; every record is checked to belong to the scope asked for."""

from __future__ import annotations

from yiji.errors import NotFound
from yiji.models.conversations import (
    ConversationPage,
    ConversationQuery,
    ConversationTurn,
    SessionPage,
    SessionQuery,
)
from yiji.service.base import Deps
from yiji.store import events as event_store
from yiji.store import memories as memory_store

__all__ = ["Conversations"]


class Conversations:
    """The conversation pages."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope

    def session_page(self, query: SessionQuery) -> SessionPage:
        """One page of a scope's sessions, the most recently active first, with the total count."""
        scope = self.scope(query.persona, query.project)
        with self.db.read() as conn:
            total = event_store.count_sessions(conn, scope.persona, scope.project)
            rows = event_store.list_sessions(
                conn, scope.persona, scope.project, limit=query.limit, offset=query.offset
            )
        end = query.offset + len(rows)
        return SessionPage(
            scope=scope,
            total=total,
            offset=query.offset,
            limit=query.limit,
            next_offset=end if end < total else None,
            sessions=rows,
        )

    def conversation_page(self, query: ConversationQuery) -> ConversationPage:
        """A page of one session's events (by ``seq``), each with the memories derived from it.

        With ``query.event``, the page holding that event; it must belong to this scope and session."""
        scope = self.scope(query.persona, query.project)
        selection = event_store.EventSelection(
            persona_id=scope.persona, project_id=scope.project, session_id=query.session
        )
        offset = query.offset
        with self.db.read() as conn:
            if query.event is not None:
                target = event_store.get(conn, query.event)
                if target is None or (target.persona, target.project, target.session) != (
                    scope.persona,
                    scope.project,
                    query.session,
                ):
                    raise NotFound("event")
                before = event_store.count_events(conn, event_store.EventSelection.earlier_in_session(target))
                offset = before // query.limit * query.limit
            total = event_store.count_events(conn, selection)
            if total == 0:
                raise NotFound("session", "session")
            events = event_store.list_events(conn, selection, limit=query.limit, offset=offset)
            derived = memory_store.by_events(conn, [e.id for e in events])
        end = offset + len(events)
        return ConversationPage(
            scope=scope,
            session=query.session,
            total=total,
            offset=offset,
            limit=query.limit,
            next_offset=end if end < total else None,
            turns=[ConversationTurn(event=e, memories=derived.get(e.id, [])) for e in events],
        )
