from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from yiji.errors import InvalidInput
from yiji.timeutil import FixedClock, from_db, parse_time, to_db


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T08:00:00+08:00", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00Z", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00z", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-02-28T19:00:00-05:00", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00.123456+00:00", datetime(2026, 3, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_parse_normalizes_to_utc(text: str, expected: datetime) -> None:
    assert parse_time(text, "t") == expected


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("2026-03-01T08:00:00", "timezone"),
        ("2026-03-01", "timezone"),
        ("yesterday", "ISO 8601"),
        ("", "ISO 8601"),
        (12, "ISO 8601"),
        (None, "ISO 8601"),
        (datetime(2026, 3, 1), "timezone"),
    ],
)
def test_parse_rejects(value: object, rule: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_time(value, "occurred_at")
    assert info.value.field == "occurred_at" and rule in info.value.rule


def test_db_format_round_trips_and_sorts() -> None:
    a = datetime(2026, 3, 1, 0, 0, tzinfo=timezone(timedelta(hours=8)))
    b = datetime(2026, 3, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert to_db(a) == "2026-02-28T16:00:00.000000Z"
    assert from_db(to_db(b)) == b
    assert to_db(a) < to_db(b)


def test_fixed_clock_steps() -> None:
    clock = FixedClock(datetime(2026, 1, 1, tzinfo=UTC), timedelta(seconds=1))
    assert clock.now() < clock.now()
