from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from yiji.errors import Conflict, InvalidInput, NotFound
from yiji.models import EventFilter, EventIn, parse
from yiji.models.lifecycle import DeleteRequest
from yiji.service import MemoryService
from yiji.timeutil import FixedClock


def _event(**kw: Any) -> EventIn:
    base: dict[str, Any] = {"session": "s1", "role": "user", "text": "我住在杭州"}
    base.update(kw)
    return parse(EventIn, base)


def test_submit_stores_utc_and_echoes_scope(service: MemoryService) -> None:
    result = service.event_submit(_event(id="e1", occurred_at="2026-03-01T08:00:00+08:00"))
    assert result.created
    assert result.scope.model_dump() == {"persona": "default", "project": "default"}
    assert result.event.occurred_at == datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
    dumped = result.model_dump(mode="json")
    assert dumped["event"]["occurred_at"] == "2026-03-01T00:00:00.000000Z"
    assert service.event_show("e1").text == "我住在杭州"


def test_seq_increases_across_scopes(service: MemoryService) -> None:
    a = service.event_submit(_event(persona="p1", project="x"))
    b = service.event_submit(_event(persona="p2", project="y"))
    c = service.event_submit(_event(persona="p1", project="x"))
    assert a.event.seq < b.event.seq < c.event.seq
    assert a.event.id != c.event.id


def test_omitted_scope_parts_follow_the_configuration_and_bad_ones_are_refused_every_time(
    service: MemoryService,
) -> None:
    assert service.event_submit(_event()).scope.persona == "default"
    service.config = replace(service.config, persona="p9")
    assert service.event_submit(_event()).scope.model_dump() == {"persona": "p9", "project": "default"}
    for _ in range(2):
        with pytest.raises(InvalidInput) as caught:
            service.event_submit(_event(persona="bad id!"))
        assert caught.value.field == "persona"


def test_resubmit_same_payload_returns_stored_event(service: MemoryService) -> None:
    first = service.event_submit(_event(id="dup", occurred_at="2026-03-01T00:00:00Z"))
    again = service.event_submit(_event(id="dup", occurred_at="2026-03-01T00:00:00Z"))
    assert not again.created
    assert again.event == first.event


def test_resubmit_without_timestamp_reuses_occurrence_time(service: MemoryService) -> None:
    first = service.event_submit(_event(id="t"))
    again = service.event_submit(_event(id="t"))
    assert not again.created
    assert again.event.occurred_at == first.event.occurred_at
    assert again.event.seq == first.event.seq


@pytest.mark.parametrize(
    "change",
    [
        {"text": "我住在上海"},
        {"role": "assistant"},
        {"session": "s2"},
        {"persona": "other"},
        {"project": "other"},
        {"category": "reference"},
        {"source": "host"},
        {"occurred_at": "2027-01-01T00:00:00Z"},
        {"cues": [{"type": "photo", "identifier": "IMG_1"}]},
    ],
)
def test_same_id_different_payload_conflicts_and_changes_nothing(
    service: MemoryService, change: dict[str, Any]
) -> None:
    original = service.event_submit(_event(id="c1", occurred_at="2026-03-01T00:00:00Z"))
    with pytest.raises(Conflict):
        service.event_submit(_event(**{"id": "c1", "occurred_at": "2026-03-01T00:00:00Z", **change}))
    assert service.event_show("c1") == original.event
    _, events = service.event_list(EventFilter(limit=100))
    assert len(events) == 1


def test_list_filters(service: MemoryService) -> None:
    for i, (session, role, when) in enumerate(
        [
            ("a", "user", "2026-01-01T00:00:00Z"),
            ("a", "assistant", "2026-02-01T00:00:00Z"),
            ("b", "user", "2026-03-01T00:00:00Z"),
        ]
    ):
        service.event_submit(_event(id=f"l{i}", session=session, role=role, occurred_at=when))
    service.event_submit(_event(id="elsewhere", project="other"))

    def ids(**kw: Any) -> list[str]:
        return [e.id for e in service.event_list(parse(EventFilter, kw))[1]]

    assert ids() == ["l0", "l1", "l2"]
    assert ids(session="a") == ["l0", "l1"]
    assert ids(role="user") == ["l0", "l2"]
    assert ids(since="2026-02-01T00:00:00Z") == ["l1", "l2"]
    assert ids(until="2026-02-01T00:00:00Z") == ["l0"]
    assert ids(project="other") == ["elsewhere"]
    assert ids(limit=1, offset=1) == ["l1"]


