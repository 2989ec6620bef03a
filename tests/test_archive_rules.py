"""The pure archive format and rules: encoding, decoding, version handling and record checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from yiji.domain import archive_format
from yiji.domain import archive_rules as rules
from yiji.errors import ArchiveRejected, SchemaTooNew
from yiji.models.archive import EventRow, MemoryRow
from yiji.schema import AUTHORITATIVE_TABLES, SCHEMA_VERSION

T = "2026-01-01T00:00:00.000000Z"


def _event(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "seq": 1,
        "id": "e1",
        "persona_id": "default",
        "project_id": "default",
        "session_id": "s",
        "role": "user",
        "source": "chat",
        "category": "conversation",
        "text": "我更喜欢喝乌龙茶，不太喝咖啡。",
        "occurred_at": T,
        "ingested_at": T,
        "amended": 0,
        "extraction_state": "done",
        "extraction_error": None,
        "extraction_attempts": 0,
    }
    row.update(over)
    return row


def _memory(**over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "pk": 1,
        "id": "m1",
        "persona_id": "default",
        "project_id": "default",
        "event_id": "e1",
        "kind": "preference",
        "basis": "user_statement",
        "text": "prefers oolong tea",
        "quote": "我更喜欢喝乌龙茶",
        "confidence": 0.9,
        "subject": "user",
        "fact_key": "drink.tea",
        "valid_at": T,
        "invalid_at": None,
        "revoked_at": None,
        "revoked_reason": None,
        "valence": None,
        "arousal": None,
        "origin": "manual",
        "created_at": T,
        "gist": None,
    }
    row.update(over)
    return row


def _archive(version: int = 3, **tables: list[dict[str, Any]]) -> dict[str, Any]:
    names = archive_format.TABLES_BY_VERSION[version]
    content = {name: tables.get(name, []) for name in names}
    header = archive_format.make_header(version, T, {n: len(r) for n, r in content.items()}, {})
    return {**header, "tables": content}


def _text(fmt: archive_format.ArchiveFormat, data: dict[str, Any]) -> str:
    header = {k: v for k, v in data.items() if k != "tables"}
    return "".join(archive_format.encode(fmt, header, data["tables"].items()))


def test_format_version_follows_the_schema() -> None:
    assert archive_format.FORMAT_VERSION == SCHEMA_VERSION
    assert archive_format.TABLES == AUTHORITATIVE_TABLES
    assert (
        "event_cues" not in archive_format.TABLES_BY_VERSION[1]
        and "capture_cursors" not in archive_format.TABLES_BY_VERSION[2]
    )


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_encode_decode_validate(fmt: archive_format.ArchiveFormat) -> None:
    text = _text(fmt, _archive(events=[_event()], memories=[_memory()]))
    if fmt == "json":
        json.loads(text)  # one valid JSON document
        raw = archive_format.decode_json(text)
    else:
        assert len(text.splitlines()) == 3
        raw = archive_format.decode_jsonl(text.splitlines(keepends=True))
    assert archive_format.detect_format(text.split("\n", 1)[0].encode()) == fmt
    valid = rules.validate(raw)
    assert valid.counts["events"] == 1 and valid.counts["memories"] == 1
    assert valid.tables["memories"][0]["quote"] == "我更喜欢喝乌龙茶"
    assert valid.sequences == {"events": 1, "memories": 1}


def test_detect_format() -> None:
    assert archive_format.detect_format(b"SQLite format 3\x00\x10\x00") == "sqlite"
    assert archive_format.detect_format(b'{"format": "yiji-archive", "format_version": 3}\n') == "jsonl"
    assert archive_format.detect_format(b'{"format": "yiji-archive", "tables": {}}') == "json"
    assert archive_format.detect_format(b'{"format": "yiji-archive", "tables": {\n') == "json"
    assert archive_format.detect_format(b"\xff\xfe") == "json"


def test_version_1_rows_are_upgraded() -> None:
    memory = _memory()
    del memory["gist"]
    data = _archive(1, events=[_event()], memories=[memory])
    valid = rules.validate(archive_format.decode_json(json.dumps(data)))
    assert valid.source_version == 1
    assert valid.tables["memories"][0]["gist"] is None
    assert valid.tables["event_cues"] == [] and valid.tables["capture_cursors"] == []
    # A gist is not a version 1 column.
    data["tables"]["memories"][0]["gist"] = "tea"
    with pytest.raises(ArchiveRejected, match=r"memories\[0\].gist: unknown_field"):
        rules.validate(archive_format.decode_json(json.dumps(data)))


def test_newer_and_foreign_files() -> None:
    with pytest.raises(SchemaTooNew):
        archive_format.decode_json(
            json.dumps({**_archive(), "format_version": archive_format.FORMAT_VERSION + 1})
        )
    with pytest.raises(ArchiveRejected, match="the file is not a yiji archive") as caught:
        archive_format.decode_json(json.dumps({"format": "other", "format_version": 1, "tables": {}}))
    assert caught.value.problems == [("archive.format", "not_a_yiji_archive")]
    with pytest.raises(ArchiveRejected, match="not_a_yiji_archive_header"):
        archive_format.decode_jsonl([json.dumps(_archive())])
    with pytest.raises(ArchiveRejected, match="the file is empty") as caught:
        archive_format.decode_jsonl(["\n", "  \n"])
    assert caught.value.problems == [("archive", "empty_file")]
    with pytest.raises(ArchiveRejected, match="line 2: must_be_a_table_row_object"):
        archive_format.decode_jsonl([json.dumps({"format": "yiji-archive", "format_version": 3}), "[1]"])
    with pytest.raises(ArchiveRejected, match="names a field twice") as caught:
        archive_format.decode_json(
            '{"format": "yiji-archive", "format_version": 3, "tables": {}, "tables": {}}'
        )
    assert caught.value.problems == [("archive", "duplicate_field")]


def test_keys_that_could_be_user_text_are_not_echoed() -> None:
    data = _archive(events=[{**_event(), "我的秘密日记": 1}])
    data["tables"]["秘密"] = []
    with pytest.raises(ArchiveRejected) as caught:
        rules.validate(archive_format.decode_json(json.dumps(data, ensure_ascii=False)))
    assert "秘密" not in caught.value.message
    assert "tables.<table>: unknown_table" in caught.value.message


@pytest.mark.parametrize(
    ("value", "normalized"),
    [
        ("2026-01-01T08:00:00+08:00", T),
        ("2026-01-01T00:00:00Z", T),
        ("2026-01-01 00:00:00.000000+00:00", T),
        (T, T),
    ],
)
def test_times_are_normalized(value: str, normalized: str) -> None:
    assert EventRow.model_validate(_event(occurred_at=value)).occurred_at == normalized


@pytest.mark.parametrize("value", ["2026-01-01T00:00:00", "yesterday", 1767225600, None])
def test_bad_times_are_refused(value: object) -> None:
    data = _archive(events=[_event(ingested_at=value)])
    with pytest.raises(ArchiveRejected, match=r"events\[0\].ingested_at"):
        rules.validate(archive_format.decode_json(json.dumps(data)))


@pytest.mark.parametrize(
    ("event", "memory", "expected"),
    [
        ({}, {}, []),
        ({}, {"quote": "我更喜欢喝红茶"}, [("quote", "quote_not_in_source")]),
        ({"role": "assistant"}, {}, [("basis", "user_statement_requires_user_event")]),
        ({"category": "reference"}, {}, [("category", "source_archived")]),
        ({"category": "persona"}, {}, [("category", "source_archived")]),
        ({}, {"basis": "assistant_expression", "fact_key": None, "subject": None, "kind": "observation"},
         [("basis", "assistant_expression_requires_assistant_event")]),
        ({}, {"basis": "inference"}, [("fact_key", "inference_cannot_have_fact_key")]),
        ({}, {"basis": "inference", "kind": "growth", "fact_key": None},
         [("kind", "inference_cannot_be_growth")]),
        ({}, {"valence": 0.5, "kind": "emotion", "fact_key": None, "subject": None, "arousal": 0.1},
         [("basis", "emotion_requires_assistant_expression")]),
    ],
)  # fmt: skip
def test_memory_rules(event: dict[str, Any], memory: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    found = rules.memory_violations(
        MemoryRow.model_validate(_memory(**memory)), EventRow.model_validate(_event(**event))
    )
    for item in expected:
        assert item in found
    assert bool(found) == bool(expected)


def test_problems_are_capped_and_counted() -> None:
    events = [_event(seq=i + 1, id=f"e{i}", occurred_at="naive") for i in range(30)]
    with pytest.raises(ArchiveRejected) as caught:
        rules.validate(archive_format.decode_json(json.dumps(_archive(events=events))))
    assert len(caught.value.problems) == archive_format.MAX_REPORTED and caught.value.total == 30
    assert "and 10 more" in caught.value.message
