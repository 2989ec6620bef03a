"""The wire shared by yiji's OpenAI-compatible clients: one JSON POST, with errors mapped once.

Invariants:

* ``httpx`` errors and HTTP statuses become :mod:`yiji.errors` here and nowhere else: timeouts,
  connection failures, 429 and 5xx are :class:`ProviderTransient`; other 4xx, an unusable URL and a
  body that is not JSON are :class:`ProviderPermanent`.
* Messages are sanitized: they name the endpoint's role ("extraction", "embedding") and at most an
  HTTP status or the *name* of the API-key variable, never a response body, a URL, a credential or
  any text that was sent.
* ``timeout`` bounds the whole request, not each read, and answers are capped in size; requests
  to one endpoint go one at a time (see :func:`post_json`).
* Every way a JSON answer can fail to parse is one outcome, never an exception: text that is not
  JSON, nesting deeper than :data:`MAX_DEPTH` (checked before the parser recurses), a number too
  long to convert, bytes that are not text and an escape of a lone UTF-16 surrogate all give
  :data:`NOT_JSON` (see :func:`loads_or_none`), which the callers turn into :class:`ProviderPermanent`.
* The API key is read from the environment at request time, by variable name, and sent only as a
  ``Bearer`` token.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from yiji.domain import jsonstream
from yiji.errors import ProviderPermanent, ProviderTransient

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_DEPTH",
    "NOT_JSON",
    "endpoint_url",
    "loads_or_none",
    "post_json",
    "public_endpoint",
    "shaped",
    "too_deep",
]

ModelT = TypeVar("ModelT", bound=BaseModel)

NOT_JSON: Any = object()
"""Returned by :func:`loads_or_none` for text that is not JSON (``None`` is valid JSON)."""


def endpoint_url(base_url: str, path: str) -> str:
    """``{base_url}/{path}`` with exactly one slash between them."""
    return f"{base_url.rstrip('/')}/{path.lstrip('/')}"


def public_endpoint(base_url: str) -> str:
    """The base URL without credentials, query or fragment: safe to store in a fingerprint."""
    import httpx

    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        return "invalid-url"
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}".rstrip("/")


DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
"""Answer-size cap when a caller names none (embeddings of a large batch stay well below it)."""


class _Deadline:
    """Shuts the request's socket down when the whole-request time is up.

    httpx timeouts bound each network operation, not the request: a server that sends one byte a
    second never trips them. The socket is captured through httpcore's ``trace`` extension when the
    connection is made (every request opens its own connection: ``Connection: close``), and a timer
    shuts it down at the deadline, which wakes a blocked read on every platform.
    """

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                if self.expired:
                    self._shutdown(sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                self._shutdown(sock)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


_ENDPOINT_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _endpoint_lock(url: str) -> threading.Lock:
    """One request in flight per endpoint URL in this process (a local model serves one at a time)."""
    with _LOCKS_GUARD:
        return _ENDPOINT_LOCKS.setdefault(url, threading.Lock())


def post_json(
    http: httpx.Client,
    url: str,
    payload: Mapping[str, object],
    *,
    what: str,
    api_key_env: str | None,
    environ: Mapping[str, str],
    timeout: float,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON answer (any JSON value).

    ``timeout`` bounds the whole request (waiting for the endpoint, headers and body), and the
    answer is read up to ``max_bytes``. Requests to one URL are serialized, so a request given up
    on is closed before the next one is sent instead of queueing behind it on the server.
    """
    import httpx  # imported here: commands that never call a provider do not load it

    headers = {"Accept": "application/json", "Connection": "close"}
    if api_key_env:
        key = environ.get(api_key_env)
        if not key:
            raise ProviderPermanent(
                f"{what} API key environment variable {api_key_env} is not set", reason="setup"
            )
        headers["Authorization"] = f"Bearer {key}"

    lock = _endpoint_lock(url)
    # Waiting for this process's previous request to the endpoint is bounded separately (by the
    # same timeout): that request ends at its own deadline at the latest.
    if not lock.acquire(timeout=timeout):
        raise ProviderTransient(f"{what} endpoint busy with another request for {timeout:g} s", reason="busy")
    try:
        remaining = timeout
        deadline = _Deadline(remaining)
        try:
            with deadline:
                status, body = _send(http, url, payload, headers, deadline, remaining, max_bytes, what)
        except httpx.TimeoutException as exc:
            raise ProviderTransient(
                f"{what} endpoint timed out after {timeout:g} s", reason="timeout"
            ) from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ProviderPermanent(f"{what} endpoint URL is not usable", reason="setup") from exc
        except httpx.TransportError as exc:
            if deadline.expired:
                raise ProviderTransient(
                    f"{what} endpoint timed out after {timeout:g} s", reason="timeout"
                ) from None
            raise ProviderTransient(f"{what} endpoint could not be reached", reason="unreachable") from exc
        except httpx.HTTPError as exc:
            raise ProviderPermanent(f"{what} endpoint request failed", reason="unreachable") from exc
    finally:
        lock.release()

    if status == 429 or status >= 500:
        raise ProviderTransient(f"{what} endpoint answered HTTP {status}", reason="http", status=status)
    if not 200 <= status < 300:
        raise ProviderPermanent(f"{what} endpoint answered HTTP {status}", reason="http", status=status)
    data = loads_or_none(body)
    if data is NOT_JSON:
        raise ProviderPermanent(f"{what} endpoint answered with a body that is not JSON")
    return data


