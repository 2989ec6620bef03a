"""A real loopback HTTP server that speaks the OpenAI-compatible API yiji uses, for tests.

``FakeProvider`` runs a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) in a thread and
answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings``. Each endpoint has a queue of
scripted :class:`Reply` values; when a queue is empty the endpoint answers a harmless default (no
memories; deterministic 8-dimensional vectors). Every request is recorded, headers included, so a
test can check what went over the wire.

A test may also answer each chat request from its content (:meth:`FakeProvider.answer_chat`).

Faults are ordinary replies: :func:`slow` (longer than the client's timeout), :func:`rate_limited`,
:func:`server_error` (its body contains :data:`FAKE_SECRET`), :func:`malformed_json` and
:func:`content_not_json` (a valid envelope whose content is not JSON). Fault bodies carry
:data:`FAKE_SECRET` so tests can prove the client never repeats a remote body.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import Loopback, QuietServer, RecordedRequest

__all__ = [
    "CHAT_PATH",
    "EMBEDDINGS_PATH",
    "FAKE_SECRET",
    "MOVED_TO_SHANGHAI",
    "FakeProvider",
    "RecordedRequest",
    "Reply",
    "chat_content",
    "chat_reply",
    "content_not_json",
    "dripping",
    "embeddings_reply",
    "huge",
    "malformed_json",
    "rate_limited",
    "raw_reply",
    "server_error",
    "slow",
]

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"
FAKE_SECRET = "sk-remote-SECRET-d41d8cd98f"
"""Appears in fault bodies; must never appear in an error message."""
MOVED_TO_SHANGHAI: dict[str, Any] = {
    "text": "用户搬到了上海",
    "quote": "最近搬到了上海",
    "kind": "fact",
    "basis": "user_statement",
    "confidence": 0.9,
    "subject": "user",
    "fact_key": "home.city",
}
"""A keyed fact the fake extraction endpoint is scripted to propose (from "我……最近搬到了上海")."""


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer. ``delay`` seconds pass before it is written."""

    status: int = 200
    body: bytes = b"{}"
    delay: float = 0.0
    content_type: str = "application/json"
    drip: float = 0.0
    """When positive, the answer is written one byte at a time with this pause between bytes."""
    drip_headers: bool = False
    """With ``drip``: the status line and headers are dripped too, not only the body."""
    send_length: bool = True
    """Send ``Content-Length``; without it the body ends when the connection closes."""


def raw_reply(status: int, body: bytes | str, content_type: str = "application/json") -> Reply:
    data = body.encode() if isinstance(body, str) else body
    return Reply(status=status, body=data, content_type=content_type)


def chat_content(content: str | None, *, model: str = "fake-model", finish_reason: str = "stop") -> Reply:
    """A well-formed chat-completions envelope with ``content`` as the message text; ``finish_reason``
    ``length`` says the answer was cut off by ``max_tokens``."""
    envelope = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content},
            }
        ],
    }
    return raw_reply(200, json.dumps(envelope, ensure_ascii=False))


def chat_reply(answer: object) -> Reply:
    """A chat-completions envelope whose content is ``answer`` as JSON text."""
    return chat_content(json.dumps(answer, ensure_ascii=False))


def embeddings_reply(vectors: list[list[float]], *, reverse: bool = False) -> Reply:
    """An embeddings answer; ``reverse`` lists the items backwards (clients sort by index)."""
    items = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    if reverse:
        items.reverse()
    return raw_reply(200, json.dumps({"object": "list", "data": items, "model": "fake-embed"}))


def slow(seconds: float, then: Reply | None = None) -> Reply:
    """``then`` (default: no memories), but only after ``seconds``."""
    base = then or chat_reply({"memories": []})
    return Reply(status=base.status, body=base.body, delay=seconds, content_type=base.content_type)


def dripping(per_byte: float = 1.0, *, headers: bool = False) -> Reply:
    """A valid (empty) answer written one byte every ``per_byte`` seconds, optionally headers too."""
    base = chat_reply({"memories": []})
    return Reply(body=base.body, drip=per_byte, drip_headers=headers)


