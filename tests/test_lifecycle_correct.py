"""Correcting a mistaken memory, through the service and the CLI.

A correction fixes an error: the mistaken memory was never true, so it leaves current and ``as_of`` views
alike while ``memory_read`` keeps the lineage; a change in the world is a new event instead.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from yiji.errors import Conflict, InvalidInput, NotFound
from yiji.models import EventFilter, parse
from yiji.models.lifecycle import CorrectRequest
from yiji.models.recall import RecallQuery
from yiji.providers.extraction import EventForExtraction, ExtractionBatch
from yiji.service import MemoryService
from yiji.timeutil import FixedClock

from .factory import make_service
from .lifecycle_helpers import add_checkpoint, checkpoint_states, derive, fact, note, submit

MARCH = datetime(2026, 3, 1, 1, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 1, 0, tzinfo=UTC)


def correct(service: MemoryService, memory_id: str, statement: str, **kw: Any) -> Any:
    return service.memory_correct(
        parse(CorrectRequest, {"memory_id": memory_id, "statement": statement, **kw})
    )


def cities(service: MemoryService, **kw: Any) -> list[str]:
    _, rows = service.memory_list(subject="user", fact_key="home.city", **kw)
    return [m.text for m in rows]


@pytest.fixture
def misheard(service: MemoryService, clock: FixedClock) -> dict[str, str]:
    """January Beijing; March a negation misread as Hangzhou (the user lives in Suzhou); June Shanghai."""
    clock.set(datetime(2026, 7, 1, tzinfo=UTC))
    submit(service, "jan", "我住在北京", "2026-01-01T09:00:00+08:00")
    (beijing,) = derive(service, "jan", fact("住在北京", "我住在北京"))
    submit(service, "mar", "我不住在杭州，我住在苏州。周末去了西湖。", "2026-03-01T09:00:00+08:00")
    wrong, trip = derive(service, "mar", fact("住在杭州", "住在杭州"), note("周末去了西湖", "周末去了西湖"))
    submit(service, "jun", "我搬到上海了", "2026-06-01T09:00:00+08:00")
    (shanghai,) = derive(service, "jun", fact("住在上海", "我搬到上海"))
    return {"beijing": beijing, "wrong": wrong, "trip": trip, "shanghai": shanghai}


def test_correction_replaces_the_mistaken_fact_in_every_view(
    service: MemoryService, misheard: dict[str, str]
) -> None:
    assert cities(service, as_of=datetime(2026, 4, 1, tzinfo=UTC)) == ["住在杭州"]
    result = correct(service, misheard["wrong"], "我住在苏州，不是杭州", text="住在苏州", quote="我住在苏州")
    fixed = result.corrected_memory_id
    assert result.mistaken_memory_id == misheard["wrong"] and result.amended_event_id == "mar"

    assert cities(service) == ["住在上海"]
    assert cities(service, as_of=datetime(2026, 4, 1, tzinfo=UTC)) == ["住在苏州"]
    assert cities(service, include_history=True) == ["住在北京", "住在苏州", "住在上海"]
    assert "住在杭州" not in cities(service, as_of=MARCH)
    assert "住在杭州" in cities(service, include_history=True, include_revoked=True)

    # the corrected fact takes the mistaken one's place: same start (valid_at omitted), same end
    corrected = service.memory_get(fixed)
    mistaken = service.memory_get(misheard["wrong"])
    assert corrected.valid_at == mistaken.valid_at == MARCH
    assert corrected.invalid_at == JUNE
    assert mistaken.revoked_at is not None and mistaken.revoked_reason == "corrected"
    assert mistaken.invalid_at == JUNE  # the revoked record is kept as it was
    assert service.memory_get(misheard["beijing"]).invalid_at == MARCH
    assert corrected.origin == "correction" and corrected.quote == "我住在苏州"
    assert (corrected.kind, corrected.basis, corrected.subject, corrected.fact_key) == (
        "fact",
        "user_statement",
        "user",
        "home.city",
    )

    # the correction event, and the amended original
    event = service.event_show(corrected.event_id)
    assert (event.category, event.role, event.session, event.text) == (
        "correction",
        "user",
        "s1",
        "我住在苏州，不是杭州",
    )
    assert event.extraction_state == "done" and not event.amended
    original = service.event_show("mar")
    assert original.amended and original.text == "我不住在杭州，我住在苏州。周末去了西湖。"

    # lineage stays readable from both ends; the co-derived episode is untouched
    for memory_id in (fixed, misheard["wrong"]):
        relations = service.memory_read(memory_id)["relations"]
        assert [(r.from_id, r.type, r.to_id) for r in relations] == [(fixed, "corrects", misheard["wrong"])]
    assert service.memory_read(misheard["wrong"])["memory"].text == "住在杭州"
    assert service.memory_get(misheard["trip"]).revoked_at is None


def test_recall_never_returns_the_mistaken_memory(service: MemoryService, misheard: dict[str, str]) -> None:
    def recalled(query: str, **kw: Any) -> list[str]:
        result = service.memory_recall(parse(RecallQuery, {"query": query, **kw}))
        return [item.id for item in result.items]

    assert misheard["wrong"] in recalled("杭州", as_of="2026-04-01T00:00:00Z")
    fixed = correct(service, misheard["wrong"], "我住在苏州，不是杭州", text="住在苏州", quote="我住在苏州")
    for kw in ({}, {"as_of": "2026-04-01T00:00:00Z"}, {"include_history": True}):
        assert misheard["wrong"] not in recalled("杭州", **kw)
        assert misheard["wrong"] not in recalled("住在杭州", **kw)
    assert fixed.corrected_memory_id in recalled("苏州", as_of="2026-04-01T00:00:00Z")


def test_correcting_the_latest_fact_keeps_it_open(service: MemoryService, misheard: dict[str, str]) -> None:
    result = correct(service, misheard["shanghai"], "我搬到了南京", text="住在南京", quote="我搬到了南京")
    assert cities(service) == ["住在南京"]
    corrected = service.memory_get(result.corrected_memory_id)
    assert corrected.valid_at == JUNE and corrected.invalid_at is None


def test_explicit_valid_at_and_defaults_from_the_statement(
    service: MemoryService, misheard: dict[str, str]
) -> None:
    result = correct(
        service,
        misheard["wrong"],
        "其实我三月中旬才搬到苏州",
        session="s9",
        valid_at="2026-03-15T00:00:00+08:00",
        occurred_at="2026-07-01T08:00:00Z",
    )
    corrected = service.memory_get(result.corrected_memory_id)
    assert corrected.text == corrected.quote == "其实我三月中旬才搬到苏州"
    assert corrected.valid_at == datetime(2026, 3, 14, 16, 0, tzinfo=UTC)
    assert result.event.session == "s9" and result.event.occurred_at == datetime(2026, 7, 1, 8, tzinfo=UTC)
    # the predecessor's end is never extended over the gap the error left
    assert service.memory_get(misheard["beijing"]).invalid_at == MARCH
    assert cities(service, as_of=datetime(2026, 3, 10, tzinfo=UTC)) == []


def test_a_rejected_correction_changes_nothing(service: MemoryService, misheard: dict[str, str]) -> None:
    _, before = service.memory_list(include_history=True, include_revoked=True)
    with pytest.raises(InvalidInput) as info:
        correct(service, misheard["wrong"], "我住在苏州", quote="我住在无锡")
    assert ("quote", "quote_not_in_source") in info.value.coded_problems
    with pytest.raises(InvalidInput) as info:
        correct(service, misheard["wrong"], "我住在苏州", fact_key="Home City")
    assert ("fact_key", "fact_key_format") in info.value.coded_problems
    _, after = service.memory_list(include_history=True, include_revoked=True)
    assert [m.id for m in after] == [m.id for m in before]
    assert service.memory_get(misheard["wrong"]).revoked_at is None
    assert not service.event_show("mar").amended
    _, events = service.event_list(parse(EventFilter, {"category": "correction"}))
    assert events == []


def test_correct_twice_conflicts_and_a_retry_is_idempotent(
    service: MemoryService, misheard: dict[str, str]
) -> None:
    first = correct(service, misheard["wrong"], "我住在苏州", event_id="fix-1")
    again = correct(service, misheard["wrong"], "我住在苏州", event_id="fix-1")
    assert not again.created and again.corrected_memory_id == first.corrected_memory_id
    with pytest.raises(Conflict):
        correct(service, misheard["wrong"], "我住在苏州")
    with pytest.raises(Conflict):
        correct(service, misheard["trip"], "周末去了太湖", event_id="fix-1")
    # correcting the correction extends the lineage
    second = correct(service, first.corrected_memory_id, "我住在苏州工业园区")
    relations = service.memory_read(first.corrected_memory_id)["relations"]
    assert {(r.from_id, r.to_id) for r in relations} == {
        (first.corrected_memory_id, misheard["wrong"]),
        (second.corrected_memory_id, first.corrected_memory_id),
    }
    assert service.event_show(first.event.id).amended


def test_correction_scope_and_missing_memory(service: MemoryService, misheard: dict[str, str]) -> None:
    with pytest.raises(NotFound):
        correct(service, misheard["wrong"], "我住在苏州", project="other")
    with pytest.raises(NotFound):
        correct(service, "mem_missing", "我住在苏州")


def test_correction_invalidates_the_scopes_checkpoints(
    service: MemoryService, misheard: dict[str, str], db_path: Path
) -> None:
    add_checkpoint(db_path, "cp-1")
    add_checkpoint(db_path, "cp-2", session="s2")
    add_checkpoint(db_path, "cp-other", project="elsewhere")
    result = correct(service, misheard["wrong"], "我住在苏州")
    assert result.checkpoints_invalidated == 2
    assert checkpoint_states(db_path) == {"cp-1": "correction", "cp-2": "correction", "cp-other": None}


def test_an_assistant_emotion_is_corrected_by_an_assistant_event(service: MemoryService) -> None:
    submit(service, "a1", "太好了，我真为你高兴！", "2026-06-30T12:00:00Z", role="assistant")
    (felt,) = derive(
        service,
        "a1",
        {
            "text": "为用户高兴",
            "quote": "我真为你高兴",
            "kind": "emotion",
            "basis": "assistant_expression",
            "valence": -0.6,
            "arousal": 0.7,
        },
    )
    with pytest.raises(InvalidInput):  # a user event cannot carry the assistant's emotion
        correct(service, felt, "你其实是高兴的")
    result = correct(service, felt, "我是真心为你高兴", role="assistant", valence=0.6)
    corrected = service.memory_get(result.corrected_memory_id)
    assert (corrected.basis, corrected.valence, corrected.arousal) == ("assistant_expression", 0.6, 0.7)


class _NeverCalled:
    """An extractor that fails the test if yiji ever asks it to extract a correction event."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def extract(self, event: EventForExtraction) -> ExtractionBatch:
        self.seen.append(event.category)
        return ExtractionBatch(memories=(), prompt_version="test", model="none")


