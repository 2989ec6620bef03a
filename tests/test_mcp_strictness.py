"""The MCP server refuses what it cannot take at face value: coerced arguments, huge names, malformed
JSON-RPC lines and invalid UTF-8, through the SDK client and through raw bytes to `yiji serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from yiji import __version__

from .mcp_helpers import INITIALIZE, error_text, memory_client, payload

pytestmark = pytest.mark.anyio

SECRET = "SECRET-TEXT-5b1e"


def _count(db_path: Path, table: str) -> int:
    from yiji.db import Database

    db = Database(db_path)
    try:
        with db.read() as conn:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        db.close()


@pytest.mark.parametrize("confirm", ["yes", 1, "on", "true", 1.0])
async def test_delete_confirms_only_with_json_true(db_path: Path, confirm: Any) -> None:
    async with memory_client(db_path) as client:
        event = payload(
            await client.call_tool("event_submit", {"session": "s", "role": "user", "text": "hi"})
        )
        result = await client.call_tool(
            "memory_delete", {"event_id": event["event"]["id"], "confirm": confirm}
        )
        assert result.isError
        assert "confirm" in error_text(result) and "boolean" in error_text(result)
        assert _count(db_path, "events") == 1
        payload(await client.call_tool("memory_delete", {"event_id": event["event"]["id"], "confirm": True}))
    assert _count(db_path, "events") == 0


CASES = [
    ("session_resume", {"budget": True}, "budget"),
    ("session_resume", {"budget": "4000"}, "budget"),
    ("session_resume", {"budget": 4000.0}, "budget"),
    ("memory_recall", {"query": "x", "limit": "5"}, "limit"),
    ("memory_recall", {"query": "x", "include_history": "true"}, "include_history"),
    ("memory_recall", {"query": "x", "include_raw": 0}, "include_raw"),
    ("memory_recall", {"query": "x", "kinds": '["fact"]'}, "kinds"),
    ("memory_delete", {"event_id": "e", "dry_run": "yes"}, "dry_run"),
    ("checkpoint_save", {"session": "s", "goal": "g", "covered_seq": "1"}, "covered_seq"),
    ("memory_read", {"memory_id": "m", "offset": False}, "offset"),
    ("memory_derive", {"event_id": "e", "memories": "[]"}, "memories"),
    ("event_submit", {"session": "s", "role": "user", "text": 5}, "text"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
async def test_no_argument_is_coerced(
    db_path: Path, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with memory_client(db_path) as client:
        result = await client.call_tool(tool, arguments)
    assert result.isError
    text = error_text(result)
    assert text.startswith("invalid_input:") and field in text


async def test_strict_numbers_still_take_json_numbers(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        resumed = payload(await client.call_tool("session_resume", {"budget": 4000}))
        recalled = payload(await client.call_tool("memory_recall", {"query": "x", "limit": 3}))
    assert resumed["metadata"]["status"] == "ok" and 0 < resumed["metadata"]["used"] <= 3000
    assert recalled["items"] == []


async def test_unknown_argument_name_is_shown_truncated(db_path: Path) -> None:
    long_name = "n" * 100_000
    async with memory_client(db_path) as client:
        result = await client.call_tool("persona_get", {long_name: 1, **{f"x{i}": 1 for i in range(8)}})
    text = error_text(result)
    assert result.isError and "unknown field" in text
    assert len(text) < 400
    assert "n" * 39 + "…" in text and "(and 4 more)" in text


HOSTILE_NAME = "a\x1b[2J\u202eb"


async def test_unknown_names_are_never_echoed_raw(db_path: Path) -> None:
    async with memory_client(db_path) as client:
        argument = await client.call_tool("persona_get", {HOSTILE_NAME: 1})
        nested = await client.call_tool(
            "memory_derive", {"event_id": "e", "memories": [{HOSTILE_NAME + "x" * 100: 1}]}
        )
        tool = await client.call_tool(HOSTILE_NAME + SECRET, {})
    assert argument.isError and error_text(argument) == "invalid_input: a\\x1b[2J\\u202eb: unknown field"
    assert nested.isError and "a\\x1b[2J\\u202eb" in error_text(nested)
    assert len(error_text(nested)) < 1000
    assert (
        tool.isError
        and error_text(tool) == "invalid_input: name: no tool has this name (tools/list names them)"
    )
    for text in map(error_text, (argument, nested, tool)):
        assert "\x1b" not in text and "\u202e" not in text and SECRET not in text


def test_server_info_version_is_yiji(db_path: Path) -> None:
    replies, _ = _raw_session(db_path, [])
    assert replies[1]["result"]["serverInfo"] == {"name": "yiji", "version": __version__}


def _line(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8") + b"\n"


def _raw_session(
    db_path: Path, lines: list[bytes], expect: set[int] | None = None
) -> tuple[dict[Any, dict[str, Any]], str]:
    """Send an initialize handshake, ``lines`` and a final ping to `yiji serve`; replies by id, stderr.

    Standard input stays open until every id in ``expect`` (and the ping) is answered or a deadline passes
    (closing it at once is tested on its own: requests in flight at end of input are still answered).
    """
    stream = b"".join(
        [
            _line(INITIALIZE),
            _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            *lines,
            _line({"jsonrpc": "2.0", "id": 99, "method": "ping"}),
        ]
    )
    wanted = {1, 99, *(expect or set())}
    proc = subprocess.Popen(
        [sys.executable, "-m", "yiji", "--db", str(db_path), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: dict[Any, dict[str, Any]] = {}

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            message = json.loads(raw)
            replies[message.get("id")] = message
            if wanted <= set(replies):
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc.stdin.write(stream)
    proc.stdin.flush()
    reader.join(timeout=120)
    proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(timeout=60)
    reader.join(timeout=10)
    proc.stdout.close()
    proc.stderr.close()
    return replies, err.decode("utf-8", "replace")


def _call(request_id: int, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "event_submit", "arguments": arguments},
    }


def test_malformed_lines_get_an_error_reply_and_logs_hold_no_text(db_path: Path) -> None:
    submit = {"session": "s", "role": "user", "text": SECRET}
    truncated = json.dumps(_call(11, submit)).encode()[:-8] + b"\n"
    deep = b'{"jsonrpc":"2.0","id":13,"method":"ping","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}\n"
    deeper = (
        b'{"jsonrpc":"2.0","id":14,"method":"ping","params":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}\n"
    )
    surrogate = json.dumps(_call(15, {**submit, "text": SECRET})).replace(SECRET, "\\ud800" + SECRET)
    invalid_utf8 = json.dumps(_call(16, {**submit, "text": "PLACEHOLDER"})).encode()
    invalid_utf8 = invalid_utf8.replace(b"PLACEHOLDER", SECRET.encode() + b"\xff\xfe")
    unknown_method = {"jsonrpc": "2.0", "id": 17, "method": "memory/steal", "params": {"x": SECRET}}
    lines = [
        f"not json at all {SECRET}\n".encode(),
        truncated,
        _line([{"jsonrpc": "2.0", "id": 12, "method": "ping"}, {"x": SECRET}]),
        deep,
        deeper,
        surrogate.encode() + b"\n",
        invalid_utf8 + b"\n",
        _line(unknown_method),
        _line({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"x": SECRET}}),
    ]
    replies, stderr = _raw_session(db_path, lines, expect={11, 12, 13, 14, 15, 16, 17})
    assert replies[11]["error"]["code"] == -32700
    assert replies[12]["error"]["code"] == -32600 and "batch" in replies[12]["error"]["message"]
    assert replies[13]["error"]["code"] == -32600 and "nested" in replies[13]["error"]["message"]
    assert replies[14]["error"]["code"] == -32600 and "nested" in replies[14]["error"]["message"]
    assert replies[15]["error"]["code"] == -32600 and "surrogate" in replies[15]["error"]["message"]
    assert replies[16]["error"]["code"] == -32700 and "UTF-8" in replies[16]["error"]["message"]
    assert replies[17]["error"]["code"] == -32601
    assert replies[99]["result"] == {}, "the server keeps serving after malformed lines"
    assert None not in replies, "MCP responses always carry an id"
    everything = json.dumps(replies) + stderr
    assert SECRET not in everything and "not json at all" not in everything
    assert "refused an MCP message" in stderr
    assert _count(db_path, "events") == 0


def test_unknown_methods_are_not_echoed_and_big_ids_come_back_exactly(db_path: Path) -> None:
    big = 123456789012345678901234
    unknown = {"jsonrpc": "2.0", "id": 31, "method": "x/steal" + SECRET, "params": {}}
    hostile = {"jsonrpc": "2.0", "id": 32, "method": HOSTILE_NAME}
    hostile_tool = {
        "jsonrpc": "2.0",
        "id": 33,
        "method": "tools/call",
        "params": {"name": HOSTILE_NAME + "x" * 40 + SECRET, "arguments": {}},
    }
    ping = {"jsonrpc": "2.0", "id": big, "method": "ping"}
    truncated = f'{{"jsonrpc":"2.0","id":-{big},"method":"ping","params":{{"a":'.encode() + b"\n"
    replies, stderr = _raw_session(
        db_path,
        [_line(unknown), _line(hostile), _line(hostile_tool), _line(ping), truncated],
        expect={31, 32, 33, big, -big},
    )
    assert replies[31]["error"]["message"] == "invalid request: unknown method"
    assert replies[32]["error"]["message"] == "invalid request: unknown method"
    assert replies[33]["result"]["isError"]
    assert replies[big]["result"] == {}
    assert replies[-big]["error"]["code"] == -32700
    everything = json.dumps(replies, ensure_ascii=False) + stderr
    assert SECRET not in everything and "x/steal" not in everything
    assert "\x1b" not in everything and "\u202e" not in everything


def test_invalid_utf8_event_is_refused_not_replaced(db_path: Path) -> None:
    raw = json.dumps(_call(21, {"session": "s", "role": "user", "text": "PLACEHOLDER"})).encode()
    replies, _ = _raw_session(db_path, [raw.replace(b"PLACEHOLDER", b"caf\xe9") + b"\n"], expect={21})
    assert "error" in replies[21]
    assert _count(db_path, "events") == 0


def test_requests_in_flight_at_end_of_input_are_answered(db_path: Path) -> None:
    """A client that writes its calls and closes its input at once still reads every reply, then EOF."""
    calls = [_call(40 + i, {"session": "s", "role": "user", "text": f"第{i}条"}) for i in range(5)]
    recall = {
        "jsonrpc": "2.0",
        "id": 50,
        "method": "tools/call",
        "params": {"name": "memory_recall", "arguments": {"query": "条"}},
    }
    stream = b"".join(
        [_line(INITIALIZE), _line({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        + [_line(c) for c in calls]
        + [_line(recall)]
    )
    done = subprocess.run(
        [sys.executable, "-m", "yiji", "--db", str(db_path), "serve"],
        input=stream,  # written whole, then standard input is closed
        capture_output=True,
        timeout=120,
        check=False,
    )
    replies = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert done.returncode == 0
    assert set(replies) == {1, 40, 41, 42, 43, 44, 50}
    assert not any(replies[i]["result"].get("isError") for i in (40, 41, 42, 43, 44, 50))
    assert _count(db_path, "events") == 5
