"""``remember``: one statement of the user's becomes a stored event and a memory grounded in all of it.

The event is a user turn (source ``remember``) stored as every event is (secrets redacted first); the
memory quotes the whole stored text and passes :meth:`yiji.service.memories.Memories.memory_derive`'s
rules, in the same transaction: a statement a rule refuses leaves nothing behind.
"""

from __future__ import annotations

from yiji.errors import InvalidInput
from yiji.models.common import parse
from yiji.models.events import EventIn
from yiji.models.memories import DeriveRequest, MemoryIn, RememberRequest, RememberResult
from yiji.service.base import Deps
from yiji.service.events import Events
from yiji.service.memories import Memories
from yiji.store import events as event_store

__all__ = ["REMEMBER_SOURCE", "Remember"]

REMEMBER_SOURCE = "remember"
"""The ``source`` label of events ``remember`` stores."""


class Remember:
    """``remember``."""

    def __init__(self, deps: Deps, events: Events, memories: Memories) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.events = events
        self.memories = memories

    def memory_remember(self, request: RememberRequest) -> RememberResult:
        """Store ``request.text`` as a user event and one memory quoting all of it; both or neither."""
        statement = request.text.strip()
        if not statement:
            raise InvalidInput("text", "must not be empty or whitespace only")
        scope = self.scope(request.persona, request.project)
        event_in = EventIn(
            persona=scope.persona,
            project=scope.project,
            session=request.session,
            role="user",
            source=REMEMBER_SOURCE,
            text=statement,
            occurred_at=request.occurred_at,
        )
        with self.db.write() as conn:
            stored, _ = self.events.insert_event(conn, event_in, scope)
            fields = {"text": stored.text, "quote": stored.text, "kind": request.kind}
            memory = parse(
                MemoryIn,
                {
                    **fields,
                    "basis": "user_statement",
                    "confidence": 1.0,
                    "subject": request.subject,
                    "fact_key": request.fact_key,
                },
            )
            derive = DeriveRequest(
                event_id=stored.id,
                persona=scope.persona,
                project=scope.project,
                memories=[memory],
                propose=request.propose,
            )
            derived = self.memories.memory_derive(derive)
            event = event_store.get(conn, stored.id)
        assert event is not None
        return RememberResult(
            scope=scope, event=event, memory_id=derived.memory_ids[0], review_state=derived.review_states[0]
        )
