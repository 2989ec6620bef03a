"""The stdio transport of yiji's MCP server: one JSON-RPC message per line, checked before the SDK sees it.

The SDK's own stdio transport decodes standard input with ``errors="replace"`` (so invalid UTF-8 becomes
U+FFFD and is stored), and turns a line it cannot parse into an exception that is logged with an excerpt
of the line and answered with nothing, so the client waits forever. This transport reads bytes and
checks every line first:

* a line that is not strict UTF-8, not JSON, nested too deeply, holds an unpaired surrogate escape, or
  is not a request or notification the protocol knows, is refused;
* a refused *request* is answered with a JSON-RPC error for its ``id`` whenever the id can be
  recovered (the MCP protocol requires an id on every response, so a message whose id cannot be read
  gets no answer), and that id comes back exactly as sent, however many digits it has; a refused
  notification is never answered, as the protocol requires;
* an unknown method is answered "unknown method" without its name;
* a batch (a top-level array; MCP does not support batches) is answered with one error per member
  that carries an id;
* the log names the reason only, never the text of the message.

Only checked messages reach the SDK's session, so its own logging of invalid messages never runs.

Standard input is read by a daemon thread of its own, one line at a time, handed to the event loop as
it comes: a read blocked on a terminal cannot be cancelled, and a worker thread of the event loop would
hold the process after Ctrl-C until the next line (the person would have to press Ctrl-D too). A daemon
thread lets the server stop at once.

End of input: the SDK cancels every request still in flight when its read stream ends, so a client that
writes ``tools/call`` and closes its input at once would get no reply. This transport ends the SDK's
read stream only after every request it forwarded has been answered (or :data:`DRAIN_SECONDS` passed).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
import threading
import typing
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from yiji.domain.jsonstream import SURROGATE, decode

__all__ = ["DRAIN_SECONDS", "Checked", "check_line", "stdio_transport"]

DRAIN_SECONDS = 600.0
"""At end of input, how long requests still in flight may take to be answered before the server stops."""

logger = logging.getLogger("yiji.mcp")

# A leading id, read from text that is not JSON (e.g. a truncated line): only when it is among the
# first members, so an "id" inside the parameters is never taken for the request's, and only whole (a
# number is followed by the end of its member; a longer one is not recovered, never cut).
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*'
    rb'(-?\d{1,1000}(?=\s*[,}])|"[^"\\]{0,128}")'
)


@dataclass(frozen=True)
class Checked:
    """What to do with one input line: forward ``message``, send ``replies``, log ``reason``."""

    message: types.JSONRPCMessage | None = None
    replies: tuple[types.JSONRPCError, ...] = ()
    reason: str | None = None


def _error(request_id: str | int, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _id_of(value: Any) -> str | int | None:
    """The request id of a decoded JSON-RPC object, or None when it has none the protocol accepts."""
    if not isinstance(value, dict) or "method" not in value:
        return None
    request_id = value.get("id")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    return None


def _loose_json(text: str) -> tuple[bool, Any]:
    """Decode with the standard library (more tolerant than the SDK's parser) to recover an id."""
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _refuse(raw: bytes, text: str | None, code: int, reason: str) -> Checked:
    decoded, value = _loose_json(text) if text is not None else (False, None)
    if decoded and isinstance(value, list):
        ids = [i for i in (_id_of(member) for member in value) if i is not None]
        reason = "a batch (MCP does not support batches)"
        return Checked(
            replies=tuple(_error(i, types.INVALID_REQUEST, f"invalid request: {reason}") for i in ids),
            reason=reason,
        )
    request_id = _id_of(value) if decoded else None
    if request_id is None and not decoded:
        match = _LEADING_ID.match(raw)
        if match:
            token = match.group(1)
            request_id = token[1:-1].decode("utf-8", "replace") if token.startswith(b'"') else int(token)
    label = "parse error" if code == types.PARSE_ERROR else "invalid request"
    replies = (_error(request_id, code, f"{label}: {reason}"),) if request_id is not None else ()
    return Checked(replies=replies, reason=reason)


def check_line(raw: bytes) -> Checked:
    """Check one line read from standard input (without or with its line ending)."""
    if not raw.strip():
        return Checked()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _refuse(
            raw, raw.decode("utf-8", "replace"), types.PARSE_ERROR, "the message is not valid UTF-8"
        )
    try:
        message = types.JSONRPCMessage.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_input=False, include_url=False)
        if all(e["type"] != "json_invalid" for e in errors):
            return _refuse(raw, text, types.INVALID_REQUEST, "not a JSON-RPC 2.0 request or notification")
        if any("recursion" in e["msg"] for e in errors):
            return _refuse(raw, text, types.INVALID_REQUEST, "the message is nested too deeply")
        if decode(text)[1] == SURROGATE:
            return _refuse(raw, text, types.INVALID_REQUEST, "the message holds an unpaired surrogate escape")
        return _refuse(raw, text, types.PARSE_ERROR, "the message is not valid JSON")
    root = message.root
    payload = root.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(root, types.JSONRPCRequest):
        if root.method not in _METHODS:
            reason = "unknown method"
            return Checked(
                replies=(_error(root.id, types.METHOD_NOT_FOUND, f"invalid request: {reason}"),),
                reason=reason,
            )
        try:
            types.ClientRequest.model_validate(payload)
        except ValidationError:
            reason = f"invalid parameters for {root.method}"
            return Checked(
                replies=(_error(root.id, types.INVALID_PARAMS, f"invalid request: {reason}"),), reason=reason
            )
    elif isinstance(root, types.JSONRPCNotification):
        try:
            types.ClientNotification.model_validate(payload)
        except ValidationError:
            return Checked(reason="an unknown or invalid notification")
    return Checked(message=message)


