"""The portable archive format of yiji, and the rules an archive must pass before anything is written.

Format (version 10, equal to the schema version; see ``docs/archive-format.md``)
--------------------------------------------------------------------------------

An archive holds every *authoritative* table, in this order, with every column as stored:
``personas``, ``events``, ``event_cues``, ``memories``, ``relations``, ``checkpoints``,
``capture_cursors``, ``deletion_ledger``. It never holds configuration, the vector cache
(``embeddings``), the lexical index (``memory_fts``, ``event_fts``) or its bookkeeping (``meta``): those
are rebuilt after an import.

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
``memories.gist`` (imported as null); version 2 has no ``capture_cursors``; before version 7 memories
have no review state (imported ``accepted``: everything yiji stored then was remembered); before
version 10 there is no ``deletion_ledger`` (imported empty). A newer version is refused.

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

import json
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError

from yiji.domain.capture import cursor_row_problems
from yiji.domain.limits import pattern_rule
from yiji.domain.review import state_problems
from yiji.domain.validation import MemoryCandidate, SourceEvent, validate_memory
from yiji.errors import ArchiveRejected, ArchiveTooNew
from yiji.models.archive import (
    ArchiveHeader,
    ArchiveLine,
    CaptureCursorRow,
    CheckpointRow,
    DeletionLedgerRow,
    EventCueRow,
    EventRow,
    EventRowV11,
    MemoryRow,
    MemoryRowV1,
    MemoryRowV7,
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
    "ArchiveChecker",
    "ArchiveFormat",
    "RawArchive",
    "ValidArchive",
    "decode_json",
    "decode_jsonl",
    "HeaderAfterTables",
    "iter_json",
    "iter_jsonl",
    "detect_format",
    "looks_like_archive",
    "encode",
    "make_header",
    "memory_violations",
    "validate",
]

FORMAT: Final = "yiji-archive"
FORMAT_VERSION: Final = 11
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
# Version 4 adds only a cache table (raw-event vectors), version 5 only respells CHECK constraints and
# version 6 only moves the high-water mark of events.seq, so their archives hold the tables of version 3.
ROW_MODELS[4] = ROW_MODELS[5] = ROW_MODELS[6] = ROW_MODELS[3]
# Version 7 adds the review state of memories.
ROW_MODELS[7] = {**ROW_MODELS[3], "memories": MemoryRowV7}
# Version 8 adds only cache tables (the lexicon).
ROW_MODELS[8] = ROW_MODELS[7]
# Version 9 adds only caches (packed vectors, vector stamps).
ROW_MODELS[9] = ROW_MODELS[7]
# Version 10 adds the deletion ledger (digests of what permanent deletions removed).
ROW_MODELS[10] = {**ROW_MODELS[7], "deletion_ledger": DeletionLedgerRow}
# Version 11 adds whether an event's text had secrets redacted.
ROW_MODELS[11] = {**ROW_MODELS[10], "events": EventRowV11}
TABLES_BY_VERSION: Final[dict[int, tuple[str, ...]]] = {v: tuple(m) for v, m in ROW_MODELS.items()}
TABLES: Final = TABLES_BY_VERSION[FORMAT_VERSION]
"""Authoritative tables in dependency order: a table only refers to tables before it."""
SEQUENCE_TABLES: Final = ("events", "memories")
"""Tables whose integer key is never reused, deleted rows' numbers included (the header's ``sequences``)."""
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


_JSON_ARCHIVE_START = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"yiji-archive"')
"""How yiji's JSON export begins: its first line holds the header and opens ``tables``."""


def looks_like_archive(first_line: bytes) -> bool:
    """Whether a file's first line is an archive's: a JSONL header (the line parses as an object whose
    ``format`` is ``yiji-archive``) or the opening of a JSON archive. Only the identity is looked at."""
    line = first_line.removeprefix(b"\xef\xbb\xbf")
    try:
        head = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return _JSON_ARCHIVE_START.match(line) is not None
    return isinstance(head, dict) and head.get("format") == FORMAT


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


def iter_jsonl(lines: Iterable[str]) -> Iterator[tuple[str, Any]]:
    """A JSONL archive as ``("header", header)`` then ``(table, row)`` items, one line at a time."""
    header_seen = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        data = _loads(line, where)
        if not header_seen:
            if not isinstance(data, dict) or "tables" in data:
                raise ArchiveRejected([(where, "not_a_yiji_archive_header")])
            _check_envelope(data)
            header_seen = True
            yield "header", data
            continue
        try:
            item = ArchiveLine.model_validate(data)
        except ValidationError:
            raise ArchiveRejected([(where, "must_be_a_table_row_object")]) from None
        yield item.table, item.row
    if not header_seen:
        raise ArchiveRejected([("archive", "empty_file")])


