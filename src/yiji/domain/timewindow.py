"""Time in a recall query: the expressions a query uses for a time, resolved against ``now``.

A question such as "what did I buy last weekend", "去年夏天我们去了哪里" or "before my trip in June" names a
time. :func:`resolve_query_window` finds it and resolves it to a :class:`TimeWindow` that a ranking can
use to lift the events and memories dated inside it. Offline and without a model: the words are data,
one file per language (``domain/data/timewords.<lang>.json``: word classes, rules whose patterns name
those classes as ``{num}``, ``{unit}``, ``{month}`` …, context words, connectives, range words and the
trigger words without which none of its rules can match), read and compiled once per language when a
query first has one of its trigger words (:mod:`yiji.domain.timewords`); this module is the one engine
that applies them. A new phrasing is a row in a data file and a row in ``tests/test_timewindow.py``.

Invariants:

* Pure: no clock and no I/O at call time but reading a language's data file, once, when a query
  first has one of its trigger words. ``now`` must be timezone-aware; calendar units (days, weeks
  from Monday, months, seasons, years) are taken in ``now``'s own timezone, so pass ``now`` in the
  user's local zone when it is known.
* ``start`` and ``end`` are aware UTC datetimes, ``start < end``, half-open ``[start, end)``.
  A window never starts after the end of ``now``'s local day: an expression that only names the
  future ("next week", "下个月", "this summer" said in March) gives no window.
* ``spans`` are ``(start, end)`` character offsets into the query, covering the words that were read
  as time (so a caller may leave them out of lexical matching); they never overlap.
* Never a guess: a word that is a time only in some readings gives ``None`` unless its context makes
  it one. English month names count only after a preposition ("in March", "since May"), with "last"
  / "this", or with a day or a year ("March 3", "May 20, 2023"), and not before "'s"; "May" only
  capitalised; an English weekday only after "on", "last", "this", a connective or a range word
  ("the Sunday mass", "Ash Wednesday" and "next Tuesday" are not read); "三月" needs a numeral
  directly before 月 ("三个月" is a count); Chinese seasons need a year word, "上个"/"这个" or
  "的时候"/"时"/"里" after them; "most recently" is an order, not a time; a season before a
  capitalised word is part of a name ("the Spring Fling Market"), a weekday before "mornings" a
  habit. Bare numbers never count.
  A range whose end is before its start ("between Wednesday and Monday" of this week) gives
  nothing.
* The window is a soft hint, never a filter: ``margin`` says how far outside the window an item may
  still be close (events are dated by the session they were told in, and "two weeks ago" is
  approximate), ``weight`` (0-1) how sure the expression is ("recently" 0.3, a date 1.0);
  :meth:`TimeWindow.closeness` combines both into a 0-1 factor for a ranking's boost.

What each kind of expression resolves to:

* ``day``, ``week``, ``month``, ``year``: the calendar unit ("yesterday", "上周", "this month",
  "去年"); a named month or season without a year is the most recent one that has begun ("in
  March" / "三月" said on 27 March is this March: questions asked late in a month about "in March"
  mean the current one), with "last" / "上个" the most recent one that has ended ("last March" said
  in March is last year's), with "this" the one of this year; a date without a year is its most
  recent occurrence up to today; "last Tuesday" the most recent Tuesday
  before today, "on Tuesday" / "周二" the most recent one up to today, "上周二" the Tuesday of the
  previous calendar week.
* ``weekend``: Saturday and Sunday; "last weekend" / "上周末" those of the previous calendar week.
* ``season``: northern-hemisphere meteorological seasons: spring March-May, summer June-August,
  autumn September-November, winter December to February, named by the year of its December
  ("winter 2023" and "2023年冬天" are December 2023 to February 2024).
* ``ago``: "two weeks ago", "三个月前", "半年前": a window centred on ``now`` minus the count, whose
  width and margin scale with the unit ("3 days ago" is that calendar day); a vague count
  ("a few", "几") doubles both and lowers the weight. A weekday with a count ("the Wednesday two
  months ago", "两周前的周三") is that weekday nearest the counted point, a ``day``.
* ``range``: "between March and May", "from July to October", "in March and April", "三月到五月",
  and rolling spans up to today ("the past two weeks", "最近三个月", "这几天"). When its start would
  come after its end, a start named without its year is taken a year earlier ("between May and
  March" said in July is May last year to March this year), else such an end a year later.
* ``recent``: "recently", "最近": the last 30 days, low weight.
* ``before`` / ``after``: "before X" (until X begins), "until X" (until X ends), "after X" (from X's
  end to today), "since X" / "X以来" (from X's start to today). An open start is :data:`OPEN_START`.

When a query names more than one time, :func:`find_time_windows` gives each (in query order) and
:func:`resolve_query_window` the first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Any, Final

from yiji.domain.timewords import Rule, Words, compiled, triggered

__all__ = [
    "KINDS",
    "LANGUAGES",
    "OPEN_START",
    "TimeWindow",
    "find_time_windows",
    "resolve_query_window",
]

LANGUAGES: Final = ("en", "zh")
"""The data files (``domain/data/timewords.<lang>.json``); a query is read with every language whose
trigger words it has."""

KINDS: Final = (
    "day",
    "weekend",
    "week",
    "month",
    "season",
    "year",
    "ago",
    "range",
    "recent",
    "before",
    "after",
)
"""What a window can stand for (see the module docstring)."""

OPEN_START: Final = datetime(1900, 1, 1, tzinfo=UTC)
"""The start of a window that is open towards the past ("before June")."""

_DAY: Final = timedelta(days=1)
MARGINS: Final[Mapping[str, timedelta]] = {
    "day": _DAY,
    "weekend": _DAY,
    "week": 2 * _DAY,
    "month": 7 * _DAY,
    "season": 14 * _DAY,
    "year": 30 * _DAY,
    "range": 2 * _DAY,
    "recent": 3 * _DAY,
}
"""How far outside a window of each kind an item still counts as close (see :meth:`TimeWindow.closeness`)."""
AGO_HALF_WIDTH: Final[Mapping[str, timedelta]] = {
    "day": 12 * timedelta(hours=1),
    "week": 3.5 * _DAY,
    "month": 15 * _DAY,
    "year": 182 * _DAY,
}
"""Half the width of an "N units ago" window, centred on that point (twice this for a vague count)."""
AGO_MARGINS: Final[Mapping[str, timedelta]] = {
    "day": _DAY,
    "week": 3 * _DAY,
    "month": 10 * _DAY,
    "year": 60 * _DAY,
}
WEIGHT_AGO: Final = 0.8
"""A counted offset is approximate ("two weeks ago" rarely means exactly fourteen days)."""
WEIGHT_VAGUE: Final = 0.6
"""A vague count ("a few", "几") or a vague span ("这几天")."""
WEIGHT_RECENT: Final = 0.3
WEIGHT_OPEN: Final = 0.7
"""A before/after window: half of all time, so a weaker hint than the time it is anchored on."""
_DAYS_PER_MONTH: Final = 30.44


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A time a query names: ``[start, end)`` in UTC, with how soft its edges are.

    ``kind`` is one of :data:`KINDS`; ``spans`` the query's characters read as time; ``margin`` how
    far outside the window an item is still near it; ``weight`` (0-1) how sure the expression is."""

    start: datetime
    end: datetime
    kind: str
    spans: tuple[tuple[int, int], ...]
    margin: timedelta
    weight: float

    def contains(self, when: datetime) -> bool:
        """Whether ``when`` (aware) lies in ``[start, end)``."""
        return self.start <= when < self.end

    def closeness(self, when: datetime) -> float:
        """1.0 for ``when`` inside the window, falling linearly to 0.0 at ``margin`` outside either
        edge, 0.0 beyond; times ``weight``. The factor a ranking multiplies its time boost by."""
        if when < self.start:
            gap = self.start - when
        elif when >= self.end:
            gap = when - self.end
        else:
            return self.weight
        if gap >= self.margin:
            return 0.0
        return self.weight * (1.0 - gap / self.margin)