def test_correction_events_are_never_queued_for_extraction(db_path: Path, clock: FixedClock) -> None:
    extractor = _NeverCalled()
    service = make_service(db_path, clock=clock, extractor=extractor)
    try:
        submit(service, "e1", "我住在杭州", "2026-03-01T00:00:00Z")
        assert extractor.seen == ["conversation"]
        (memory,) = derive(service, "e1", fact("住在杭州", "我住在杭州"))
        result = correct(service, memory, "我住在苏州")
        assert result.event.extraction_state == "done"
        retried = service.extraction_retry()
        assert retried["results"] == [] and extractor.seen == ["conversation"]
    finally:
        service.close()


def test_cli_correct_then_list_and_read(cli: Any, tmp_path: Path) -> None:
    def ok(*args: str) -> Any:
        r = cli(*args)
        assert r.code == 0, r.err
        return r

    ok(
        "event",
        "submit",
        "--id",
        "m",
        "--session",
        "s",
        "--role",
        "user",
        "--occurred-at",
        "2026-03-01T09:00:00+08:00",
        "我不住在杭州，我住在苏州",
    )
    items = tmp_path / "m.json"
    items.write_text(json.dumps([fact("住在杭州", "住在杭州")], ensure_ascii=False), encoding="utf-8")
    mistaken = ok("--json", "memory", "derive", "--event", "m", "--input", str(items)).json()["memory_ids"][0]
    fixed = ok(
        "--json", "memory", "correct", mistaken, "我住在苏州", "--text", "住在苏州", "--event-id", "fix"
    ).json()
    assert fixed["mistaken_memory_id"] == mistaken and fixed["event"]["category"] == "correction"
    now = ok("--json", "memory", "list", "--key", "home.city").json()
    assert [m["text"] for m in now["memories"]] == ["住在苏州"]
    april = ok("--json", "memory", "list", "--key", "home.city", "--as-of", "2026-04-01T00:00:00Z").json()
    assert [m["text"] for m in april["memories"]] == ["住在苏州"]
    assert april["memories"][0]["valid_at"] == "2026-03-01T01:00:00.000000Z"
    read = ok("memory", "read", mistaken)
    assert "REVOKED" in read.out and "(amended)" in read.out
    assert f"{fixed['corrected_memory_id']} -corrects-> {mistaken}" in read.out
    human = ok("memory", "correct", mistaken, "我住在苏州", "--event-id", "fix")
    assert "already corrected" in human.out
    refused = cli("memory", "correct", mistaken, "我住在苏州")
    assert refused.code == 3 and "我住在苏州" not in refused.err


def test_a_correction_survives_an_archive_round_trip(
    service: MemoryService, misheard: dict[str, str], tmp_path: Path, clock: FixedClock
) -> None:
    result = correct(service, misheard["wrong"], "我住在苏州", text="住在苏州")
    archive = tmp_path / "archive.jsonl"
    service.archive_export(archive, "jsonl")
    target = tmp_path / "restored.db"
    restored = make_service(target, clock=clock)
    try:
        restored.archive_import(archive)
        assert cities(restored, as_of=datetime(2026, 4, 1, tzinfo=UTC)) == ["住在苏州"]
        relations = restored.memory_read(misheard["wrong"])["relations"]
        assert [(r.from_id, r.type) for r in relations] == [(result.corrected_memory_id, "corrects")]
        assert restored.event_show("mar").amended
        assert restored.event_show(result.event.id).extraction_state == "done"
    finally:
        restored.close()
