"""The rules an archive must pass before anything is written, checked on rows streamed in bounded memory.

The format itself (tables by version, header, JSON and JSONL) is :mod:`yiji.domain.archive_format`.

Rules (checked before anything is written; every problem names the record and a stable rule id)
------------------------------------------------------------------------------------------------

* Shape: the row model of :mod:`yiji.models.archive` for its table and version (unknown tables and
  fields refused, no coercion, times with a timezone).
* Uniqueness: ``duplicate_id``, ``duplicate_seq``, ``duplicate_pk``, ``duplicate_key``.
* Links: ``event_not_found`` (cue or memory source), ``memory_not_found`` (relation endpoint),
  ``scope_mismatch`` (a memory's persona/project differ from its event's; relation endpoints in
  different scopes).
* Memory rules (:func:`memory_violations`, the rules of :mod:`yiji.domain.validation` that every
  derivation passes): the quote occurs verbatim in the source event's text; the basis agrees with the
  event's role; reference and persona material yields no memory; inferences have no fact key and are
  not growth; role emotion only on assistant expressions; plus ``invalid_at_before_valid_at``.
* Review states (version 7 on): the states yiji writes, :data:`yiji.domain.review.STATE_RULES`
  (:func:`~yiji.domain.review.state_problems`: a proposal never reviewed, closed or revoked and only
  from extraction or a manual derivation; a rejection always reviewed; ``reviewed_at`` and
  ``reviewed_by`` together), the same rules ``doctor`` applies to a database.
* Checkpoint coverage: ``covered_seq_not_found``, ``covered_seq_other_scope`` (the covered event belongs
  to another persona, project or session).
* Capture cursors: the rule of a stored cursor row that ``doctor`` applies too
  (:func:`yiji.domain.capture.cursor_row_problems`: a canonical cursor, ids shaped as ``host-ingest``
  requires), and ``persona_not_found`` when no persona version, event or checkpoint of the archive has the
  cursor's persona (every capture that moves a cursor records a checkpoint in its scope).
* Deletion ledger (version 10 on): the row model (a kind, a SHA-256 digest as 64 lowercase hex digits, a
  ``span`` exactly for an identifier) and ``duplicate_key``; it names no other table.
* Header: ``count_mismatch`` (truncated or edited), ``sequence_below_max``.

Error messages name ``table[index].field`` (index counts rows of that table from 0) and never contain a
stored value. Checking streams the rows (:class:`ArchiveChecker`): it keeps keys, scopes and memory
candidates, never whole rows, and looks at the events a second time for the quote rules.

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from yiji.domain.archive_format import (
    MAX_REPORTED,
    ROW_MODELS,
    SEQUENCE_TABLES,
    TABLES,
    RawArchive,
    check_envelope,
    shown_name,
)
from yiji.domain.capture import cursor_row_problems
from yiji.domain.limits import pattern_rule
from yiji.domain.review import state_problems
from yiji.domain.validation import MemoryCandidate, SourceEvent, validate_memory
from yiji.errors import ArchiveRejected
from yiji.models.archive import ArchiveHeader, EventRow, MemoryRow, MemoryRowV1, MemoryRowV7

__all__ = ["ArchiveChecker", "ValidArchive", "memory_violations", "validate"]


@dataclass(frozen=True)
class ValidArchive:
    """An archive that passed every rule, upgraded to the current format: rows ready to insert."""

    source_version: int
    tables: dict[str, list[dict[str, Any]]]
    sequences: dict[str, int]

    @property
    def counts(self) -> dict[str, int]:
        return {name: len(rows) for name, rows in self.tables.items()}


def _pydantic_problems(exc: ValidationError, record: str, known: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for error in exc.errors(include_input=False, include_url=False):
        loc = list(error["loc"])
        if error["type"] == "extra_forbidden":
            key = loc[-1] if loc else None
            out.append((f"{record}.{shown_name(key, '<field>')}", "unknown_field"))
            continue
        path = ".".join(str(p) if p in known else "<field>" for p in loc[:1])
        if error["type"] == "string_pattern_mismatch":
            rule = pattern_rule(error.get("ctx", {}).get("pattern"))
        else:
            rule = error["msg"].removeprefix("Value error, ")
        out.append((f"{record}.{path}" if path else record, rule))
    return out


def memory_violations(memory: MemoryRowV1, event: EventRow) -> list[tuple[str, str]]:
    """The rules a stored memory must satisfy against its source event, as ``(field, rule)`` pairs.

    These are the rules of :mod:`yiji.domain.validation`, the same ones every derivation passes, so an
    archive cannot bring in a memory that yiji itself would have refused.
    """
    candidate = _candidate(memory)
    source = SourceEvent(role=event.role, category=event.category, text=event.text)
    return [(v.field, str(v.rule)) for v in validate_memory(candidate, source)]


def _candidate(memory: MemoryRowV1) -> MemoryCandidate:
    return MemoryCandidate(
        text=memory.text,
        quote=memory.quote,
        kind=memory.kind,
        basis=memory.basis,
        confidence=memory.confidence,
        subject=memory.subject,
        fact_key=memory.fact_key,
        valid_at=memory.valid_at,
        valence=memory.valence,
        arousal=memory.arousal,
        gist=memory.gist if isinstance(memory, MemoryRow) else None,
    )


class _Keys:
    """Duplicate detection for one key of one table: remembers each key's first row only."""

    def __init__(self, table: str, rule: str, column: str = "") -> None:
        self._first: dict[Hashable, int] = {}
        self._reported: set[Hashable] = set()
        self._suffix = f".{column}" if column else ""
        self._table = table
        self._rule = rule
        self.problems: list[tuple[int, str, str]] = []

    def add(self, key: Hashable, index: int) -> None:
        first = self._first.setdefault(key, index)
        if first == index:
            return
        if key not in self._reported:
            self._reported.add(key)
            self.problems.append((first, f"{self._table}[{first}]{self._suffix}", self._rule))
        self.problems.append((index, f"{self._table}[{index}]{self._suffix}", self._rule))


