"""Time at yiji's boundaries: parsing, normalizing to UTC, formatting, and the injected clock.

Invariants:

* Every public time carries a timezone; a naive time is rejected, never guessed. A date with a zone
  and no time of day (``2026-04-01Z``, ``2026-04-01+08:00``) is the start of that day in that zone.
* Stored and returned times are UTC strings of one fixed width (``2026-03-01T08:00:00.000000Z``),
  so SQL string comparison orders them correctly.
* Logic never calls ``datetime.now()``: it receives ``now`` from a :class:`Clock`.
* Local time is for people only: :func:`local_time` is the one place a time is shown in a person's zone
  (plain CLI output, the review UI); JSON and MCP keep UTC.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo

from yiji.errors import InvalidInput

__all__ = [
    "Clock",
    "FixedClock",
    "SystemClock",
    "display_zone",
    "from_db",
    "local_time",
    "parse_time",
    "read_in_zone",
    "to_db",
    "utc",
]


def utc(dt: datetime) -> datetime:
    """Return an aware datetime in UTC; naive values are a programming error here."""
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        raise ValueError("naive datetime")
    return dt.astimezone(UTC)


_DATE_WITH_ZONE = re.compile(
    r"(?P<date>\d{4}-?\d{2}-?\d{2}|\d{4}-?W\d{2}-?\d)(?P<zone>[zZ]|[+-]\d{2}(?::?\d{2})?)", re.ASCII
)
"""A calendar date (or week date) followed directly by a zone, with no time of day. Python's own parser
reads the offset of ``2026-04-01+08:00`` as a time of day (08:00, no zone), so it is caught first."""


def parse_time(value: object, field: str) -> datetime:
    """Parse an ISO 8601 string (or aware datetime) that names its timezone; return it in UTC.

    A date with a zone and no time of day (``2026-04-01Z``, ``2026-04-01+08:00``) is the start of that
    day in that zone. Raises :class:`InvalidInput` naming ``field`` (never the value) when the value is
    not a string, does not parse, or has no timezone.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, str):
        text = value.strip()
        dated = _DATE_WITH_ZONE.fullmatch(text)
        if dated:
            text = f"{dated['date']}T00:00{dated['zone']}"
        if text.endswith(("z", "Z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(field, "must be an ISO 8601 time with a timezone") from None
    else:
        raise InvalidInput(field, "must be an ISO 8601 time string with a timezone")
    if dt.tzinfo is None or dt.tzinfo.utcoffset(dt) is None:
        raise InvalidInput(field, "must include a timezone (for example Z or +08:00)")
    try:
        return dt.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInput(field, OUT_OF_RANGE) from None


OUT_OF_RANGE = "is out of the supported time range"


def read_in_zone(naive: datetime, zone: tzinfo | None, field: str) -> datetime:
    """A time a person gave without an offset (a browser's date field), read in ``zone`` (``None``: the
    system's, ``TZ`` or the machine's setting), then held to :func:`parse_time`'s rule: it must reach
    UTC. Returns it aware, in ``zone``. At the ends of the calendar (``0001-01-01`` east of UTC,
    ``9999-12-31`` west of it, or any date the system's zone cannot place) it raises
    :class:`InvalidInput` naming ``field`` with the same words as :func:`parse_time`."""
    try:
        aware = naive.astimezone() if zone is None else naive.replace(tzinfo=zone)
    except (OverflowError, ValueError, OSError):
        raise InvalidInput(field, OUT_OF_RANGE) from None
    parse_time(aware, field)
    return aware


def to_db(dt: datetime) -> str:
    """Format an aware datetime as yiji's fixed-width UTC string."""
    # isoformat is a C fast path (arguments given by position: parsing keywords costs a third of the
    # call); for a UTC datetime it ends in "+00:00", replaced by "Z"
    if dt.tzinfo is not UTC:
        dt = utc(dt)
    return dt.isoformat("T", "microseconds")[:-6] + "Z"


def from_db(text: str) -> datetime:
    """Parse a stored fixed-width UTC string."""
    return datetime.fromisoformat(text)


def display_zone(name: str | None) -> tzinfo | None:
    """The zone times are shown in to a person: the IANA zone ``name`` (checked by the configuration),
    or ``None`` for the system's local zone (``TZ`` or the machine's setting, with its own DST rules)."""
    if not name:
        return None
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def local_time(value: datetime | str, zone: tzinfo | None) -> str:
    """A time for a person, to the minute, in ``zone`` (``None``: the system's local zone), with its
    offset: ``2026-03-01 09:00 (+08:00)``. A stored UTC string is accepted as well."""
    moment = from_db(value) if isinstance(value, str) else value
    try:
        local = moment.astimezone(zone)
    except (OverflowError, ValueError):  # at the very ends of the calendar: shown as stored
        local = utc(moment)
    minutes = int((local.utcoffset() or timedelta(0)).total_seconds() // 60)
    sign, minutes = ("-", -minutes) if minutes < 0 else ("+", minutes)
    day = f"{local.year:04d}-{local.month:02d}-{local.day:02d}"  # strftime drops the zeros of year 1
    return f"{day} {local.hour:02d}:{local.minute:02d} ({sign}{minutes // 60:02d}:{minutes % 60:02d})"


class Clock:
    """Source of ``now``. Injected into the service so logic and tests agree on time."""

    def now(self) -> datetime:
        raise NotImplementedError


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock(Clock):
    """A clock for tests and benchmarks: returns a set time, optionally advancing on each call."""

    def __init__(self, start: datetime, step: timedelta = timedelta(0)) -> None:
        self._now = utc(start)
        self._step = step

    def now(self) -> datetime:
        current = self._now
        self._now = current + self._step
        return current

    def set(self, when: datetime) -> None:
        self._now = utc(when)

    def advance(self, delta: timedelta) -> None:
        self._now += delta


ClockFn = Callable[[], datetime]
