"""Export, import, backup and restore against real files: nothing lost, nothing overwritten, nothing
written from an archive that breaks a rule, and no stored text in any error."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from yiji.db import Database
from yiji.domain import archive_format
from yiji.errors import ArchiveRejected, ArchiveTooNew, Conflict, IntegrityFailure, InvalidInput
from yiji.models import EventIn
from yiji.models.checkpoints import CheckpointIn
from yiji.models.lifecycle import DeleteRequest
from yiji.models.recall import RecallQuery
from yiji.models.resume import ResumeRequest
from yiji.schema import SCHEMA_VERSION
from yiji.service import MemoryService
from yiji.service.archive import write_archive
from yiji.store.archive import backup_into

from .archive_helpers import (
    AUTHORITATIVE,
    EVENT_TEXTS,
    SECRET_WORDS,
    is_empty,
    open_service,
    populate,
    table_rows,
    without_exported_at,
)
from .conftest import foreign_database, run_yiji
from .inprocess import run_cli


@pytest.fixture
def source(tmp_path: Path) -> tuple[MemoryService, dict[str, int]]:
    service = open_service(tmp_path / "source.db")
    seqs = populate(service)
    yield service, seqs
    service.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _named(exc: ArchiveRejected) -> str:
    """The problems as the archive format names them (``record: rule id``), whatever words the message
    uses for a problem of the whole file."""
    return "; ".join(f"{record}: {rule}" for record, rule in exc.problems)


def _assert_no_stored_text(message: str) -> None:
    for text in EVENT_TEXTS.values():
        assert text not in message
    for word in SECRET_WORDS:
        assert word not in message


# -- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_round_trip_is_lossless(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]], fmt: str
) -> None:
    service, seqs = source
    first = tmp_path / f"first.{fmt}"
    result = service.archive_export(first, fmt)
    assert result.format == fmt and result.format_version == archive_format.FORMAT_VERSION
    assert result.counts == {
        "personas": 5,
        "events": 6,
        "event_cues": 2,
        "memories": 7,
        "relations": 3,
        "checkpoints": 3,
        "capture_cursors": 1,
        "deletion_ledger": 3,
    }

    copy_path = tmp_path / "copy.db"
    restored = open_service(copy_path)
    imported = restored.archive_import(first)
    assert imported.format == fmt and imported.counts == result.counts
    second = tmp_path / f"second.{fmt}"
    restored.archive_export(second, fmt)

    assert without_exported_at(first.read_text("utf-8")) == without_exported_at(second.read_text("utf-8"))
    assert table_rows(copy_path) == table_rows(service.db.path)

    # Recall gives the same answers, scores and explanations from the imported copy (the fixture wrote
    # some rows with SQL, so the source's index is brought up to date first).
    service.reindex()
    for query in ("Hangzhou", "lake", "杭州", "Kyoto", "run"):
        for kw in ({}, {"include_history": True}):
            before = service.memory_recall(RecallQuery(query=query, **kw)).as_dict()
            after = restored.memory_recall(RecallQuery(query=query, **kw)).as_dict()
            assert before == after
    # ... and a resume pack is the same, byte for byte.
    for kw in ({"session": "s1"}, {"session": "s1", "query": "Hangzhou lake"}, {"budget": 600}, {}):
        request = ResumeRequest(**kw)
        assert service.session_resume(request).model_dump(mode="json") == restored.session_resume(
            request
        ).model_dump(mode="json")

    # Numbers of deleted rows are never handed out again after an import.
    new = restored.event_submit(EventIn(id="e8", session="s1", role="user", text="after the import"))
    assert new.event.seq == seqs["e7"] + 1
    with restored.db.read() as conn:
        assert conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memories'").fetchone()[0] == 8
        # Caches were not carried over; the lexical index was rebuilt from the imported rows. The
        # bookkeeping holds the index's segmenter and the events' high-water mark from the header.
        assert conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == 0
        assert sorted(r[0] for r in conn.execute("SELECT key FROM meta")) == ["events_seq_floor", "segmenter"]
        assert conn.execute("SELECT COUNT(*) FROM memory_fts WHERE rowid = 999999").fetchone()[0] == 0
        memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0] == memories
    assert restored.doctor()["ok"]
    restored.close()


def test_archive_holds_every_authoritative_table_and_no_cache(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, seqs = source
    path = tmp_path / "a.json"
    service.archive_export(path)
    data = json.loads(path.read_text("utf-8"))
    assert data["format"] == "yiji-archive" and data["format_version"] == archive_format.FORMAT_VERSION
    assert data["exported_at"] == "2026-06-01T12:00:00.000000Z"
    assert tuple(data["tables"]) == AUTHORITATIVE
    assert data["sequences"] == {"events": seqs["e7"], "memories": 8}
    assert data["counts"] == {name: len(rows) for name, rows in data["tables"].items()}
    text = path.read_text("utf-8")
    assert "segmenter" not in text and "fingerprint" not in text and "X'" not in text
    e1 = data["tables"]["events"][0]
    assert (
        e1["seq"] == seqs["e1"] and e1["amended"] == 1 and e1["occurred_at"] == "2026-03-01T01:00:00.000000Z"
    )
    memory = data["tables"]["memories"][0]
    assert memory["pk"] == 1 and memory["revoked_at"] and memory["invalid_at"]


def test_export_is_private_and_never_overwrites(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, _ = source
    path = tmp_path / "a.jsonl"
    service.archive_export(path, "jsonl")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    before = _sha(path)
    with pytest.raises(Conflict):
        service.archive_export(path, "jsonl")
    assert _sha(path) == before
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(Conflict):
        service.archive_export(tmp_path / "link")
    assert not (tmp_path / "nowhere").exists()
    with pytest.raises(InvalidInput):
        service.archive_export(tmp_path / "missing-folder" / "a.json")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_restore_round_trip_through_a_backup(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, _ = source
    backup = tmp_path / "yiji.bak"
    made = service.backup_create(backup)
    assert (
        made.format == "sqlite"
        and made.format_version == archive_format.FORMAT_VERSION
        and made.counts["events"] == 6
    )
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert not Path(f"{backup}-wal").exists()
    digest = _sha(backup)

    restored = open_service(tmp_path / "restored.db")
    result = restored.backup_restore(backup)
    assert result.operation == "restore" and result.counts == made.counts
    assert _sha(backup) == digest
    assert table_rows(restored.db.path) == table_rows(service.db.path)
    service.archive_export(tmp_path / "before.json")
    restored.archive_export(tmp_path / "after.json")
    assert without_exported_at((tmp_path / "before.json").read_text("utf-8")) == without_exported_at(
        (tmp_path / "after.json").read_text("utf-8")
    )
    # `import` recognizes a SQLite backup too.
    again = open_service(tmp_path / "again.db")
    assert again.archive_import(backup).operation == "restore"
    restored.close()
    again.close()


def test_archives_and_backups_restore_after_a_deletion(tmp_path: Path) -> None:
    """Deleting the event a checkpoint covers invalidates the checkpoint; archives of that state import."""
    service = open_service(tmp_path / "src.db")
    service.event_submit(EventIn(id="x1", session="s1", role="user", text="我喜欢红茶"))
    covered = service.event_submit(EventIn(id="x2", session="s1", role="user", text="今天下雨")).event.seq
    service.checkpoint_save(CheckpointIn(session="s1", goal="plan", covered_seq=covered))
    service.memory_delete(DeleteRequest(event_id="x2", dry_run=False))
    for fmt in ("json", "jsonl"):
        archive = tmp_path / f"after-delete.{fmt}"
        service.archive_export(archive, fmt)
        copy_service = open_service(tmp_path / f"copy-{fmt}.db")
        copy_service.archive_import(archive)
        assert table_rows(copy_service.db.path) == table_rows(service.db.path)
        copy_service.close()
    backup = tmp_path / "after-delete.bak"
    service.backup_create(backup)
    restored = open_service(tmp_path / "restored.db")
    restored.backup_restore(backup)
    assert restored.doctor()["ok"]
    restored.close()
    # a checkpoint that is still valid must cover an event that exists
    archive = tmp_path / "after-delete.json"
    data = json.loads(archive.read_text("utf-8"))
    for row in data["tables"]["checkpoints"]:
        row["invalidated_at"] = None
        row["invalid_reason"] = None
    broken = tmp_path / "valid-checkpoint-missing-event.json"
    broken.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    target = open_service(tmp_path / "refused.db")
    with pytest.raises(ArchiveRejected, match="covered_seq_not_found"):
        target.archive_import(broken)
    target.close()
    service.close()


def test_backup_never_overwrites(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> None:
    service, _ = source
    target = tmp_path / "exists.bak"
    target.write_bytes(b"keep me")
    with pytest.raises(Conflict):
        service.backup_create(target)
    assert target.read_bytes() == b"keep me"
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".part"] == []


def test_import_and_restore_refuse_a_non_empty_database(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, _ = source
    archive = tmp_path / "a.json"
    service.archive_export(archive)
    backup = tmp_path / "a.bak"
    service.backup_create(backup)
    other = open_service(tmp_path / "other.db")
    other.event_submit(EventIn(id="x", session="s", role="user", text="already here"))
    before = table_rows(other.db.path)
    with pytest.raises(Conflict, match="not empty"):
        other.archive_import(archive)
    with pytest.raises(Conflict, match="not empty"):
        other.backup_restore(backup)
    assert table_rows(other.db.path) == before
    other.close()


def test_the_lexical_index_is_rebuilt_after_import(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, _ = source
    archive = tmp_path / "a.json"
    service.archive_export(archive)
    fresh = open_service(tmp_path / "fresh.db")
    fresh.archive_import(archive)
    with fresh.db.read() as conn:
        memories = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM memory_fts").fetchone()[0] == memories == 7
    assert fresh.index_status()["current"] is True
    assert not any("index" in w for w in fresh.doctor()["warnings"])  # the fixture has a pending event
    fresh.close()


def test_progress_is_reported(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> None:
    service, _ = source
    seen: dict[str, list[int]] = {}

    class Bar:
        def __init__(self, name: str) -> None:
            self.name = name

        def update(self, n: int = 1) -> None:
            seen[self.name].append(n)

        def close(self) -> None:
            seen[self.name].append(-1)

    def factory(description: str, total: int | None) -> Bar:
        seen[description] = [total or 0]
        return Bar(description)

    service.archive_export(tmp_path / "a.jsonl", progress=factory)
    fresh = open_service(tmp_path / "fresh.db")
    fresh.archive_import(tmp_path / "a.jsonl", progress=factory)
    for name in ("export", "validate", "import"):
        total, *ticks, closed = seen[name]
        assert total == 30 and sum(ticks) == 30 and closed == -1
    total, *ticks, closed = seen["reindex"]  # the rebuild after the import reports too
    assert total > 0 and sum(ticks) == total and closed == -1
    fresh.close()


# -- refusals ------------------------------------------------------------------------------------


def _rows(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = data["tables"][table]
    return rows


def _edit_quote(d: dict[str, Any]) -> None:
    _rows(d, "memories")[1]["quote"] = "I moved to Nanjing"


def _checkpoint_other_session(d: dict[str, Any]) -> None:
    e5 = next(e for e in _rows(d, "events") if e["id"] == "e5")
    _rows(d, "checkpoints")[0]["covered_seq"] = e5["seq"]


def _naive_time(d: dict[str, Any]) -> None:
    _rows(d, "events")[0]["occurred_at"] = "2026-03-01T09:00:00"


def _duplicate_event_id(d: dict[str, Any]) -> None:
    _rows(d, "events")[1]["id"] = "e1"


def _duplicate_memory_id(d: dict[str, Any]) -> None:
    _rows(d, "memories")[2]["id"] = "m1"


def _unknown_table(d: dict[str, Any]) -> None:
    d["tables"]["embeddings"] = [{"memory_id": "m2"}]


def _unknown_field(d: dict[str, Any]) -> None:
    _rows(d, "events")[0]["mood"] = "happy"


def _memory_other_scope(d: dict[str, Any]) -> None:
    _rows(d, "memories")[1]["persona_id"] = "aria"


def _user_statement_from_assistant(d: dict[str, Any]) -> None:
    memory = _rows(d, "memories")[2]
    memory.update(basis="user_statement", kind="observation", valence=None, arousal=None)


def _memory_from_reference(d: dict[str, Any]) -> None:
    memory = _rows(d, "memories")[1]
    memory.update(event_id="e4", quote="West Lake")


def _inference_with_fact_key(d: dict[str, Any]) -> None:
    _rows(d, "memories")[5].update(kind="fact", subject="user", fact_key="trip.city")


def _emotion_values_on_user_statement(d: dict[str, Any]) -> None:
    _rows(d, "memories")[1]["valence"] = 0.5


def _relation_to_missing_memory(d: dict[str, Any]) -> None:
    _rows(d, "relations")[0]["to_id"] = "m404"


def _relation_across_scopes(d: dict[str, Any]) -> None:
    _rows(d, "relations")[1]["to_id"] = "m6"


def _cue_to_missing_event(d: dict[str, Any]) -> None:
    _rows(d, "event_cues")[0]["event_id"] = "e404"


def _bad_relation_type(d: dict[str, Any]) -> None:
    _rows(d, "relations")[0]["type"] = "supersedes"


def _count_mismatch(d: dict[str, Any]) -> None:
    _rows(d, "events").pop()


def _sequence_below_max(d: dict[str, Any]) -> None:
    d["sequences"]["events"] = 1


def _string_for_number(d: dict[str, Any]) -> None:
    _rows(d, "memories")[0]["confidence"] = "0.9"


def _missing_table(d: dict[str, Any]) -> None:
    del d["tables"]["capture_cursors"]
    del d["counts"]["capture_cursors"]


def _cursor(column: str, value: str) -> Callable[[dict[str, Any]], None]:
    def corrupt(d: dict[str, Any]) -> None:
        _rows(d, "capture_cursors")[0][column] = value

    return corrupt


_CURSOR_RULE = "capture_cursors[0].cursor: must be -1 or a whole number from 0 to 9223372036854775807"
CORRUPTIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    **{
        f"cursor {name}": (_cursor("cursor", value), _CURSOR_RULE)
        for name, value in [
            ("not a number", "x"),
            ("below -1", "-2"),
            ("with a space", " 3"),
            ("with a leading zero", "03"),
            ("of 5,000 digits", "9" * 5000),
            ("past the largest seq", "9223372036854775808"),
        ]
    },
    "cursor instance id with spaces": (
        _cursor("instance_id", "harness one"),
        "capture_cursors[0].instance_id: must start with a letter or digit and hold only letters, digits",
    ),
    "cursor of an unknown persona": (
        _cursor("persona_id", "nobody"),
        "capture_cursors[0].persona_id: persona_not_found",
    ),
    "quote edited": (_edit_quote, "memories[1].quote: quote_not_in_source"),
    "checkpoint in another session": (
        _checkpoint_other_session,
        "checkpoints[0].covered_seq: covered_seq_other_scope",
    ),
    "naive timestamp": (_naive_time, "events[0].occurred_at: must include a timezone"),
    "duplicate event id": (_duplicate_event_id, "events[1].id: duplicate_id"),
    "duplicate memory id": (_duplicate_memory_id, "memories[2].id: duplicate_id"),
    "unknown table": (_unknown_table, "tables.embeddings: unknown_table"),
    "unknown field": (_unknown_field, "events[0].mood: unknown_field"),
    "memory scope": (_memory_other_scope, "memories[1].event_id: scope_mismatch"),
    "basis and role": (
        _user_statement_from_assistant,
        "memories[2].basis: user_statement_requires_user_event",
    ),
    "reference material": (_memory_from_reference, "memories[1].category: source_archived"),
    "inference fact key": (_inference_with_fact_key, "memories[5].fact_key: inference_cannot_have_fact_key"),
    "emotion values": (
        _emotion_values_on_user_statement,
        "memories[1].valence: emotion_requires_assistant_expression",
    ),
    "relation endpoint": (_relation_to_missing_memory, "relations[0].to_id: memory_not_found"),
    "relation scope": (_relation_across_scopes, "relations[1]: scope_mismatch"),
    "cue event": (_cue_to_missing_event, "event_cues[0].event_id: event_not_found"),
    "relation type": (_bad_relation_type, "relations[0].type"),
    "count": (_count_mismatch, "archive.counts.events: count_mismatch"),
    "sequence": (_sequence_below_max, "archive.sequences.events: sequence_below_max"),
    "coercion": (_string_for_number, "memories[0].confidence"),
    "missing table": (_missing_table, "tables.capture_cursors: table_missing"),
}


@pytest.fixture
def exported(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> dict[str, Any]:
    service, _ = source
    path = tmp_path / "good.json"
    service.archive_export(path)
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _write_jsonl(path: Path, data: dict[str, Any]) -> None:
    header = {k: v for k, v in data.items() if k != "tables"}
    lines = [json.dumps(header, ensure_ascii=False)]
    lines += [
        json.dumps({"table": t, "row": row}, ensure_ascii=False)
        for t, rows in data["tables"].items()
        for row in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize("name", list(CORRUPTIONS))
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_corrupted_archive_is_refused_and_nothing_written(
    tmp_path: Path, exported: dict[str, Any], name: str, fmt: str
) -> None:
    corrupt, expected = CORRUPTIONS[name]
    data = copy.deepcopy(exported)
    corrupt(data)
    if fmt == "jsonl" and name == "missing table":  # JSONL names its tables in the header's counts
        expected = "archive.counts.capture_cursors: count_missing"
    path = tmp_path / f"bad.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    else:
        _write_jsonl(path, data)
    target = open_service(tmp_path / "target.db")
    with pytest.raises(ArchiveRejected) as caught:
        target.archive_import(path)
    assert expected in caught.value.message
    _assert_no_stored_text(caught.value.message)
    _assert_no_stored_text(json.dumps(caught.value.to_dict(), ensure_ascii=False))
    assert is_empty(target.db.path)
    target.close()


def test_truncated_jsonl_is_refused(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> None:
    service, _ = source
    good = tmp_path / "good.jsonl"
    service.archive_export(good, "jsonl")
    text = good.read_text("utf-8")
    mid_line = tmp_path / "mid.jsonl"
    mid_line.write_text(text[: text.index("听起来") + 2], encoding="utf-8")
    at_boundary = tmp_path / "boundary.jsonl"
    at_boundary.write_text("".join(text.splitlines(keepends=True)[:6]), encoding="utf-8")
    for path, rule in ((mid_line, "not_valid_json"), (at_boundary, "count_mismatch")):
        target = open_service(tmp_path / f"{path.stem}.db")
        with pytest.raises(ArchiveRejected, match=rule) as caught:
            target.archive_import(path)
        _assert_no_stored_text(caught.value.message)
        assert is_empty(target.db.path)
        target.close()


def test_truncated_json_is_refused(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> None:
    service, _ = source
    good = tmp_path / "good.json"
    service.archive_export(good)
    bad = tmp_path / "bad.json"
    bad.write_text(good.read_text("utf-8")[:-200], encoding="utf-8")
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveRejected) as caught:
        target.archive_import(bad, "json")
    assert "not_valid_json" in _named(caught.value)
    assert "the file is not valid JSON" in caught.value.message
    assert is_empty(target.db.path)
    target.close()


@pytest.mark.parametrize(
    ("content", "rule"),
    [
        (
            '{"format": "yiji-archive", "format_version": 3, "exported_at": "x", "tables": {}}',
            "archive.exported_at",
        ),
        ('{"format": "something-else", "format_version": 1, "tables": {}}', "not_a_yiji_archive"),
        ("[1, 2, 3]", "not_a_yiji_archive"),
        ('{"format": "yiji-archive", "format": "yiji-archive"}', "duplicate_field"),
        ('{"format": "yiji-archive", "format_version": NaN, "tables": {}}', "not_valid_json"),
        ('{"format": "yiji-archive", "format_version": true, "tables": {}}', "must_be_a_positive_integer"),
        ("", "not_valid_json"),
    ],
)
def test_malformed_envelopes(tmp_path: Path, content: str, rule: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content, encoding="utf-8")
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveRejected) as caught:
        target.archive_import(path, "json")
    assert rule in _named(caught.value)
    target.close()


def test_non_utf8_archive_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'{"format": "\xff"}')
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveRejected) as caught:
        target.archive_import(path)
    assert _named(caught.value) == "archive: not_utf8"
    assert caught.value.message == "nothing was written: the file is not UTF-8 text"
    target.close()


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_newer_archive_version_is_refused(tmp_path: Path, exported: dict[str, Any], fmt: str) -> None:
    data = copy.deepcopy(exported)
    data["format_version"] = archive_format.FORMAT_VERSION + 1
    path = tmp_path / f"future.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    else:
        _write_jsonl(path, data)
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveTooNew, match=f"format version {archive_format.FORMAT_VERSION + 1}"):
        target.archive_import(path)
    assert is_empty(target.db.path)
    target.close()


def test_any_iso_time_with_a_timezone_is_normalized(tmp_path: Path, exported: dict[str, Any]) -> None:
    data = copy.deepcopy(exported)
    _rows(data, "events")[0]["occurred_at"] = "2026-03-01T09:00:00+08:00"
    _rows(data, "memories")[0]["valid_at"] = "2026-03-01T01:00:00Z"
    path = tmp_path / "tz.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    target = open_service(tmp_path / "t.db")
    target.archive_import(path)
    with target.db.read() as conn:
        assert conn.execute("SELECT occurred_at FROM events WHERE id = 'e1'").fetchone()[0] == (
            "2026-03-01T01:00:00.000000Z"
        )
        assert conn.execute("SELECT valid_at FROM memories WHERE id = 'm1'").fetchone()[0] == (
            "2026-03-01T01:00:00.000000Z"
        )
    target.close()


def test_restore_refuses_newer_schema_and_non_databases(tmp_path: Path) -> None:
    future = foreign_database(tmp_path / "future.db", SCHEMA_VERSION + 1)
    digest = _sha(future)
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveTooNew, match=f"schema version {SCHEMA_VERSION + 1}"):
        target.backup_restore(future)
    assert _sha(future) == digest
    stranger = foreign_database(tmp_path / "stranger.db", 2)
    with pytest.raises(ArchiveRejected) as caught:
        target.backup_restore(stranger)
    assert _named(caught.value) == "database: not_a_yiji_database"
    assert "not a yiji database or backup" in caught.value.message
    text = tmp_path / "text.bak"
    text.write_text("not a database at all, just some words", encoding="utf-8")
    with pytest.raises(IntegrityFailure):
        target.backup_restore(text)
    with pytest.raises(InvalidInput):
        target.backup_restore(tmp_path / "absent.bak")
    assert is_empty(target.db.path)
    target.close()


def test_restore_validates_content_like_an_archive(
    tmp_path: Path, source: tuple[MemoryService, dict[str, int]]
) -> None:
    service, _ = source
    backup = tmp_path / "b.bak"
    service.backup_create(backup)
    conn = sqlite3.connect(backup)
    conn.execute("UPDATE memories SET quote = 'I moved to Nanjing' WHERE id = 'm2'")
    conn.commit()
    conn.close()
    target = open_service(tmp_path / "t.db")
    with pytest.raises(ArchiveRejected, match="quote_not_in_source") as caught:
        target.backup_restore(backup)
    _assert_no_stored_text(caught.value.message)
    assert is_empty(target.db.path)
    target.close()


# -- older versions --------------------------------------------------------------------------------

_T = "2026-01-01T00:00:00.000000Z"


def _old_database(path: Path, version: int) -> Database:
    """A database at schema ``version`` built by the project's own migrations, with rows of that schema."""
    db = Database(path, target_version=version)
    with db.write() as conn:
        conn.execute(f"INSERT INTO personas VALUES ('default', 1, 'p', NULL, '{_T}')")
        for event_id, role, text in (("e1", "user", "我住在杭州"), ("e2", "assistant", "杭州很美")):
            conn.execute(
                "INSERT INTO events (id, persona_id, project_id, session_id, role, source, category, "
                "text, occurred_at, ingested_at) "
                "VALUES (?, 'default', 'default', 's', ?, 'chat', 'conversation', ?, ?, ?)",
                (event_id, role, text, _T, _T),
            )
        memory = (
            "INSERT INTO memories (id, persona_id, project_id, event_id, kind, basis, text, quote, "
            "confidence, subject, fact_key, valid_at, valence, arousal, origin, created_at) "
            "VALUES (?, 'default', 'default', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'manual', ?)"
        )
        conn.execute(
            memory,
            ("m1", "e1", "fact", "user_statement", "lives in Hangzhou", "我住在杭州", 0.9)
            + ("user", "home.city", _T, None, None, _T),
        )
        conn.execute(
            memory,
            ("m2", "e2", "emotion", "assistant_expression", "admires Hangzhou", "杭州很美", 0.8)
            + (None, None, _T, 0.5, 0.3, _T),
        )
        conn.execute(f"INSERT INTO relations VALUES ('m2', 'm1', 'related', '{_T}')")
        conn.execute(
            "INSERT INTO checkpoints (id, persona_id, project_id, session_id, goal, covered_seq, created_at) "
            f"VALUES ('cp', 'default', 'default', 's', 'goal', 2, '{_T}')"
        )
        if version >= 2:
            conn.execute("INSERT INTO event_cues VALUES ('e1', 'photo', 'IMG_1', 'lake')")
            conn.execute("UPDATE memories SET gist = '杭州' WHERE id = 'm1'")
    return db


