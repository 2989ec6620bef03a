"""Time in a recall query: Chinese and English expressions resolved against a fixed ``now`` to a window,
and the ambiguous ones left alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from yiji.domain.timewindow import (
    KINDS,
    OPEN_START,
    TimeWindow,
    find_time_windows,
    resolve_query_window,
)

LOCAL = timezone(timedelta(hours=8))
NOW = datetime(2026, 7, 16, 15, 30, tzinfo=LOCAL)
"""A Thursday afternoon in summer; this week began on Monday 13 July."""
OPEN = "open"


def _at(text: str) -> datetime:
    if text == OPEN:
        return OPEN_START
    return datetime.fromisoformat(text).replace(tzinfo=LOCAL)


# query, kind, start, end (local to NOW's zone; a date alone is its midnight)
WINDOWS: list[tuple[str, str, str, str]] = [
    # English: days, weeks, months, years relative to now
    ("what did I do yesterday", "day", "2026-07-15", "2026-07-16"),
    ("the day before yesterday", "day", "2026-07-14", "2026-07-15"),
    ("what did we talk about today", "day", "2026-07-16", "2026-07-17"),
    ("last night", "day", "2026-07-15", "2026-07-16"),
    ("what did I cook last week", "week", "2026-07-06", "2026-07-13"),
    ("this week", "week", "2026-07-13", "2026-07-20"),
    ("the week before last", "week", "2026-06-29", "2026-07-06"),
    ("Last month I started a course", "month", "2026-06-01", "2026-07-01"),
    ("this month", "month", "2026-07-01", "2026-08-01"),
    ("last year", "year", "2025-01-01", "2026-01-01"),
    ("this year", "year", "2026-01-01", "2027-01-01"),
    ("the year before last", "year", "2024-01-01", "2025-01-01"),
    # English months: the most recent one that has ended, the current one only with "this"
    ("where did I travel in March", "month", "2026-03-01", "2026-04-01"),
    ("last March", "month", "2026-03-01", "2026-04-01"),
    ("what happened in July", "month", "2026-07-01", "2026-08-01"),
    ("last July", "month", "2025-07-01", "2025-08-01"),
    ("this July", "month", "2026-07-01", "2026-08-01"),
    ("in December", "month", "2025-12-01", "2026-01-01"),
    ("in early May", "month", "2026-05-01", "2026-06-01"),
    ("March of last year", "month", "2025-03-01", "2025-04-01"),
    ("May 2023", "month", "2023-05-01", "2023-06-01"),
    ("in 2023", "year", "2023-01-01", "2024-01-01"),
    # English dates
    ("what did I do on March 3", "day", "2026-03-03", "2026-03-04"),
    ("the 3rd of March", "day", "2026-03-03", "2026-03-04"),
    ("May 20, 2023", "day", "2023-05-20", "2023-05-21"),
    ("December 25", "day", "2025-12-25", "2025-12-26"),
    ("2023/05/20", "day", "2023-05-20", "2023-05-21"),
    ("on 2023-05-20", "day", "2023-05-20", "2023-05-21"),
    # English weekdays and weekends
    ("what did I eat on Tuesday", "day", "2026-07-14", "2026-07-15"),
    ("on Thursday", "day", "2026-07-16", "2026-07-17"),
    ("last Thursday", "day", "2026-07-09", "2026-07-10"),
    ("last Tuesday", "day", "2026-07-14", "2026-07-15"),
    ("what did I cook on Friday", "day", "2026-07-10", "2026-07-11"),
    ("last weekend", "weekend", "2026-07-11", "2026-07-13"),
    ("what did I do over the weekend", "weekend", "2026-07-11", "2026-07-13"),
    ("which bike did I fix the past weekend", "weekend", "2026-07-11", "2026-07-13"),
    # English counted offsets: a window around that point, as wide as the unit
    ("two weeks ago", "ago", "2026-06-29 03:30", "2026-07-06 03:30"),
    ("3 days ago", "ago", "2026-07-13", "2026-07-14"),
    ("a month ago", "ago", "2026-06-01 15:30", "2026-07-01 15:30"),
    ("a couple of months ago", "ago", "2026-05-01 15:30", "2026-05-31 15:30"),
    ("a few weeks ago", "ago", "2026-06-18 15:30", "2026-07-02 15:30"),
    ("a year ago", "ago", "2025-01-15 15:30", "2026-01-14 15:30"),
    ("half a year ago", "ago", "2026-01-01 15:30", "2026-01-31 15:30"),
    ("the other day", "ago", "2026-07-12 15:30", "2026-07-14 15:30"),
    ("what did I do with Rachel on the Wednesday two months ago", "day", "2026-05-13", "2026-05-14"),
    # English seasons (northern meteorological; winter named by its December)
    ("last summer", "season", "2025-06-01", "2025-09-01"),
    ("this summer", "season", "2026-06-01", "2026-09-01"),
    ("in the spring", "season", "2026-03-01", "2026-06-01"),
    ("what did I plant in Spring", "season", "2026-03-01", "2026-06-01"),
    ("in the summer", "season", "2026-06-01", "2026-09-01"),
    ("last winter", "season", "2025-12-01", "2026-03-01"),
    ("winter of 2023", "season", "2023-12-01", "2024-03-01"),
    # English spans, recent, before/after
    ("recently", "recent", "2026-06-16", "2026-07-17"),
    ("what have I been reading lately", "recent", "2026-06-16", "2026-07-17"),
    ("in the past two weeks", "range", "2026-07-02", "2026-07-17"),
    ("between March and May", "range", "2026-03-01", "2026-06-01"),
    ("between November and February", "range", "2025-11-01", "2026-03-01"),
    ("which airline did I fly in March and April", "range", "2026-03-01", "2026-05-01"),
    ("between May and March", "range", "2025-05-01", "2026-04-01"),
    ("从五月到三月", "range", "2025-05-01", "2026-04-01"),
    ("from Monday to Wednesday", "range", "2026-07-13", "2026-07-16"),
    ("what did I pack before my trip in June", "before", OPEN, "2026-06-01"),
    ("before last week", "before", OPEN, "2026-07-06"),
    ("until last month", "before", OPEN, "2026-07-01"),
    ("after last Tuesday", "after", "2026-07-15", "2026-07-17"),
    ("since March", "after", "2026-03-01", "2026-07-17"),
    ("since the start of the year", "after", "2026-01-01", "2026-07-17"),
    ("after work yesterday", "day", "2026-07-15", "2026-07-16"),
    ("I was born in 1990", "year", "1990-01-01", "1991-01-01"),
    ("what did I read last fall", "season", "2025-09-01", "2025-12-01"),
    ("the last few days", "range", "2026-07-13", "2026-07-17"),
    ("ten years ago", "ago", "2016-01-16 15:30", "2017-01-14 15:30"),
    # Chinese: days, weeks, months, years relative to now
    ("昨天我吃了什么", "day", "2026-07-15", "2026-07-16"),
    ("前天", "day", "2026-07-14", "2026-07-15"),
    ("大前天", "day", "2026-07-13", "2026-07-14"),
    ("今天", "day", "2026-07-16", "2026-07-17"),
    ("上周我去了哪里", "week", "2026-07-06", "2026-07-13"),
    ("上个星期", "week", "2026-07-06", "2026-07-13"),
    ("上礼拜", "week", "2026-07-06", "2026-07-13"),
    ("上上周", "week", "2026-06-29", "2026-07-06"),
    ("本周", "week", "2026-07-13", "2026-07-20"),
    ("这个星期", "week", "2026-07-13", "2026-07-20"),
    ("上个月", "month", "2026-06-01", "2026-07-01"),
    ("这个月", "month", "2026-07-01", "2026-08-01"),
    ("去年", "year", "2025-01-01", "2026-01-01"),
    ("今年", "year", "2026-01-01", "2027-01-01"),
    ("前年", "year", "2024-01-01", "2025-01-01"),
    # Chinese months and dates
    ("三月我们聊过什么", "month", "2026-03-01", "2026-04-01"),
    ("3月", "month", "2026-03-01", "2026-04-01"),
    ("十二月份", "month", "2025-12-01", "2026-01-01"),
    ("七月", "month", "2026-07-01", "2026-08-01"),
    ("去年三月", "month", "2025-03-01", "2025-04-01"),
    ("今年三月", "month", "2026-03-01", "2026-04-01"),
    ("2023年5月", "month", "2023-05-01", "2023-06-01"),
    ("2023年", "year", "2023-01-01", "2024-01-01"),
    ("3月3日", "day", "2026-03-03", "2026-03-04"),
    ("十二月二十五号", "day", "2025-12-25", "2025-12-26"),
    ("2023年5月20日", "day", "2023-05-20", "2023-05-21"),
    ("２０２３／０５／２０", "day", "2023-05-20", "2023-05-21"),
    # Chinese weekdays and weekends
    ("上周二", "day", "2026-07-07", "2026-07-08"),
    ("周三", "day", "2026-07-15", "2026-07-16"),
    ("星期三", "day", "2026-07-15", "2026-07-16"),
    ("礼拜天", "day", "2026-07-12", "2026-07-13"),
    ("这周一", "day", "2026-07-13", "2026-07-14"),
    ("上周末", "weekend", "2026-07-11", "2026-07-13"),
    # Chinese counted offsets
    ("三个月前", "ago", "2026-04-01 15:30", "2026-05-01 15:30"),
    ("两周前", "ago", "2026-06-29 03:30", "2026-07-06 03:30"),
    ("两个星期以前", "ago", "2026-06-29 03:30", "2026-07-06 03:30"),
    ("10天前", "ago", "2026-07-06", "2026-07-07"),
    ("半年前", "ago", "2026-01-01 15:30", "2026-01-31 15:30"),
    ("几天前", "ago", "2026-07-12 15:30", "2026-07-14 15:30"),
    ("一个多月前", "ago", "2026-06-01 15:30", "2026-07-01 15:30"),
    ("十二年前", "ago", "2014-01-15 15:30", "2015-01-14 15:30"),
    ("两周前的周三", "day", "2026-07-01", "2026-07-02"),
    # Chinese seasons, spans, recent, before/after
    ("去年夏天", "season", "2025-06-01", "2025-09-01"),
    ("今年夏天", "season", "2026-06-01", "2026-09-01"),
    ("上个冬天", "season", "2025-12-01", "2026-03-01"),
    ("夏天的时候", "season", "2026-06-01", "2026-09-01"),
    ("上个夏天", "season", "2025-06-01", "2025-09-01"),
    ("最近", "recent", "2026-06-16", "2026-07-17"),
    ("最近三个月", "range", "2026-04-16", "2026-07-17"),
    ("这几天", "range", "2026-07-13", "2026-07-17"),
    ("三月到五月", "range", "2026-03-01", "2026-06-01"),
    ("从三月到五月", "range", "2026-03-01", "2026-06-01"),
    ("上周二之后", "after", "2026-07-08", "2026-07-17"),
    ("六月旅行之前", "before", OPEN, "2026-06-01"),
    ("去年以来", "after", "2025-01-01", "2026-07-17"),
    ("去年我以前的同事", "year", "2025-01-01", "2026-01-01"),
    ("二月份", "month", "2026-02-01", "2026-03-01"),
    ("上星期天", "day", "2026-07-12", "2026-07-13"),
    ("两年前", "ago", "2024-01-16 15:30", "2025-01-14 15:30"),
]

NO_WINDOW: list[str] = [
    "May I ask you something",
    "what did I do in may",
    "I stayed in Jan's flat",
    "I told you before that",
    "Friday",
    "the Sunday mass at St. Mary's",
    "the Ash Wednesday service",
    "what time do I wake up on Saturday mornings",
    "when did I take part in the Spring Fling Market",
    "which lens did I buy most recently",
    "I may come later",
    "march on",
    "we will march tomorrow",
    "the second thing",
    "I have 3 cats",
    "42",
    "page 2023 of the manual",
    "what is the last thing I said",
    "this is great",
    "next Tuesday",
    "next week",
    "next March",
    "in two weeks",
    "tomorrow",
    "我三个都要",
    "三个人",
    "第二件事",
    "十二",
    "我喜欢夏天",
    "明天",
    "下周二",
    "下个月",
    "明年",
    "一周一次",
    "每周一去健身房",
    "我住在哪里",
    "下周末",
    "三天后",
    "",
]


@pytest.mark.parametrize(("query", "kind", "start", "end"), WINDOWS)
def test_a_time_in_the_query_resolves_to_its_window(query: str, kind: str, start: str, end: str) -> None:
    window = resolve_query_window(query, NOW)
    assert window is not None
    assert (window.kind, window.start, window.end) == (kind, _at(start), _at(end))


@pytest.mark.parametrize("query", NO_WINDOW)
def test_no_time_or_an_ambiguous_one_gives_no_window(query: str) -> None:
    assert resolve_query_window(query, NOW) is None


@pytest.mark.parametrize(("query", "_kind", "_start", "_end"), WINDOWS)
def test_every_window_keeps_the_invariants(query: str, _kind: str, _start: str, _end: str) -> None:
    for window in find_time_windows(query, NOW):
        assert window.kind in KINDS
        assert window.start.tzinfo is UTC and window.end.tzinfo is UTC
        assert window.start < window.end
        assert window.start < datetime(2026, 7, 17, tzinfo=LOCAL)
        assert 0 < window.weight <= 1
        assert window.margin >= timedelta(0)
        assert window.spans == tuple(sorted(window.spans))
        for (a, b), (c, _) in zip(window.spans, window.spans[1:], strict=False):
            assert a < b <= c
        assert all(0 <= a < b <= len(query) for a, b in window.spans)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("what did I do yesterday", ["yesterday"]),
        ("where did I travel in March", ["March"]),
        ("what did I pack before my trip in June", ["before", "June"]),
        ("between March and May", ["between March and May"]),
        ("上周二之后我买了什么", ["上周二", "之后"]),
        ("去年夏天我们去了哪里", ["去年夏天"]),
    ],
)
def test_spans_cover_the_words_read_as_time(query: str, words: list[str]) -> None:
    window = resolve_query_window(query, NOW)
    assert window is not None
    assert [query[a:b] for a, b in window.spans] == words


@pytest.mark.parametrize(
    ("query", "weight"),
    [
        ("last week", 1.0),
        ("on Tuesday", 0.8),
        ("two weeks ago", 0.8),
        ("a few weeks ago", 0.6),
        ("几天前", 0.6),
        ("recently", 0.3),
        ("最近", 0.3),
        ("after last Tuesday", 0.7),
    ],
)
def test_weight_says_how_sure_the_expression_is(query: str, weight: float) -> None:
    window = resolve_query_window(query, NOW)
    assert window is not None and window.weight == weight


def test_a_vague_count_widens_the_window_and_its_margin() -> None:
    exact = resolve_query_window("three weeks ago", NOW)
    vague = resolve_query_window("a few weeks ago", NOW)
    assert exact is not None and vague is not None
    assert vague.end - vague.start == 2 * (exact.end - exact.start)
    assert vague.margin == 2 * exact.margin


def test_closeness_is_the_weight_inside_and_falls_off_across_the_margin() -> None:
    window = TimeWindow(
        start=datetime(2026, 7, 6, tzinfo=UTC),
        end=datetime(2026, 7, 13, tzinfo=UTC),
        kind="week",
        spans=((0, 9),),
        margin=timedelta(days=2),
        weight=0.8,
    )
    assert window.contains(datetime(2026, 7, 6, tzinfo=UTC))
    assert not window.contains(datetime(2026, 7, 13, tzinfo=UTC))
    assert window.closeness(datetime(2026, 7, 10, tzinfo=UTC)) == 0.8
    assert window.closeness(datetime(2026, 7, 14, tzinfo=UTC)) == pytest.approx(0.4)
    assert window.closeness(datetime(2026, 7, 5, tzinfo=UTC)) == pytest.approx(0.4)
    assert window.closeness(datetime(2026, 7, 15, tzinfo=UTC)) == 0.0
    assert window.closeness(datetime(2025, 1, 1, tzinfo=UTC)) == 0.0


def test_calendar_units_are_taken_in_nows_timezone() -> None:
    # 01:30 on the 16th in UTC+8 is still the 15th in UTC: "yesterday" differs by a day
    early = datetime(2026, 7, 16, 1, 30, tzinfo=LOCAL)
    local = resolve_query_window("yesterday", early)
    utc = resolve_query_window("yesterday", early.astimezone(UTC))
    assert local is not None and utc is not None
    assert local.start == datetime(2026, 7, 14, 16, tzinfo=UTC)
    assert utc.start == datetime(2026, 7, 14, tzinfo=UTC)


def test_this_season_is_the_current_one_while_it_lasts() -> None:
    january = datetime(2026, 1, 20, 12, tzinfo=LOCAL)
    window = resolve_query_window("this winter", january)
    assert window is not None
    assert (window.start, window.end) == (_at("2025-12-01"), _at("2026-03-01"))
    assert resolve_query_window("this winter", NOW) is None  # only ahead in July


def test_a_range_that_runs_backwards_gives_nothing() -> None:
    assert resolve_query_window("between Wednesday and Monday", NOW) is None
    assert resolve_query_window("between Friday and Monday", NOW) is not None


def test_each_time_a_query_names_is_found_in_order() -> None:
    windows = find_time_windows("did I say last week what I did yesterday?", NOW)
    assert [w.kind for w in windows] == ["week", "day"]
    first = resolve_query_window("did I say last week what I did yesterday?", NOW)
    assert first == windows[0]


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="now"):
        resolve_query_window("yesterday", datetime(2026, 7, 16, 15, 30))
