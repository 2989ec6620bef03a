"""Streaming reader for a file of records: one JSON list, or JSON Lines (one value per line).

Pure: it consumes an iterable of text chunks (the caller reads the file) and yields one
:class:`StreamItem` per record with the 1-based line where the record starts, so a rejection can name the
line without quoting the value. Memory stays bounded by the largest single record, not the file, and a
record may hold at most :data:`MAX_RECORD` characters (:data:`TOO_LONG`), valid or not: a broken list is
refused where it breaks, without reading on to the end of the file in the hope that it mends.

Rules:

* The first non-blank character decides the format: ``[`` is a JSON list, anything else is JSON Lines.
* JSON Lines: blank lines are skipped; a line that is not valid JSON is one bad record, and reading goes on
  (a line too long is skipped to its end without being held).
* JSON list: a syntax error (or a record too long) cannot be resynchronised, so it yields one bad record
  and ends the stream (``fatal``); records read before it stand. A lone surrogate is a bad record only.
* Every way a parser can fail is a rule, never an exception: text that is not JSON (:data:`NOT_JSON`),
  nesting deeper than the parser's recursion allows (:data:`TOO_DEEP`), an integer longer than Python
  converts (:data:`LONG_NUMBER`), and an escape of a lone UTF-16 surrogate such as ``"\\ud800"``
  (:data:`SURROGATE`), which no UTF-8 text or SQLite column can hold. :func:`decode` applies the same
  rules to one value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from yiji.domain.limits import MAX_EVENT_TEXT

__all__ = [
    "LONG_NUMBER",
    "MAX_RECORD",
    "NOT_JSON",
    "SURROGATE",
    "TOO_DEEP",
    "TOO_LONG",
    "StreamItem",
    "decode",
    "records",
]

NOT_JSON = "not valid JSON"
TOO_DEEP = "nested too deeply"
LONG_NUMBER = "holds a number with too many digits"
SURROGATE = "holds an unpaired surrogate escape"
MAX_RECORD = 8 * MAX_EVENT_TEXT
"""Longest record, in characters: an event of the longest text written with ``\\uXXXX`` escapes fits."""
TOO_LONG = "is longer than a record may be"
_TAIL = 16
"""A parse error this close to the end of the text read so far may be a record going on in the next chunk
(``tru`` of ``true``, half of a ``\\u`` escape); further back it is where the text breaks."""
_WHITESPACE = " \t\r\n"
_decoder = json.JSONDecoder()
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""Where a surrogate can come from: strict UTF-8 text holds none, only a JSON escape makes one."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _parse_error(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return TOO_DEEP
    return NOT_JSON if isinstance(exc, json.JSONDecodeError) else LONG_NUMBER


def _holds_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _checked(value: Any, source: str) -> str | None:
    """The rule a decoded value breaks (a lone surrogate), looked for only where an escape could make one."""
    return SURROGATE if _SURROGATE_ESCAPE.search(source) and _holds_surrogate(value) else None


def decode(text: str) -> tuple[Any, str | None]:
    """One JSON value from ``text``: ``(value, None)``, or ``(None, rule)`` naming the rule it broke."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return None, _parse_error(exc)
    rule = _checked(value, text)
    return (None, rule) if rule else (value, None)


@dataclass(frozen=True)
class StreamItem:
    """One record: its value, or (``error`` set) the rule it broke. ``fatal`` ends the stream."""

    line: int
    value: Any = None
    error: str | None = None
    fatal: bool = False


def records(chunks: Iterable[str], max_record: int = MAX_RECORD) -> Iterator[StreamItem]:
    """Yield the records of the text made by joining ``chunks``; a record holds at most ``max_record``
    characters."""
    source = iter(chunks)
    head = ""
    for chunk in source:
        head += chunk
        if head.lstrip(_WHITESPACE + "\ufeff"):
            break
    body = head.lstrip("\ufeff")
    stripped = body.lstrip(_WHITESPACE)
    if not stripped:
        return
    if stripped[0] == "[":
        yield from _json_list(body, source, max_record)
    else:
        yield from _json_lines(body, source, max_record)


