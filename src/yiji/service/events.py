"""Event use cases: submit (idempotent by id), batch submit, import, show, list (paginated).

The original event commits in its own transaction before any network work; whatever fails later leaves
the acknowledged event intact.

A deletion stays a deletion: a new event that repeats one (a deleted event's id or text, or an identifier
forgotten with ``delete --matching``; :mod:`yiji.service.deletions`) is not stored. Submitting it is not
an error: the result has no event, ``skipped="deleted"`` and a warning naming which of the three matched
(never the text); a batch stores the rest; an import counts it in ``skipped_deleted``. A correction whose
statement repeats a deletion is refused as a conflict.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from yiji.db import Connection
from yiji.domain import jsonstream
from yiji.domain.limits import future_occurrence_warning
from yiji.errors import Conflict, InvalidInput, NotFound, YijiError
from yiji.models.common import Scope, parse
from yiji.models.events import (
    CATEGORIES,
    EventFilter,
    EventIn,
    EventPage,
    EventRecord,
    ImportRejection,
    ImportSummary,
    SubmitResult,
)
from yiji.service.base import Deps, ProgressFactory, collector_paused, new_id, progress_bar
from yiji.service.event_writer import PRESENT, Deleted, EventWriter, NewEvent, Written
from yiji.store import events as store
from yiji.timeutil import to_db

__all__ = ["Events"]

ARCHIVED_CATEGORIES = frozenset({"reference", "persona"})
IMPORT_BATCH = 2000
MAX_LISTED_REJECTIONS = 1000
_READ_CHUNK = 1 << 20
_Reject = Callable[[int, str, str], None]


_CONFLICT = "event id already exists with a different payload or scope; nothing was changed"


Stored = tuple[EventRecord, bool] | Deleted | None
"""What storing one event gave: the stored record and whether this call created it, :class:`Deleted`
when it repeats a deletion, or ``None`` when its id is taken by another payload or scope."""


def _record(written: Written, submitted: EventIn, now: datetime) -> EventRecord:
    """The record of an event just stored (its cues as submitted, their labels as stored)."""
    event = written.event
    cues = list(submitted.cues)
    if event.redacted and cues:
        cues = [
            c if c.label == label else c.model_copy(update={"label": label})
            for c, (_, _, label) in zip(cues, event.cues, strict=True)
        ]
    return EventRecord.trusted(
        id=event.id,
        seq=written.seq,
        persona=event.persona,
        project=event.project,
        session=event.session,
        role=event.role,
        source=event.source,
        category=event.category,
        text=event.text,
        occurred_at=event.occurred_at,
        ingested_at=now,
        amended=False,
        extraction_state=event.state,
        extraction_error=None,
        cues=cues,
        redacted=event.redacted,
    )


class Events:
    """The event use cases."""

    def __init__(self, deps: Deps, writer: EventWriter) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.writer = writer

    def _initial_extraction_state(self, category: str) -> str:
        if category in ARCHIVED_CATEGORIES:
            return "skipped"
        return "pending" if self.deps.extractor is not None else "none"

    def _new_event(self, event: EventIn, scope: Scope, state: str) -> NewEvent:
        cues = tuple((c.type, c.identifier, c.label) for c in event.cues) if event.cues else ()
        return NewEvent(
            event.id or new_id("ev"),
            scope.persona,
            scope.project,
            event.session,
            event.role,
            event.source,
            event.category,
            event.text,
            event.occurred_at,
            state,
            cues,
        )

    def _insert_events(self, conn: Connection, items: Sequence[tuple[EventIn, Scope]]) -> list[Stored]:
        """Store the events of ``items`` that are new, in order, inside the caller's transaction, through
        the event writer (:mod:`yiji.service.event_writer`).

        Idempotent by id: an id already stored (or earlier in ``items``) with the same payload and scope
        gives the stored record, with another payload gives ``None``; an event that repeats a deletion
        gives :class:`Deleted`; nothing is written for any of them.
        """
        if len(items) == 1:
            return [self._insert_one(conn, *items[0])]
        now = self.clock.now()
        states = {c: self._initial_extraction_state(c) for c in CATEGORIES}
        news = [self._new_event(event, scope, states[event.category]) for event, scope in items]
        outcomes = self.writer.write_many(conn, news, now)
        present = [new.id for new, outcome in zip(news, outcomes, strict=True) if outcome == PRESENT]
        stored = store.get_many(conn, present) if present else {}
        out: list[Stored] = []
        for (submitted, _), new, outcome in zip(items, news, outcomes, strict=True):
            if isinstance(outcome, Written):
                out.append((_record(outcome, submitted, now), True))
            elif isinstance(outcome, Deleted):
                out.append(outcome)
            else:
                out.append((stored[new.id], False) if outcome == PRESENT else None)
        return out

    def _insert_one(self, conn: Connection, submitted: EventIn, scope: Scope) -> Stored:
        """One event (every single submit): written at once, looked up only when its id is taken."""
        now = self.clock.now()
        new = self._new_event(submitted, scope, self._initial_extraction_state(submitted.category))
        outcome = self.writer.write(conn, new, now)
        if isinstance(outcome, Written):
            return _record(outcome, submitted, now), True
        if isinstance(outcome, Deleted):
            return outcome
        if outcome == PRESENT:
            record = store.get(conn, new.id)
            assert record is not None
            return record, False
        return None

    def insert_event(self, conn: Connection, event: EventIn, scope: Scope) -> tuple[EventRecord, bool]:
        """Store one event (see :meth:`_insert_events`); a taken id with another payload, or an event
        that repeats a deletion, is a Conflict."""
        stored = self._insert_one(conn, event, scope)
        if stored is None:
            raise Conflict(_CONFLICT)
        if isinstance(stored, Deleted):
            raise Conflict(f"{stored.warning}; nothing was changed")
        return stored

    def event_submit(self, event: EventIn) -> SubmitResult:
        """Commit an original event. Re-submitting the same id and payload returns the stored event; an
        event that repeats a deletion is not stored (no event in the result, ``skipped="deleted"``)."""
        scope = self.scope(event.persona, event.project)
        with self.db.write() as conn:
            stored = self._insert_one(conn, event, scope)
            if stored is None:
                raise Conflict(_CONFLICT)
        return self._submitted(scope, stored, self.clock.now())

    @staticmethod
    def _submitted(scope: Scope, stored: tuple[EventRecord, bool] | Deleted, now: datetime) -> SubmitResult:
        if isinstance(stored, Deleted):
            return SubmitResult.trusted(
                scope=scope,
                event=None,
                created=False,
                skipped="deleted",
                memory_ids=[],
                extraction=None,
                warnings=[stored.warning],
            )
        record, created = stored
        warning = future_occurrence_warning(record.occurred_at, now)
        return SubmitResult.trusted(
            scope=scope,
            event=record,
            created=created,
            skipped=None,
            memory_ids=[],
            extraction=None,
            warnings=[warning] if warning else [],
        )

    def event_submit_many(self, events: list[EventIn]) -> list[SubmitResult]:
        """Commit several events in one transaction: all are stored, or (on any error) none."""
        scopes: dict[tuple[str | None, str | None], Scope] = {}
        items = []
        for event in events:
            key = (event.persona, event.project)
            scope = scopes.get(key) or scopes.setdefault(key, self.scope(*key))
            items.append((event, scope))
        with collector_paused():
            with self.db.write() as conn:
                outcomes = self._insert_events(conn, items)
                if None in outcomes:
                    raise Conflict(_CONFLICT)
            now = self.clock.now()
            results = []
            for (_, scope), outcome in zip(items, outcomes, strict=True):
                assert outcome is not None
                results.append(self._submitted(scope, outcome, now))
        return results

    def event_import(
        self,
        path: str | os.PathLike[str],
        *,
        persona: str | None = None,
        project: str | None = None,
        batch_size: int = IMPORT_BATCH,
        progress: ProgressFactory | None = None,
    ) -> ImportSummary:
        """Import original events from a JSON list or JSON Lines file, streaming, one transaction per batch.

        Each record has the fields of :class:`EventIn` (``event submit --input``) and passes the same
        validation; omitted persona/project take ``persona``/``project``, then the configured defaults.
        Idempotent by event id: a record whose id is stored with the same payload counts as already
        present; the same id with another payload is rejected; a record that repeats a deletion is not
        stored and counts in ``skipped_deleted``. A rejected record names its line, field and
        rule, never a value, and does not stop the import. Committed batches stand if a later one fails, so
        re-running the same file finishes the job.
        """
        if not 1 <= batch_size <= 100_000:
            raise InvalidInput("batch_size", "must be between 1 and 100000")
        source = Path(path).expanduser()
        if not source.is_file():
            raise InvalidInput("path", "no readable file at this path")
        defaults = {"persona": persona, "project": project}
        counts = {"inserted": 0, "present": 0, "deleted": 0, "rejected": 0, "batches": 0}
        rejections: list[ImportRejection] = []
        stopped: int | None = None
        batch: list[tuple[int, EventIn]] = []
        bar = progress_bar(progress, "importing events", None)

        def reject(line: int, field: str, rule: str) -> None:
            counts["rejected"] += 1
            if len(rejections) < MAX_LISTED_REJECTIONS:
                rejections.append(ImportRejection(line=line, field=field, rule=rule))

        def flush() -> None:
            if not batch:
                return
            self._import_batch(batch, counts, reject)
            counts["batches"] += 1
            bar.update(len(batch))
            batch.clear()

        def summary() -> ImportSummary:
            rejections.sort(key=lambda r: r.line)  # stored-id conflicts surface when their batch commits
            return ImportSummary(
                inserted=counts["inserted"],
                already_present=counts["present"],
                skipped_deleted=counts["deleted"],
                rejected=counts["rejected"],
                batches=counts["batches"],
                rejections=rejections,
                stopped_at_line=stopped,
            )

        try:
            try:
                for item in jsonstream.records(_chunks(source)):
                    if item.error is not None:
                        reject(item.line, "record", item.error)
                        if item.fatal:
                            stopped = item.line
                        continue
                    event = self._import_record(item.value, defaults, item.line, reject)
                    if event is not None:
                        batch.append((item.line, event))
                        if len(batch) >= batch_size:
                            flush()
            except _NotUtf8 as exc:  # what came before the bad byte is still imported
                reject(exc.line, "record", "is not UTF-8 text; the rest of the file was not read")
                stopped = exc.line
            flush()
        except YijiError as exc:  # a failed commit: say what the earlier batches committed
            exc.message = f"{exc.message}; {summary().committed_line()}, then the import stopped"
            exc.args = (exc.message,)
            raise
        finally:
            bar.close()
        return summary()

    @staticmethod
    def _import_record(
        value: Any, defaults: dict[str, str | None], line: int, reject: _Reject
    ) -> EventIn | None:
        if not isinstance(value, dict):
            reject(line, "record", "must be a JSON object")
            return None
        for key, default in defaults.items():
            if default is not None and value.get(key) is None:
                value[key] = default
        try:
            return parse(EventIn, value)
        except InvalidInput as exc:
            for field, rule in exc.problems:
                reject(line, field, rule)
            return None

    def _import_batch(
        self, batch: list[tuple[int, EventIn]], counts: dict[str, int], reject: _Reject
    ) -> None:
        scopes: dict[tuple[str | None, str | None], Scope | InvalidInput] = {}
        lines: list[int] = []
        items: list[tuple[EventIn, Scope]] = []
        for line, event in batch:
            key = (event.persona, event.project)
            if key not in scopes:
                try:
                    scopes[key] = self.scope(*key)
                except InvalidInput as exc:
                    scopes[key] = exc
            scope = scopes[key]
            if isinstance(scope, InvalidInput):
                reject(line, scope.field, scope.rule)
                continue
            lines.append(line)
            items.append((event, scope))
        with collector_paused(), self.db.write() as conn:
            outcomes = self._insert_events(conn, items)
        for line, outcome in zip(lines, outcomes, strict=True):
            if outcome is None:
                reject(line, "id", "already stored with a different payload or scope")
            elif isinstance(outcome, Deleted):
                counts["deleted"] += 1
            else:
                counts["inserted" if outcome[1] else "present"] += 1

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
        page = self.event_page(query, count=False)
        return page.scope, page.events

    def event_page(self, query: EventFilter, *, count: bool = True) -> EventPage:
        """One page of a scope's events, oldest first, with the total count and the next offset."""
        scope = self.scope(query.persona, query.project)
        selection = store.EventSelection(
            persona_id=scope.persona,
            project_id=scope.project,
            session_id=query.session,
            role=query.role,
            category=query.category,
            since=to_db(query.since) if query.since else None,
            until=to_db(query.until) if query.until else None,
        )
        with self.db.read() as conn:
            records = store.list_events(conn, selection, limit=query.limit, offset=query.offset)
            total = store.count_events(conn, selection) if count else query.offset + len(records)
        end = query.offset + len(records)
        return EventPage(
            scope=scope,
            total=total,
            offset=query.offset,
            limit=query.limit,
            next_offset=end if end < total else None,
            events=records,
        )


class _NotUtf8(Exception):
    """The file holds a byte sequence that is not UTF-8 on ``line`` (1-based); the text before it was
    read."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _chunks(source: Path) -> Iterator[str]:
    """The file's text, decoded as strict UTF-8 a chunk at a time. At a byte that is not UTF-8 the text
    before it is yielded, then :class:`_NotUtf8` names the line where the byte is."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0
    try:
        with source.open("rb") as handle:
            while True:
                data = handle.read(_READ_CHUNK)
                try:
                    text = decoder.decode(data, final=not data)
                except UnicodeDecodeError as exc:
                    before = exc.object[: exc.start].decode("utf-8")
                    yield before
                    raise _NotUtf8(newlines + before.count("\n") + 1) from None
                if not data:
                    return
                newlines += text.count("\n")
                yield text
    except OSError:
        raise InvalidInput("path", "the file could not be read") from None