def _send(
    http: httpx.Client,
    url: str,
    payload: Mapping[str, object],
    headers: dict[str, str],
    deadline: _Deadline,
    timeout: float,
    max_bytes: int,
    what: str,
) -> tuple[int, bytes]:
    import httpx

    with http.stream(
        "POST", url, json=payload, headers=headers, timeout=timeout, extensions={"trace": deadline.trace}
    ) as response:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise ProviderPermanent(f"{what} answer is larger than the {max_bytes}-byte limit")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise ProviderPermanent(f"{what} answer is larger than the {max_bytes}-byte limit")
            chunks.append(chunk)
            if deadline.expired:
                raise httpx.ReadTimeout("whole-request deadline")
        if deadline.expired:
            raise httpx.ReadTimeout("whole-request deadline")
        return response.status_code, b"".join(chunks)


# The two parsers below swallow their exceptions on purpose: a JSON decoder error carries the remote
# document and a pydantic error quotes the remote values, so they must not even travel as the
# ``__context__`` of the sanitized error raised afterwards.


MAX_DEPTH: Final = 64
"""Deepest nesting of arrays and objects an answer may have. A chat-completions envelope with a
memories list is about six levels deep and an embeddings answer three; a document nested thousands
of levels deep would make the parser (and anything walking its value) exhaust the stack."""
_STRING_OR_BRACKET: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
"""A JSON string (possibly cut off at the end of the text), or one bracket outside any string."""


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` opens more than ``limit`` arrays or objects inside each other (brackets inside
    strings do not count; an unclosed bracket does). Linear, without recursion."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth = max(0, depth - 1)
    return False


def loads_or_none(text: str | bytes) -> Any:
    """The decoded JSON value, or :data:`NOT_JSON` for any text the parser fails on or refuses
    (see the module's invariants)."""
    try:
        decoded = text.decode(json.detect_encoding(text)) if isinstance(text, bytes) else text
    except (UnicodeDecodeError, LookupError):
        return NOT_JSON
    if too_deep(decoded):
        return NOT_JSON
    value, problem = jsonstream.decode(decoded)
    return NOT_JSON if problem is not None else value


def shaped(model: type[ModelT], data: object) -> ModelT | None:
    """``data`` validated as ``model``, or ``None`` when it does not have that shape."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None
