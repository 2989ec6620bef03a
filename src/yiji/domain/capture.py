"""Host capture batches (``yiji host-ingest``): their shape, a fast check of plainly valid input, and the
ordering rules of a batch.

A host runs ``yiji host-ingest`` at every compaction, so the command must start quickly. Its input is
checked here without pydantic: :func:`plain_batch` builds a :class:`CaptureBatch` from input whose values
already have their final types and keep every rule of the boundary model
(:class:`yiji.models.capture.CaptureBatch`). For anything else it returns ``None`` and the caller lets the
boundary model decide: it converts what it may (a ``seq`` sent as ``3.0``) and words the error, naming the
field and the rule. So the fast path can only accept what the model accepts, with the same values, and
errors read exactly as for every other command.

The cursor is the highest host ``seq`` committed; ``-1`` (:data:`NO_CURSOR`) means nothing was captured.
It is stored as decimal text, so a cursor that arrives from elsewhere (an archive, a backup, a damaged
file) passes :func:`cursor_row_problems`, the one rule for a stored cursor row that archive import,
restore and ``doctor`` share: the cursor is ``-1`` or a whole number from 0 to :data:`MAX_SEQ` written the
canonical way (no sign, space or leading zero), and the instance, persona, project and session ids are
shaped as ``host-ingest`` requires them. :func:`parse_cursor` reads a stored one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from yiji.domain.capture_goals import CAPTURE_GOALS
from yiji.domain.limits import ID_PATTERN, ID_RULE, MAX_EVENT_TEXT, SCOPE_PATTERN, SCOPE_RULE
from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "BOUNDARY_REASONS",
    "CAPTURE_GOALS",
    "CURSOR_RULE",
    "MAX_CAPTURE_LINES",
    "MAX_SEQ",
    "NO_CURSOR",
    "REASONS",
    "CaptureBatch",
    "CaptureLine",
    "CaptureResult",
    "check_order",
    "cursor_row_problems",
    "parse_cursor",
    "plain_batch",
]

NO_CURSOR = -1
"""The cursor of a session nothing was captured from yet."""
MAX_SEQ = 2**63 - 1
"""Largest host ``seq`` (SQLite's largest integer): a cursor is at most 19 digits."""
CURSOR_RULE = (
    f"must be -1 or a whole number from 0 to {MAX_SEQ}, written without sign, spaces or leading zeros"
)
_CURSOR = re.compile(r"-1|0|[1-9][0-9]{0,18}")
MAX_CAPTURE_LINES = 10_000
REASONS: tuple[str, ...] = ("event", "pre-summarize", "pre-return", "backfill")
BOUNDARY_REASONS: frozenset[str] = frozenset({"pre-summarize", "pre-return"})
"""Reasons that record a capture checkpoint even when the batch is empty."""
ROLES: tuple[str, ...] = ("user", "assistant")
MAX_MESSAGE_ID = 128

CaptureReason = Literal["event", "pre-summarize", "pre-return", "backfill"]


@dataclass(frozen=True)
class CaptureLine:
    """One visible message, as a host sends it on a line of standard input."""

    event_id: str
    message_id: str
    session: str
    seq: int
    role: str
    text: str
    occurred_at: datetime
    """In UTC."""


@dataclass(frozen=True)
class CaptureBatch:
    """One ``host-ingest`` call. Omitted persona/project take the configured defaults."""

    instance: str
    session: str
    expect_cursor: int | None = None
    reason: str = "event"
    persona: str | None = None
    project: str | None = None
    lines: tuple[CaptureLine, ...] = ()


@dataclass(frozen=True)
class CaptureResult:
    """The acknowledgement printed on standard output.

    ``ok`` is false when the stored cursor was not the expected one (``conflict="cursor"``) or an event id
    was already stored with another payload (``conflict="event"``); nothing was written then, and
    ``cursor`` is the stored cursor. ``skipped_deleted`` counts the lines of a committed batch that were
    not stored because they repeat a deletion (:mod:`yiji.service.deletions`); the cursor moved past
    them all the same. It is printed only when not zero.
    """

    ok: bool
    cursor: int
    conflict: Literal["cursor", "event"] | None = None
    skipped_deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "cursor": self.cursor}
        if self.conflict is not None:
            out["conflict"] = self.conflict
        if self.skipped_deleted:
            out["skipped_deleted"] = self.skipped_deleted
        return out


