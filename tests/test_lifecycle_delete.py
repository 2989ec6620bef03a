"""Permanent deletion through the service and the CLI: closure, residue, dry runs, checkpoints, cursors.

Residue is checked by an independent scan (plain ``sqlite3`` over every table, FTS5 shadow tables
included, plus the index vocabulary) and by ``doctor --scan-for``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import InvalidInput, NotFound
from yiji.models import parse
from yiji.models.lifecycle import CorrectRequest, DeleteRequest, DeleteResult
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .inprocess import run_cli
from .lifecycle_helpers import (
    add_checkpoint,
    all_tables,
    checkpoint_states,
    connect,
    derive,
    dump,
    fact,
    index_bodies,
    index_terms,
    keys_of,
    note,
    submit,
    tables_holding,
)

PHRASE = "紫罗兰潜水艇"
LATIN = "xylophonequasar"
SECRET = f"我的秘密是{PHRASE}计划，代号 {LATIN}。"
PHOTO = "IMG_violet_4711"
KEEP = "我喜欢喝乌龙茶"
RAW = "银杏隧道的尽头 quokkaharbor"


def delete(service: MemoryService, **kw: Any) -> DeleteResult:
    return service.memory_delete(parse(DeleteRequest, kw))


def correct(service: MemoryService, memory_id: str, statement: str, **kw: Any) -> str:
    request = parse(CorrectRequest, {"memory_id": memory_id, "statement": statement, **kw})
    return service.memory_correct(request).corrected_memory_id


def add_vector(db_path: Path, memory_id: str) -> None:
    conn = connect(db_path)
    try:
        conn.execute(
            "INSERT INTO embeddings (memory_id, fingerprint, dim, vector, created_at) "
            "VALUES (?, 'test', 2, ?, '2026-06-01T00:00:00.000000Z')",
            (memory_id, b"\x00\x00\x80\x3f\x00\x00\x00\x00"),
        )
    finally:
        conn.close()


def add_cursor(db_path: Path) -> None:
    conn = connect(db_path)
    try:
        conn.execute(
            "INSERT INTO capture_cursors VALUES ('harness-1', 'default', 'default', 's1', '42', "
            "'2026-06-01T00:00:00.000000Z')"
        )
    finally:
        conn.close()


def cursors(db_path: Path) -> list[tuple[Any, ...]]:
    conn = connect(db_path)
    try:
        return conn.execute("SELECT * FROM capture_cursors").fetchall()
    finally:
        conn.close()


@pytest.fixture
def archive(service: MemoryService, db_path: Path, clock: FixedClock) -> dict[str, str]:
    """A kept preference, and a secret event with two memories, one `related` to the kept one."""
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "e-keep", KEEP, "2026-05-01T00:00:00Z")
    (keep,) = derive(service, "e-keep", note("喜欢乌龙茶", KEEP, kind="preference"))
    submit(
        service,
        "e-secret",
        SECRET,
        "2026-06-01T00:00:00Z",
        cues=[{"type": "photo", "identifier": PHOTO, "label": f"{PHRASE}的照片"}],
    )
    plan, codename = derive(
        service,
        "e-secret",
        note(f"{PHRASE}计划", f"{PHRASE}计划"),
        note(f"代号 {LATIN}", LATIN, kind="observation", related=[keep]),
    )
    submit(service, "e-raw", RAW, "2026-06-02T00:00:00Z")  # no memory: indexed as a raw event
    add_vector(db_path, plan)
    add_vector(db_path, keep)
    add_checkpoint(db_path, "cp-1")
    add_checkpoint(db_path, "cp-2", session="s2")
    add_checkpoint(db_path, "cp-other", project="elsewhere")
    add_cursor(db_path)
    return {"keep": keep, "plan": plan, "codename": codename}


def distinctive_tokens(
    db_path: Path, gone: tuple[list[str], list[str]], kept: tuple[list[str], list[str]]
) -> set[str]:
    """Index tokens of the rows about to be deleted that no surviving row's tokens contain."""
    doomed = {t for body in index_bodies(db_path, *keys_of(db_path, *gone)) for t in body.split()}
    surviving = [t for body in index_bodies(db_path, *keys_of(db_path, *kept)) for t in body.split()]
    return {t for t in doomed if not any(t in s for s in surviving)}