def _methods(union: Any) -> frozenset[str]:
    """The method names of a union of request models (e.g. ``ClientRequest``), from their literals."""
    members = typing.get_args(union.model_fields["root"].annotation)
    return frozenset(m for model in members for m in typing.get_args(model.model_fields["method"].annotation))


_METHODS = _methods(types.ClientRequest)
"""Request methods a client may send: an error names one of these, never a method the client made up."""


def _read_lines(source: BinaryIO) -> Iterator[bytes]:
    """The lines of ``source``, each with its line ending (the last one may have none).

    A file with a descriptor is read through a duplicate of it with ``os.read``, never through its
    buffered reader: at interpreter shutdown Python locks ``sys.stdin``'s buffer, and a daemon thread
    blocked in it would abort the process."""
    try:
        fd = os.dup(source.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # no descriptor (an in-memory stream)
        yield from source
        return
    try:
        pending = bytearray()
        while chunk := os.read(fd, 65536):
            searched = len(pending)
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", searched)) >= 0:
                yield bytes(pending[start : end + 1])
                start = searched = end + 1
            del pending[:start]
        if pending:
            yield bytes(pending)
    finally:
        os.close(fd)


@asynccontextmanager
async def _lines_of(source: BinaryIO) -> AsyncIterator[MemoryObjectReceiveStream[bytes]]:
    """The lines of ``source`` as they are read by a daemon thread (see the module notes); the stream
    ends at end of input. The thread waits for each line to be taken before it reads the next."""
    token = anyio.lowlevel.current_token()
    send: MemoryObjectSendStream[bytes]
    receive: MemoryObjectReceiveStream[bytes]
    send, receive = anyio.create_memory_object_stream(0)

    def pump() -> None:
        try:
            for raw in _read_lines(source):
                anyio.from_thread.run(send.send, raw, token=token)
            anyio.from_thread.run(send.aclose, token=token)
        except Exception:  # the server stopped first (stream closed, loop gone): nothing is waiting
            return

    threading.Thread(target=pump, name="yiji-mcp-stdin", daemon=True).start()
    async with receive:
        yield receive


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Streams for ``mcp.server.lowlevel.Server.run`` over standard input and output (bytes, UTF-8)."""
    source = stdin or sys.stdin.buffer
    sink = anyio.wrap_file(stdout or sys.stdout.buffer)

    read_writer: MemoryObjectSendStream[SessionMessage | Exception]
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception]
    write_stream: MemoryObjectSendStream[SessionMessage]
    write_reader: MemoryObjectReceiveStream[SessionMessage]
    read_writer, read_stream = anyio.create_memory_object_stream(0)
    write_stream, write_reader = anyio.create_memory_object_stream(0)
    lock = anyio.Lock()
    in_flight: Counter[str | int] = Counter()  # ids of forwarded requests not answered yet
    answered = anyio.Event()  # set once input has ended and nothing is in flight
    input_ended = False

    async def send(message: types.JSONRPCMessage | types.JSONRPCError) -> None:
        line = message.model_dump_json(by_alias=True, exclude_none=True) + "\n"
        async with lock:
            await sink.write(line.encode("utf-8"))
            await sink.flush()

    def forwarded(message: types.JSONRPCMessage) -> None:
        if isinstance(message.root, types.JSONRPCRequest):
            in_flight[message.root.id] += 1

    def replied(message: types.JSONRPCMessage) -> None:
        root = message.root
        if isinstance(root, types.JSONRPCResponse | types.JSONRPCError) and in_flight[root.id] > 0:
            in_flight[root.id] -= 1
            if in_flight[root.id] == 0:
                del in_flight[root.id]
        if input_ended and not in_flight:
            answered.set()

    async def reader() -> None:
        nonlocal input_ended
        try:
            async with read_writer, _lines_of(source) as lines:
                async for raw in lines:
                    checked = check_line(raw)
                    if checked.reason is not None:
                        logger.warning("refused an MCP message: %s", checked.reason)
                    for reply in checked.replies:
                        await send(reply)
                    if checked.message is not None:
                        forwarded(checked.message)
                        await read_writer.send(SessionMessage(checked.message))
                input_ended = True
                if in_flight:
                    with anyio.move_on_after(DRAIN_SECONDS):
                        await answered.wait()
        except anyio.ClosedResourceError:  # the session ended first
            await anyio.lowlevel.checkpoint()

    async def writer() -> None:
        try:
            async with write_reader:
                async for session_message in write_reader:
                    await send(session_message.message)
                    replied(session_message.message)
        except anyio.ClosedResourceError:
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        yield read_stream, write_stream
