"""Recall's plain path: the fast check of requests (``yiji.domain.recall.plain_request``) against the boundary
model, and plain results whose JSON is exactly the boundary model's, through the service and the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from yiji.domain import recall as plain
from yiji.domain.recall import RecallRequest, plain_request
from yiji.domain.records import MemoryRecord, RawEvent
from yiji.errors import InvalidInput
from yiji.models import EventIn, parse
from yiji.models.common import to_jsonable
from yiji.models.memories import KINDS, DeriveRequest
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService

from .conftest import CliResult

PLAIN = [
    {"query": "杭州"},
    {"query": " padded query ", "persona": "miso", "project": "dsh.work_1"},
    {"query": "x" * 4000, "limit": 200, "mode": "deep"},
    {"query": "q", "kinds": ["fact", "episode"], "include_history": True, "include_raw": False, "limit": 1},
    {"query": "q", "kinds": list(KINDS)},
    {"query": "q", "kinds": []},
    {"query": "q", "since": "2025-01-01T00:00:00+08:00", "until": "2026-01-01T00:00:00Z"},
    {"query": "q", "as_of": " 2025-06-01T12:00:00.5z ", "mode": "semantic"},
    {"query": "q", "since": "2025-01-01 00:00:00+08:00"},
    {"query": "q", "since": datetime(2025, 1, 1, tzinfo=UTC)},
    {"query": "q", "until": "2025-01-01T00:00:00Z", "since": "2026-01-01T00:00:00Z"},  # the use case refuses
]
CONVERTED = [  # the model converts these; the fast check leaves them to it
    {"query": "q", "limit": "5"},
    {"query": "q", "limit": 5.0},
    {"query": "q", "include_history": "yes"},
    {"query": "q", "include_raw": 0},
    {"query": "q", "kinds": ("fact",)},
    {"query": "q", "limit": True},
]
INVALID = [
    {"query": ""},
    {"query": "   "},
    {"query": "x" * 4001},
    {"query": 5},
    {},
    {"query": "q", "persona": "bad id"},
    {"query": "q", "persona": ""},
    {"query": "q", "project": "x" * 65},
    {"query": "q", "project": "p\n"},
    {"query": "q", "kinds": ["bogus"]},
    {"query": "q", "kinds": ["fact"] * 8},
    {"query": "q", "kinds": "fact"},
    {"query": "q", "since": "2025-01-01"},
    {"query": "q", "until": "yesterday"},
    {"query": "q", "as_of": "2025-01-01T00:00:00"},
    {"query": "q", "since": "9999-12-31T23:59:59-12:00"},
    {"query": "q", "since": 1700000000},
    {"query": "q", "limit": 0},
    {"query": "q", "limit": 201},
    {"query": "q", "mode": "bogus"},
    {"query": "q", "include_raw": None},
    {"query": "q", "other": 1},
]


@pytest.mark.parametrize("raw", PLAIN)
def test_plainly_valid_requests_equal_what_the_model_gives(raw: dict[str, Any]) -> None:
    fast = plain_request(raw)
    assert isinstance(fast, RecallRequest)
    assert fast == parse(RecallQuery, raw).request()


@pytest.mark.parametrize("raw", CONVERTED)
def test_values_to_convert_are_left_to_the_model(raw: dict[str, Any]) -> None:
    assert plain_request(raw) is None
    assert isinstance(parse(RecallQuery, raw).request(), RecallRequest)


@pytest.mark.parametrize("raw", INVALID)
def test_invalid_requests_are_left_to_the_model_which_names_the_field(raw: dict[str, Any]) -> None:
    assert plain_request(raw) is None
    with pytest.raises(InvalidInput) as info:
        parse(RecallQuery, raw)
    assert info.value.field


def test_the_plain_request_mirrors_the_boundary_model_and_items_hold_the_stored_records() -> None:
    assert plain.KINDS == KINDS
    assert tuple(RecallRequest.__dataclass_fields__) == tuple(RecallQuery.model_fields)
    hints = get_type_hints(plain.RecalledItem)
    assert (hints["memory"], hints["event"]) == (MemoryRecord | None, RawEvent | None)


def _archive(service: MemoryService) -> None:
    """Memories of fading and detailed kinds (gist, topic cues, exact time), related ones, a cue, and raw
    events (one longer than the excerpt), months apart."""
    texts = [
        ("user", "我住在杭州，每天早上沿着西湖跑步。"),
        ("assistant", "听起来很惬意！西湖边的早晨一定很美。"),
        ("user", "I moved to Shanghai for a new job and bought a vintage camera."),
        ("user", "周末我和妈妈去了灵隐寺。" + "很长的一段话，" * 400),
        ("user", "My sister recommended a blue keyboard\x1b[31m near 杭州."),
        ("user", "我妈妈推荐了一本书，叫《三体》，在杭州买的。"),
    ]
    for i, (role, text) in enumerate(texts):
        cues = [{"type": "photo", "identifier": "IMG_0042.jpg", "label": "西湖 sunrise"}] if i == 1 else []
        when = f"2025-{1 + 2 * i:02d}-01T08:00:00Z"
        event = {
            "id": f"e{i}",
            "session": "s1",
            "role": role,
            "text": text,
            "occurred_at": when,
            "cues": cues,
        }
        service.event_submit(parse(EventIn, event))
    user = {"basis": "user_statement"}
    derived = {
        "e0": [
            {
                "text": "用户住在杭州",
                "quote": "我住在杭州",
                "kind": "fact",
                "subject": "user",
                "fact_key": "home.city",
            },
            {
                "text": "用户每天沿着西湖跑步",
                "quote": "每天早上沿着西湖跑步",
                "kind": "episode",
                "gist": "西湖晨跑",
            },
        ],
        "e2": [{"text": "The user moved to Shanghai", "quote": "I moved to Shanghai", "kind": "fact"}],
        "e5": [{"text": "用户的妈妈推荐了《三体》，在杭州买的", "quote": "在杭州买的", "kind": "episode"}],
    }
    for event_id, items in derived.items():
        memories = [
            {**user, **item, "related": [0]} if n else {**user, **item} for n, item in enumerate(items)
        ]
        service.memory_derive(parse(DeriveRequest, {"event_id": event_id, "memories": memories}))


QUERIES = [
    {"query": "杭州"},
    {"query": "杭州", "include_history": True, "limit": 3},
    {"query": "Shanghai camera"},
    {"query": "灵隐寺 妈妈"},
    {"query": "IMG_0042.jpg"},
    {"query": "杭州", "kinds": ["episode"], "as_of": "2026-12-01T00:00:00Z"},
    {"query": "nothing matches this"},
]


@pytest.mark.parametrize("raw", QUERIES)
def test_the_plain_request_and_the_boundary_query_give_one_result_and_one_json_form(
    service: MemoryService, raw: dict[str, Any]
) -> None:
    _archive(service)
    request = parse(RecallQuery, {**raw, "as_of": raw.get("as_of", "2027-01-01T00:00:00Z")}).request()
    found = service.recall(request)
    model = service.memory_recall(parse(RecallQuery, {**raw, "as_of": request.as_of}))
    assert model == found
    as_json = json.dumps(to_jsonable(model), ensure_ascii=False)  # what the adapters print
    assert json.dumps(found.as_dict(), ensure_ascii=False) == as_json  # keys in the same order too


def test_the_archive_shows_every_kind_of_item(service: MemoryService) -> None:
    """The archive above reaches every part of a result: memories shown in detail, as a gist and as topic
    cues, a truncated raw event, related and context items."""
    _archive(service)
    when = datetime(2027, 1, 1, tzinfo=UTC)
    results = [
        service.recall(RecallRequest(q, as_of=when, include_history=True, limit=20)).items
        for q in ("杭州", "灵隐寺 妈妈")
    ]
    items = [i for found in results for i in found]
    modes = {i.presentation.mode for i in items if i.presentation is not None}
    assert modes == {"detailed", "gist", "topic_cues"}
    assert any(i.event is not None and i.event.truncated for i in items)
    assert "related" in {m for i in items for m in i.matched_by}
    # context travels with its hit, never in a slot of its own
    context = [c for i in items for c in i.context]
    assert context and all(c.matched_by == ["context"] for c in context)
    for found in results:
        assert not {c.id for i in found for c in i.context} & {i.id for i in found}


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_the_cli_prints_what_the_boundary_model_gives(
    service: MemoryService, cli: Any, extra: list[str]
) -> None:
    _archive(service)
    when = "2027-01-01T00:00:00Z"
    result: CliResult = cli(*extra, "recall", "杭州", "--as-of", when, "--history", "--limit", "20")
    assert result.code == 0, result.err
    model = service.memory_recall(
        parse(RecallQuery, {"query": "杭州", "as_of": when, "include_history": True, "limit": 20})
    )
    if extra:
        assert result.out == json.dumps(model.as_dict(), ensure_ascii=False) + "\n"
        return
    lines = result.out.splitlines()
    expected = [(item.id, f"{item.score:.3f}  ") for item in model.items]
    context = [line for line in lines if line.lstrip().startswith("↳ context")]
    assert len(context) == sum(len(item.context) for item in model.items) > 0
    headings = [line for line in lines if line.startswith("── ")]  # one above each tier
    assert len(headings) == len({item.tier for item in model.items}) > 0
    items = [line for line in lines if line not in context and line not in headings]
    assert len(items) == len(expected)
    for line, (item_id, start) in zip(items, expected, strict=True):
        assert line.startswith(start) and item_id in line
    for line, turn in zip(context, [c for item in model.items for c in item.context], strict=True):
        assert turn.id in line
    assert "\x1b" not in result.out and "\\x1b[31m" in result.out  # terminal escapes made visible


def test_a_lexical_recall_needs_no_embedder_but_a_semantic_one_names_the_setting(
    service: MemoryService, cli: Any, tmp_path: Path
) -> None:
    """A lexical recall constructs no provider, so an embedding setting that cannot be built does not stop
    it; a semantic recall builds the embedder and names the setting and the rule."""
    _archive(service)
    config = tmp_path / "yiji.toml"
    config.write_text('[embedding]\nprovider = "openai"\n', encoding="utf-8")
    lexical = cli("--config", str(config), "--json", "recall", "杭州")
    assert lexical.code == 0, lexical.err
    assert json.loads(lexical.out)["items"]
    semantic = cli("--config", str(config), "--json", "recall", "杭州", "--mode", "semantic")
    assert semantic.code == 2
    error = json.loads(semantic.err)
    assert error["problems"] == [
        {"field": "embedding.provider", "rule": "openai needs embedding.base_url and embedding.model"}
    ]
