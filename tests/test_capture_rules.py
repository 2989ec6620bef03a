"""The fast check of host capture batches (``yiji.domain.capture.plain_batch``) against the boundary model:
it accepts only what the model accepts, with the same values, and leaves everything else to the model."""

from __future__ import annotations

from typing import Any

import pytest

from yiji.domain.capture import MAX_CAPTURE_LINES, CaptureBatch, check_order, plain_batch
from yiji.errors import InvalidInput
from yiji.models.capture import parse_batch


def line(n: int = 0, **changes: Any) -> dict[str, Any]:
    base = {
        "event_id": f"dsh:i:s:{n}",
        "message_id": f"m{n}",
        "session": "s",
        "seq": n,
        "role": "user",
        "text": "我在杭州 bought a camera",
        "occurred_at": "2026-11-30T10:00:00+08:00",
    }
    return {**base, **changes}


def batch(*lines: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"instance": "i", "session": "s", "expect_cursor": -1, "lines": list(lines), **changes}


PLAIN = [
    batch(line(0), line(1, role="assistant")),
    batch(),
    {"instance": "i", "session": "s"},
    batch(line(0), reason="pre-summarize", persona="miso", project="dsh.work_1"),
    batch(line(0, occurred_at="2026-11-30T02:00:00Z", text=" padded ")),
    batch(line(5, message_id="x" * 128, event_id="a" * 128, session="s"), expect_cursor=4),
]
CONVERTED = [  # the model converts these; the fast check leaves them to it
    batch(line(0, seq=0.0)),
    batch(line(0), expect_cursor=-1.0),
    batch(line(0, seq="0")),
]
INVALID = [
    batch(line(0, role="system")),
    batch(line(0, text="   ")),
    batch(line(0, text="")),
    batch(line(0, occurred_at="2026-11-30T10:00:00")),
    batch(line(0, occurred_at="yesterday")),
    batch(line(0, seq=-1)),
    batch(line(0, seq=False)),  # a JSON boolean is not a number
    batch(line(0, seq=True)),
    batch(line(0, seq=2**63)),  # past SQLite's largest integer: no cursor can hold it
    batch(line(0, message_id="")),
    batch(line(0, message_id="x" * 129)),
    batch(line(0, event_id="bad id")),
    batch(line(0, event_id="dsh:i:s:0\n")),
    batch(line(0, session="s\n"), session="s\n"),
    batch(line(0, extra=1)),
    batch({k: v for k, v in line(0).items() if k != "text"}),
    batch(line(0), instance="no/slash"),
    batch(line(0), instance="i" * 65),
    batch(line(0), persona=""),
    batch(line(0), expect_cursor=-2),
    batch(line(0), reason="whenever"),
    batch(line(0), reason=None),
    {**batch(), "lines": "not a list"},
    {**batch(), "other": 1},
    {"session": "s"},
    batch(*[line(i) for i in range(MAX_CAPTURE_LINES + 1)]),
]


@pytest.mark.parametrize("raw", PLAIN)
def test_plainly_valid_batches_equal_what_the_model_gives(raw: dict[str, Any]) -> None:
    fast = plain_batch(raw)
    assert isinstance(fast, CaptureBatch)
    assert fast == parse_batch(raw)


@pytest.mark.parametrize("raw", CONVERTED)
def test_values_to_convert_are_left_to_the_model(raw: dict[str, Any]) -> None:
    assert plain_batch(raw) is None
    converted = parse_batch(raw)
    assert (converted.expect_cursor, converted.lines[0].seq) == (-1, 0)
    assert type(converted.lines[0].seq) is int and type(converted.expect_cursor) is int


@pytest.mark.parametrize("raw", INVALID)
def test_invalid_batches_are_left_to_the_model_which_names_the_field(raw: dict[str, Any]) -> None:
    assert plain_batch(raw) is None
    with pytest.raises(InvalidInput) as info:
        parse_batch(raw)
    assert info.value.field


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (batch(line(0), expect_cursor=None), "expect_cursor"),
        (batch(line(1)), None),
        (batch(line(0), expect_cursor=0), "lines[0].seq"),
        (batch(line(2), line(1)), "lines[1].seq"),
        (batch(line(0), line(1, event_id="dsh:i:s:0")), "lines[1].event_id"),
        (batch(line(0, session="t")), "lines[0].session"),
    ],
)
def test_order_rules_across_lines(raw: dict[str, Any], field: str | None) -> None:
    parsed = plain_batch({k: v for k, v in raw.items() if v is not None})
    assert parsed is not None
    if field is None:
        check_order(parsed)
        return
    with pytest.raises(InvalidInput) as info:
        check_order(parsed)
    assert info.value.field == field