def test_deleting_an_event_leaves_no_residue(
    service: MemoryService, archive: dict[str, str], db_path: Path
) -> None:
    doomed_ids = ["e-secret", "e-raw", archive["plan"], archive["codename"]]
    tokens = distinctive_tokens(
        db_path,
        ([archive["plan"], archive["codename"]], ["e-secret", "e-raw"]),
        ([archive["keep"]], ["e-keep"]),
    )
    assert {"紫罗兰", "潜水艇", "艇", LATIN, "银杏", "隧道", "quokkaharbor"} <= tokens
    assert tokens <= index_terms(db_path)  # the index holds them before the deletion
    for query in (PHRASE, "银杏隧道", PHOTO):
        assert service.memory_recall(parse(RecallQuery, {"query": query})).items
    before = service.doctor(scan_for=[PHRASE, archive["codename"], archive["plan"]])
    assert not before["ok"]
    assert {"events", "memories", "event_cues", "memory_fts"} <= set(before["scan"][0]["found_in"])
    assert before["scan"][1]["found_in"] == ["memories", "relations"]
    assert before["scan"][2]["found_in"] == ["embeddings", "memories"]

    result = delete(service, event_id="e-secret")
    assert result.event_ids == ["e-secret"]
    assert result.memory_ids == sorted([archive["plan"], archive["codename"]])
    assert (result.relations, result.embeddings, result.cues, result.checkpoints) == (1, 1, 1, 2)
    raw = delete(service, event_id="e-raw")
    assert (raw.event_ids, raw.memory_ids, raw.checkpoints) == (["e-raw"], [], 0)

    for needle in [*doomed_ids, PHRASE, LATIN, PHOTO, SECRET, RAW, *tokens]:
        assert tables_holding(db_path, needle) == [], needle
    assert not tokens & index_terms(db_path)
    after = service.doctor(scan_for=[*doomed_ids, PHRASE, LATIN.upper(), PHOTO, "银杏隧道"])
    assert after["ok"], after["problems"]
    assert all(s["found_in"] == [] for s in after["scan"])

    for query in (PHRASE, LATIN, "银杏隧道", PHOTO):
        assert (
            service.memory_recall(parse(RecallQuery, {"query": query, "include_history": True})).items == []
        )

    # the `related` neighbour survives, without the edge; its vector and index row stay
    kept = service.memory_read(archive["keep"])
    assert kept["memory"].text == "喜欢乌龙茶" and kept["relations"] == []
    assert tables_holding(db_path, archive["keep"]) == ["embeddings", "memories"]
    assert "乌龙茶" in index_terms(db_path)
    assert checkpoint_states(db_path) == {"cp-1": "deletion", "cp-2": "deletion", "cp-other": None}
    assert cursors(db_path) == [
        ("harness-1", "default", "default", "s1", "42", "2026-06-01T00:00:00.000000Z")
    ]
    with pytest.raises(NotFound):
        service.memory_get(archive["plan"])
    with pytest.raises(NotFound):
        service.event_show("e-secret")


def test_doctor_finds_segmented_residue_left_in_the_lexical_index(
    service: MemoryService, db_path: Path
) -> None:
    conn = connect(db_path)
    try:  # a stale index row, as a deletion that forgot the index would leave it
        body = "紫罗 罗兰 紫罗兰 潜水 潜水艇 紫 罗 兰 潜 水 艇"
        conn.execute("INSERT INTO memory_fts (rowid, body) VALUES (999, ?)", (body,))
    finally:
        conn.close()
    report = service.doctor(scan_for=[PHRASE, "紫罗兰 潜水员"])
    assert [s["found_in"] for s in report["scan"]] == [["memory_fts"], []]
    assert not report["ok"] and PHRASE not in json.dumps(report, ensure_ascii=False)


