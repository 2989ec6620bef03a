"""What the loopback HTTP servers of the tests share (:mod:`tests.fakeprovider`, :mod:`tests.hostmodel`): a
threading server on 127.0.0.1 that ignores a client hanging up mid-answer, served on a thread from
``start`` (or ``with``) until ``stop``, and the requests it records (with the strings their JSON bodies
hold)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any, ClassVar, Self


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    """The request's path (:mod:`tests.hostmodel` records it without its query string)."""
    headers: dict[str, str]
    """Header names lowercased."""
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def strings(self) -> list[str]:
        """Every string the JSON body holds, in document order (see :func:`json_strings`)."""
        return json_strings(self.json())

    @property
    def text(self) -> str:
        """:attr:`strings` joined by newlines."""
        return "\n".join(self.strings)


def json_strings(value: Any) -> list[str]:
    """Every string inside a JSON value, in document order: what a model would be shown of a request,
    whatever the wire format nests it in (system blocks, messages, input items)."""
    found: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, list):
            for child in item:
                walk(child)
        elif isinstance(item, dict):
            for child in item.values():
                walk(child)

    walk(value)
    return found


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gives up or closes its connection mid-answer (a timeout, a cancelled request) is
        # not the test's concern: often it is the test's point.
        pass


class Loopback:
    """Start, stop and record for a dataclass that declares ``requests``, ``_lock``, ``_server`` and
    ``_thread`` and builds its server in :meth:`_bind`."""

    thread_name: ClassVar[str]
    poll_interval: ClassVar[float]
    """Seconds between the serving thread's checks for shutdown: short keeps ``stop`` fast."""
    daemon: ClassVar[bool] = False

    requests: list[RecordedRequest]
    _lock: threading.Lock
    _server: QuietServer | None
    _thread: threading.Thread | None

    def _bind(self) -> QuietServer:
        raise NotImplementedError

    def start(self) -> Self:
        server = self._bind()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            name=self.thread_name,
            daemon=self.daemon,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