def decode_jsonl(lines: Iterable[str]) -> RawArchive:
    """Decode a JSONL archive: a header line, then ``{"table": ..., "row": {...}}`` lines."""
    items = iter_jsonl(lines)
    _, header = next(items)
    archive = RawArchive(header=header, fmt="jsonl")
    for table, row in items:
        archive.tables.setdefault(table, []).append(row)
    return archive


class HeaderAfterTables(Exception):
    """A JSON archive with header members after ``tables``: it cannot be checked as a stream."""


def iter_json(read: Callable[[int], str], chunk: int = 1 << 20) -> Iterator[tuple[str, Any, Any]]:
    """A JSON archive as a stream: ``("member", key, value)`` for header members, ``("table", name,
    None)`` when a table starts and ``("row", name, row)`` per row, reading ``chunk`` characters at a time.

    Only the two outer levels are parsed here; each member value and each row is decoded whole, with
    the same rules as :func:`decode_json` (duplicate fields, no NaN). Raises :class:`HeaderAfterTables`
    when a header member follows ``tables`` (the caller then reads the file whole).
    """
    decoder = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_no_constant)
    buf = ""
    pos = 0
    eof = False

    def more() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        data = read(chunk)
        if not data:
            eof = True
            return False
        buf = buf[pos:] + data
        pos = 0
        return True

    def bad() -> ArchiveRejected:
        return ArchiveRejected([("archive", "not_valid_json")])

    def char() -> str:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in " \t\r\n":
                pos += 1
            if pos < len(buf):
                return buf[pos]
            if not more():
                raise bad()

    def take(expected: str) -> None:
        nonlocal pos
        if char() != expected:
            raise bad()
        pos += 1

    def value() -> Any:
        nonlocal pos
        char()
        while True:
            try:
                result, end = decoder.raw_decode(buf, pos)
            except _DuplicateKey:
                raise ArchiveRejected([("archive", "duplicate_field")]) from None
            except (ValueError, RecursionError):
                if more():
                    continue
                raise bad() from None
            if end < len(buf) or eof or not more():  # a number may go on in the next chunk
                pos = end
                return result

    take("{")
    keys: set[str] = set()
    tables_done = False
    if char() == "}":
        return
    while True:
        key = value()
        if not isinstance(key, str):
            raise bad()
        if key in keys:
            raise ArchiveRejected([("archive", "duplicate_field")])
        keys.add(key)
        take(":")
        if key != "tables":
            if tables_done:
                raise HeaderAfterTables
            yield "member", key, value()
        else:
            tables_done = True
            if char() != "{":
                value()
                raise ArchiveRejected([("archive.tables", "must_be_an_object_of_tables")])
            take("{")
            names: set[str] = set()
            if char() != "}":
                while True:
                    name = value()
                    if not isinstance(name, str) or name in names:
                        raise ArchiveRejected(
                            [("archive", "duplicate_field" if name in names else "not_valid_json")]
                        )
                    names.add(name)
                    take(":")
                    if char() != "[":
                        value()
                        raise ArchiveRejected(
                            [(f"tables.{_name(name, '<table>')}", "must_be_a_list_of_rows")]
                        )
                    take("[")
                    yield "table", name, None
                    if char() != "]":
                        while True:
                            yield "row", name, value()
                            if char() == ",":
                                take(",")
                                continue
                            take("]")
                            break
                    else:
                        take("]")
                    if char() == ",":
                        take(",")
                        continue
                    take("}")
                    break
            else:
                take("}")
        if char() == ",":
            take(",")
            continue
        take("}")
        break
    while pos < len(buf) or more():
        if buf[pos:].strip():
            raise bad()
        pos = len(buf)


def _check_envelope(header: dict[str, Any]) -> None:
    """Identify the file and refuse a newer format before looking at anything else."""
    if header.get("format") != FORMAT:
        raise ArchiveRejected([("archive.format", "not_a_yiji_archive")])
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ArchiveRejected([("archive.format_version", "must_be_a_positive_integer")])
    if version > FORMAT_VERSION:
        raise ArchiveTooNew(
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
    for error in exc.errors(include_input=False, include_url=False):
        loc = list(error["loc"])
        if error["type"] == "extra_forbidden":
            key = loc[-1] if loc else None
            out.append((f"{record}.{_name(key, '<field>')}", "unknown_field"))
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
        _check_envelope(header)
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
                (f"archive.counts.{_name(n, '<table>')}", "unknown_table")
                for n in self.header.counts
                if n not in self.models
            ]
        if self.header.sequences is not None:
            self._problems += [
                (f"archive.sequences.{_name(n, '<table>')}", "unknown_table")
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
            self._problems.append((f"tables.{_name(name, '<table>')}", "unknown_table"))

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