@pytest.mark.parametrize("version", [1, 2, 6])
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_older_archive_versions_import(tmp_path: Path, version: int, fmt: str) -> None:
    old = _old_database(tmp_path / "old.db", version)
    path = tmp_path / f"v{version}.{fmt}"
    with old.read() as conn:
        written = write_archive(conn, path, "jsonl" if fmt == "jsonl" else "json", _T)
    old.close()
    assert written.format_version == version
    text = path.read_text("utf-8")
    assert ('"event_cues"' in text) == (version >= 2)
    assert ('"capture_cursors"' in text) == (version >= 3) and ('"gist"' in text) == (version >= 2)
    assert '"review_state"' not in text

    target = open_service(tmp_path / "new.db")
    result = target.archive_import(path)
    assert result.format_version == version
    assert result.counts["memories"] == 2 and result.counts["capture_cursors"] == 0
    assert result.counts["event_cues"] == (1 if version >= 2 else 0)
    with target.db.read() as conn:
        gist = conn.execute("SELECT gist FROM memories WHERE id = 'm1'").fetchone()[0]
        assert gist == ("杭州" if version >= 2 else None)
        states = conn.execute("SELECT DISTINCT review_state, reviewed_at FROM memories").fetchall()
        assert [tuple(r) for r in states] == [
            ("accepted", None)
        ]  # an older archive's memories are remembered
    assert target.doctor()["review"] == {"accepted": 2, "proposed": 0, "rejected": 0}
    assert target.doctor()["ok"]
    target.close()


