from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from yiji.errors import InvalidInput
from yiji.timeutil import FixedClock, display_zone, from_db, local_time, parse_time, to_db

from .inprocess import run_cli
from .mcp_helpers import memory_client, payload


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-01T08:00:00+08:00", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00Z", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00z", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-02-28T19:00:00-05:00", datetime(2026, 3, 1, 0, 0, tzinfo=UTC)),
        ("2026-03-01T00:00:00.123456+00:00", datetime(2026, 3, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        # a date with a zone and no time of day: the start of that day in that zone
        ("2026-04-01Z", datetime(2026, 4, 1, 0, 0, tzinfo=UTC)),
        ("2026-04-01z", datetime(2026, 4, 1, 0, 0, tzinfo=UTC)),
        ("2026-04-01+08:00", datetime(2026, 3, 31, 16, 0, tzinfo=UTC)),
        ("2026-04-01-05:00", datetime(2026, 4, 1, 5, 0, tzinfo=UTC)),
        ("20260401+0800", datetime(2026, 3, 31, 16, 0, tzinfo=UTC)),
        ("2026-W14-3Z", datetime(2026, 4, 1, 0, 0, tzinfo=UTC)),
        (" 2026-04-01+00:00 ", datetime(2026, 4, 1, 0, 0, tzinfo=UTC)),
    ],
)
def test_parse_normalizes_to_utc(text: str, expected: datetime) -> None:
    assert parse_time(text, "t") == expected


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("2026-03-01T08:00:00", "timezone"),
        ("2026-03-01", "timezone"),
        ("2026-03-01+8:00", "ISO 8601"),
        ("0001-01-01+08:00", "time range"),
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


@pytest.mark.parametrize(
    ("value", "zone", "shown"),
    [
        (datetime(2026, 3, 1, 1, 0, tzinfo=UTC), "Asia/Shanghai", "2026-03-01 09:00 (+08:00)"),
        ("2026-03-01T01:00:00.000000Z", "Asia/Shanghai", "2026-03-01 09:00 (+08:00)"),  # stored text
        (datetime(2026, 3, 1, 1, 0, tzinfo=UTC), "UTC", "2026-03-01 01:00 (+00:00)"),
        (datetime(2026, 3, 1, 1, 0, tzinfo=UTC), "America/New_York", "2026-02-28 20:00 (-05:00)"),
        (datetime(2026, 7, 1, 1, 0, tzinfo=UTC), "America/New_York", "2026-06-30 21:00 (-04:00)"),  # DST
        (datetime(2026, 3, 1, 1, 0, tzinfo=UTC), "Asia/Kolkata", "2026-03-01 06:30 (+05:30)"),
        (
            datetime(2026, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=8))),
            "Asia/Tokyo",
            "2026-03-01 10:00 (+09:00)",
        ),
        (datetime(1, 1, 1, 1, 0, tzinfo=UTC), "America/New_York", "0001-01-01 01:00 (+00:00)"),  # no year 0
    ],
)
def test_local_time_shows_the_zone_and_its_offset(value: datetime | str, zone: str, shown: str) -> None:
    assert local_time(value, display_zone(zone)) == shown


def test_no_display_zone_is_the_system_zone() -> None:
    assert display_zone(None) is None and display_zone("") is None
    moment = datetime(2026, 3, 1, 1, 0, tzinfo=UTC)
    local = moment.astimezone()
    assert local_time(moment, None).startswith(f"{local:%Y-%m-%d %H:%M} (")


def test_a_date_with_a_zone_is_the_start_of_that_day_over_cli_and_mcp(tmp_path: Path) -> None:
    """``memory list --as-of 2026-04-01Z`` and MCP ``as_of`` read a date with a zone; one without is
    refused for the reason that is true (it has no zone)."""
    db = str(tmp_path / "y.db")
    sent = run_cli(
        "--db", db, "event", "submit", "--id", "e1", "--session", "s", "--role", "user",
        "--occurred-at", "2026-03-31T12:00:00Z", "I run every morning.",
    )  # fmt: skip
    assert sent.code == 0, sent.err
    derived = run_cli(
        "--db", db, "memory", "derive", "--event", "e1", "--input", "-",
        input='[{"text": "runs every morning", "quote": "I run every morning", "kind": "preference",'
        ' "basis": "user_statement"}]',
    )  # fmt: skip
    assert derived.code == 0, derived.err
    for day, held in (("2026-04-01Z", 1), ("2026-04-01+08:00", 1), ("2026-03-31+08:00", 0)):
        listed = run_cli("--db", db, "memory", "list", "--as-of", day, "--json")
        assert listed.code == 0, (day, listed.err)
        assert len(json.loads(listed.out)["memories"]) == held, day
    naive = run_cli("--db", db, "memory", "list", "--as-of", "2026-04-01")
    assert naive.code == 2 and "--as-of: must include a timezone" in naive.err

    async def over_mcp() -> list[Any]:
        async with memory_client(Path(db)) as client:
            found = payload(await client.call_tool("memory_list", {"as_of": "2026-04-01Z"}))
            return list(found["memories"])

    assert len(anyio.run(over_mcp)) == 1
