"""Table and property tests for yiji.domain.intervals (single-valued fact timelines)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from yiji.domain import intervals
from yiji.domain.intervals import (
    FactSpan,
    IntervalUpdate,
    as_of,
    close_intervals,
    close_intervals_batch,
    current,
    history,
    is_current,
    order_key,
    timeline,
)


def day(month: int, d: int = 1, year: int = 2025) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


def fact(
    fid: str,
    valid: datetime,
    created: datetime | None = None,
    end: datetime | None = None,
    *,
    revoked: bool = False,
) -> FactSpan:
    return FactSpan(fid, valid, created or valid, end, revoked)


def apply(facts: list[FactSpan], new: FactSpan | None, updates: list[IntervalUpdate]) -> list[FactSpan]:
    """What the store would hold after inserting ``new`` and applying ``updates``."""
    ends = {u.id: u.invalid_at for u in updates}
    rows = [*facts, new] if new is not None else list(facts)
    return [dataclasses.replace(f, invalid_at=ends.get(f.id, f.invalid_at)) for f in rows]


# Hangzhou stated in March, Shanghai in June (both stated when they happened).
HANGZHOU = fact("hangzhou", day(3))
SHANGHAI = fact("shanghai", day(6))


def test_hangzhou_then_shanghai() -> None:
    updates = close_intervals([HANGZHOU], SHANGHAI)
    assert updates == [IntervalUpdate("hangzhou", day(6)), IntervalUpdate("shanghai", None)]

    stored = apply([HANGZHOU], SHANGHAI, updates)
    assert current(stored, day(7)) == dataclasses.replace(SHANGHAI)
    assert as_of(stored, day(4)) == dataclasses.replace(HANGZHOU, invalid_at=day(6))
    assert as_of(stored, day(2)) is None


def test_first_fact_is_open() -> None:
    assert close_intervals([], HANGZHOU) == [IntervalUpdate("hangzhou", None)]


def test_late_january_statement_slots_before_march() -> None:
    stored = apply([HANGZHOU], SHANGHAI, close_intervals([HANGZHOU], SHANGHAI))
    suzhou = fact("suzhou", valid=day(1), created=day(7))

    updates = close_intervals(stored, suzhou)

    assert updates == [IntervalUpdate("suzhou", day(3))]
    stored = apply(stored, suzhou, updates)
    assert as_of(stored, day(2))
    assert as_of(stored, day(2)).id == "suzhou"  # type: ignore[union-attr]
    assert as_of(stored, day(3)).id == "hangzhou"  # type: ignore[union-attr]
    assert current(stored, day(7)).id == "shanghai"  # type: ignore[union-attr]


def test_late_insert_between_two_facts_splits_the_interval() -> None:
    stored = apply([HANGZHOU], SHANGHAI, close_intervals([HANGZHOU], SHANGHAI))
    ningbo = fact("ningbo", valid=day(4), created=day(7))

    assert close_intervals(stored, ningbo) == [
        IntervalUpdate("hangzhou", day(4)),
        IntervalUpdate("ningbo", day(6)),
    ]


def test_fact_starting_next_week_is_not_current_today() -> None:
    today = datetime(2025, 7, 1, 12, tzinfo=UTC)
    moving = fact("moving", valid=today + timedelta(days=7), created=today)
    stored = apply([SHANGHAI], moving, close_intervals([SHANGHAI], moving))

    assert current(stored, today).id == "shanghai"  # type: ignore[union-attr]
    assert current(stored, today + timedelta(days=7)).id == "moving"  # type: ignore[union-attr]


def test_only_future_fact_means_no_current_value() -> None:
    today = day(7)
    assert current([fact("moving", valid=day(8), created=today)], today) is None


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        # Same start: the later insertion wins; the earlier gets an empty interval.
        (fact("b", day(3), created=day(3, 1)), fact("a", day(3), created=day(3, 2)), "a"),
        # Same start and insertion time: the id decides.
        (fact("a", day(3), created=day(3)), fact("b", day(3), created=day(3)), "b"),
        (fact("b", day(3), created=day(3)), fact("a", day(3), created=day(3)), "b"),
        # An import can insert an equal start with an earlier insertion time: it goes first.
        (fact("late", day(3), created=day(5)), fact("early", day(3), created=day(4)), "late"),
    ],
)
def test_equal_starts_are_deterministic(first: FactSpan, second: FactSpan, winner: str) -> None:
    stored = apply([first], second, close_intervals([first], second))
    assert current(stored, day(4)).id == winner  # type: ignore[union-attr]
    loser = next(f for f in stored if f.id != winner)
    assert loser.invalid_at == day(3)
    assert not is_current(loser.valid_at, loser.invalid_at, day(3))
    assert [f.id for f in history(stored)][-1] == winner


@pytest.mark.parametrize(
    ("valid_at", "invalid_at", "t", "expected"),
    [
        (day(3), day(6), day(3), True),  # the start is included
        (day(3), day(6), day(6) - timedelta(microseconds=1), True),
        (day(3), day(6), day(6), False),  # the end is not
        (day(3), day(6), day(2), False),
        (day(3), None, day(12, 31, year=2099), True),
        (day(3), None, day(3) - timedelta(microseconds=1), False),
        (day(3), day(3), day(3), False),  # an empty interval never holds
        # Offsets are compared as instants: 08:00+08:00 is midnight UTC.
        (datetime(2025, 3, 1, 8, tzinfo=timezone(timedelta(hours=8))), day(6), day(3), True),
    ],
)
def test_is_current_is_half_open(
    valid_at: datetime, invalid_at: datetime | None, t: datetime, expected: bool
) -> None:
    assert is_current(valid_at, invalid_at, t) is expected


def test_closed_interval_is_not_reopened_after_successor_deletion() -> None:
    # Shanghai once closed Hangzhou and was then deleted: Hangzhou keeps its June end.
    closed = fact("hangzhou", day(3), end=day(6))
    assert current([closed], day(7)) is None
    assert as_of([closed], day(5)) == closed

    # A later fact does not touch it.
    wuhan = fact("wuhan", day(8))
    assert close_intervals([closed], wuhan) == [IntervalUpdate("wuhan", None)]
    # An earlier-ending insert still shortens it; it is never extended.
    ningbo = fact("ningbo", day(4), created=day(9))
    assert close_intervals([closed], ningbo) == [
        IntervalUpdate("hangzhou", day(4)),
        IntervalUpdate("ningbo", None),
    ]


def test_revoked_facts_take_no_part() -> None:
    revoked_successor = fact("wrong", day(5), revoked=True)
    revoked_predecessor = fact("old", day(2), revoked=True)
    updates = close_intervals([revoked_predecessor, HANGZHOU, revoked_successor], SHANGHAI)
    assert updates == [IntervalUpdate("hangzhou", day(6)), IntervalUpdate("shanghai", None)]

    stored = [dataclasses.replace(HANGZHOU, invalid_at=day(6)), SHANGHAI, revoked_successor]
    assert as_of(stored, day(5)).id == "hangzhou"  # type: ignore[union-attr]
    assert [f.id for f in history(stored)] == ["hangzhou", "shanghai"]
    assert [f.id for f in history(stored, include_revoked=True)] == [
        "hangzhou",
        "wrong",
        "shanghai",
    ]


def test_invalid_inputs_are_programming_errors() -> None:
    with pytest.raises(ValueError, match="revoked"):
        close_intervals([], fact("x", day(1), revoked=True))
    with pytest.raises(ValueError, match="already"):
        close_intervals([HANGZHOU], HANGZHOU)
    with pytest.raises(ValueError, match="naive"):
        is_current(datetime(2025, 3, 1), None, day(3))  # naive on purpose
    with pytest.raises(ValueError, match="already"):
        close_intervals_batch([HANGZHOU], [SHANGHAI, SHANGHAI])


def test_batch_insert_reports_final_values() -> None:
    ningbo = fact("ningbo", day(4), created=day(7))
    updates = close_intervals_batch([HANGZHOU], [SHANGHAI, ningbo])
    assert updates == [
        IntervalUpdate("hangzhou", day(4)),
        IntervalUpdate("ningbo", day(6)),
        IntervalUpdate("shanghai", None),
    ]
    assert close_intervals_batch([HANGZHOU], [ningbo, SHANGHAI]) == updates


def test_batch_omits_unchanged_existing_facts() -> None:
    closed = fact("hangzhou", day(3), end=day(6))
    assert close_intervals_batch([closed], [fact("wuhan", day(8))]) == [IntervalUpdate("wuhan", None)]


def test_timeline_recomputes_a_clean_history() -> None:
    facts = [
        SHANGHAI,
        fact("suzhou", day(1), created=day(7)),
        HANGZHOU,
        fact("x", day(2), revoked=True),
    ]
    assert timeline(facts) == [
        IntervalUpdate("suzhou", day(3)),
        IntervalUpdate("hangzhou", day(6)),
        IntervalUpdate("shanghai", None),
    ]


def test_order_key_normalizes_offsets() -> None:
    shanghai_time = datetime(2025, 3, 1, 8, tzinfo=timezone(timedelta(hours=8)))
    assert order_key(fact("a", shanghai_time)) == (day(3), day(3), "a")


def test_all_names_exist() -> None:
    for name in intervals.__all__:
        assert hasattr(intervals, name)


# -- properties ------------------------------------------------------------------------------------

facts_strategy = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 5)), min_size=0, max_size=12).map(
    lambda pairs: [
        fact(f"f{i:02d}", day(1) + timedelta(days=v), created=day(1) + timedelta(hours=c))
        for i, (v, c) in enumerate(pairs)
    ]
)


@given(facts=facts_strategy, data=st.data())
def test_incremental_insertion_in_any_order_matches_a_clean_timeline(
    facts: list[FactSpan], data: st.DataObject
) -> None:
    order = data.draw(st.permutations(facts))
    stored: list[FactSpan] = []
    for new in order:
        stored = apply(stored, new, close_intervals(stored, new))
    ends = {f.id: f.invalid_at for f in stored}
    assert [IntervalUpdate(f.id, ends[f.id]) for f in history(stored)] == timeline(facts)


@given(facts=facts_strategy, data=st.data(), t=st.integers(-2, 24))
def test_at_most_one_fact_holds_and_it_is_the_latest_started(
    facts: list[FactSpan], data: st.DataObject, t: int
) -> None:
    ends = {u.id: u.invalid_at for u in timeline(facts)}
    stored = [dataclasses.replace(f, invalid_at=ends[f.id]) for f in facts]
    at = day(1) + timedelta(days=t)
    holding = [f for f in stored if is_current(f.valid_at, f.invalid_at, at)]
    assert len(holding) <= 1
    started = [f for f in history(stored) if f.valid_at <= at]
    assert as_of(stored, at) == (started[-1] if started else None)


@given(facts=facts_strategy, data=st.data())
def test_batch_result_does_not_depend_on_order(facts: list[FactSpan], data: st.DataObject) -> None:
    split = data.draw(st.integers(0, len(facts)))
    existing_facts = facts[:split]
    ends = {u.id: u.invalid_at for u in timeline(existing_facts)}
    existing = [dataclasses.replace(f, invalid_at=ends[f.id]) for f in existing_facts]
    new = facts[split:]
    shuffled = data.draw(st.permutations(new))
    assert close_intervals_batch(existing, new) == close_intervals_batch(existing, shuffled)
