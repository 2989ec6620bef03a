"""``OutputModel.trusted``: the unvalidated constructor of hot paths gives the same model as validation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from yiji.models.common import Scope
from yiji.models.events import EventRecord, SubmitResult

T = datetime(2026, 6, 1, tzinfo=UTC)
FIELDS = {
    "id": "e1",
    "seq": 1,
    "persona": "p",
    "project": "q",
    "session": "s",
    "role": "user",
    "source": "chat",
    "category": "conversation",
    "text": "你好",
    "occurred_at": T,
    "ingested_at": T,
    "amended": False,
    "extraction_state": "none",
    "extraction_error": None,
    "cues": [],
    "redacted": False,
}


def test_trusted_equals_the_validated_model() -> None:
    trusted = EventRecord.trusted(**FIELDS)
    validated = EventRecord(**FIELDS)
    assert trusted == validated
    assert trusted.model_dump(mode="json") == validated.model_dump(mode="json")
    result = SubmitResult.trusted(
        scope=Scope(persona="p", project="q"),
        event=trusted,
        created=True,
        skipped=None,
        memory_ids=[],
        extraction=None,
        warnings=[],
    )
    assert (
        result.model_dump()
        == SubmitResult(scope=Scope(persona="p", project="q"), event=validated, created=True).model_dump()
    )


def test_trusted_refuses_missing_or_unknown_fields() -> None:
    with pytest.raises(TypeError):
        EventRecord.trusted(**{k: v for k, v in FIELDS.items() if k != "cues"})
    with pytest.raises(TypeError):
        EventRecord.trusted(**FIELDS, extra_field=1)
