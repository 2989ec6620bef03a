"""A hostile OpenAI-compatible endpoint against every provider path, as users and hosts meet it.

The endpoint is the real loopback server of :mod:`tests.fakeprovider`, scripted to answer with JSON nested
thousands of levels deep (in the body, or inside the message content), invalid ``\\u`` escapes in an
answer that ended, an answer cut off by ``max_tokens`` before any complete item, a body dripped one byte at
a time, and a body over the size cap. Every provider path meets each of them: extraction at ``event
submit``, ``extraction check``, ``extraction retry``, the embedding of new memories, semantic recall and
``reindex --vectors``, through the CLI's entry point and the MCP server through the official SDK client
(``yiji serve`` over stdio). Each case must end in a clear, sanitized error with nothing lost: the event
stays pending with the reason and an attempt counted, saved memories stay, recall falls back to lexical.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from yiji.service import MemoryService

from . import fakeprovider as fake
from .conftest import CliResult
from .factory import make_service
from .fakeprovider import EMBEDDINGS_PATH, FAKE_SECRET, FakeProvider, Reply
from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client, payload, stdio_client_session

DEEP = 5_000
TIMEOUT = 1.5
"""Whole-request timeout of both endpoints here: a drip of one byte per half second trips it."""
TEXT = "我最近搬到了上海，住在静安区。"
MOVED = {"memories": [{"clause": 1, "kind": "fact", "text": "用户搬到了上海"}]}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _chat_nested_body() -> Reply:
    envelope = '{"choices": [{"message": {"content": "{}"}, "extra": ' + _nested(DEEP) + "}]}"
    return fake.raw_reply(200, envelope)


def _chat_nested_content() -> Reply:
    return fake.chat_content('{"memories": [' + _nested(DEEP) + "]}")


def _chat_invalid_escapes() -> Reply:
    item = '{"clause": 1, "kind": "fact", "text": "用户住在\\u676\\uZZZZ' + FAKE_SECRET + '"}'
    return fake.chat_content('{"memories": [' + item + "]}", finish_reason="stop")


def _chat_cut_off() -> Reply:
    return fake.chat_content(
        '{"memories": [{"clause": 1, "kind": "fact", "text": "用户', finish_reason="length"
    )


def _chat_oversized() -> Reply:
    return fake.huge(1_500_000)


CHAT_FAULTS: dict[str, tuple[Callable[[], Reply], str]] = {
    "nested body": (_chat_nested_body, "not JSON"),
    "nested content": (_chat_nested_content, "not JSON"),
    "invalid escapes": (_chat_invalid_escapes, "not JSON"),
    "cut off": (_chat_cut_off, "max_tokens"),
    "slow drip": (lambda: fake.dripping(0.5), "timed out"),
    "oversized": (_chat_oversized, "larger than"),
}
"""Each chat fault and a word of the sanitized reason it must give."""


def _embed_nested_body() -> Reply:
    return fake.raw_reply(200, '{"data": [{"index": 0, "embedding": ' + _nested(DEEP) + "}]}")


def _embed_invalid_escapes() -> Reply:
    return fake.raw_reply(200, '{"data": [{"index": 0, "embedding": [0.5, 0.5], "object": "\\uZZZZ"}]}')


def _embed_drip() -> Reply:
    return Reply(body=fake.embeddings_reply([[0.5, 0.5]]).body, drip=0.5)


def _embed_oversized() -> Reply:
    body = fake.embeddings_reply([[0.5, 0.5]]).body
    return Reply(body=body + b" " * (65 * 1024 * 1024 - len(body)))


EMBED_FAULTS: dict[str, tuple[Callable[[], Reply], str]] = {
    "nested body": (_embed_nested_body, "not JSON"),
    "invalid escapes": (_embed_invalid_escapes, "not JSON"),
    "slow drip": (_embed_drip, "timed out"),
    "oversized": (_embed_oversized, "larger than"),
}


def _env(tmp_path: Path, provider: FakeProvider, *, embedding: bool = False) -> dict[str, str]:
    toml = (
        f'[extraction]\nbase_url = "{provider.base_url}"\nmodel = "fake"\ntimeout_seconds = {TIMEOUT}\n'
        "max_answer_bytes = 1000000\n"
    )
    if embedding:
        toml += (
            f'[embedding]\nprovider = "openai"\nbase_url = "{provider.base_url}"\nmodel = "fake-embed"\n'
            f"timeout_seconds = {TIMEOUT}\n"
        )
    else:
        toml += '[embedding]\nprovider = "off"\n'
    config = tmp_path / "config.toml"
    config.write_text(toml, encoding="utf-8")
    return {"YIJI_CONFIG": str(config), "YIJI_DB": str(tmp_path / "y.db")}


def _yiji(env: dict[str, str], *args: str) -> CliResult:
    result = run_cli("--json", *args, env=env)
    assert FAKE_SECRET not in result.out + result.err
    assert "internal" not in result.out + result.err, result.err
    return result


def _submit(env: dict[str, str], event_id: str = "e1") -> CliResult:
    return _yiji(env, "event", "submit", "--session", "s", "--role", "user", "--id", event_id, TEXT)


def _event_row(env: dict[str, str], event_id: str) -> tuple[str, str | None, int]:
    with sqlite3.connect(env["YIJI_DB"]) as conn:
        row = conn.execute(
            "SELECT extraction_state, extraction_error, extraction_attempts FROM events WHERE id = ?",
            (event_id,),
        ).fetchone()
    assert row is not None, "the event was lost"
    return row[0], row[1], row[2]


def _embedding_fault(
    fault: str, provider: FakeProvider, tmp_path: Path, times: int
) -> tuple[dict[str, str], Callable[[], Reply], str]:
    """The environment of a run whose extraction proposes :data:`MOVED` and whose embedding endpoint
    then answers with ``fault`` ``times`` times; the fault's reply and reason."""
    reply, reason = EMBED_FAULTS[fault]
    env = _env(tmp_path, provider, embedding=True)
    provider.script_chat(fake.chat_reply(MOVED))
    provider.script_embeddings(*(reply() for _ in range(times)))
    return env, reply, reason