def test_no_deleted_text_remains_in_the_database_files(
    service: MemoryService, archive: dict[str, str], db_path: Path
) -> None:
    delete(service, memory_id=archive["codename"])
    files = [p for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)]
    raw = b"".join(p.read_bytes() for p in files)
    assert KEEP.encode() in raw
    for needle in (PHRASE, LATIN, PHOTO, archive["plan"], archive["codename"]):
        assert needle.encode() not in raw, needle


def test_a_deletion_also_wipes_pages_freed_before_it(
    service: MemoryService, archive: dict[str, str], db_path: Path
) -> None:
    # Under secure_delete=FAST (every write but a deletion), freed pages keep their old bytes, as an
    # FTS5 merge leaves a segment that held a later-deleted event's words.
    stale = b"quokkafreelist"
    conn = connect(db_path)
    try:
        conn.execute("PRAGMA secure_delete = FAST")
        conn.execute("CREATE TABLE scratch (body BLOB)")
        conn.executemany("INSERT INTO scratch VALUES (?)", [(stale * 200,)] * 40)
        conn.execute("DROP TABLE scratch")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] >= 40
    finally:
        conn.close()
    files = [p for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)]
    assert stale in b"".join(p.read_bytes() for p in files)

    delete(service, memory_id=archive["codename"])
    raw = b"".join(p.read_bytes() for p in files if p.exists())
    assert stale not in raw and KEEP.encode() in raw
    conn = connect(db_path)
    try:  # the scratch table that took the free pages is gone again
        assert "yiji_wipe" not in all_tables(conn)
    finally:
        conn.close()


def test_dry_run_lists_exactly_what_the_real_run_removes(
    service: MemoryService, archive: dict[str, str], db_path: Path
) -> None:
    before = dump(db_path)
    dry = delete(service, memory_id=archive["plan"], dry_run=True)
    assert dump(db_path) == before
    assert dry.dry_run and dry.event_ids == ["e-secret"]
    real = delete(service, memory_id=archive["plan"])
    assert not real.dry_run
    assert real.model_dump(exclude={"dry_run"}) == dry.model_dump(exclude={"dry_run"})


@pytest.fixture
def chain(service: MemoryService, clock: FixedClock) -> dict[str, str]:
    """A corrected by B corrected by C, three events; A's event has a second memory; one bystander."""
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "event-a", "我不住在杭州，我住在苏州。我养了一只猫。", "2026-03-01T00:00:00Z")
    a, cat = derive(service, "event-a", fact("住在杭州", "住在杭州"), note("养了一只猫", "我养了一只猫"))
    b = correct(service, a, "我住在苏州", event_id="event-b")
    c = correct(service, b, "我住在苏州吴江", event_id="event-c")
    submit(service, "event-z", KEEP, "2026-05-01T00:00:00Z")
    (bystander,) = derive(service, "event-z", note("喜欢乌龙茶", KEEP, kind="preference", related=[cat]))
    return {"a": a, "cat": cat, "b": b, "c": c, "bystander": bystander}


@pytest.mark.parametrize("start", ["event-a", "event-b", "event-c", "a", "cat", "b", "c"])
def test_deleting_from_any_link_removes_the_whole_correction_chain(
    service: MemoryService, chain: dict[str, str], db_path: Path, start: str
) -> None:
    kw = {"event_id": start} if start.startswith("event-") else {"memory_id": chain[start]}
    result = delete(service, **kw)
    assert result.event_ids == ["event-a", "event-b", "event-c"]
    assert result.memory_ids == sorted(chain[k] for k in ("a", "cat", "b", "c"))
    assert result.relations == 3  # two `corrects` edges and the bystander's `related` edge
    _, rows = service.memory_list(include_history=True, include_revoked=True)
    assert [m.id for m in rows] == [chain["bystander"]]
    assert service.memory_read(chain["bystander"])["relations"] == []
    for needle in ("event-a", "event-b", "event-c", *(chain[k] for k in ("a", "cat", "b", "c")), "苏州"):
        assert tables_holding(db_path, needle) == [], needle
    assert not {"苏州", "吴江", "猫"} & index_terms(db_path)
    assert service.doctor()["ok"]


