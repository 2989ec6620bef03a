"""The streaming record reader: JSON lists and JSON Lines, line numbers, and where reading stops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from yiji.domain.jsonstream import (
    LONG_NUMBER,
    MAX_RECORD,
    NOT_JSON,
    SURROGATE,
    TOO_DEEP,
    TOO_LONG,
    decode,
    records,
)

AFTER = "text after the end of the list"
TWO = [(1, {"a": 1}, None, False), (2, {"b": 2}, None, False)]


def read(text: str, size: int, max_record: int = MAX_RECORD) -> list[tuple[int, Any, str | None, bool]]:
    chunks = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return [(r.line, r.value, r.error, r.fatal) for r in records(chunks, max_record)]


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
        "json lines with parser failures",
        '{"a": 1}\n['
        + "[" * 100_000
        + "]" * 100_000
        + ']\n{"n": 1'
        + "0" * 5000
        + '}\n["\\ud800"]\n["\\ud83d\\ude00"]',
        [
            (1, {"a": 1}, None, False),
            (2, None, TOO_DEEP, False),
            (3, None, LONG_NUMBER, False),
            (4, None, SURROGATE, False),
            (5, ["\U0001f600"], None, False),
        ],
    ),
    ("a list with a lone surrogate", '[["\\udfff"], 2]', [(1, None, SURROGATE, False), (1, 2, None, False)]),
    ("a list nested too deeply", "[1, " + "[" * 100_000, [(1, 1, None, False), (1, None, TOO_DEEP, True)]),
    (
        "a list with a long number",
        "[1, 2" + "0" * 5000 + "]",
        [(1, 1, None, False), (1, None, LONG_NUMBER, True)],
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": [1, "x"]}', ({"a": [1, "x"]}, None)),
        ("{", (None, NOT_JSON)),
        ("[" * 100_000, (None, TOO_DEEP)),
        ("9" * 5000, (None, LONG_NUMBER)),
        ('{"\\ud800": 1}', (None, SURROGATE)),
        ('"\\\\ud800"', ("\\ud800", None)),
    ],
)
def test_decode_names_the_rule_of_every_parser_failure(text: str, expected: tuple[Any, str | None]) -> None:
    assert decode(text) == expected


def test_a_broken_list_is_refused_where_it_breaks_without_reading_on() -> None:
    read_chunks = []

    def chunks() -> Iterator[str]:
        yield '[{"a": 1},\n{"b": oops},\n'
        for i in range(1000):
            read_chunks.append(i)
            yield '{"c": "' + "x" * 1000 + '"},\n'
        yield "{}]"

    got = [(r.line, r.value, r.error, r.fatal) for r in records(chunks())]
    assert got == [(1, {"a": 1}, None, False), (2, None, NOT_JSON, True)]
    assert len(read_chunks) <= 1  # at most the next chunk, never the rest of the file


@pytest.mark.parametrize("size", [1, 7, 1 << 16])
def test_a_record_longer_than_the_limit_is_refused_unread(size: int) -> None:
    long = '{"t": "' + "x" * 100 + '"}'
    lines = '{"a": 1}\n' + long + '\n{"b": 2}\n' + long
    assert read(lines, size, max_record=50) == [
        (1, {"a": 1}, None, False),
        (2, None, TOO_LONG, False),
        (3, {"b": 2}, None, False),
        (4, None, TOO_LONG, False),
    ]
    assert read("[1,\n" + long + ", 2]", size, max_record=50) == [
        (1, 1, None, False),
        (2, None, TOO_LONG, True),
    ]
    unclosed = '[1,\n"' + "x" * 100
    assert read(unclosed, size, max_record=50) == [(1, 1, None, False), (2, None, TOO_LONG, True)]
