"""Serving the review UI: a loopback socket, a per-process token, uvicorn, and (optionally) the browser."""

from __future__ import annotations

import contextlib
import secrets
import socket
import sys
import threading
import webbrowser

import uvicorn

from yiji.errors import InvalidInput
from yiji.service import MemoryService
from yiji.ui.app import build_app

__all__ = ["HOST", "serve"]

HOST = "127.0.0.1"


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise InvalidInput("port", "is in use or not allowed; choose another (0 picks a free one)") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(service: MemoryService, *, port: int, open_browser: bool) -> None:
    """Serve until interrupted. Prints the URL (with its token) on stdout first."""
    sock = _bind(port)
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{sock.getsockname()[1]}/memories?token={token}"
    print(f"yiji ui: {url}", flush=True)
    print("Only this link opens the UI (it holds this run's token). Ctrl-C stops the server.", flush=True)
    config = uvicorn.Config(
        build_app(service, token),
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
