"""Automatic extraction: commit first, then network, then one validated transaction.

Order of work for an event that needs extraction:

1. the original event commits on its own (:class:`yiji.service.events.Events`);
2. the extraction provider is called with no transaction open;
3. validation of the whole batch and every derived insert share one transaction;
4. when an embedder is configured, the new memories (or, with none, the raw event) are embedded
   opportunistically; a failure there is reported in the outcome and leaves every saved row as it is.

Any provider failure leaves the event ``pending`` with a sanitized error (no response body, credential or
input text); the outcome names the failure's ``reason`` and, for an HTTP error, its ``status``
(:class:`yiji.errors.ProviderError`), and a retry counts the events still pending by reason
(``failures``, :mod:`yiji.domain.endpoint_failures`). ``extraction_retry`` or re-submitting the same
event resumes it; a completed event returns its existing memory ids. A well-shaped batch whose items break
rules commits the valid items and reports the rejected ones by count and rule name. There is no background
daemon.

With ``[extraction] review`` set, some memories are stored ``proposed`` (:mod:`yiji.domain.review`) and
wait in the review queue (:mod:`yiji.service.review`); a claim a person rejected for an event is not
proposed again when that event is extracted again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from yiji.domain import endpoint_failures
from yiji.errors import InvalidInput, NotFound, ProviderError
from yiji.models.events import EventIn, EventRecord, SubmitResult
from yiji.service.base import Deps, ProgressFactory, progress_bar
from yiji.service.events import Events
from yiji.service.memories import Memories, source_of
from yiji.service.vectors import VectorIndex
from yiji.store import events as event_store
from yiji.store import memories as memory_store
from yiji.store import personas as persona_store

if TYPE_CHECKING:  # the provider, grounding and the memory rules load where an extraction runs
    from yiji.domain.validation import MemoryCandidate, Violation
    from yiji.models.reports import ExtractionRetry, ExtractionRun
    from yiji.providers.extraction import ContextTurn, EventForExtraction, ExtractionBatch

__all__ = ["Extraction"]


class Extraction:
    """Automatic extraction."""

    def __init__(self, deps: Deps, events: Events, memories: Memories, vectors: VectorIndex) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.events = events
        self.memories = memories
        self.vectors = vectors

    def event_submit(self, event: EventIn) -> SubmitResult:
        """Commit the event, then (when extraction is configured) extract from it."""
        result = self.events.event_submit(event)
        record = result.event
        if record is None:  # not stored: it repeats a deletion
            return result
        if record.extraction_state == "done":
            with self.db.read() as conn:
                ids = [m.id for m in memory_store.by_event(conn, record.id)]
            return result.model_copy(update={"memory_ids": ids, "extraction": {"state": "done"}})
        if record.extraction_state == "pending" and self.deps.extractor is not None:
            outcome = self._extract(record)
            refreshed = self.events.event_show(record.id, record.persona, record.project)
            return result.model_copy(
                update={
                    "event": refreshed,
                    "memory_ids": outcome.get("memory_ids", []),
                    "extraction": outcome,
                }
            )
        return result

    def _context_for(self, record: EventRecord) -> tuple[ContextTurn, ...]:
        from yiji.providers.extraction import ContextTurn

        count = self.config.extraction.context_turns
        if count == 0:
            return ()
        with self.db.read() as conn:
            earlier = event_store.list_events(
                conn,
                event_store.EventSelection.earlier_in_session(record),
                limit=count,
                newest_first=True,
            )
        return tuple(ContextTurn(role=e.role, text=e.text[:2000]) for e in reversed(earlier))

    def _request_for(self, record: EventRecord) -> EventForExtraction:
        from yiji.providers.extraction import EventForExtraction

        with self.db.read() as conn:
            persona = persona_store.get_latest(conn, record.persona)
        speakers = (("user", self.config.extraction.user_name), ("assistant", record.persona))
        return EventForExtraction(
            role=record.role,
            category=record.category,
            text=record.text,
            occurred_at=record.occurred_at,
            context=self._context_for(record),
            timezone=self.config.timezone,
            persona=persona.text if persona is not None else None,
            speakers=speakers,
        )

    def _screen(
        self, record: EventRecord, request: EventForExtraction, batch: ExtractionBatch
    ) -> tuple[list[MemoryCandidate], list[list[Violation]]]:
        """Ground the answer in the event, then the rules, duplicates and (optionally) entailment.

        Runs with no transaction open (the entailment check is a network call); the write
        transaction validates again before anything is stored.
        """
        from yiji.domain import cues, grounding, validation
        from yiji.domain.fact_keys import vocabulary
        from yiji.domain.validation import Rule, Violation

        candidates = grounding.ground(
            batch.candidates(),
            role=record.role,
            source=record.text,
            local_time=request.local_time(),
            fact_keys=vocabulary(self.config.extraction.fact_keys),
            plan=self.deps.rules,
        )
        verdicts = validation.validate_batch(
            candidates, source_of(record), secrets=self.deps.known_secrets(), plan=self.deps.rules
        )
        extra = cues.extraction_rules(candidates, record.role, record.text, self.deps.rules)
        verdicts = [[*found, *more] for found, more in zip(verdicts, extra, strict=True)]
        with self.db.read() as conn:
            existing = [(m.text, m.kind) for m in memory_store.by_event(conn, record.id)]
        verdicts = grounding.mark_duplicates(candidates, verdicts, existing, self.deps.rules)
        verdicts = _malformed_refused(verdicts, batch)
        if self.config.extraction.entailment_check and self.deps.extractor is not None:
            for cand, problems in zip(candidates, verdicts, strict=True):
                if not problems and not self.deps.extractor.entails(cand.quote, cand.text):
                    problems.append(Violation("text", Rule.NOT_ENTAILED))
        return candidates, verdicts

    def _extract(self, record: EventRecord, *, offline_vectors: bool = True) -> dict[str, Any]:
        """Extract from ``record``, commit what passes, then embed it (see :meth:`_vectors_after`)."""
        from yiji.domain import review, validation

        assert self.deps.extractor is not None
        request = self._request_for(record)
        try:
            batch = self.deps.extractor.extract(request)
            candidates, screened = self._screen(record, request, batch)
        except ProviderError as exc:
            with self.db.write() as conn:
                current = event_store.get(conn, record.id)
                if current is not None and current.extraction_state in RUN_STATES:
                    event_store.set_extraction_state(conn, record.id, "pending", exc.message, attempted=True)
            failed = {"state": "pending", "error": exc.code, "message": exc.message, "reason": exc.reason}
            return failed | ({"status": exc.status} if exc.status is not None else {})
        with self.db.write() as conn:
            current = event_store.get(conn, record.id)
            if current is None:
                raise NotFound("event")
            if current.extraction_state not in RUN_STATES:  # completed meanwhile: return what exists
                ids = [m.id for m in memory_store.by_event(conn, record.id)]
                return {"state": current.extraction_state, "memory_ids": ids}
            verdicts = validation.validate_batch(
                candidates, source_of(current), secrets=self.deps.known_secrets(), plan=self.deps.rules
            )
            verdicts = [sorted(set(a) | set(b), key=str) for a, b in zip(verdicts, screened, strict=True)]
            verdicts = _malformed_refused(verdicts, batch)
            states = [
                review.arrival_state(self.config.extraction.review, c.kind, c.subject, c.fact_key)
                for c in candidates
            ]
            refused_before = {
                review.rejected_identity(m.quote, m.kind, m.subject, m.fact_key)
                for m in memory_store.by_event(conn, record.id)
                if m.review_state == "rejected"
            }
            skip = frozenset(
                i
                for i, c in enumerate(candidates)
                if review.rejected_identity(c.quote, c.kind, c.subject, c.fact_key) in refused_before
            )
            ids = self.memories.write_batch(
                conn, current, candidates, verdicts, "extraction", states=states, skip=skip
            )
            proposed = [
                m.id
                for m in memory_store.by_event(conn, record.id)
                if m.id in ids and m.review_state == "proposed"
            ]
            event_store.set_extraction_state(conn, record.id, "done", None, attempted=True)
        rejected = self.memories.rejections(verdicts)
        vectors = self._vectors_after(current, [i for i in ids if i not in proposed], offline_vectors)
        return {
            "state": "done",
            "memory_ids": ids,
            "proposed": proposed,
            "rejected": len({r.index for r in rejected}),
            "rejected_rules": sorted({r.rule for r in rejected}),
            "prompt_version": batch.prompt_version,
            "vectors": vectors,
        }

    def _vectors_after(
        self, record: EventRecord, memory_ids: Sequence[str], offline_vectors: bool
    ) -> dict[str, Any]:
        """After the commit, the new memories' vectors (a failure is reported, never touches the saved
        rows). With ``offline_vectors`` false and the offline model as the embedder they are left for
        ``yiji reindex --vectors`` (``deferred``): loading that model costs seconds of CPU, which the
        automatic run must not take from the host beside it; an endpoint's embedder still runs."""
        embedder = self.vectors.embedder
        if not offline_vectors and embedder is not None and embedder.is_local:
            return {"state": "deferred"}
        return self.vectors.embed_after_extraction(record, memory_ids)

    def extraction_retry(
        self,
        event_id: str | None = None,
        *,
        persona: str | None = None,
        project: str | None = None,
        limit: int = 100,
    ) -> ExtractionRetry:
        """Resume pending extractions: one event, or up to ``limit`` pending events of the scope."""
        scope = self.scope(persona, project)
        if self.deps.extractor is None:
            raise InvalidInput("extraction", "no extraction endpoint is configured")
        if limit < 1 or limit > 10_000:
            raise InvalidInput("limit", "must be between 1 and 10000")
        if event_id is not None:
            with self.db.read() as conn:
                found = event_store.get(conn, event_id)
                if found is None or (found.persona, found.project) != (scope.persona, scope.project):
                    raise NotFound("event", "event_id")
                existing = [m.id for m in memory_store.by_event(conn, found.id)]
            if found.extraction_state == "pending":
                results = [{"event_id": found.id, **self._extract(found)}]
            else:
                results = [{"event_id": found.id, "state": found.extraction_state, "memory_ids": existing}]
        else:
            with self.db.read() as conn:
                pending = event_store.pending(conn, scope.persona, scope.project, limit)
            results = [{"event_id": e.id, **self._extract(e)} for e in pending]
        return {
            "scope": scope,
            "results": results,
            "completed": sum(1 for r in results if r["state"] == "done"),
            "still_pending": sum(1 for r in results if r["state"] == "pending"),
            "failures": endpoint_failures.failures(results),
        }

    def extraction_run(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        every_scope: bool = False,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        roles: Sequence[str] | None = None,
        limit: int | None = None,
        dry_run: bool = False,
        time_limit: float | None = None,
        progress: ProgressFactory | None = None,
        offline_vectors: bool = True,
    ) -> ExtractionRun:
        """Send the conversation events that have no memories yet (extraction state ``none`` or
        ``pending``) of the scope, oldest first, through the configured endpoint.

        ``session``, ``since`` (inclusive) and ``until`` (exclusive, ISO 8601 with a timezone) narrow the
        selection; ``roles`` (default ``[extraction] run_roles``) are the roles sent, the session's other
        turns still reach the model as context. ``every_scope`` covers every scope of the database
        (``persona``/``project`` then must be omitted). Each event is sent once per run; one that fails
        stays ``pending`` with its reason for the next run. A failure no other event could escape
        (unreachable, timeout, settings) ends the run early. ``limit`` bounds the events sent,
        ``time_limit`` (seconds) stops before a new event once it has passed. ``dry_run`` sends nothing
        and counts what a run would send. ``offline_vectors`` false leaves the offline model's vectors of
        what is extracted to ``yiji reindex --vectors`` (the automatic run: it does not load the model).
        """
        import time

        from yiji.models.events import ROLES
        from yiji.timeutil import parse_time, to_db

        if every_scope and (persona is not None or project is not None):
            raise InvalidInput("scope", "every scope excludes a persona or project")
        scope = None if every_scope else self.scope(persona, project)
        if self.deps.extractor is None and not dry_run:
            raise InvalidInput("extraction", "no extraction endpoint is configured")
        if limit is not None and (limit < 1 or limit > 1_000_000):
            raise InvalidInput("limit", "must be between 1 and 1000000")
        chosen = tuple(roles) if roles else self.config.extraction.run_roles
        if any(r not in ROLES for r in chosen):
            raise InvalidInput("roles", f"must each be one of {', '.join(ROLES)}")
        bounds = {name: value for name, value in (("since", since), ("until", until)) if value is not None}
        times = {name: to_db(parse_time(value, name)) for name, value in bounds.items()}
        if session is not None:
            from yiji.domain.limits import ID_PATTERN, ID_RULE

            if re.fullmatch(ID_PATTERN, session) is None:
                raise InvalidInput("session", ID_RULE)
        selection = event_store.EventSelection(
            scope.persona if scope else None,
            scope.project if scope else None,
            session_id=session,
            category="conversation",
            since=times.get("since"),
            until=times.get("until"),
            roles=tuple(sorted(set(chosen))),
            states=RUN_STATES,
        )
        with self.db.read() as conn:
            selected = event_store.count_events(conn, selection)
        wanted = selected if limit is None else min(selected, limit)
        summary: ExtractionRun = {
            "scope": scope,
            "every_scope": every_scope,
            "roles": list(chosen),
            "dry_run": dry_run,
            "selected": selected,
        }
        if dry_run:
            summary["would_send"] = wanted
            return summary
        started = time.monotonic()
        bar = progress_bar(progress, "extracting", wanted)
        tried = completed = memories = proposed = 0
        failed: list[dict[str, Any]] = []
        stopped: str | None = None
        after = 0
        try:
            while stopped is None:
                with self.db.read() as conn:
                    batch = event_store.list_events(
                        conn, dataclasses.replace(selection, after_seq=after), limit=RUN_BATCH
                    )
                if not batch:
                    break
                for event in batch:
                    if limit is not None and tried >= limit:
                        stopped = "limit"
                        break
                    if time_limit is not None and time.monotonic() - started >= time_limit:
                        stopped = "time"
                        break
                    outcome = self._extract(event, offline_vectors=offline_vectors)
                    tried += 1
                    bar.update()
                    if outcome["state"] == "pending":
                        failed.append(outcome)
                        if outcome.get("reason") in STOP_REASONS:
                            stopped = "endpoint"
                            break
                        continue
                    completed += outcome["state"] == "done"
                    memories += len(outcome.get("memory_ids", []))
                    proposed += len(outcome.get("proposed", []))
                after = batch[-1].seq
        finally:
            bar.close()
        with self.db.read() as conn:
            left = event_store.count_events(conn, selection)
        summary.update(
            {
                "tried": tried,
                "completed": completed,
                "memories": memories,
                "proposed": proposed,
                "still_pending": len(failed),
                "not_tried": max(0, left - len(failed)),
                "failures": endpoint_failures.failures(failed),
                "stopped": stopped,
            }
        )
        return summary

    def extraction_counts(self, persona: str | None = None, project: str | None = None) -> dict[str, int]:
        """The scope's conversation events of the ``run_roles``: ``to_extract`` (what ``extraction run``
        would send), of them ``pending`` (waiting for a retry, most after a failure), and ``extracted``."""
        scope = self.scope(persona, project)
        counts = {}
        with self.db.read() as conn:
            for name, states in (
                ("to_extract", RUN_STATES),
                ("pending", ("pending",)),
                ("extracted", ("done",)),
            ):
                selection = event_store.EventSelection(
                    scope.persona,
                    scope.project,
                    category="conversation",
                    roles=self.config.extraction.run_roles,
                    states=states,
                )
                counts[name] = event_store.count_events(conn, selection)
        return counts

    def extraction_retry_all(
        self,
        *,
        persona: str | None = None,
        project: str | None = None,
        batch_size: int = 50,
        progress: ProgressFactory | None = None,
    ) -> ExtractionRetry:
        """Work through every pending event of the scope, oldest first, ``batch_size`` at a time.

        Each event is tried once per run (one still pending after its try is not retried in the
        same run), so a run ends even while the endpoint is down.
        """
        scope = self.scope(persona, project)
        if self.deps.extractor is None:
            raise InvalidInput("extraction", "no extraction endpoint is configured")
        if batch_size < 1 or batch_size > 1000:
            raise InvalidInput("batch_size", "must be between 1 and 1000")
        with self.db.read() as conn:
            total = event_store.count_pending(conn, scope.persona, scope.project)
        bar = progress_bar(progress, "extracting", total)
        completed = 0
        failed: list[dict[str, Any]] = []
        after = 0
        try:
            while True:
                with self.db.read() as conn:
                    batch = event_store.pending_after(conn, scope.persona, scope.project, after, batch_size)
                if not batch:
                    break
                for event in batch:
                    outcome = self._extract(event)
                    if outcome["state"] == "pending":
                        failed.append(outcome)
                    completed += outcome["state"] == "done"
                    bar.update()
                after = batch[-1].seq
        finally:
            bar.close()
        return {
            "scope": scope,
            "tried": completed + len(failed),
            "completed": completed,
            "still_pending": len(failed),
            "failures": endpoint_failures.failures(failed),
        }


RUN_STATES = event_store.UNEXTRACTED_STATES
"""The extraction states ``extraction run`` picks up: captured or submitted without extraction (``none``)
and tried without success (``pending``). ``done`` is never sent again; ``skipped`` (reference, persona)
is not lived experience."""

STOP_REASONS = frozenset({"unreachable", "timeout", "setup"})
"""A failure under which no other event could fare better in the same run: the run stops there and what
it did not try waits for the next run."""

RUN_BATCH = 50


def _malformed_refused(verdicts: list[list[Violation]], batch: ExtractionBatch) -> list[list[Violation]]:
    """``verdicts`` with each malformed item of ``batch`` refused for that reason alone (its empty
    placeholder would otherwise be reported as empty text and quote)."""
    from yiji.domain.validation import Rule, Violation

    malformed = set(batch.malformed)
    if not malformed:
        return verdicts
    refused = [Violation("item", Rule.ITEM_MALFORMED)]
    return [list(refused) if i in malformed else found for i, found in enumerate(verdicts)]