def _json_lines(first: str, rest: Iterator[str], max_record: int) -> Iterator[StreamItem]:
    line_no = 0
    pending = first
    skipping = False  # inside a line too long to hold: drop its text up to its end
    while True:
        *lines, pending = pending.split("\n")
        for line in lines:
            line_no += 1
            if skipping:
                skipping = False
            elif len(line) > max_record:
                yield StreamItem(line=line_no, error=TOO_LONG)
            else:
                yield from _one_line(line, line_no)
        if len(pending) > max_record and not skipping:
            yield StreamItem(line=line_no + 1, error=TOO_LONG)
            skipping = True
        if skipping:
            pending = ""
        chunk = next(rest, None)
        if chunk is None:
            break
        pending += chunk
    if pending and not skipping:
        yield from _one_line(pending, line_no + 1)


def _one_line(line: str, line_no: int) -> Iterator[StreamItem]:
    if not line.strip(_WHITESPACE):
        return
    value, error = decode(line)
    yield StreamItem(line=line_no, value=value, error=error)


class _Buffer:
    """Text not yet consumed, refilled from the chunk iterator, tracking the current line."""

    def __init__(self, first: str, rest: Iterator[str], max_record: int) -> None:
        self.max_record = max_record
        self.text = first
        self.pos = 0
        self.line = 1
        self.rest = rest
        self.eof = False

    def more(self) -> bool:
        chunk = next(self.rest, None)
        if chunk is None:
            self.eof = True
            return False
        if self.pos > 1 << 16:  # drop what was consumed so the buffer stays bounded
            self.text = self.text[self.pos :]
            self.pos = 0
        self.text += chunk
        return True

    def skip_blank(self) -> str | None:
        """Advance past whitespace; return the next character (None at the end of input)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
                if self.text[self.pos] == "\n":
                    self.line += 1
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return None

    def _may_go_on(self, exc: json.JSONDecodeError) -> bool:
        """Whether the error may only be where the text read so far ends (then read on)."""
        return exc.pos >= len(self.text) - _TAIL or exc.msg.startswith("Unterminated string")

    def value(self) -> tuple[Any, str | None]:
        """Decode one JSON value at the position: ``(value, None)``, or ``(None, rule)``."""
        while True:
            try:
                value, end = _decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof or not self._may_go_on(exc):
                    return None, NOT_JSON
                if len(self.text) - self.pos > self.max_record:
                    return None, TOO_LONG
                if not self.more():
                    return None, NOT_JSON
                continue
            except (ValueError, RecursionError) as exc:
                return None, _parse_error(exc)
            if end == len(self.text) and not self.eof and self.more():
                continue  # a number or literal may go on in the next chunk
            rule = (
                TOO_LONG if end - self.pos > self.max_record else _checked(value, self.text[self.pos : end])
            )
            self.line += self.text.count("\n", self.pos, end)
            self.pos = end
            return (None, rule) if rule else (value, None)


def _json_list(first: str, rest: Iterator[str], max_record: int) -> Iterator[StreamItem]:
    buf = _Buffer(first, rest, max_record)
    buf.skip_blank()
    buf.pos += 1  # the opening bracket
    expect_value = True
    count = 0
    while True:
        char = buf.skip_blank()
        if char is None:
            yield StreamItem(line=buf.line, error="the list is not closed", fatal=True)
            return
        if char == "]" and (not expect_value or count == 0):
            buf.pos += 1
            if buf.skip_blank() is not None:
                yield StreamItem(line=buf.line, error="text after the end of the list", fatal=True)
            return
        if not expect_value:
            if char != ",":
                yield StreamItem(line=buf.line, error=NOT_JSON, fatal=True)
                return
            buf.pos += 1
            expect_value = True
            continue
        line = buf.line
        value, error = buf.value()
        if error is not None and error != SURROGATE:  # only a surrogate is known to end where it ends
            yield StreamItem(line=line, error=error, fatal=True)
            return
        yield StreamItem(line=line, value=value, error=error)
        count += 1
        expect_value = False