def test_show_outside_scope_is_not_found(service: MemoryService) -> None:
    service.event_submit(_event(id="scoped", project="p"))
    with pytest.raises(NotFound):
        service.event_show("scoped")


def test_cues_are_stored(service: MemoryService) -> None:
    cues = [{"type": "photo", "identifier": "IMG_0042.jpg", "label": "西湖日落"}]
    result = service.event_submit(_event(id="cue", cues=cues))
    assert [c.model_dump() for c in result.event.cues] == [
        {"type": "photo", "identifier": "IMG_0042.jpg", "label": "西湖日落"}
    ]
    assert service.event_show("cue").cues == result.event.cues


def test_batch_is_all_or_nothing(service: MemoryService) -> None:
    service.event_submit(_event(id="taken"))
    with pytest.raises(Conflict):
        service.event_submit_many([_event(id="new-1"), _event(id="taken", text="other")])
    _, events = service.event_list(EventFilter())
    assert [e.id for e in events] == ["taken"]


def test_invalid_scope_names_field(service: MemoryService) -> None:
    with pytest.raises(InvalidInput) as info:
        service.scope("bad persona!", None)
    assert info.value.field == "persona"


def test_batch_repeats_an_id_idempotently_within_itself(service: MemoryService) -> None:
    first, again, other = service.event_submit_many(
        [_event(id="twice"), _event(id="twice"), _event(id="other", text="另一句")]
    )
    assert (first.created, again.created, other.created) == (True, False, True)
    assert again.event == first.event
    assert other.event.seq == first.event.seq + 1
    with pytest.raises(Conflict):
        service.event_submit_many([_event(id="fresh"), _event(id="fresh", text="改过的话")])
    _, events = service.event_list(EventFilter())
    assert [e.id for e in events] == ["twice", "other"]


def test_batch_returns_stored_events_and_appends_new_ones(service: MemoryService) -> None:
    stored = service.event_submit(
        _event(id="old", cues=[{"type": "text", "identifier": "n1", "label": "便签"}])
    )
    results = service.event_submit_many(
        [
            _event(id="new", cues=[{"type": "photo", "identifier": "p1"}]),
            _event(id="old", cues=[{"type": "text", "identifier": "n1", "label": "便签"}]),
        ]
    )
    assert [r.created for r in results] == [True, False]
    assert results[1].event == stored.event
    assert results[0].event.seq > stored.event.seq
    assert service.event_show("new").cues == results[0].event.cues
    assert service.event_show("new").seq == results[0].event.seq


def test_seq_is_never_reused_after_the_newest_event_is_deleted(service: MemoryService) -> None:
    service.event_submit(_event(id="a"))
    newest = service.event_submit(_event(id="b", text="deleted soon")).event.seq
    service.memory_delete(parse(DeleteRequest, {"event_id": "b"}))
    batch = service.event_submit_many([_event(id="c"), _event(id="d")])
    single = service.event_submit(_event(id="e"))
    assert [r.event.seq for r in batch] == [newest + 1, newest + 2]
    assert single.event.seq == newest + 3
    assert service.event_show("c").seq == newest + 1


def test_a_batch_longer_than_one_insert_statement_keeps_order_and_seqs(service: MemoryService) -> None:
    count = 2 * 64 + 3
    results = service.event_submit_many([_event(id=f"b-{i}", text=f"第{i}句话") for i in range(count)])
    seqs = [r.event.seq for r in results]
    assert seqs == list(range(seqs[0], seqs[0] + count))
    page = service.event_page(EventFilter(limit=1000))
    assert page.total == count
    assert [(e.id, e.seq, e.text) for e in page.events] == [
        (f"b-{i}", seqs[i], f"第{i}句话") for i in range(count)
    ]


def test_an_event_dated_days_ahead_is_stored_with_a_warning(
    service: MemoryService, clock: FixedClock
) -> None:
    ahead = service.event_submit(_event(id="later", occurred_at=clock.now() + timedelta(days=3)))
    assert ahead.created and service.event_show("later").id == "later"
    assert len(ahead.warnings) == 1 and "days in the future" in ahead.warnings[0]
    assert "occurred_at" in ahead.warnings[0]
    close = service.event_submit(_event(id="soon", occurred_at=clock.now() + timedelta(hours=20)))
    assert close.warnings == []
    batch = service.event_submit_many([_event(id="b-later", occurred_at=clock.now() + timedelta(days=2))])
    assert len(batch[0].warnings) == 1
