"""The loopback model server the real-host tests drive Claude Code and Codex against
(:mod:`tests.hostmodel`), checked over the wire with a real HTTP client: the event sequences of both
streaming APIs, the whole answers, the probes, and that every request is recorded as sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .hostmodel import MESSAGES_PATH, RESPONSES_PATH, HostModel, json_strings


@pytest.fixture
def model() -> Iterator[HostModel]:
    with HostModel() as server:
        yield server


def _events(body: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each server-sent event, checking that the name and the data's type agree."""
    found = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(lines["data"])
        assert data["type"] == lines["event"]
        found.append((lines["event"], data))
    return found


def test_messages_stream_is_the_anthropic_event_sequence(model: HostModel, http_client: httpx.Client) -> None:
    sent = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hello"}]}
    answer = http_client.post(model.url + MESSAGES_PATH, json=sent)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream"
    events = _events(answer.text)
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    text = "".join(data["delta"]["text"] for name, data in events if name == "content_block_delta")
    assert text == "reply 1 from the loopback model" == model.answers[0]
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    (recorded,) = model.requests_to(MESSAGES_PATH)
    assert recorded.json() == sent
    assert "hello" in recorded.strings


def test_messages_whole_answer_and_token_count(model: HostModel, http_client: httpx.Client) -> None:
    answer = http_client.post(model.url + MESSAGES_PATH, json={"model": "m", "messages": []}).json()
    assert answer["type"] == "message"
    assert answer["content"] == [{"type": "text", "text": "reply 1 from the loopback model"}]
    counted = http_client.post(model.url + MESSAGES_PATH + "/count_tokens", json={"messages": []}).json()
    assert counted["input_tokens"] >= 1
    assert model.answers == ["reply 1 from the loopback model"]


def test_responses_stream_is_the_openai_event_sequence(model: HostModel, http_client: httpx.Client) -> None:
    model.usage_tokens = 1234
    answer = http_client.post(model.url + RESPONSES_PATH, json={"model": "m", "stream": True, "input": []})
    events = _events(answer.text)
    assert [name for name, _ in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["usage"]["total_tokens"] == 1234
    assert completed["output"][0]["content"][0]["text"] == "reply 1 from the loopback model"


def test_responses_whole_answer_models_and_probes(model: HostModel, http_client: httpx.Client) -> None:
    whole = http_client.post(model.url + RESPONSES_PATH, json={"model": "m", "input": []}).json()
    assert whole["output"][0]["content"][0]["text"] == "reply 1 from the loopback model"
    assert http_client.get(model.url + "/v1/models").json()["data"][0]["id"] == "loopback-model"
    assert http_client.head(model.url + "/").status_code == 200
    assert http_client.get(model.url + "/elsewhere").status_code == 404
    assert http_client.post(model.url + "/v1/elsewhere", json={}).status_code == 404
    assert http_client.post(model.url + MESSAGES_PATH, content=b"{not json").status_code == 400
    assert [(r.method, r.path) for r in model.requests] == [
        ("POST", RESPONSES_PATH),
        ("GET", "/v1/models"),
        ("HEAD", "/"),
        ("GET", "/elsewhere"),
        ("POST", "/v1/elsewhere"),
        ("POST", MESSAGES_PATH),
    ]


def test_json_strings_finds_every_string_in_order() -> None:
    value = {"system": [{"text": "a"}], "messages": [{"content": ["b", {"text": "c"}]}], "n": 1}
    assert json_strings(value) == ["a", "b", "c"]
