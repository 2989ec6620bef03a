"""The portable archive format of yiji, and the rules an archive must pass before anything is written.

Format (version 3, equal to schema version 3; see ``docs/archive-format.md``)
-----------------------------------------------------------------------------

An archive holds every *authoritative* table, in this order, with every column as stored:
``personas``, ``events``, ``event_cues``, ``memories``, ``relations``, ``checkpoints``,
``capture_cursors``. It never holds configuration, the vector cache (``embeddings``), the lexical index
(``memory_fts``, ``event_fts``) or its bookkeeping (``meta``): those are rebuilt after an import.

The header::

    {"format": "yiji-archive", "format_version": 3, "exported_at": "2026-06-01T12:00:00.000000Z",
     "counts": {"personas": 2, "events": 40, ...},       # rows per table
     "sequences": {"events": 41, "memories": 77}}         # highest seq / pk ever assigned

* **JSON**: one object, the header plus ``"tables": {"personas": [row, ...], "events": [...], ...}``.
  Every table of the format version must be present (an empty list when it has no rows).
* **JSONL**: the header on the first line, then one line per row, ``{"table": "events", "row": {...}}``,
  tables in the order above and rows in stored order. ``counts`` is required here, so a file cut at a
  line boundary is detected.

Rows are JSON objects whose keys are the column names and whose values are the stored values: times are
yiji's fixed-width UTC strings (import also accepts any ISO 8601 time with a timezone and normalizes it),
booleans are ``0``/``1``, checkpoint step lists are JSON arrays encoded as text, as in the database.
``events.seq`` and ``memories.pk`` are kept, so ``checkpoints.covered_seq`` and host capture cursors keep
pointing at the same events, and ``sequences`` keeps numbers of deleted rows from ever being reused.
Rows appear in stored (rowid) order, so a database exported, imported into a fresh file and exported
again gives the same archive except ``exported_at``.

Older versions remain importable: version 1 has no ``event_cues``, no ``capture_cursors`` and no
``memories.gist`` (imported as null); version 2 has no ``capture_cursors``. A newer version is refused.

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
* Checkpoint coverage: ``covered_seq_not_found``, ``covered_seq_other_scope`` (the covered event belongs
  to another persona, project or session).
* Header: ``count_mismatch`` (truncated or edited), ``sequence_below_max``.

Error messages name ``table[index].field`` (index counts rows of that table from 0) and never contain a
stored value. The whole archive is held in memory while it is checked.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

from yiji.domain.validation import MemoryCandidate, SourceEvent, validate_memory
from yiji.errors import ArchiveRejected, SchemaTooNew
from yiji.models.archive import (
    ArchiveHeader,
    ArchiveLine,
    CaptureCursorRow,
    CheckpointRow,
    EventCueRow,
    EventRow,
    MemoryRow,
    MemoryRowV1,
    PersonaRow,
    RelationRow,
    RowModel,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_REPORTED",
    "SEQUENCE_TABLES",
    "TABLES",
    "TABLES_BY_VERSION",
    "ArchiveFormat",
    "RawArchive",
    "ValidArchive",
    "decode_json",
    "decode_jsonl",
    "detect_format",
    "encode",
    "make_header",
    "memory_violations",
    "validate",
]

FORMAT: Final = "yiji-archive"
FORMAT_VERSION: Final = 3
"""The newest archive format version; it equals the newest schema version."""

ArchiveFormat = Literal["json", "jsonl"]

ROW_MODELS: Final[dict[int, dict[str, type[RowModel]]]] = {
    1: {
        "personas": PersonaRow,
        "events": EventRow,
        "memories": MemoryRowV1,
        "relations": RelationRow,
        "checkpoints": CheckpointRow,
    },
    2: {
        "personas": PersonaRow,
        "events": EventRow,
        "event_cues": EventCueRow,
        "memories": MemoryRow,
        "relations": RelationRow,
        "checkpoints": CheckpointRow,
    },
    3: {
        "personas": PersonaRow,
        "events": EventRow,
        "event_cues": EventCueRow,
        "memories": MemoryRow,
        "relations": RelationRow,
        "checkpoints": CheckpointRow,
        "capture_cursors": CaptureCursorRow,
    },
}
TABLES_BY_VERSION: Final[dict[int, tuple[str, ...]]] = {v: tuple(m) for v, m in ROW_MODELS.items()}
TABLES: Final = TABLES_BY_VERSION[FORMAT_VERSION]
"""Authoritative tables in dependency order: a table only refers to tables before it."""
SEQUENCE_TABLES: Final = ("events", "memories")
"""Tables whose integer key is ``AUTOINCREMENT``: numbers of deleted rows are never reused."""
_SEQUENCE_COLUMN: Final = {"events": "seq", "memories": "pk"}

MAX_REPORTED: Final = 20
"""At most this many problems are listed in one error; the total is reported as well."""

_SAFE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _name(value: object, fallback: str) -> str:
    """A key from the archive, shown only when it looks like a column or table name."""
    return value if isinstance(value, str) and _SAFE_NAME.fullmatch(value) else fallback


# -- writing ------------------------------------------------------------------------------------


def make_header(
    format_version: int, exported_at: str, counts: Mapping[str, int], sequences: Mapping[str, int]
) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "format_version": format_version,
        "exported_at": exported_at,
        "counts": dict(counts),
        "sequences": dict(sequences),
    }


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def encode(
    fmt: ArchiveFormat, header: Mapping[str, Any], tables: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]
) -> Iterator[str]:
    """The archive as text chunks (one per row), streamed so a large database is never held whole."""
    if fmt == "jsonl":
        yield _dumps(header) + "\n"
        for name, rows in tables:
            for row in rows:
                yield _dumps({"table": name, "row": row}) + "\n"
        return
    head = _dumps(dict(header))
    yield head[:-1] + ', "tables": {'
    for t, (name, rows) in enumerate(tables):
        yield ("," if t else "") + "\n" + _dumps(name) + ": ["
        count = 0
        for count, row in enumerate(rows, start=1):
            yield ("," if count > 1 else "") + "\n" + _dumps(row)
        yield "\n]" if count else "]"
    yield "\n}}\n"


# -- reading ------------------------------------------------------------------------------------

SQLITE_MAGIC: Final = b"SQLite format 3\x00"


def detect_format(first_line: bytes) -> Literal["json", "jsonl", "sqlite"]:
    """Tell a SQLite file, a JSONL archive (its first line is a whole header) and a JSON archive apart."""
    if first_line.startswith(SQLITE_MAGIC):
        return "sqlite"
    try:
        head = json.loads(first_line.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return "json"
    if isinstance(head, dict) and "format" in head and "tables" not in head:
        return "jsonl"
    return "json"


@dataclass
class RawArchive:
    """A decoded archive before validation: a header and the rows of each table, as found."""

    header: Any
    tables: dict[str, list[Any]] = field(default_factory=dict)
    fmt: Literal["json", "jsonl", "sqlite"] = "json"


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey
        out[key] = value
    return out


def _no_constant(_: str) -> Any:
    raise ValueError("NaN and Infinity are not JSON")


def _loads(text: str, where: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_object, parse_constant=_no_constant)
    except _DuplicateKey:
        raise ArchiveRejected([(where, "duplicate_field")]) from None
    except json.JSONDecodeError as exc:
        position = f" (line {exc.lineno}, column {exc.colno})" if where == "archive" else ""
        raise ArchiveRejected([(where, f"not_valid_json{position}")]) from None
    except (ValueError, RecursionError):
        raise ArchiveRejected([(where, "not_valid_json")]) from None


def decode_json(text: str) -> RawArchive:
    """Decode a JSON archive: one object, the header plus ``tables``."""
    data = _loads(text, "archive")
    if not isinstance(data, dict):
        raise ArchiveRejected([("archive", "not_a_yiji_archive")])
    tables = data.pop("tables", None)
    _check_envelope(data)
    if not isinstance(tables, dict):
        raise ArchiveRejected([("archive.tables", "must_be_an_object_of_tables")])
    problems = []
    for name, rows in tables.items():
        if not isinstance(rows, list):
            problems.append((f"tables.{_name(name, '<table>')}", "must_be_a_list_of_rows"))
    if problems:
        raise ArchiveRejected(problems[:MAX_REPORTED], total=len(problems))
    return RawArchive(header=data, tables=tables, fmt="json")


def decode_jsonl(lines: Iterable[str]) -> RawArchive:
    """Decode a JSONL archive: a header line, then ``{"table": ..., "row": {...}}`` lines."""
    archive: RawArchive | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        data = _loads(line, where)
        if archive is None:
            if not isinstance(data, dict) or "tables" in data:
                raise ArchiveRejected([(where, "not_a_yiji_archive_header")])
            _check_envelope(data)
            archive = RawArchive(header=data, fmt="jsonl")
            continue
        try:
            item = ArchiveLine.model_validate(data)
        except ValidationError:
            raise ArchiveRejected([(where, "must_be_a_table_row_object")]) from None
        archive.tables.setdefault(item.table, []).append(item.row)
    if archive is None:
        raise ArchiveRejected([("archive", "empty_file")])
    return archive


def _check_envelope(header: dict[str, Any]) -> None:
    """Identify the file and refuse a newer format before looking at anything else."""
    if header.get("format") != FORMAT:
        raise ArchiveRejected([("archive.format", "not_a_yiji_archive")])
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ArchiveRejected([("archive.format_version", "must_be_a_positive_integer")])
    if version > FORMAT_VERSION:
        raise SchemaTooNew(
            f"this archive has format version {version}, newer than this yiji supports "
            f"({FORMAT_VERSION}); upgrade yiji. Nothing was written."
        )


# -- validating ---------------------------------------------------------------------------------


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
    for error in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = list(error["loc"])
        if error["type"] == "extra_forbidden":
            key = loc[-1] if loc else None
            out.append((f"{record}.{_name(key, '<field>')}", "unknown_field"))
            continue
        path = ".".join(str(p) if p in known else "<field>" for p in loc[:1])
        rule = error["msg"].removeprefix("Value error, ")
        out.append((f"{record}.{path}" if path else record, rule))
    return out


def _shape(
    raw: RawArchive, version: int, tick: Callable[[int], object]
) -> tuple[ArchiveHeader, dict[str, list[Any]]]:
    """Validate the header and every row's shape; return the header and row models per table."""
    problems: list[tuple[str, str]] = []
    try:
        header = ArchiveHeader.model_validate(raw.header)
    except ValidationError as exc:
        raise ArchiveRejected(
            _pydantic_problems(exc, "archive", list(ArchiveHeader.model_fields))[:MAX_REPORTED]
        ) from None
    models = ROW_MODELS[version]
    problems += [(f"tables.{_name(n, '<table>')}", "unknown_table") for n in raw.tables if n not in models]
    if raw.fmt == "json":
        problems += [(f"tables.{n}", "table_missing") for n in models if n not in raw.tables]
    if raw.fmt == "jsonl" and header.counts is None:
        problems.append(("archive.counts", "required_in_jsonl"))
    if header.counts is not None:
        problems += [
            (f"archive.counts.{_name(n, '<table>')}", "unknown_table")
            for n in header.counts
            if n not in models
        ]
        for name in models:
            if name not in header.counts:
                problems.append((f"archive.counts.{name}", "count_missing"))
            elif header.counts[name] != len(raw.tables.get(name, [])):
                problems.append((f"archive.counts.{name}", "count_mismatch"))
    if header.sequences is not None:
        problems += [
            (f"archive.sequences.{_name(n, '<table>')}", "unknown_table")
            for n in header.sequences
            if n not in SEQUENCE_TABLES
        ]
    if problems:
        raise ArchiveRejected(problems[:MAX_REPORTED], total=len(problems))

    parsed: dict[str, list[Any]] = {}
    for name, model in models.items():
        known = list(model.model_fields)
        rows = []
        for index, row in enumerate(raw.tables.get(name, [])):
            try:
                rows.append(model.model_validate(row))
            except ValidationError as exc:
                problems += _pydantic_problems(exc, f"{name}[{index}]", known)
            tick(1)
        parsed[name] = rows
    if problems:
        raise ArchiveRejected(problems[:MAX_REPORTED], total=len(problems))
    return header, parsed


