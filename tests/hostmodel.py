"""A loopback model server for the real hosts (Claude Code, Codex), for tests.

``HostModel`` runs a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (port 0) in a thread and speaks the two
wire formats the hosts use:

- the Anthropic Messages API, as ``ANTHROPIC_BASE_URL`` points Claude Code at it: ``POST /v1/messages``,
  streamed (``"stream": true``: server-sent events ``message_start``, ``content_block_start``, ``ping``,
  ``content_block_delta`` with a ``text_delta``, ``content_block_stop``, ``message_delta``, ``message_stop``)
  or as one JSON message; ``POST /v1/messages/count_tokens``;
- the OpenAI Responses API, as a Codex custom provider with ``wire_api = "responses"`` uses it:
  ``POST /v1/responses`` streamed (``response.created``, ``response.in_progress``,
  ``response.output_item.added``, ``response.content_part.added``, ``response.output_text.delta``,
  ``response.output_text.done``, ``response.content_part.done``, ``response.output_item.done``,
  ``response.completed``) or as one JSON response; ``GET /v1/models``.

Every other request is recorded and answered at once, a ``HEAD`` probe with ``200`` and no body, any other
path with ``404``, so a test sees it rather than a host hanging on it.

Each answer is plain text, deterministic and unique within the server's life: ``reply N from the loopback
model`` where N counts the answers given. Every request is recorded with its headers and body, so a test can
check what a host sent: that the pack reached a session's first request once, that no persona text did.
"""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import Loopback, QuietServer, RecordedRequest, json_strings

__all__ = ["MESSAGES_PATH", "RESPONSES_PATH", "HostModel", "RecordedRequest", "json_strings"]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
RESPONSES_PATH = "/v1/responses"
MODELS_PATH = "/v1/models"


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode() for name, data in events
    )


def _usage_anthropic(output: str) -> dict[str, int]:
    return {"input_tokens": 10, "output_tokens": max(1, len(output.split()))}


def _anthropic_message(message_id: str, model: str, text: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": _usage_anthropic(text),
    }


def _anthropic_stream(message_id: str, model: str, text: str) -> bytes:
    start = _anthropic_message(message_id, model, text) | {
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    words = text.split(" ")
    deltas = [(w if i == 0 else " " + w) for i, w in enumerate(words)]
    return _sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            ("ping", {"type": "ping"}),
            *[
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}},
                )
                for d in deltas
            ],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": _usage_anthropic(text)["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def _response_object(
    response_id: str, model: str, status: str, output: list[Any], tokens: int = 15
) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1764979200,
        "status": status,
        "model": model,
        "output": output,
        "usage": None
        if status != "completed"
        else {
            "input_tokens": tokens - 5,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens,
        },
    }


def _responses_stream(response_id: str, item_id: str, model: str, text: str, tokens: int) -> bytes:
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _response_object(response_id, model, "in_progress", [])}),
        ("response.in_progress", {"response": _response_object(response_id, model, "in_progress", [])}),
        (
            "response.output_item.added",
            {"output_index": 0, "item": item | {"status": "in_progress", "content": []}},
        ),
        ("response.content_part.added", where | {"part": part | {"text": ""}}),
        ("response.output_text.delta", where | {"delta": text}),
        ("response.output_text.done", where | {"text": text}),
        ("response.content_part.done", where | {"part": part}),
        ("response.output_item.done", {"output_index": 0, "item": item}),
        (
            "response.completed",
            {"response": _response_object(response_id, model, "completed", [item], tokens)},
        ),
    ]
    return _sse(
        [(name, {"type": name, "sequence_number": n, **data}) for n, (name, data) in enumerate(events)]
    )


class _Server(QuietServer):
    daemon_threads = True
    model: HostModel


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(chunks)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            body = gzip.decompress(body)
        return body

    def _record(self, body: bytes) -> RecordedRequest:
        request = RecordedRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.server.model._record(request)
        return request

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if content_type == "text/event-stream":
                self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except OSError:
            pass

    def do_HEAD(self) -> None:
        self._record(b"")
        self._send(200, b"")

    def do_GET(self) -> None:
        request = self._record(b"")
        if request.path == MODELS_PATH:
            self._send(200, json.dumps(self.server.model.models()).encode())
        else:
            self._send(404, b'{"error": {"type": "not_found_error", "message": "no such route"}}')

    def do_POST(self) -> None:
        request = self._record(self._body())
        try:
            payload = request.json()
        except ValueError:
            self._send(400, b'{"error": {"type": "invalid_request_error", "message": "not JSON"}}')
            return
        if not isinstance(payload, dict):
            payload = {}
        model = self.server.model
        stream = payload.get("stream") is True
        name = str(payload.get("model") or "loopback-model")
        if request.path == COUNT_TOKENS_PATH:
            self._send(200, json.dumps({"input_tokens": max(1, len(request.body) // 4)}).encode())
        elif request.path == MESSAGES_PATH:
            n, text = model._answer()
            message_id = f"msg_loopback_{n:04d}"
            if stream:
                self._send(200, _anthropic_stream(message_id, name, text), "text/event-stream")
            else:
                self._send(200, json.dumps(_anthropic_message(message_id, name, text)).encode())
        elif request.path == RESPONSES_PATH:
            n, text = model._answer()
            response_id, item_id = f"resp_loopback_{n:04d}", f"msg_loopback_{n:04d}"
            tokens = model.usage_tokens
            if stream:
                body = _responses_stream(response_id, item_id, name, text, tokens)
                self._send(200, body, "text/event-stream")
            else:
                part = {"type": "output_text", "text": text, "annotations": []}
                item = {"id": item_id, "type": "message", "status": "completed", "role": "assistant"}
                whole = _response_object(response_id, name, "completed", [item | {"content": [part]}], tokens)
                self._send(200, json.dumps(whole).encode())
        else:
            self._send(404, b'{"error": {"type": "not_found_error", "message": "no such route"}}')


@dataclass
class HostModel(Loopback):
    """The loopback model server. Use as a context manager."""

    thread_name = "host-model"
    poll_interval = 0.05
    daemon = True

    requests: list[RecordedRequest] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    """Every answer text given, in order."""
    usage_tokens: int = 15
    """The tokens a Responses answer reports as used; more than a host's compaction limit makes it compact."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def _bind(self) -> _Server:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.model = self
        return server

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, without a path: Claude Code adds ``/v1/messages`` itself."""
        assert self._server is not None, "the host model server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "loopback-model", "object": "model", "owned_by": "yiji"}]}

    def requests_to(self, path: str, method: str = "POST") -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path and r.method == method]

    def _answer(self) -> tuple[int, str]:
        with self._lock:
            n = len(self.answers) + 1
            text = f"reply {n} from the loopback model"
            self.answers.append(text)
            return n, text
