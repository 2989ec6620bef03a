"""``event import``: JSON list and JSON Lines, idempotent by id, batches, rejections by line and rule."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from yiji.domain.wording import counted
from yiji.models import EventFilter
from yiji.service import MemoryService

from .inprocess import run_cli

SECRET = "SECRET-VALUE-5f2e"


def event(i: int, **kw: Any) -> dict[str, Any]:
    return {
        "id": f"h-{i}",
        "session": f"s{i // 10}",
        "role": "user" if i % 2 == 0 else "assistant",
        "text": f"第 {i} 句：我们聊到了西湖。",
        "occurred_at": f"2025-01-01T00:00:{i % 60:02d}+08:00",
        **kw,
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_import_json_lines_is_idempotent(service: MemoryService, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "history.jsonl", [event(i) for i in range(25)])
    first = service.event_import(source, batch_size=10)
    assert (first.inserted, first.already_present, first.rejected, first.batches) == (25, 0, 0, 3)
    again = service.event_import(source, batch_size=10)
    assert (again.inserted, again.already_present, again.rejected) == (0, 25, 0)
    page = service.event_page(EventFilter(limit=100))
    assert page.total == 25
    assert [e.id for e in page.events] == [f"h-{i}" for i in range(25)]


def test_import_json_list_with_scope_defaults(service: MemoryService, tmp_path: Path) -> None:
    source = tmp_path / "history.json"
    rows = [event(0), event(1, project="other")]
    source.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    summary = service.event_import(source, persona="companion", project="diary")
    assert summary.inserted == 2
    stored = {e.id: (e.persona, e.project) for e in [service.event_show("h-0", "companion", "diary")]}
    assert stored == {"h-0": ("companion", "diary")}
    assert service.event_show("h-1", "companion", "other").project == "other"


def test_rejections_name_line_field_and_rule_never_the_value(service: MemoryService, tmp_path: Path) -> None:
    rows: list[Any] = [
        event(0),
        event(1, role=SECRET),
        event(2, occurred_at=SECRET),
        [SECRET],
        event(3, unknown=SECRET),
        event(0, text=SECRET),  # the same id with another payload
        event(4),
    ]
    source = write_jsonl(tmp_path / "mixed.jsonl", rows)
    with source.open("a", encoding="utf-8") as out:
        out.write(SECRET + "\n")
    summary = service.event_import(source)
    assert (summary.inserted, summary.already_present, summary.rejected) == (2, 0, 6)
    found = [(r.line, r.field) for r in summary.rejections]
    assert found == [(2, "role"), (3, "occurred_at"), (4, "record"), (5, "unknown"), (6, "id"), (8, "record")]
    assert SECRET not in summary.model_dump_json()


def test_a_broken_json_list_keeps_what_came_before(service: MemoryService, tmp_path: Path) -> None:
    source = tmp_path / "broken.json"
    source.write_text(json.dumps([event(0), event(1)])[:-1] + ', {"id": ', encoding="utf-8")
    summary = service.event_import(source)
    assert summary.inserted == 2
    assert summary.stopped_at_line == 1
    assert summary.rejections[-1].rule == "not valid JSON"


def test_cli_import_reports_and_exits_2_on_rejections(db_path: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "h.jsonl", [event(0), event(1, role=SECRET)])
    result = run_cli("--db", str(db_path), "event", "import", str(source))
    assert result.code == 2
    assert "inserted 1, already present 0, rejected 1" in result.out
    assert "line 2: role:" in result.out
    assert SECRET not in result.out + result.err
    again = run_cli("--db", str(db_path), "event", "import", str(source), "--json")
    assert again.json()["already_present"] == 1


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--batch-size", "0"], "--batch-size"),
        (["--batch-size", "9223372036854775808"], "--batch-size"),
    ],
)
def test_cli_import_checks_the_batch_size(cli: Any, tmp_path: Path, args: list[str], flag: str) -> None:
    source = write_jsonl(tmp_path / "h.jsonl", [event(0)])
    result = cli("event", "import", str(source), *args)
    assert result.code == 2
    assert f"argument {flag}: must be a whole number" in result.err


def test_cli_import_missing_file(cli: Any, tmp_path: Path) -> None:
    result = cli("event", "import", str(tmp_path / "absent.jsonl"))
    assert result.code == 2
    assert "path: no readable file" in result.err


def test_cli_import_refuses_non_utf8(cli: Any, tmp_path: Path) -> None:
    source = tmp_path / "latin.jsonl"
    source.write_bytes(b'{"id": "x", "text": "caf\xe9"}\n')
    result = cli("event", "import", str(source))
    assert result.code == 2
    assert "line 1: record: is not UTF-8 text" in result.out


@pytest.mark.parametrize(("fmt", "count"), [("jsonl", 60_000), ("json", 6_000)])
def test_a_bad_byte_after_many_lines_names_the_line_and_keeps_the_summary(
    db_path: Path, tmp_path: Path, fmt: str, count: int
) -> None:
    good = [json.dumps(event(i), ensure_ascii=False) for i in range(count)]
    bad = json.dumps(event(count, text="caf_")).encode().replace(b"caf_", b"caf\xe9")
    after = [json.dumps(event(i)).encode() for i in range(count + 1, count + 10)]
    source = tmp_path / f"history.{fmt}"
    if fmt == "jsonl":
        source.write_bytes(b"\n".join([*(g.encode() for g in good), bad, *after]) + b"\n")
    else:
        source.write_bytes(b"[" + b",\n".join([*(g.encode() for g in good), bad, *after]) + b"]")
    result = run_cli("--db", str(db_path), "event", "import", str(source), "--batch-size", "5000")
    assert result.code == 2, result.err
    assert result.out.splitlines() == [
        f"inserted {count}, already present 0, rejected 1 "
        f"({counted(-(-count // 5000), 'batch', 'batches')} committed)",
        f"  line {count + 1}: record: is not UTF-8 text; the rest of the file was not read",
        f"reading stopped at line {count + 1}; the rest of the file was not read",
    ]
    assert result.err == ""


def test_an_id_repeated_in_one_batch_is_present_or_rejected(service: MemoryService, tmp_path: Path) -> None:
    rows = [event(0), event(1), event(0), event(1, text="另一句话")]
    summary = service.event_import(write_jsonl(tmp_path / "repeat.jsonl", rows), batch_size=10)
    assert (summary.inserted, summary.already_present, summary.rejected) == (2, 1, 1)
    assert [(r.line, r.field) for r in summary.rejections] == [(4, "id")]
    assert service.event_show("h-1").text == event(1)["text"]


def test_parser_failures_are_rejections_and_the_import_goes_on(db_path: Path, tmp_path: Path) -> None:
    source = tmp_path / "hostile.jsonl"
    good = "".join(json.dumps(event(i), ensure_ascii=False) + "\n" for i in range(4500))
    deep = '{"text": "' + SECRET + '", "cues": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    long_number = json.dumps(event(4501))[:-1] + ', "n": 1' + "0" * 4999 + "}\n"
    surrogate = json.dumps(event(4502, text=SECRET + " \ud800")) + "\n"
    rest = "".join(json.dumps(event(i), ensure_ascii=False) + "\n" for i in range(4503, 4600))
    source.write_text(good + deep + long_number + surrogate + rest, encoding="utf-8")
    result = run_cli("--db", str(db_path), "event", "import", str(source))
    assert result.code == 2, result.err
    assert result.out.splitlines() == [
        "inserted 4597, already present 0, rejected 3 (3 batches committed)",
        "  line 4501: record: nested too deeply",
        "  line 4502: record: holds a number with too many digits",
        "  line 4503: record: holds an unpaired surrogate escape",
    ]
    assert SECRET not in result.out + result.err


def test_a_json_list_nested_too_deeply_stops_with_a_summary(service: MemoryService, tmp_path: Path) -> None:
    source = tmp_path / "deep.json"
    items = [json.dumps(event(i)) for i in range(3)]
    source.write_text("[\n" + ",\n".join(items) + ",\n" + "[" * 100_000 + "\n]", encoding="utf-8")
    summary = service.event_import(source)
    assert (summary.inserted, summary.rejected, summary.stopped_at_line) == (3, 1, 5)
    assert [(r.line, r.rule) for r in summary.rejections] == [(5, "nested too deeply")]


def test_a_broken_json_list_is_refused_in_bounded_memory(service: MemoryService, tmp_path: Path) -> None:
    source = tmp_path / "broken.json"
    item = json.dumps(event(0), ensure_ascii=False)
    with source.open("w", encoding="utf-8") as out:
        out.write("[" + item + ',\n{"id": "h-1", "text": oops},\n')
        for i in range(2, 150_000):  # 23 MB of valid events after the break
            out.write(json.dumps(event(i), ensure_ascii=False) + ",\n")
        out.write(item + "]")
    assert source.stat().st_size > 20_000_000
    warm_up = write_jsonl(tmp_path / "first.jsonl", [event(150_001)])  # loads the models and the segmenter
    assert service.event_import(warm_up).inserted == 1
    tracemalloc.start()
    try:
        summary = service.event_import(source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (summary.inserted, summary.stopped_at_line) == (1, 2)
    assert peak < 6_000_000, peak  # a few read chunks, not the 23 MB file
