"""The streaming record reader: JSON lists and JSON Lines, line numbers, and where reading stops."""

from __future__ import annotations

from typing import Any

import pytest

from yiji.domain.jsonstream import NOT_JSON, records

AFTER = "text after the end of the list"
TWO = [(1, {"a": 1}, None, False), (2, {"b": 2}, None, False)]


def read(text: str, size: int) -> list[tuple[int, Any, str | None, bool]]:
    chunks = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return [(r.line, r.value, r.error, r.fatal) for r in records(chunks)]


CASES = [
    ("empty file", "", []),
    ("blank file", " \n\n", []),
    ("empty list", "[ ]", []),
    (
        "list over lines",
        '[{"a": 1},\n {"b": 2}\n,\n123]',
        [(1, {"a": 1}, None, False), (2, {"b": 2}, None, False), (4, 123, None, False)],
    ),
    ("byte order mark", '\ufeff[\n{"a":\n1}]', [(2, {"a": 1}, None, False)]),
    ("number split across chunks", "[12345, 6]", [(1, 12345, None, False), (1, 6, None, False)]),
    ("trailing comma", "[1,]", [(1, 1, None, False), (1, None, NOT_JSON, True)]),
    ("unclosed list", '[{"a": 1}', [(1, {"a": 1}, None, False), (1, None, "the list is not closed", True)]),
    (
        "text after the list",
        "[1] x",
        [(1, 1, None, False), (1, None, "text after the end of the list", True)],
    ),
    ("missing comma", "[1 2]", [(1, 1, None, False), (1, None, NOT_JSON, True)]),
    (
        "json lines with a bad line",
        '{"a": 1}\n\nnope\n{"c": 3}',
        [(1, {"a": 1}, None, False), (3, None, NOT_JSON, False), (4, {"c": 3}, None, False)],
    ),
    (
        "json lines with CRLF",
        '{"a": 1}\r\n{"b": 2}\r\n',
        [(1, {"a": 1}, None, False), (2, {"b": 2}, None, False)],
    ),
    (
        "json lines without a final newline",
        '{"a": 1}\n{"b": 2}',
        [(1, {"a": 1}, None, False), (2, {"b": 2}, None, False)],
    ),
]


@pytest.mark.parametrize("size", [1, 3, 1 << 16])
@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_records(name: str, text: str, expected: list[Any], size: int) -> None:
    assert read(text, size) == expected


def test_a_large_list_streams_with_line_numbers() -> None:
    text = "[\n" + ",\n".join(f'{{"n": {i}, "pad": "{"x" * 200}"}}' for i in range(2000)) + "\n]"
    got = read(text, 4096)
    assert [v["n"] for _, v, _, _ in got] == list(range(2000))
    assert [line for line, *_ in got] == list(range(2, 2002))
