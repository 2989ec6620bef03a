"""Relative dates in a quoted sentence ("昨天", "last week", "三天前"), resolved against the event's time.

Grounding (:mod:`yiji.domain.grounding`) dates a memory by the sentence it quotes, never by the model's own
``valid_at``: :func:`resolve_relative_time` gives the start of the day, week, month or year a sentence
names in the past, in the event's own timezone; :func:`valid_from` prefers the quote's own date and gives
none when the quote speaks of now. A sentence about the future ("明天", "next month", "四月要考试" said in
March) gives none: a plan starts to hold at the event's time. Pure: no I/O, no clock (the event's local time
is passed in).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

from yiji.domain import cues

__all__ = ["RELATIVE_TIME_WORD", "resolve_relative_time", "valid_from"]

_CN_DIGITS: Final = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_MONTHS_EN: Final = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}


def _cn_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十") and len(text) == 2:
        return 10 + _CN_DIGITS.get(text[1], 0)
    if text.endswith("十") and len(text) == 2:
        return _CN_DIGITS.get(text[0], 0) * 10
    if len(text) == 3 and text[1] == "十":
        return _CN_DIGITS.get(text[0], 0) * 10 + _CN_DIGITS.get(text[2], 0)
    if len(text) == 1:
        return _CN_DIGITS.get(text)
    return None


def _day(local: datetime) -> datetime:
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _past_month(local: datetime, month: int) -> datetime:
    """Month ``month`` of this year, or of last year when it has not begun yet (the caller has seen
    that the sentence tells of something done)."""
    year = local.year if month <= local.month else local.year - 1
    return _month_start(year, month, local)


_NUM: Final = r"(\d{1,2}|[一二两三四五六七八九十]{1,3})"
_DONE_IN_CLAUSE: Final = r"(?:(?!要|会|打算|准备|想)[^，。！？])*[了过]"
"""The rest of a clause that tells of something done ("……去西湖骑了一圈车"), not planned."""
_WEEKDAYS_EN: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS: Final = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_RULES: Final[list[tuple[re.Pattern[str], str]]] = [
    (re.compile(r"(\d{4})\s*年\s*" + _NUM + r"\s*月"), "year_month"),
    (re.compile(r"(\d{4})\s*年"), "year"),
    (re.compile(_NUM + r"\s*(?:天|日)前"), "days_ago"),
    (re.compile(r"(\d+)\s+days?\s+ago", re.I), "days_ago"),
    (re.compile(r"大前天"), "d-3"),
    (re.compile(r"前天|day before yesterday", re.I), "d-2"),
    (re.compile(r"昨天|昨晚|昨日|yesterday|last night", re.I), "d-1"),
    (re.compile(r"今天|今日|今早|今晚|today|this (?:morning|afternoon|evening)|tonight", re.I), "d-0"),
    (re.compile(r"上(?:个)?(?:周|星期|礼拜)|last week", re.I), "last_week"),
    (re.compile(r"(?<![上下这本])周末" + _DONE_IN_CLAUSE), "past_weekend"),
    (re.compile(r"(?<![上下这本])(?:周|星期|礼拜)([一二三四五六日天])" + _DONE_IN_CLAUSE), "past_weekday"),
    (re.compile(rf"\b(?:on|last)\s+({'|'.join(_WEEKDAYS_EN)})\b", re.I), "weekday_en"),
    (re.compile(r"上(?:个)?月|last month", re.I), "last_month"),
    (re.compile(r"前年"), "y-2"),
    (re.compile(r"去年|last year", re.I), "last_year"),
    (
        re.compile(
            r"(?<![\d一二两三四五六七八九十年])" + _NUM + r"\s*月(?!\s*[\d一二两三四五六七八九十]+\s*[日号])"
        ),
        "month",
    ),
    (re.compile(r"\b(" + "|".join(_MONTHS_EN) + r")\b", re.I), "month_en"),
]
_AHEAD: Final = re.compile(
    r"\b(?:will|shall|going to|plan(?:ning)?|hope to|want to|next|upcoming|(?:am|is|are)\s+\w+ing)\b"
    r"|'(?:ll|m\s+\w+ing|re\s+\w+ing)\b",
    re.I,
)
"""Words of an English sentence about what is still to come ("I'm taking the exam in April")."""
_FUTURE: Final = re.compile(r"明天|后天|下(?:个)?(?:周|星期|月)|明年|tomorrow|next (?:week|month|year)", re.I)
RELATIVE_TIME_WORD: Final = re.compile(
    r"大?前天|昨天|昨晚|今天|今晚|上(?:个)?(?:周|星期|礼拜|月)|下(?:个)?礼拜|去年|前年"
    r"|\b(?:yesterday|today|tonight|this (?:morning|afternoon|evening)|last (?:week|month|year))\b|"
    + _FUTURE.pattern,
    re.I,
)
"""A day, week, month or year relative to now, past or to come (:data:`_FUTURE`): a memory text may
not name one its quote does not (:func:`yiji.domain.grounding.text_supported`)."""


def valid_from(quote: str, sentence: str, local_time: datetime) -> datetime | None:
    """When what ``quote`` states began: the quote's own date; none when the quote speaks of now
    ("现在住在西湖边上" after "我三月搬到了杭州"); otherwise the date of its ``sentence``
    (:func:`resolve_relative_time`)."""
    own = resolve_relative_time(quote, local_time)
    if own is not None or cues.speaks_of_now(quote):
        return own
    return resolve_relative_time(sentence, local_time)


def resolve_relative_time(sentence: str, local_time: datetime) -> datetime | None:
    """When ``sentence`` dates what it states relative to ``local_time`` (aware, the event's local
    time), the start of that day/week/month/year in the same timezone; ``None`` when it does not,
    or when it speaks of the future (a plan starts to hold at the event's time)."""
    if _FUTURE.search(sentence):
        return None
    for pattern, how in _RULES:
        match = pattern.search(sentence)
        if match is None:
            continue
        resolved = _resolve(how, match, local_time)
        if resolved is not None and resolved <= local_time:
            return resolved
        return None
    return None


def _resolve(how: str, match: re.Match[str], local: datetime) -> datetime | None:
    day = _day(local)
    if how == "year_month":
        month = _cn_number(match.group(2))
        return _month_start(int(match.group(1)), month, local) if month and 1 <= month <= 12 else None
    if how == "year":
        year = int(match.group(1))
        return _month_start(year, 1, local) if 1900 <= year <= local.year else None
    if how == "days_ago":
        n = _cn_number(match.group(1))
        return day - timedelta(days=n) if n is not None else None
    if how.startswith("d-"):
        return day - timedelta(days=int(how[2:]))
    if how == "last_week":
        monday = day - timedelta(days=day.weekday())
        return monday - timedelta(days=7)
    if how == "past_weekend":  # "周末去西湖骑了一圈车": the Saturday of the last weekend begun
        return day - timedelta(days=(day.weekday() - 5) % 7)
    if how == "past_weekday":  # "周六和朋友去爬了香山": the last such day, today included
        return day - timedelta(days=(day.weekday() - _WEEKDAYS[match.group(1)]) % 7)
    if how == "weekday_en":  # "I dropped my phone in the bath on Sunday": the last Sunday, if done
        if _AHEAD.search(match.string) or not cues.tells_of_done(match.string):
            return None
        weekday = _WEEKDAYS_EN.index(match.group(1).lower())
        return day - timedelta(days=(day.weekday() - weekday) % 7)
    if how == "last_month":
        year, month = (local.year, local.month - 1) if local.month > 1 else (local.year - 1, 12)
        return _month_start(year, month, local)
    if how == "last_year":
        return _month_start(local.year - 1, 1, local)
    if how == "y-2":
        return _month_start(local.year - 2, 1, local)
    if how in ("month", "month_en"):
        month = _cn_number(match.group(1)) if how == "month" else _MONTHS_EN[match.group(1).lower()]
        if not month or not 1 <= month <= 12:
            return None
        ahead = (
            (not cues.tells_of_done(match.string)) if how == "month" else bool(_AHEAD.search(match.string))
        )
        if month > local.month and ahead:
            return None  # still to come this year: "the exam in April" or "四月要考试", said in March
        return _past_month(local, month)
    return None