def _duplicates(
    problems: list[tuple[str, str]], table: str, keys: Sequence[Hashable], rule: str, column: str = ""
) -> None:
    counts = Counter(keys)
    for index, key in enumerate(keys):
        if counts[key] > 1:
            problems.append((f"{table}[{index}]{'.' + column if column else ''}", rule))


def memory_violations(memory: MemoryRowV1, event: EventRow) -> list[tuple[str, str]]:
    """The rules a stored memory must satisfy against its source event, as ``(field, rule)`` pairs.

    These are the rules of :mod:`yiji.domain.validation`, the same ones every derivation passes, so an
    archive cannot bring in a memory that yiji itself would have refused.
    """
    candidate = MemoryCandidate(
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
    source = SourceEvent(role=event.role, category=event.category, text=event.text)
    return [(v.field, str(v.rule)) for v in validate_memory(candidate, source)]


def _links(parsed: dict[str, list[Any]]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    personas: list[PersonaRow] = parsed["personas"]
    events: list[EventRow] = parsed["events"]
    cues: list[EventCueRow] = parsed.get("event_cues", [])
    memories: list[MemoryRowV1] = parsed["memories"]
    relations: list[RelationRow] = parsed["relations"]
    checkpoints: list[CheckpointRow] = parsed["checkpoints"]
    cursors: list[CaptureCursorRow] = parsed.get("capture_cursors", [])

    _duplicates(problems, "personas", [(p.persona_id, p.version) for p in personas], "duplicate_key")
    _duplicates(problems, "events", [e.id for e in events], "duplicate_id", "id")
    _duplicates(problems, "events", [e.seq for e in events], "duplicate_seq", "seq")
    _duplicates(
        problems, "event_cues", [(c.event_id, c.cue_type, c.identifier) for c in cues], "duplicate_key"
    )
    _duplicates(problems, "memories", [m.id for m in memories], "duplicate_id", "id")
    _duplicates(problems, "memories", [m.pk for m in memories], "duplicate_pk", "pk")
    _duplicates(problems, "relations", [(r.from_id, r.to_id, r.type) for r in relations], "duplicate_key")
    _duplicates(problems, "checkpoints", [c.id for c in checkpoints], "duplicate_id", "id")
    _duplicates(
        problems,
        "capture_cursors",
        [(c.instance_id, c.persona_id, c.project_id, c.session_id) for c in cursors],
        "duplicate_key",
    )

    by_id = {e.id: e for e in events}
    by_seq = {e.seq: e for e in events}
    for index, cue in enumerate(cues):
        if cue.event_id not in by_id:
            problems.append((f"event_cues[{index}].event_id", "event_not_found"))
    memory_scope: dict[str, tuple[str, str]] = {}
    for index, memory in enumerate(memories):
        memory_scope[memory.id] = (memory.persona_id, memory.project_id)
        record = f"memories[{index}]"
        event = by_id.get(memory.event_id)
        if event is None:
            problems.append((f"{record}.event_id", "event_not_found"))
            continue
        if (memory.persona_id, memory.project_id) != (event.persona_id, event.project_id):
            problems.append((f"{record}.event_id", "scope_mismatch"))
        problems += [(f"{record}.{f}", rule) for f, rule in memory_violations(memory, event)]
        if memory.invalid_at is not None and memory.invalid_at < memory.valid_at:
            problems.append((f"{record}.invalid_at", "invalid_at_before_valid_at"))
    for index, relation in enumerate(relations):
        ends = [memory_scope.get(relation.from_id), memory_scope.get(relation.to_id)]
        for column, end in zip(("from_id", "to_id"), ends, strict=True):
            if end is None:
                problems.append((f"relations[{index}].{column}", "memory_not_found"))
        if None not in ends and ends[0] != ends[1]:
            problems.append((f"relations[{index}]", "scope_mismatch"))
    for index, checkpoint in enumerate(checkpoints):
        if checkpoint.covered_seq is None:
            continue
        covered = by_seq.get(checkpoint.covered_seq)
        session = (checkpoint.persona_id, checkpoint.project_id, checkpoint.session_id)
        if covered is None:
            # a deletion removes the covered event and invalidates the checkpoint in the same transaction
            # (sequence numbers are never reused, so the dangling number stays unambiguous)
            if checkpoint.invalidated_at is None:
                problems.append((f"checkpoints[{index}].covered_seq", "covered_seq_not_found"))
        elif (covered.persona_id, covered.project_id, covered.session_id) != session:
            problems.append((f"checkpoints[{index}].covered_seq", "covered_seq_other_scope"))
    return problems


def validate(raw: RawArchive, tick: Callable[[int], object] = lambda n: None) -> ValidArchive:
    """Check every rule; return the archive upgraded to the current format, or raise.

    Raises :class:`SchemaTooNew` for a newer format version and :class:`ArchiveRejected` (naming each
    record and rule, at most :data:`MAX_REPORTED`) for anything else. ``tick`` is called once per row.
    """
    if not isinstance(raw.header, dict):
        raise ArchiveRejected([("archive", "not_a_yiji_archive")])
    _check_envelope(raw.header)
    version: int = raw.header["format_version"]
    header, parsed = _shape(raw, version, tick)
    declared = header.sequences or {}
    problems = _links(parsed)
    sequences: dict[str, int] = {}
    for name in SEQUENCE_TABLES:
        column = _SEQUENCE_COLUMN[name]
        highest = max((getattr(row, column) for row in parsed[name]), default=0)
        given = declared.get(name)
        if given is not None and given < highest:
            problems.append((f"archive.sequences.{name}", "sequence_below_max"))
        sequences[name] = max(highest, given or 0)
    if problems:
        raise ArchiveRejected(problems[:MAX_REPORTED], total=len(problems))
    tables: dict[str, list[dict[str, Any]]] = {}
    for name in TABLES:
        rows = [_dump(row) for row in parsed.get(name, [])]
        tables[name] = rows
    return ValidArchive(source_version=version, tables=tables, sequences=sequences)


def _dump(row: BaseModel) -> dict[str, Any]:
    data = row.model_dump()
    if isinstance(row, MemoryRowV1) and not isinstance(row, MemoryRow):
        data["gist"] = None  # version 1 had no gists; authored gists only come from extraction
    return data