_Scope = tuple[str, str, str]
"""(persona, project, session)"""


class ArchiveChecker:
    """Every rule, checked on an archive streamed row by row in bounded memory.

    Pass one (:meth:`row`, then :meth:`end_of_rows`) checks each row's shape and keeps only what the
    other rules need: keys for duplicates, each event's id, seq and scope, each memory's id, scope and
    source event id, relation ends, checkpoint coverage, the highest sequence numbers. Quote and basis
    rules need the source text: a second look at the events keeps role, category and text of the events
    that memories derive from (:meth:`event`), and a third at the memories checks each against its
    event (:meth:`memory`); both only when :attr:`needs_events`. :meth:`result` raises for any problem,
    else returns what the write pass needs. No other row is held.
    """

    def __init__(self, header: Any, fmt: Literal["json", "jsonl", "sqlite"], tables: Iterable[str]) -> None:
        if not isinstance(header, dict):
            raise ArchiveRejected([("archive", "not_a_yiji_archive")])
        check_envelope(header)
        self.version: int = header["format_version"]
        self.models = ROW_MODELS[self.version]
        try:
            self.header = ArchiveHeader.model_validate(header)
        except ValidationError as exc:
            raise ArchiveRejected(
                _pydantic_problems(exc, "archive", list(ArchiveHeader.model_fields))[:MAX_REPORTED]
            ) from None
        self.fmt = fmt
        self.counts: Counter[str] = Counter()
        self._problems: list[tuple[str, str]] = []
        self._shape_total = 0
        self._tables: set[str] = set()
        for name in tables:
            self.table(name)
        if fmt == "json" and self._tables:
            self._problems += [(f"tables.{n}", "table_missing") for n in self.models if n not in self._tables]
        if fmt == "jsonl" and self.header.counts is None:
            self._problems.append(("archive.counts", "required_in_jsonl"))
        if self.header.counts is not None:
            self._problems += [
                (f"archive.counts.{shown_name(n, '<table>')}", "unknown_table")
                for n in self.header.counts
                if n not in self.models
            ]
        if self.header.sequences is not None:
            self._problems += [
                (f"archive.sequences.{shown_name(n, '<table>')}", "unknown_table")
                for n in self.header.sequences
                if n not in SEQUENCE_TABLES
            ]
        if self._problems:
            raise ArchiveRejected(self._problems[:MAX_REPORTED], total=len(self._problems))
        self._keys = {
            "personas": [_Keys("personas", "duplicate_key")],
            "events": [_Keys("events", "duplicate_id", "id"), _Keys("events", "duplicate_seq", "seq")],
            "event_cues": [_Keys("event_cues", "duplicate_key")],
            "memories": [_Keys("memories", "duplicate_id", "id"), _Keys("memories", "duplicate_pk", "pk")],
            "relations": [_Keys("relations", "duplicate_key")],
            "checkpoints": [_Keys("checkpoints", "duplicate_id", "id")],
            "capture_cursors": [_Keys("capture_cursors", "duplicate_key")],
            "deletion_ledger": [_Keys("deletion_ledger", "duplicate_key")],
        }
        self._shared: dict[_Scope, _Scope] = {}
        self._shared2: dict[tuple[str, str], tuple[str, str]] = {}
        self._event_scope: dict[str, _Scope] = {}
        self._seq_scope: dict[int, _Scope] = {}
        self._cue_events: list[tuple[int, str]] = []
        self._sources: dict[str, SourceEvent | None] = {}
        """Events that memories derive from: None until the second look at events fills them in."""
        self._memory_rows: list[tuple[int, str, tuple[str, str]]] = []
        self._memory_scope: dict[str, tuple[str, str]] = {}
        self._relations: list[tuple[int, str, str]] = []
        self._checkpoints: list[tuple[int, int, _Scope, bool]] = []
        self._highest = dict.fromkeys(SEQUENCE_TABLES, 0)
        self._memory_problems: list[tuple[int, str, str]] = []
        self._personas: set[str] = set()
        """Personas with a version, an event or a checkpoint in the archive."""
        self._cursor_personas: list[tuple[int, str]] = []

    # -- pass one ---------------------------------------------------------------------------------

    def table(self, name: str) -> None:
        """A table named by the archive (called before its rows, or found on a row of a JSONL file)."""
        if name in self._tables:
            return
        self._tables.add(name)
        if name not in self.models:
            self._problems.append((f"tables.{shown_name(name, '<table>')}", "unknown_table"))

    def row(self, table: str, index: int, raw_row: Any) -> None:
        """Check one row's shape and keep what the other rules need (rows of unknown tables: counted)."""
        self.counts[table] += 1
        if table not in self._tables:
            self.table(table)
        model = self.models.get(table)
        if model is None:
            return
        try:
            row = model.model_validate(raw_row)
        except ValidationError as exc:
            self._shape_total += 1
            if len(self._problems) < MAX_REPORTED:
                self._problems += _pydantic_problems(exc, f"{table}[{index}]", list(model.model_fields))
            return
        if table == "capture_cursors" and (cursor_problems := cursor_row_problems(row.model_dump())):
            self._shape_total += 1
            if len(self._problems) < MAX_REPORTED:
                self._problems += [(f"{table}[{index}].{column}", rule) for column, rule in cursor_problems]
            return
        if self._shape_total:  # shape problems are reported alone; keep scanning only to count them
            return
        self._keep(table, index, row)

    def _keep(self, table: str, index: int, row: Any) -> None:
        keys = self._keys[table]
        if table == "personas":
            keys[0].add((row.persona_id, row.version), index)
            self._personas.add(row.persona_id)
        elif table == "events":
            keys[0].add(row.id, index)
            keys[1].add(row.seq, index)
            scope = (row.persona_id, row.project_id, row.session_id)
            scope = self._shared.setdefault(scope, scope)  # one tuple per session, not per event
            self._personas.add(scope[0])
            self._event_scope.setdefault(row.id, scope)
            self._seq_scope.setdefault(row.seq, scope)
            self._highest["events"] = max(self._highest["events"], row.seq)
        elif table == "event_cues":
            keys[0].add((row.event_id, row.cue_type, row.identifier), index)
            self._cue_events.append((index, row.event_id))
        elif table == "memories":
            keys[0].add(row.id, index)
            keys[1].add(row.pk, index)
            scope2 = (row.persona_id, row.project_id)
            scope2 = self._shared2.setdefault(scope2, scope2)
            self._memory_scope.setdefault(row.id, scope2)
            self._memory_rows.append((index, row.event_id, scope2))
            self._sources[row.event_id] = None
            if row.invalid_at is not None and row.invalid_at < row.valid_at:
                self._memory_problems.append(
                    (index, f"memories[{index}].invalid_at", "invalid_at_before_valid_at")
                )
            if isinstance(row, MemoryRowV7):
                self._memory_problems += [
                    (index, f"memories[{index}].{column}", rule)
                    for column, rule in state_problems(row.model_dump())
                ]
            self._highest["memories"] = max(self._highest["memories"], row.pk)
        elif table == "relations":
            keys[0].add((row.from_id, row.to_id, row.type), index)
            self._relations.append((index, row.from_id, row.to_id))
        elif table == "checkpoints":
            keys[0].add(row.id, index)
            self._personas.add(row.persona_id)
            if row.covered_seq is not None:
                scope = (row.persona_id, row.project_id, row.session_id)
                self._checkpoints.append((index, row.covered_seq, scope, row.invalidated_at is not None))
        elif table == "capture_cursors":
            keys[0].add((row.instance_id, row.persona_id, row.project_id, row.session_id), index)
            self._cursor_personas.append((index, row.persona_id))
        elif table == "deletion_ledger":
            keys[0].add((row.digest, row.kind, row.persona_id, row.project_id), index)

    def end_of_rows(self) -> None:
        """After every row: raise for shape and count problems."""
        if self.fmt == "json":
            missing = [(f"tables.{n}", "table_missing") for n in self.models if n not in self._tables]
            self._problems += [p for p in missing if p not in self._problems]
        problems = self._problems
        total = len(problems) + max(0, self._shape_total - len(problems))
        if self.header.counts is not None:
            count_problems = []
            for name in self.models:
                if name not in self.header.counts:
                    count_problems.append((f"archive.counts.{name}", "count_missing"))
                elif self.header.counts[name] != self.counts.get(name, 0):
                    count_problems.append((f"archive.counts.{name}", "count_mismatch"))
            problems = problems + count_problems
            total += len(count_problems)
        if problems:
            raise ArchiveRejected(problems[:MAX_REPORTED], total=total)

    # -- the second look at events ------------------------------------------------------------------

    @property
    def needs_events(self) -> bool:
        """Whether any memory needs its source event's text (then :meth:`event`, :meth:`memory`)."""
        return bool(self._sources)

    def event(self, raw_row: Any) -> None:
        """Second look, at one event: keep role, category and text when a memory derives from it."""
        event = self.models["events"].model_validate(raw_row)
        assert isinstance(event, EventRow)
        if event.id in self._sources and self._sources[event.id] is None:
            self._sources[event.id] = SourceEvent(role=event.role, category=event.category, text=event.text)

    def memory(self, index: int, raw_row: Any) -> None:
        """Third look, at one memory: the rules that need its source event (quote, basis, category)."""
        model = self.models["memories"]
        memory = model.model_validate(raw_row)
        assert isinstance(memory, MemoryRowV1)
        source = self._sources.get(memory.event_id)
        if source is None:  # no such event: reported as event_not_found
            return
        for v in validate_memory(_candidate(memory), source):
            self._memory_problems.append((index, f"memories[{index}].{v.field}", str(v.rule)))

    # -- verdict ------------------------------------------------------------------------------------

    def result(self) -> tuple[dict[str, int], dict[str, int]]:
        """Raise for any rule broken; else return (row counts, sequences) for the write pass."""
        problems: list[tuple[str, str]] = []
        for keys in self._keys.values():
            for k in keys:
                problems += [(where, rule) for _, where, rule in sorted(k.problems)]
        for index, event_id in self._cue_events:
            if event_id not in self._event_scope:
                problems.append((f"event_cues[{index}].event_id", "event_not_found"))
        memory_problems = list(self._memory_problems)
        for index, event_id, scope in self._memory_rows:
            event = self._event_scope.get(event_id)
            if event is None:
                memory_problems.append((index, f"memories[{index}].event_id", "event_not_found"))
            elif scope != event[:2]:
                memory_problems.append((index, f"memories[{index}].event_id", "scope_mismatch"))
        problems += [(where, rule) for _, where, rule in sorted(memory_problems, key=lambda p: p[0])]
        for index, from_id, to_id in self._relations:
            ends = [self._memory_scope.get(from_id), self._memory_scope.get(to_id)]
            for column, end in zip(("from_id", "to_id"), ends, strict=True):
                if end is None:
                    problems.append((f"relations[{index}].{column}", "memory_not_found"))
            if None not in ends and ends[0] != ends[1]:
                problems.append((f"relations[{index}]", "scope_mismatch"))
        for index, covered_seq, session, invalidated in self._checkpoints:
            covered = self._seq_scope.get(covered_seq)
            if covered is None:
                # a deletion removes the covered event and invalidates the checkpoint in the same
                # transaction (sequence numbers are never reused, so the dangling number stays unambiguous)
                if not invalidated:
                    problems.append((f"checkpoints[{index}].covered_seq", "covered_seq_not_found"))
            elif covered != session:
                problems.append((f"checkpoints[{index}].covered_seq", "covered_seq_other_scope"))
        for index, persona in self._cursor_personas:
            if persona not in self._personas:
                problems.append((f"capture_cursors[{index}].persona_id", "persona_not_found"))
        declared = self.header.sequences or {}
        sequences: dict[str, int] = {}
        for name in SEQUENCE_TABLES:
            highest = self._highest[name]
            given = declared.get(name)
            if given is not None and given < highest:
                problems.append((f"archive.sequences.{name}", "sequence_below_max"))
            sequences[name] = max(highest, given or 0)
        if problems:
            raise ArchiveRejected(problems[:MAX_REPORTED], total=len(problems))
        self._release()
        return {name: self.counts.get(name, 0) for name in TABLES}, sequences

    def _release(self) -> None:
        """Drop what the checks kept: the write pass needs none of it."""
        self._keys.clear()
        for kept in (self._event_scope, self._seq_scope, self._sources, self._memory_scope, self._shared):
            kept.clear()
        self._shared2.clear()
        self._cue_events.clear()
        self._memory_rows.clear()
        self._relations.clear()
        self._checkpoints.clear()
        self._personas.clear()
        self._cursor_personas.clear()

    # -- the write pass -----------------------------------------------------------------------------

    def upgrade(self, table: str, raw_row: Any) -> dict[str, Any]:
        """A row that passed, in the current format, ready to insert."""
        return _dump(self.models[table].model_validate(raw_row))


