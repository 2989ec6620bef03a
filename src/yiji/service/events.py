"""Event use cases: submit (idempotent by id), batch submit, show, list.

The original event commits in its own transaction before any network work; whatever fails later leaves
the acknowledged event intact.
"""

from __future__ import annotations

from yiji.db import Connection
from yiji.domain.validation import future_occurrence_warning
from yiji.errors import Conflict, NotFound
from yiji.models.common import Scope
from yiji.models.events import EventFilter, EventIn, EventRecord, SubmitResult
from yiji.service.base import ServiceBase
from yiji.store import events as store
from yiji.timeutil import to_db

__all__ = ["EventOps"]

ARCHIVED_CATEGORIES = frozenset({"reference", "persona"})


def _same_payload(stored: EventRecord, new: EventIn, scope: Scope) -> bool:
    if (stored.persona, stored.project) != (scope.persona, scope.project):
        return False
    if (stored.session, stored.role, stored.source, stored.category, stored.text) != (
        new.session,
        new.role,
        new.source,
        new.category,
        new.text,
    ):
        return False
    if new.occurred_at is not None and stored.occurred_at != new.occurred_at:
        return False

    def key(cues: list[object]) -> set[tuple[object, ...]]:
        return {(c.type, c.identifier, c.label) for c in cues}  # type: ignore[attr-defined]

    return key(list(stored.cues)) == key(list(new.cues))


class EventOps(ServiceBase):
    def _initial_extraction_state(self, category: str) -> str:
        if category in ARCHIVED_CATEGORIES:
            return "skipped"
        return "pending" if self.extractor is not None else "none"

    def _insert_event(self, conn: Connection, event: EventIn, scope: Scope) -> tuple[EventRecord, bool]:
        event_id = event.id or self.new_id("ev")
        now = self.clock.now()
        occurred = event.occurred_at or now
        state = self._initial_extraction_state(event.category)
        seq = store.insert(
            conn,
            event_id=event_id,
            persona_id=scope.persona,
            project_id=scope.project,
            session_id=event.session,
            role=event.role,
            source=event.source,
            category=event.category,
            text=event.text,
            occurred_at=to_db(occurred),
            ingested_at=to_db(now),
            extraction_state=state,
            cues=list(event.cues),
        )
        if seq is None:  # the id is taken: the same event again, or a conflict
            stored = store.get(conn, event_id)
            assert stored is not None
            if not _same_payload(stored, event, scope):
                raise Conflict(
                    "event id already exists with a different payload or scope; nothing was changed"
                )
            return stored, False
        record = EventRecord.model_construct(
            id=event_id,
            seq=seq,
            persona=scope.persona,
            project=scope.project,
            session=event.session,
            role=event.role,
            source=event.source,
            category=event.category,
            text=event.text,
            occurred_at=occurred,
            ingested_at=now,
            amended=False,
            extraction_state=state,
            extraction_error=None,
            cues=list(event.cues),
        )
        self._on_event_inserted(conn, record)
        return record, True

    def _on_event_inserted(self, conn: Connection, record: EventRecord) -> None:
        """Hook for derived state written in the event's own transaction (the lexical index)."""

    def event_submit(self, event: EventIn) -> SubmitResult:
        """Commit an original event. Re-submitting the same id and payload returns the stored event."""
        scope = self.scope(event.persona, event.project)
        with self.db.write() as conn:
            record, created = self._insert_event(conn, event, scope)
        warning = future_occurrence_warning(record.occurred_at, self.clock.now())
        return SubmitResult(scope=scope, event=record, created=created, warnings=[warning] if warning else [])

    def event_submit_many(self, events: list[EventIn]) -> list[SubmitResult]:
        """Commit several events in one transaction: all are stored, or (on any error) none."""
        results = []
        scopes: dict[tuple[str | None, str | None], Scope] = {}
        with self.db.write() as conn:
            for event in events:
                key = (event.persona, event.project)
                scope = scopes.get(key) or scopes.setdefault(key, self.scope(*key))
                record, created = self._insert_event(conn, event, scope)
                results.append(SubmitResult.model_construct(scope=scope, event=record, created=created))
        return results

    def event_show(
        self, event_id: str, persona: str | None = None, project: str | None = None
    ) -> EventRecord:
        scope = self.scope(persona, project)
        with self.db.read() as conn:
            record = store.get(conn, event_id)
        if record is None or (record.persona, record.project) != (scope.persona, scope.project):
            raise NotFound("event")
        return record

    def event_list(self, query: EventFilter) -> tuple[Scope, list[EventRecord]]:
        scope = self.scope(query.persona, query.project)
        with self.db.read() as conn:
            records = store.list_events(
                conn,
                persona_id=scope.persona,
                project_id=scope.project,
                session_id=query.session,
                role=query.role,
                category=query.category,
                since=to_db(query.since) if query.since else None,
                until=to_db(query.until) if query.until else None,
                limit=query.limit,
                offset=query.offset,
            )
        return scope, records