_ID = re.compile(ID_PATTERN)
_SCOPE = re.compile(SCOPE_PATTERN)
_BATCH_KEYS = frozenset({"instance", "session", "expect_cursor", "reason", "persona", "project", "lines"})
_LINE_KEYS = frozenset({"event_id", "message_id", "session", "seq", "role", "text", "occurred_at"})


def _matches(pattern: re.Pattern[str], value: object) -> bool:
    return type(value) is str and pattern.fullmatch(value) is not None


def _count(value: object, low: int) -> bool:
    return type(value) is int and low <= value <= MAX_SEQ


def parse_cursor(text: object) -> int | None:
    """A stored cursor as a number, or ``None`` when it breaks :data:`CURSOR_RULE`."""
    if type(text) is not str or _CURSOR.fullmatch(text) is None:
        return None
    value = int(text)
    return value if value <= MAX_SEQ else None


_CURSOR_ROW: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("instance_id", _SCOPE, SCOPE_RULE),
    ("persona_id", _SCOPE, SCOPE_RULE),
    ("project_id", _SCOPE, SCOPE_RULE),
    ("session_id", _ID, ID_RULE),
)


def cursor_row_problems(row: Mapping[str, object]) -> list[tuple[str, str]]:
    """The ``(column, rule)`` pairs a stored capture cursor row breaks (none for a valid row).

    Whether its persona exists is a rule across tables, checked by the caller (``persona_not_found``).
    """
    problems = [
        (column, rule) for column, pattern, rule in _CURSOR_ROW if not _matches(pattern, row.get(column))
    ]
    if parse_cursor(row.get("cursor")) is None:
        problems.append(("cursor", CURSOR_RULE))
    return problems


def _plain_line(raw: object) -> CaptureLine | None:
    if type(raw) is not dict or raw.keys() != _LINE_KEYS:
        return None
    message_id, seq, role, text = raw["message_id"], raw["seq"], raw["role"], raw["text"]
    if not (_matches(_ID, raw["event_id"]) and _matches(_ID, raw["session"]) and _count(seq, 0)):
        return None
    if not (type(message_id) is str and 1 <= len(message_id) <= MAX_MESSAGE_ID and role in ROLES):
        return None
    if not (type(text) is str and len(text) <= MAX_EVENT_TEXT and text.strip()):
        return None
    try:
        occurred_at = parse_time(raw["occurred_at"], "occurred_at")
    except InvalidInput:
        return None
    return CaptureLine(raw["event_id"], message_id, raw["session"], seq, role, text, occurred_at)


def plain_batch(raw: Mapping[str, Any]) -> CaptureBatch | None:
    """The batch, when ``raw`` is plainly valid; ``None`` when the boundary model must decide."""
    if not raw.keys() <= _BATCH_KEYS or not {"instance", "session"} <= raw.keys():
        return None
    if not (_matches(_SCOPE, raw["instance"]) and _matches(_ID, raw["session"])):
        return None
    expect = raw.get("expect_cursor")
    if expect is not None and not _count(expect, NO_CURSOR):
        return None
    reason = raw.get("reason", "event")
    if reason not in REASONS:
        return None
    persona, project = raw.get("persona"), raw.get("project")
    if any(v is not None and not _matches(_SCOPE, v) for v in (persona, project)):
        return None
    items = raw.get("lines", [])
    if type(items) is not list or len(items) > MAX_CAPTURE_LINES:
        return None
    lines = []
    for item in items:
        line = _plain_line(item)
        if line is None:
            return None
        lines.append(line)
    return CaptureBatch(raw["instance"], raw["session"], expect, reason, persona, project, tuple(lines))


def check_order(batch: CaptureBatch) -> None:
    """The rules across lines: same session, strictly increasing seq past the cursor, unique ids."""
    if batch.lines and batch.expect_cursor is None:
        raise InvalidInput("expect_cursor", "is required when messages are given")
    previous = batch.expect_cursor if batch.expect_cursor is not None else NO_CURSOR
    ids: set[str] = set()
    for index, line in enumerate(batch.lines):
        field = f"lines[{index}]"
        if line.session != batch.session:
            raise InvalidInput(f"{field}.session", "must equal --session")
        if line.seq <= previous:
            raise InvalidInput(
                f"{field}.seq", "must be greater than the expected cursor and the previous line"
            )
        if line.event_id in ids:
            raise InvalidInput(f"{field}.event_id", "must be unique within the batch")
        ids.add(line.event_id)
        previous = line.seq
