"""The portable archive format of yiji: its versions and tables, writing it, and reading it as a stream.

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

The rules an archive must pass before anything is written are in :mod:`yiji.domain.archive_rules`.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import ValidationError

from yiji.errors import ArchiveRejected, ArchiveTooNew
from yiji.models.archive import (
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
    "ROW_MODELS",
    "SEQUENCE_TABLES",
    "SQLITE_MAGIC",
    "TABLES",
    "TABLES_BY_VERSION",
    "ArchiveFormat",
    "HeaderAfterTables",
    "RawArchive",
    "check_envelope",
    "decode_json",
    "decode_jsonl",
    "detect_format",
    "encode",
    "iter_json",
    "iter_jsonl",
    "looks_like_archive",
    "make_header",
    "shown_name",
]

FORMAT: Final = "yiji-archive"
FORMAT_VERSION: Final = 13
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
}
# Version 3 adds the capture cursors.
ROW_MODELS[3] = {**ROW_MODELS[2], "capture_cursors": CaptureCursorRow}
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
# Version 12 only packs the lexicon's postings into blocks (a cache).
ROW_MODELS[12] = ROW_MODELS[11]
# Version 13 only keeps each lexicon space's recent documents in its row (a cache).
ROW_MODELS[13] = ROW_MODELS[11]
TABLES_BY_VERSION: Final[dict[int, tuple[str, ...]]] = {v: tuple(m) for v, m in ROW_MODELS.items()}
TABLES: Final = TABLES_BY_VERSION[FORMAT_VERSION]
"""Authoritative tables in dependency order: a table only refers to tables before it."""
SEQUENCE_TABLES: Final = ("events", "memories")
"""Tables whose integer key is never reused, deleted rows' numbers included (the header's ``sequences``)."""
_SEQUENCE_COLUMN: Final = {"events": "seq", "memories": "pk"}

MAX_REPORTED: Final = 20
"""At most this many problems are listed in one error; the total is reported as well."""

_SAFE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def shown_name(value: object, fallback: str) -> str:
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
    check_envelope(data)
    if not isinstance(tables, dict):
        raise ArchiveRejected([("archive.tables", "must_be_an_object_of_tables")])
    problems = []
    for name, rows in tables.items():
        if not isinstance(rows, list):
            problems.append((f"tables.{shown_name(name, '<table>')}", "must_be_a_list_of_rows"))
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
            check_envelope(data)
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
                            [(f"tables.{shown_name(name, '<table>')}", "must_be_a_list_of_rows")]
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


def check_envelope(header: dict[str, Any]) -> None:
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
