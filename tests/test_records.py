"""The stored records (:mod:`yiji.domain.records`): one class per concept, whose JSON form is the same
whether the plain path writes it (``as_dict``), a boundary model holding it dumps it, or the adapters'
``to_jsonable`` turns it into JSON; and a module that pydantic is not needed to import."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

from pydantic import TypeAdapter

from yiji.domain.forgetting import Presentation
from yiji.domain.records import RAW_LABEL, MemoryRecord, RawEvent, SessionSummary
from yiji.models.common import Scope, to_jsonable
from yiji.models.conversations import SessionPage
from yiji.models.memories import ListedMemory, ReviewResult

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
T1 = datetime(2026, 3, 2, 9, 30, 15, 250, tzinfo=UTC)


def _memory(**changes: object) -> MemoryRecord:
    values: dict[str, object] = {
        "id": "m1",
        "persona": "p",
        "project": "q",
        "event_id": "e1",
        "kind": "fact",
        "basis": "user_statement",
        "text": "住在杭州",
        "quote": "我住在杭州",
        "confidence": 0.9,
        "valid_at": T0,
        "origin": "manual",
        "created_at": T1,
    }
    return MemoryRecord(**(values | changes))  # type: ignore[arg-type]


FULL = _memory(
    subject="user",
    fact_key="home.city",
    invalid_at=T1,
    revoked_at=T1,
    revoked_reason="corrected",
    valence=0.5,
    arousal=0.25,
    gist="杭州",
    review_state="accepted",
    reviewed_at=T1,
    reviewed_by="person",
    review_note="ok",
)


def test_a_memory_s_json_is_the_same_on_every_path() -> None:
    for record in (_memory(), FULL):
        plain = record.as_dict()
        held = ReviewResult(scope=Scope(persona="p", project="q"), action="accept", memory=record)
        assert to_jsonable(record) == plain
        assert held.model_dump(mode="json")["memory"] == plain
        assert json.dumps(held.model_dump(mode="json")["memory"]) == json.dumps(plain)
    assert FULL.as_dict()["valid_at"] == "2026-03-01T08:00:00.000000Z"
    assert FULL.as_dict()["reviewed_at"] == "2026-03-02T09:30:15.000250Z"
    assert _memory().as_dict()["invalid_at"] is None
    assert list(FULL.as_dict()) == list(MemoryRecord.__dataclass_fields__)


def test_a_raw_event_s_json_is_the_same_on_every_path() -> None:
    raw = RawEvent.of("e1", 7, "s1", "user", T1, "x" * 30, cap=10)
    assert (raw.text, raw.truncated, raw.total_chars, raw.label) == ("x" * 10, True, 30, RAW_LABEL)
    assert TypeAdapter(RawEvent).dump_python(raw, mode="json") == raw.as_dict() == to_jsonable(raw)
    assert raw.as_dict()["occurred_at"] == "2026-03-02T09:30:15.000250Z"


def test_a_listed_memory_is_the_record_and_its_presentation_the_same_json_on_every_path() -> None:
    shown = Presentation("topic_cues", "杭州 · 西湖", "2026-03", True, True, "topic cues", ("杭州", "西湖"))
    listed = ListedMemory.of(FULL, shown)
    dumped = to_jsonable(listed)
    assert dumped == {**FULL.as_dict(), "presentation": shown.as_dict()}
    assert TypeAdapter(ListedMemory).dump_python(listed, mode="json") == dumped  # in a MemoryPage
    assert shown.as_dict()["cues"] == ["杭州", "西湖"]
    assert isinstance(listed, MemoryRecord)


def test_the_records_import_without_pydantic() -> None:
    code = "import sys, yiji.domain.records; print(sorted(m for m in sys.modules if 'pydantic' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_session_summary_dumps_its_times_as_fixed_width_utc_strings() -> None:
    summary = SessionSummary("s1", 3, T0, T1, "我住在杭州")
    page = SessionPage(
        scope=Scope(persona="p", project="q"),
        total=1,
        offset=0,
        limit=50,
        next_offset=None,
        sessions=[summary],
    )
    assert page.model_dump(mode="json")["sessions"] == [
        {
            "session": "s1",
            "events": 3,
            "first_at": "2026-03-01T08:00:00.000000Z",
            "last_at": "2026-03-02T09:30:15.000250Z",
            "opening": "我住在杭州",
        }
    ]
