"""Serving the review UI: a loopback socket, a per-process token, uvicorn, and (optionally) the browser.

uvicorn runs with its HTTP/1.1 protocol adapted (:class:`_Protocol`): a request head longer than
:data:`MAX_REQUEST_HEAD` is answered 414 (the request line, a huge query string) or 431 (the headers),
and the connection is closed gently, so the client reads the answer rather than a connection reset.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
import threading
import urllib.parse
import webbrowser

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from yiji.errors import InvalidInput
from yiji.service import MemoryService
from yiji.ui.app import build_app

__all__ = ["HOST", "serve"]

HOST = "127.0.0.1"
MAX_REQUEST_HEAD = 64 * 1024
"""Bytes of request line and headers read before a request is refused (414 or 431)."""
LINGER_SECONDS = 5.0
LINGER_BYTES = 64 * 1024 * 1024
"""After such a refusal, what the client still sends is read and dropped for this long (or this much)."""


class _Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, answering a request head that is too long with 414 or 431.

    uvicorn answers any request h11 cannot parse with a bare 400 and closes the socket at once; with
    most of a 1 MB request line still unread, the close is a reset and the client never sees the
    answer. Here the answer names the limit, then the server stops writing and drops what the client
    still sends (up to :data:`LINGER_BYTES` for :data:`LINGER_SECONDS`) before closing.
    """

    _lingering = False
    _dropped = 0

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self.transport.close()
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        buffered, _ = self.conn.trailing_data
        if len(buffered) <= MAX_REQUEST_HEAD:
            super().send_400_response(msg)
            return
        status, what = (431, "request headers are") if b"\n" in buffered else (414, "request line (URL) is")
        body = f"{status}: the {what} longer than {MAX_REQUEST_HEAD // 1024} KiB\n".encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=status, headers=headers),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self._lingering = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise InvalidInput(
            "--port",
            f"{port} on {HOST} is in use (another yiji ui?) or not allowed; choose another with --port, or "
            "--port 0 for a free one",
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    service: MemoryService,
    *,
    port: int,
    open_browser: bool,
    persona: str | None = None,
    project: str | None = None,
) -> None:
    """Serve until interrupted. Prints the URL (with its token) on stdout first.

    ``persona`` and ``project`` (the command line's scope) are carried in the link, so the page opens on
    that scope; the pages fall back to the configuration's scope without them.
    """
    sock = _bind(port)
    token = secrets.token_urlsafe(32)
    scope = {key: value for key, value in (("persona", persona), ("project", project)) if value}
    query = urllib.parse.urlencode({**scope, "token": token})
    url = f"http://{HOST}:{sock.getsockname()[1]}/memories?{query}"
    print(f"yiji ui: {url}", flush=True)
    print("Only this link opens the UI (it holds this run's token). Ctrl-C stops the server.", flush=True)
    config = uvicorn.Config(
        build_app(service, token),
        http=_Protocol,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    if open_browser:
        threading.Timer(0.5, lambda: _open(url)).start()
    try:
        server.run(sockets=[sock])
    finally:
        with contextlib.suppress(OSError):
            sock.close()


def _open(url: str) -> None:
    try:
        webbrowser.open(url)
    except Exception:  # no browser here: the printed link still works
        print("yiji ui: could not open a browser; open the link above", file=sys.stderr)
