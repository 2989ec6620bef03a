"""Boundary models for reading a scope's conversations: its sessions, and one session's events in order,
each with the memories derived from it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from yiji.domain.records import SessionSummary
from yiji.models.common import (
    EventId,
    InputModel,
    Offset,
    OutputModel,
    Page,
    Scope,
    ScopeId,
    SessionId,
)
from yiji.models.events import EventRecord
from yiji.models.memories import MemoryRecord

__all__ = [
    "ConversationPage",
    "ConversationQuery",
    "ConversationTurn",
    "SessionPage",
    "SessionQuery",
    "SessionSummary",
]


class SessionQuery(InputModel):
    persona: ScopeId | None = None
    project: ScopeId | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 50
    offset: Offset = 0


class SessionPage(Page):
    """One page of a scope's sessions, the most recently active first."""

    sessions: list[SessionSummary]


class ConversationQuery(InputModel):
    """A page of one session's events. With ``event``, the page that holds that event (``offset`` is
    then ignored)."""

    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId
    event: EventId | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 50
    offset: Offset = 0


class ConversationTurn(OutputModel):
    """An event of the conversation with every memory derived from it (revoked ones included)."""

    event: EventRecord
    memories: list[MemoryRecord]


class ConversationPage(OutputModel):
    """One page of a session's events in the order they were stored (by ``seq``)."""

    scope: Scope
    session: str
    total: int
    offset: int
    limit: int
    next_offset: int | None
    turns: list[ConversationTurn]