def huge(size: int, *, send_length: bool = True) -> Reply:
    """A chat envelope padded with whitespace to ``size`` bytes (valid JSON once complete)."""
    base = chat_reply({"memories": []}).body
    return Reply(body=base + b" " * max(0, size - len(base)), send_length=send_length)


def rate_limited() -> Reply:
    return raw_reply(429, json.dumps({"error": {"message": f"slow down {FAKE_SECRET}"}}))


def server_error() -> Reply:
    return raw_reply(500, f"Internal error; debug token {FAKE_SECRET}", "text/plain")


def malformed_json() -> Reply:
    return raw_reply(200, '{"choices": [{"message": {"content": "' + FAKE_SECRET)


def content_not_json() -> Reply:
    return chat_content(f"Sure! Here is what I remember: {FAKE_SECRET}")


def _default_vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255 for b in digest[:8]]


class _Server(QuietServer):
    provider: FakeProvider


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        provider = self.server.provider
        provider._record(
            RecordedRequest(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
        )
        reply = provider._next_reply(self.path, body)
        if reply.delay and provider._stopping.wait(reply.delay):
            return
        try:
            if reply.drip > 0:
                self._drip(reply, provider)
                return
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if reply.send_length:
                self.send_header("Content-Length", str(len(reply.body)))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(reply.body)
        except OSError:
            pass

    def _drip(self, reply: Reply, provider: FakeProvider) -> None:
        head = (
            f"HTTP/1.1 {reply.status} OK\r\nContent-Type: {reply.content_type}\r\n"
            f"Content-Length: {len(reply.body)}\r\n\r\n"
        ).encode()
        self.close_connection = True
        if not reply.drip_headers:
            self.wfile.write(head)
            self.wfile.flush()
            head = b""
        for i in range(len(head) + len(reply.body)):
            byte = head[i : i + 1] if i < len(head) else reply.body[i - len(head) : i - len(head) + 1]
            self.wfile.write(byte)
            self.wfile.flush()
            if provider._stopping.wait(reply.drip):
                return


@dataclass
class FakeProvider(Loopback):
    """The loopback server. Use as a context manager or via the ``fake_provider`` fixture."""

    thread_name = "fake-provider"
    poll_interval = 0.01  # shutdown comes once per test

    requests: list[RecordedRequest] = field(default_factory=list)
    _queues: dict[str, deque[Reply]] = field(
        default_factory=lambda: {CHAT_PATH: deque(), EMBEDDINGS_PATH: deque()}
    )
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _server: _Server | None = None
    _thread: threading.Thread | None = None
    _chat_answer: Callable[[Any], Reply | None] | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def _bind(self) -> _Server:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        return server

    def stop(self) -> None:
        self._stopping.set()
        super().stop()

    # -- addressing -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake provider is not running"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting --------------------------------------------------------------------------------

    def script_chat(self, *replies: Reply) -> None:
        with self._lock:
            self._queues[CHAT_PATH].extend(replies)

    def script_embeddings(self, *replies: Reply) -> None:
        with self._lock:
            self._queues[EMBEDDINGS_PATH].extend(replies)

    def answer_chat(self, answer: Callable[[Any], Reply | None]) -> None:
        """Answer chat requests the queue does not script with ``answer(request JSON)`` (``None``: the
        default), so that each event of a run can get the memories its own text holds."""
        with self._lock:
            self._chat_answer = answer

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def _next_reply(self, path: str, body: bytes) -> Reply:
        with self._lock:
            queue = self._queues.get(path)
            if queue is None:
                return raw_reply(404, json.dumps({"error": {"message": "no such route"}}))
            if queue:
                return queue.popleft()
            answer = self._chat_answer
        if path == CHAT_PATH:
            scripted = answer(json.loads(body)) if answer is not None else None
            return scripted or chat_reply({"memories": []})
        try:
            texts = json.loads(body).get("input", [])
        except ValueError:
            return raw_reply(400, json.dumps({"error": {"message": "bad request"}}))
        if isinstance(texts, str):
            texts = [texts]
        return embeddings_reply([_default_vector(str(t)) for t in texts])