def validate(raw: RawArchive, tick: Callable[[int], object] = lambda n: None) -> ValidArchive:
    """Check every rule on an archive held in memory; return it upgraded to the current format, or raise.

    Raises :class:`ArchiveTooNew` for a newer format version and :class:`ArchiveRejected` (naming each
    record and rule, at most :data:`MAX_REPORTED`) for anything else. ``tick`` is called once per row.
    Large archives are checked without holding them (:class:`ArchiveChecker`); this is the same check.
    """
    checker = ArchiveChecker(raw.header, raw.fmt, raw.tables)
    for name in checker.models:
        for index, row in enumerate(raw.tables.get(name, [])):
            checker.row(name, index, row)
            tick(1)
    checker.end_of_rows()
    if checker.needs_events:
        for row in raw.tables.get("events", []):
            checker.event(row)
        for index, row in enumerate(raw.tables.get("memories", [])):
            checker.memory(index, row)
    _, sequences = checker.result()
    tables = {name: [checker.upgrade(name, row) for row in raw.tables.get(name, [])] for name in TABLES}
    return ValidArchive(source_version=checker.version, tables=tables, sequences=sequences)


def _dump(row: BaseModel) -> dict[str, Any]:
    data = row.model_dump()
    if isinstance(row, MemoryRowV1) and not isinstance(row, MemoryRow):
        data["gist"] = None  # version 1 had no gists; authored gists only come from extraction
    if isinstance(row, MemoryRowV1) and not isinstance(row, MemoryRowV7):
        # before version 7 every stored memory was remembered: it arrives accepted, never reviewed
        data.update(review_state="accepted", reviewed_at=None, reviewed_by=None, review_note=None)
    return data