def test_deleting_the_successor_does_not_reopen_a_closed_interval(
    service: MemoryService, clock: FixedClock
) -> None:
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "mar", "我住在杭州", "2026-03-01T00:00:00Z")
    (hangzhou,) = derive(service, "mar", fact("住在杭州", "我住在杭州"))
    submit(service, "jun", "我搬到上海了", "2026-06-01T00:00:00Z")
    derive(service, "jun", fact("住在上海", "我搬到上海"))
    delete(service, event_id="jun")
    assert service.memory_get(hangzhou).invalid_at == datetime(2026, 6, 1, tzinfo=UTC)
    _, now = service.memory_list(fact_key="home.city")
    assert now == []
    _, april = service.memory_list(fact_key="home.city", as_of=datetime(2026, 4, 1, tzinfo=UTC))
    assert [m.text for m in april] == ["住在杭州"]


def test_delete_needs_one_start_in_scope(service: MemoryService, archive: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        parse(DeleteRequest, {})
    with pytest.raises(InvalidInput):
        parse(DeleteRequest, {"event_id": "e-secret", "memory_id": archive["plan"]})
    with pytest.raises(NotFound):
        delete(service, event_id="e-secret", project="elsewhere")
    with pytest.raises(NotFound):
        delete(service, memory_id="mem_missing")
    assert service.event_show("e-secret").text == SECRET


def test_cli_delete_dry_run_confirmation_and_doctor_scan(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")

    def yiji(*args: str) -> Any:
        return run_cli("--db", db, *args)

    assert yiji("event", "submit", "--id", "keep", "--session", "s", "--role", "user", KEEP).code == 0
    assert yiji("event", "submit", "--id", "secret", "--session", "s", "--role", "user", SECRET).code == 0
    items = tmp_path / "items.json"
    items.write_text(
        json.dumps([note(f"{PHRASE}计划", f"{PHRASE}计划")], ensure_ascii=False), encoding="utf-8"
    )
    derived = yiji("--json", "memory", "derive", "--event", "secret", "--input", str(items))
    assert derived.code == 0, derived.err
    (memory,) = json.loads(derived.out)["memory_ids"]

    refused = yiji("delete", "--event", "secret")  # no terminal to confirm on, no --yes
    assert refused.code == 2 and refused.out == ""
    assert refused.err == (
        "yiji: invalid input: --yes: is required to delete permanently: there is no terminal to confirm on "
        "(--dry-run shows what would go)\n"
    )
    assert yiji("delete", "--event", "secret", "--memory", memory).code == 2
    dry = yiji("--json", "delete", "--memory", memory, "--dry-run")
    assert dry.code == 0 and json.loads(dry.out)["event_ids"] == ["secret"]
    found = yiji("doctor", "--scan-for", PHRASE, "--scan-for", memory)
    assert found.code == 1 and "found in" in found.out
    assert PHRASE not in found.out + found.err  # a phrase is never printed; a generated id names itself

    done = yiji("delete", "--event", "secret", "--yes")
    assert done.code == 0, done.err
    assert "deleted: 1 event, 1 memory," in done.out and memory in done.out
    clean = yiji("--json", "doctor", "--scan-for", PHRASE, "--scan-for", memory, "--scan-for", "secret")
    assert clean.code == 0, clean.out
    assert [s["found_in"] for s in json.loads(clean.out)["scan"]] == [[], [], []]
    kept = yiji("doctor", "--scan-for", KEEP)
    assert kept.code == 1 and "not found" not in kept.out and KEEP not in kept.out