@pytest.mark.parametrize("version", [1, 2, 6])
def test_older_sqlite_backups_restore(tmp_path: Path, version: int) -> None:
    old = _old_database(tmp_path / "old.db", version)
    backup = tmp_path / f"v{version}.bak"
    backup_into(old.connection(), backup)
    old.close()
    live_file = tmp_path / "old.db"  # an older database file itself (WAL mode) restores too
    digests = {p: _sha(p) for p in (backup, live_file)}
    for path in (backup, live_file):
        target = open_service(tmp_path / f"from-{path.name}.db")
        result = target.backup_restore(path)
        assert result.format == "sqlite" and result.format_version == version
        assert result.counts["events"] == 2 and result.counts["memories"] == 2
        assert target.doctor()["ok"]
        target.close()
    assert {p: _sha(p) for p in digests} == digests
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(("-wal", "-shm", "-journal"))]


def test_hand_written_version_1_jsonl_imports(tmp_path: Path) -> None:
    header = {
        "format": "yiji-archive",
        "format_version": 1,
        "exported_at": "2026-01-01T08:00:00+08:00",
        "counts": {"personas": 0, "events": 1, "memories": 1, "relations": 0, "checkpoints": 0},
    }
    event = {
        "seq": 7,
        "id": "e1",
        "persona_id": "default",
        "project_id": "default",
        "session_id": "s",
        "role": "user",
        "source": "chat",
        "category": "conversation",
        "text": "I prefer oolong tea.",
        "occurred_at": "2026-01-01T08:00:00+08:00",
        "ingested_at": "2026-01-01T00:00:00Z",
        "amended": 0,
        "extraction_state": "done",
        "extraction_error": None,
        "extraction_attempts": 1,
    }
    memory = {
        "pk": 3,
        "id": "m1",
        "persona_id": "default",
        "project_id": "default",
        "event_id": "e1",
        "kind": "preference",
        "basis": "user_statement",
        "text": "prefers oolong tea",
        "quote": "I prefer oolong tea",
        "confidence": 1,
        "subject": "user",
        "fact_key": "tea",
        "valid_at": "2026-01-01T00:00:00Z",
        "invalid_at": None,
        "revoked_at": None,
        "revoked_reason": None,
        "valence": None,
        "arousal": None,
        "origin": "extraction",
        "created_at": "2026-01-01T00:00:00Z",
    }
    path = tmp_path / "v1.jsonl"
    lines = [header, {"table": "events", "row": event}, {"table": "memories", "row": memory}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    target = open_service(tmp_path / "t.db")
    assert target.archive_import(path).format_version == 1
    nxt = target.event_submit(EventIn(session="s", role="user", text="next"))
    assert nxt.event.seq == 8
    target.close()


# -- backups under load, through the CLI -----------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from yiji.config import Config
    from yiji.models import EventIn
    from yiji.service import open_service

    service = open_service(Config(db=sys.argv[1]))
    i = 0
    while True:
        service.event_submit(EventIn(id=f"w-{i}", session="s", role="user", text=f"第{i}条 message {i}"))
        i += 1
        print(i, flush=True)
    """
)


def test_backup_while_another_process_writes_restores_consistently(tmp_path: Path) -> None:
    live = tmp_path / "live.db"
    Database(live).close()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(live)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    try:
        deadline = time.monotonic() + 60
        written = 0
        while written < 50 and time.monotonic() < deadline:
            written = int(writer.stdout.readline() or 0)
        backup = tmp_path / "live.bak"
        made = run_yiji("--db", str(live), "backup", str(backup), "--json")
        assert made.code == 0, made.err
        written = int(writer.stdout.readline() or 0)  # still writing after the backup
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    count = made.json()["counts"]["events"]
    assert count >= 50
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600

    restored = tmp_path / "restored.db"
    result = run_yiji("--db", str(restored), "restore", str(backup), "--json")
    assert result.code == 0, result.err
    assert result.json()["counts"]["events"] == count
    doctor = run_yiji("--db", str(restored), "doctor", "--json")
    assert doctor.code == 0, doctor.out
    conn = sqlite3.connect(restored)
    ids = [r[0] for r in conn.execute("SELECT id FROM events ORDER BY seq")]
    conn.close()
    assert ids == [f"w-{i}" for i in range(count)]  # a prefix of the writer's sequence: one snapshot

    again = run_yiji("--db", str(live), "backup", str(backup))
    assert again.code == 3 and "never overwrites" in again.err


def test_cli_export_import_and_refusal(tmp_path: Path, source: tuple[MemoryService, dict[str, int]]) -> None:
    service, _ = source
    db = str(service.db.path)
    archive = tmp_path / "cli.jsonl"
    out = run_cli("--db", db, "export", str(archive))
    assert out.code == 0, out.err
    assert "exported 30 rows" in out.out and out.err == ""  # no progress bar when stderr is not a terminal
    assert archive.read_text("utf-8").splitlines()[1].startswith('{"table": "personas"')
    assert run_cli("--db", db, "export", str(archive)).code == 3

    data = [json.loads(line) for line in archive.read_text("utf-8").splitlines()]
    for line in data[1:]:
        if line["table"] == "memories" and line["row"]["id"] == "m2":
            line["row"]["quote"] = "I moved to Nanjing"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in data) + "\n", encoding="utf-8")
    fresh = tmp_path / "fresh.db"
    refused = run_cli("--db", str(fresh), "import", str(bad))
    assert refused.code == 2 and "memories[1].quote: quote_not_in_source" in refused.err
    _assert_no_stored_text(refused.err + refused.out)
    assert not fresh.exists()  # refused: no database left behind
    ok = run_cli("--db", str(fresh), "import", str(archive), "--json")
    assert ok.code == 0 and ok.json()["counts"]["events"] == 6
    assert run_cli("--db", str(fresh), "import", str(archive)).code == 3


def test_restore_from_an_open_database_includes_its_write_ahead_log(tmp_path: Path) -> None:
    live = open_service(tmp_path / "live.db")
    live.event_submit(EventIn(id="only-in-wal", session="s", role="user", text="not checkpointed yet"))
    assert Path(f"{live.db.path}-wal").stat().st_size > 0
    target = open_service(tmp_path / "t.db")
    assert target.backup_restore(live.db.path).counts["events"] == 1
    assert target.event_show("only-in-wal").text == "not checkpointed yet"
    target.close()
    live.close()


def test_a_json_archive_is_read_whatever_the_order_of_its_members(
    tmp_path: Path, exported: dict[str, Any]
) -> None:
    tables_first = {"tables": exported["tables"], **{k: v for k, v in exported.items() if k != "tables"}}
    path = tmp_path / "reordered.json"
    path.write_text(json.dumps(tables_first, ensure_ascii=False, indent=3), encoding="utf-8")
    target = open_service(tmp_path / "target.db")
    result = target.archive_import(path)
    assert result.counts == exported["counts"]
    target.close()


def test_a_json_archive_split_across_read_chunks_imports_the_same(
    tmp_path: Path, exported: dict[str, Any]
) -> None:
    """The streaming reader refills its buffer mid-value (numbers, strings, rows) without changing them."""
    text = json.dumps(exported, ensure_ascii=False)
    for size in (1, 7, 64):
        items = list(archive_format.iter_json(io.StringIO(text).read, chunk=size))
        rows = [(name, row) for kind, name, row in items if kind == "row"]
        assert rows == [(t, row) for t, table in exported["tables"].items() for row in table]
        members = {name: value for kind, name, value in items if kind == "member"}
        assert members == {k: v for k, v in exported.items() if k != "tables"}


# -- files that are not what the command reads, in words -----------------------------------------


def test_restore_names_what_a_file_that_is_not_a_backup_is(tmp_path: Path) -> None:
    source = tmp_path / "src.db"
    sent = run_cli("--db", str(source), "event", "submit", "--session", "s", "--role", "user", "hi")
    assert sent.code == 0, sent.err
    for name in ("export.jsonl", "export.json"):
        assert run_cli("--db", str(source), "export", str(tmp_path / name)).code == 0
    (tmp_path / "fake.bak").write_text("hello\n", encoding="utf-8")
    (tmp_path / "empty.bak").write_bytes(b"")
    target = tmp_path / "target.db"
    for name, said in (
        ("fake.bak", "the file is not a SQLite database, so it is not a yiji backup"),
        ("empty.bak", "the file is empty, not a backup"),
        ("export.jsonl", "this is an export archive: bring it in with `"),
        ("export.json", "this is an export archive: bring it in with `"),
    ):
        result = run_cli("--db", str(target), "restore", str(tmp_path / name))
        assert result.code == 2, result.err
        assert said in result.err
        assert "_database" not in result.err and "hello" not in result.err
        assert not target.exists()
        if name.startswith("export"):
            assert "yiji import FILE`" in result.err
    as_json = run_cli("--db", str(target), "--json", "restore", str(tmp_path / "export.jsonl"))
    assert json.loads(as_json.err)["problems"] == [{"record": "database", "rule": "not_a_sqlite_database"}]
    imported = run_cli("--db", str(target), "import", str(tmp_path / "export.jsonl"))
    assert imported.code == 0, imported.err


def test_import_says_in_words_what_is_wrong_with_the_whole_file(tmp_path: Path) -> None:
    (tmp_path / "fake.bak").write_text("hello\n", encoding="utf-8")
    target = tmp_path / "target.db"
    result = run_cli("--db", str(target), "import", str(tmp_path / "fake.bak"))
    assert result.code == 2
    assert "nothing was written: the file is not valid JSON (line 1, column 1)" in result.err
    assert not target.exists()


@pytest.mark.parametrize("command", ["export", "backup"])
def test_export_and_backup_to_a_folder_say_it_is_a_folder(tmp_path: Path, command: str) -> None:
    db = tmp_path / "y.db"
    assert run_cli("--db", str(db), "event", "submit", "--session", "s", "--role", "user", "hi").code == 0
    folder = tmp_path / "out"
    folder.mkdir()
    result = run_cli("--db", str(db), command, str(folder))
    assert result.code == 2
    assert "path: the target is a folder, not a file" in result.err
    assert "already exists" not in result.err
    assert list(folder.iterdir()) == []