def _counts(env: dict[str, str]) -> tuple[int, int]:
    with sqlite3.connect(env["YIJI_DB"]) as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    return events, memories


# -- extraction ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", list(CHAT_FAULTS))
def test_extraction_at_submit_and_retry_leaves_the_event_pending_with_the_reason(
    fault: str, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    reply, reason = CHAT_FAULTS[fault]
    env = _env(tmp_path, fake_provider)
    fake_provider.script_chat(reply())
    submitted = _submit(env)
    assert submitted.code == 0, submitted.err
    outcome = submitted.json()["extraction"]
    assert outcome["state"] == "pending" and reason in outcome["message"]
    state, error, attempts = _event_row(env, "e1")
    assert (state, attempts) == ("pending", 1) and error is not None and reason in error

    fake_provider.script_chat(reply())
    retried = _yiji(env, "extraction", "retry", "--event", "e1")
    assert retried.code == 1, retried.err  # a provider failure
    result = retried.json()["results"][0]
    assert result["state"] == "pending" and reason in result["message"]
    assert _event_row(env, "e1")[0::2] == ("pending", 2)

    # the endpoint mends: the same retry completes the event, and the event was stored once
    fake_provider.script_chat(fake.chat_reply(MOVED))
    mended = _yiji(env, "extraction", "retry", "--event", "e1")
    assert mended.json()["completed"] == 1
    assert _counts(env) == (1, 1)


@pytest.mark.parametrize("fault", ["nested body", "nested content", "invalid escapes", "cut off"])
def test_extraction_check_names_invalid_answers(
    fault: str, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    reply, _ = CHAT_FAULTS[fault]
    fake_provider.script_chat(*(reply() for _ in range(10)))
    env = _env(tmp_path, fake_provider)
    result = _yiji(env, "extraction", "check")
    assert result.code == 1, result.err
    report = result.json()
    assert report["verdict"] == "invalid answers" and report["checks"]["answers_valid"] is False
    assert not Path(env["YIJI_DB"]).exists()


def test_extraction_check_names_a_dripping_endpoint(fake_provider: FakeProvider, tmp_path: Path) -> None:
    fake_provider.script_chat(*(fake.dripping(0.5) for _ in range(10)))
    result = _yiji(_env(tmp_path, fake_provider), "extraction", "check")
    assert result.code == 1 and result.json()["verdict"] != "ok"


@pytest.mark.parametrize("fault", ["nested body", "nested content", "invalid escapes", "slow drip"])
def test_extraction_through_mcp_leaves_the_event_pending_with_the_reason(
    fault: str, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    reply, reason = CHAT_FAULTS[fault]
    env = _env(tmp_path, fake_provider)
    fake_provider.script_chat(reply(), reply())
    log = tmp_path / "server.log"

    async def scenario() -> None:
        with log.open("w", encoding="utf-8") as errlog:
            async with stdio_client_session(Path(env["YIJI_DB"]), env, errlog=errlog) as client:
                submitted = await client.call_tool(
                    "event_submit", {"session": "s", "role": "user", "text": TEXT, "id": "e1"}
                )
                outcome = payload(submitted)["extraction"]
                assert outcome["state"] == "pending" and reason in outcome["message"]
                retried = await client.call_tool("extraction_retry", {"event_id": "e1"})
                assert reason in payload(retried)["results"][0]["message"]
                fake_provider.script_chat(fake.chat_reply(MOVED))
                mended = await client.call_tool("extraction_retry", {"event_id": "e1"})
                assert payload(mended)["completed"] == 1

    anyio.run(scenario)
    assert _counts(env) == (1, 1)
    assert FAKE_SECRET not in log.read_text(encoding="utf-8")


# -- embeddings -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", list(EMBED_FAULTS))
def test_embedding_faults_keep_memories_recall_lexically_and_fail_reindex_cleanly(
    fault: str, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    env, reply, reason = _embedding_fault(fault, fake_provider, tmp_path, 1)
    submitted = _submit(env)
    assert submitted.code == 0, submitted.err
    outcome = submitted.json()["extraction"]
    assert outcome["state"] == "done" and len(outcome["memory_ids"]) == 1
    assert outcome["vectors"]["state"] == "missing" and reason in outcome["vectors"]["message"]
    assert _event_row(env, "e1")[0] == "done" and _counts(env) == (1, 1)

    fake_provider.script_embeddings(reply())
    recalled = _yiji(env, "recall", "--mode", "semantic", "上海")
    assert recalled.code == 0, recalled.err
    found = recalled.json()
    assert [m["memory"]["text"] for m in found["items"]] == ["用户搬到了上海"]
    assert any("lexical only" in w and reason in w for w in found["warnings"])

    fake_provider.script_embeddings(*(reply() for _ in range(3)))  # transient faults are tried 3 times
    reindexed = _yiji(env, "reindex", "--vectors")
    assert reindexed.code == 1
    assert json.loads(reindexed.out or reindexed.err)["error"].startswith("provider")
    assert reason in reindexed.out + reindexed.err
    assert _counts(env) == (1, 1)
    permanent = fault != "slow drip"  # a timeout is transient: reindex tries it three times
    assert len(fake_provider.requests_to(EMBEDDINGS_PATH)) == (3 if permanent else 5)


@pytest.mark.parametrize("fault", ["nested body", "invalid escapes"])
def test_embedding_faults_through_mcp_keep_memories_and_recall_lexically(
    fault: str, fake_provider: FakeProvider, tmp_path: Path
) -> None:
    env, _, reason = _embedding_fault(fault, fake_provider, tmp_path, 2)

    async def scenario() -> dict[str, Any]:
        async with stdio_client_session(Path(env["YIJI_DB"]), env) as client:
            submitted = await client.call_tool(
                "event_submit", {"session": "s", "role": "user", "text": TEXT, "id": "e1"}
            )
            vectors = payload(submitted)["extraction"]["vectors"]
            assert vectors["state"] == "missing" and reason in vectors["message"]
            recalled = await client.call_tool("memory_recall", {"query": "上海", "mode": "semantic"})
            assert not recalled.isError, error_text(recalled)
            found: dict[str, Any] = payload(recalled)
            return found

    found = anyio.run(scenario)
    assert [m["text"] for m in found["items"]] == ["用户搬到了上海"]
    assert any("lexical only" in w for w in found["warnings"])
    assert _counts(env) == (1, 1)


class _Unexpected:
    """An extractor that fails in a way no provider error describes (its message holds a secret)."""

    def extract(self, event: object) -> object:
        raise RuntimeError(FAKE_SECRET)

    def entails(self, quote: str, text: str) -> bool:
        raise RuntimeError(FAKE_SECRET)


def test_an_unexpected_tool_failure_is_logged_by_its_type_and_the_event_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db_path = tmp_path / "y.db"

    def factory() -> MemoryService:
        return make_service(db_path, extractor=_Unexpected())

    async def scenario() -> str:
        async with memory_client(db_path, factory) as client:
            result = await client.call_tool("event_submit", {"session": "s", "role": "user", "text": TEXT})
            assert result.isError
            return error_text(result)

    with caplog.at_level(logging.ERROR, logger="yiji.mcp"):
        message = anyio.run(scenario)
    assert message == "internal_error: the tool failed; see the server log"
    assert "tool event_submit failed: unexpected RuntimeError" in caplog.text
    assert FAKE_SECRET not in caplog.text
    assert _counts({"YIJI_DB": str(db_path)}) == (1, 0)