# -- calendar arithmetic (in now's timezone) -------------------------------------------------------


def _tz(now: datetime) -> tzinfo:
    return now.tzinfo or UTC


def _midnight(day: date, tz: tzinfo) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=tz)


def _month_add(year: int, month: int, n: int) -> date:
    index = year * 12 + (month - 1) + n
    return date(index // 12, index % 12 + 1, 1)


def _months_back(now: datetime, months: int) -> datetime:
    first = _month_add(now.year, now.month, -months)
    following = _month_add(first.year, first.month, 1)
    day = min(now.day, (following - first).days)
    return now.replace(year=first.year, month=first.month, day=day)


def _back(now: datetime, n: float, unit: str) -> datetime:
    """``now`` minus ``n`` units; whole months and years by the calendar."""
    if unit in {"day", "week"}:
        return now - n * (7 if unit == "week" else 1) * _DAY
    months = n * 12 if unit == "year" else n
    if months == int(months):
        return _months_back(now, int(months))
    return now - months * _DAYS_PER_MONTH * _DAY


@dataclass(frozen=True, slots=True)
class _Hit:
    """One expression found: its span, its window in now's timezone, and how soft it is."""

    start: int
    end: int
    lo: datetime
    hi: datetime
    kind: str
    margin: timedelta
    weight: float
    range_only: bool = False
    yearly: bool = False
    """A month, season or date named without its year: in a range, its end may be the next one."""


_Found = tuple[datetime, datetime, str, timedelta, float]
"""What a rule's operation resolves: low, high (local), kind, margin, weight."""


class _Read:
    """The values a rule's match holds, and the rule's own arguments."""

    def __init__(self, match: re.Match[str], rule: Rule, original: str) -> None:
        self.args = rule.args
        self.language = rule.language
        self.values: dict[str, Any] = {}
        self.texts: dict[str, str] = {}
        for name, text in match.groupdict().items():
            if text is None:
                continue
            self.texts[name] = original[match.start(name) : match.end(name)]
            self.values[name] = rule.language.classes[name].value(text)

    def get(self, name: str) -> Any:
        return self.values.get(name, self.args.get(name))

    @property
    def fuzzy(self) -> bool:
        num = self.texts.get("num")
        return bool(self.args.get("fuzzy")) or (
            num is not None and " ".join(num.lower().split()) in self.language.fuzzy
        )

    @property
    def legible(self) -> bool:
        """Every captured word has a value, and words that must be capitalised are ("May")."""
        if any(v is None for v in self.values.values()):
            return False
        for text in self.texts.values():
            wanted = self.language.capitalized.get(text.lower())
            if wanted is not None and text != wanted:
                return False
        return True


def _calendar(lo: date, hi: date, kind: str, tz: tzinfo) -> _Found:
    return _midnight(lo, tz), _midnight(hi, tz), kind, MARGINS[kind], 1.0


def _op_relative(r: _Read, now: datetime) -> _Found | None:
    unit, offset = r.args["unit"], r.get("offset")
    if offset is None:
        offset = r.get("yrel")
    today = now.date()
    if unit == "day":
        lo = today + offset * _DAY
        return _calendar(lo, lo + _DAY, "day", _tz(now))
    if unit == "week":
        lo = today - today.weekday() * _DAY + 7 * offset * _DAY
        return _calendar(lo, lo + 7 * _DAY, "week", _tz(now))
    if unit == "month":
        lo = _month_add(today.year, today.month, offset)
        return _calendar(lo, _month_add(lo.year, lo.month, 1), "month", _tz(now))
    return _calendar(date(today.year + offset, 1, 1), date(today.year + offset + 1, 1, 1), "year", _tz(now))


def _op_weekend(r: _Read, now: datetime) -> _Found | None:
    today = now.date()
    offset = r.get("offset")
    if offset is None:  # "over the weekend": the one under way, else the last one
        offset = 0 if today.weekday() >= 5 else -1
    saturday = today + (5 - today.weekday() + 7 * offset) * _DAY
    return _calendar(saturday, saturday + 2 * _DAY, "weekend", _tz(now))


_SMALLER: Final = {"year": ("month", 12), "month": ("day", 30)}
"""A fraction of a unit counted in the next smaller one ("半年前" is six months ago, not a year's window)."""


def _op_ago(r: _Read, now: datetime) -> _Found | None:
    n, unit, fuzzy = float(r.get("num")), str(r.get("unit")), r.fuzzy
    if n <= 0:
        return None
    while n < 1 and unit in _SMALLER:
        unit, factor = _SMALLER[unit]
        n *= factor
    point = _back(now, n, unit)
    weight = WEIGHT_VAGUE if fuzzy else WEIGHT_AGO
    scale = 2 if fuzzy else 1
    if unit == "day" and not fuzzy and n == int(n):
        lo = point.date()
        return _midnight(lo, _tz(now)), _midnight(lo + _DAY, _tz(now)), "ago", AGO_MARGINS[unit], weight
    half = AGO_HALF_WIDTH[unit] * scale
    tomorrow = _midnight(now.date() + _DAY, _tz(now))
    return point - half, min(point + half, tomorrow), "ago", AGO_MARGINS[unit] * scale, weight


def _op_weekday_ago(r: _Read, now: datetime) -> _Found | None:
    """ "the Wednesday two months ago", "两周前的周三": that weekday nearest the counted point."""
    n, unit, weekday = float(r.get("num")), str(r.get("unit")), int(r.get("weekday"))
    if n <= 0:
        return None
    point = _back(now, n, unit).date()
    lo = point + ((weekday - point.weekday() + 3) % 7 - 3) * _DAY
    weight = WEIGHT_VAGUE if r.fuzzy else WEIGHT_AGO
    return _midnight(lo, _tz(now)), _midnight(lo + _DAY, _tz(now)), "day", MARGINS["day"], weight


def _op_rolling(r: _Read, now: datetime) -> _Found | None:
    n, unit = float(r.get("num")), str(r.get("unit"))
    if n <= 0:
        return None
    tz = _tz(now)
    lo = _midnight(_back(now, n, unit).date(), tz)
    weight = WEIGHT_VAGUE if r.fuzzy else WEIGHT_AGO
    return lo, _midnight(now.date() + _DAY, tz), "range", MARGINS["range"], weight


def _op_recent(r: _Read, now: datetime) -> _Found | None:
    tz = _tz(now)
    lo = _midnight(now.date() - int(r.args["days"]) * _DAY, tz)
    return lo, _midnight(now.date() + _DAY, tz), "recent", MARGINS["recent"], WEIGHT_RECENT


def _year_of(r: _Read, now: datetime) -> int | None:
    """The year a match names: written out, relative ("去年"), or from the rule; ``None`` if none."""
    if r.get("year") is not None:
        return int(r.get("year"))
    offset = r.get("offset")
    if offset is None:
        offset = r.get("yrel")
    return None if offset is None else now.year + int(offset)


def _op_month(r: _Read, now: datetime) -> _Found | None:
    month = int(r.get("month"))
    year = _year_of(r, now)
    if year is None:  # "this March"; "in March": the latest begun; "last March": the latest ended
        which = r.args.get("which")
        this_year = which == "this" or month < now.month or (which == "begun" and month == now.month)
        year = now.year if this_year else now.year - 1
    lo = date(year, month, 1)
    return _calendar(lo, _month_add(year, month, 1), "month", _tz(now))


def _op_date(r: _Read, now: datetime) -> _Found | None:
    month = r.get("month") if r.get("month") is not None else r.get("mm")
    day = int(r.get("day"))
    year = _year_of(r, now)
    today = now.date()
    for candidate in [year] if year is not None else range(today.year, today.year - 8, -1):
        try:
            lo = date(candidate, int(month), day)
        except ValueError:
            continue
        if year is not None or lo <= today:
            return _calendar(lo, lo + _DAY, "day", _tz(now))
    return None


def _op_year(r: _Read, now: datetime) -> _Found | None:
    year = _year_of(r, now)
    if year is None:
        return None
    return _calendar(date(year, 1, 1), date(year + 1, 1, 1), "year", _tz(now))


def _op_weekday(r: _Read, now: datetime) -> _Found | None:
    weekday, today = int(r.get("weekday")), now.date()
    which = r.args.get("which")
    if which == "recent":
        lo = today - ((today.weekday() - weekday) % 7) * _DAY
    elif which == "before_today":
        lo = today - ((today.weekday() - weekday - 1) % 7 + 1) * _DAY
    else:
        lo = today + (weekday - today.weekday() + 7 * int(r.get("offset"))) * _DAY
    return _calendar(lo, lo + _DAY, "day", _tz(now))


def _op_season(r: _Read, now: datetime) -> _Found | None:
    first = int(r.get("season"))
    today = now.date()

    def bounds(year: int) -> tuple[date, date]:
        lo = date(year, first, 1)
        return lo, _month_add(year, first, 3)

    year = _year_of(r, now)
    if year is None and r.args.get("which") == "this":
        year = next((y for y in (now.year - 1, now.year) if bounds(y)[0] <= today < bounds(y)[1]), now.year)
    if year is None:  # the latest that has begun ("in the summer") or ended ("last summer")
        edge = 0 if r.args.get("which") == "begun" else 1
        year = now.year
        while bounds(year)[edge] > today:
            year -= 1
    lo, hi = bounds(year)
    return _calendar(lo, hi, "season", _tz(now))


_OPS: Final[Mapping[str, Callable[[_Read, datetime], _Found | None]]] = {
    "relative": _op_relative,
    "weekend": _op_weekend,
    "ago": _op_ago,
    "weekday_ago": _op_weekday_ago,
    "rolling": _op_rolling,
    "recent": _op_recent,
    "month": _op_month,
    "date": _op_date,
    "year": _op_year,
    "weekday": _op_weekday,
    "season": _op_season,
}


# -- the engine ------------------------------------------------------------------------------------

_FOLD: Final = str.maketrans(
    {chr(0xFF10 + i): str(i) for i in range(10)}
    | {chr(ord("A") + i): chr(ord("a") + i) for i in range(26)}
    | {"／": "/", "－": "-", "．": "."}
)
"""ASCII letters to lower case, full-width digits and separators to ASCII: one character for one, so
offsets into the folded query are offsets into the query (rules are written in lower case)."""
_TOKEN: Final = re.compile(r"[a-z]+")
_NAME_GOES_ON: Final = re.compile(r"\s+[A-Z][a-z]")


def _hits(folded: str, original: str, now: datetime, words: Words) -> list[_Hit]:
    found: list[tuple[int, int, int, _Hit]] = []
    for index, rule in enumerate(words.rules):
        for match in rule.pattern.finditer(folded):
            hit = _hit(match, rule, now, original)
            if hit is not None:
                found.append((-(hit.end - hit.start), hit.start, index, hit))
    found.sort(key=lambda row: row[:3])
    taken: list[_Hit] = []
    for *_, hit in found:  # the longest reading of each stretch of the query wins
        if all(hit.end <= t.start or hit.start >= t.end for t in taken):
            taken.append(hit)
    return sorted(taken, key=lambda h: h.start)


def _hit(match: re.Match[str], rule: Rule, now: datetime, original: str) -> _Hit | None:
    if match.end() == match.start():
        return None
    range_only = False
    if rule.context is not None:
        left = match.string[max(0, match.start() - 40) : match.start()]
        if not rule.context.search(left):
            return None
        range_only = rule.range_only is not None and bool(rule.range_only.search(left))
    read = _Read(match, rule, original)
    if not read.legible:
        return None
    if rule.args.get("not_in_a_name") and _NAME_GOES_ON.match(original, match.end()):
        return None  # "the Spring Fling Market" names an event, not a season
    resolved = _OPS[rule.op](read, now)
    if resolved is None:
        return None
    lo, hi, kind, margin, weight = resolved
    weight = float(rule.args.get("weight", weight))
    yearly = rule.op in {"month", "season", "date"} and _year_of(read, now) is None
    return _Hit(match.start(), match.end(), lo, hi, kind, margin, weight, range_only, yearly)


def _year_shifted(hit: _Hit, years: int) -> _Hit | None:
    try:
        lo, hi = hit.lo.replace(year=hit.lo.year + years), hit.hi.replace(year=hit.hi.year + years)
    except ValueError:  # 29 February
        return None
    return _Hit(hit.start, hit.end, lo, hi, hit.kind, hit.margin, hit.weight, hit.range_only)


def _ranged(query: str, hits: list[_Hit], words: Words) -> list[_Hit | None]:
    """``hits`` with each "between A and B" / "A到B" pair made one range (``None`` for a pair that
    runs backwards: never a guess)."""
    out: list[_Hit | None] = []
    i = 0
    while i < len(hits):
        a = hits[i]
        b = hits[i + 1] if i + 1 < len(hits) else None
        pair = None
        if b is not None:
            pair = _pair(query, a, b, words)
        if pair is None:
            out.append(a)
            i += 1
            continue
        out.append(pair if pair.lo < pair.hi else None)
        i += 2
    return out


def _pair(query: str, a: _Hit, b: _Hit, words: Words) -> _Hit | None:
    between, left = query[a.end : b.start], query[max(0, a.start - 40) : a.start]
    for language in words.languages:
        if not language.joiner.search(between):
            continue
        opener = language.opener.search(left)
        # "between March and May" needs its opener; "in March and April" joins two of a kind
        if opener is None and language.needs_opener and not (b.range_only and a.kind == b.kind):
            continue
        start = a.start - (len(left) - opener.start()) if opener is not None else a.start
        if b.hi <= a.lo:  # "between May and March": the May before that March, else the March after
            if a.yearly:
                a = _year_shifted(a, -1) or a
            elif b.yearly:
                b = _year_shifted(b, 1) or b
        margin = max(a.margin, b.margin)
        return _Hit(start, b.end, a.lo, b.hi, "range", margin, min(a.weight, b.weight))
    return None


def _connected(query: str, hit: _Hit, now: datetime, words: Words) -> tuple[_Hit, tuple[int, int] | None]:
    """``hit`` turned into a before/after window when a connective governs it ("before ... June",
    "上周二之后"), with the connective's span."""
    for language in words.languages:
        found: re.Match[str] | None = None
        offset = 0
        if language.connective_before is not None:
            offset = max(0, hit.start - 60)
            found = language.connective_before.search(query[offset : hit.start])
        elif language.connective_after is not None:
            offset = hit.end
            found = language.connective_after.search(query[hit.end : hit.end + 10])
        if found is None:
            continue
        how = language.connectives[" ".join(found.group("c").lower().split())]
        span = (offset + found.start("c"), offset + found.end("c"))
        tomorrow = _midnight(now.date() + _DAY, _tz(now))
        open_start = OPEN_START.astimezone(now.tzinfo)
        lo, hi, kind = {
            "before": (open_start, hit.lo, "before"),
            "until": (open_start, hit.hi, "before"),
            "after": (hit.hi, tomorrow, "after"),
            "since": (hit.lo, tomorrow, "after"),
        }[how]
        weight = WEIGHT_OPEN * hit.weight
        return _Hit(hit.start, hit.end, lo, hi, kind, hit.margin, weight), span
    return hit, None


def find_time_windows(query: str, now: datetime) -> tuple[TimeWindow, ...]:
    """Every time ``query`` names, resolved against ``now`` (aware), in query order (see the module
    docstring for the rules and invariants). Empty when it names none, or none unambiguously."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now: must be timezone-aware")
    folded = query.translate(_FOLD)
    tokens = frozenset(_TOKEN.findall(folded))
    active = tuple(name for name in LANGUAGES if triggered(name, folded, tokens))
    if not active:
        return ()
    words = compiled(active)
    hits = _hits(folded, query, now, words)
    if not hits:
        return ()
    tomorrow = _midnight(now.date() + _DAY, now.tzinfo)
    windows: list[TimeWindow] = []
    for hit in _ranged(folded, hits, words):
        if hit is None or (hit.range_only and hit.kind != "range"):
            continue
        shaped, connective = _connected(folded, hit, now, words) if hit.kind != "range" else (hit, None)
        if shaped.lo >= tomorrow or shaped.lo >= shaped.hi:
            continue
        spans = ((connective,) if connective else ()) + ((hit.start, hit.end),)
        windows.append(
            TimeWindow(
                start=shaped.lo.astimezone(UTC),
                end=shaped.hi.astimezone(UTC),
                kind=shaped.kind,
                spans=tuple(sorted(spans)),
                margin=shaped.margin,
                weight=round(shaped.weight, 3),
            )
        )
    return tuple(windows)


def resolve_query_window(query: str, now: datetime) -> TimeWindow | None:
    """The first time ``query`` names (:func:`find_time_windows`), or ``None`` when it names none
    unambiguously. ``now`` must be aware; calendar units are taken in its timezone."""
    windows = find_time_windows(query, now)
    return windows[0] if windows else None
