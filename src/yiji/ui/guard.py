"""The review UI's front door: loopback ``Host`` only, the per-process token, and safe response headers.

An ASGI middleware, so every route (the stylesheet included) passes through it:

1. ``Host`` must name a loopback host (``127.0.0.1``, ``localhost``, ``[::1]``), with or without a port;
   anything else (DNS rebinding, a proxy) gets 421.
2. The token (the package's stylesheet alone is served without it): ``?token=`` in the URL matching
   the process token sets an HttpOnly, SameSite=Strict cookie and redirects to the same URL without it
   (so it leaves the address bar and the history); otherwise the cookie must carry it. Missing or
   wrong: 403. The redirect stays on this origin: a path a browser could read as another host
   (``//evil.com``, ``/\\evil.com``, control characters it would drop) redirects to ``/`` instead.
3. Every response carries a Content-Security-Policy that allows only this origin's stylesheet and forms,
   no scripts or frames, with a same-origin referrer policy and ``nosniff``. A page that needs its own
   small inline script sends its own policy (:data:`CSP` plus a ``script-src`` with a per-response
   nonce, see :func:`csp_with_script`); that header then replaces this one.

CSRF tokens for writes are checked by the routes (:mod:`yiji.ui.app`); the page never holds the access
token itself, so a form cannot leak it.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

__all__ = ["COOKIE", "CSP", "Guard", "csp_with_script", "is_loopback_host", "local_path"]

COOKIE = "yiji_ui"
PUBLIC_STYLESHEET = "/static/style.css"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"same-origin"),  # not no-referrer: browsers then send ``Origin: null``
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


_CSP_HEADER = b"content-security-policy"


def csp_with_script(nonce: str) -> str:
    """The policy for a page with one inline script: :data:`CSP` plus that script's nonce, nothing else."""
    return f"{CSP}; script-src 'nonce-{nonce}'"


def is_loopback_host(host: str) -> bool:
    """True for ``127.0.0.1``, ``localhost`` or ``[::1]``, with or without ``:port``."""
    host = host.strip().lower()
    if host.startswith("["):
        name = host[: host.find("]") + 1] if "]" in host else host
        rest = host[len(name) :]
    else:
        name, _, port = host.partition(":")
        rest = f":{port}" if port else ""
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return False
    return name in _LOOPBACK


def local_path(path: str) -> str | None:
    """``path`` percent-encoded when a browser can only read it as a path on this origin, else None.

    A single leading ``/``; never ``//`` (another host), a backslash (browsers read ``/\\`` as ``//``)
    or a control character or space (browsers drop tabs and newlines, so ``/\\t/`` becomes ``//``).
    """
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return None
    if any(c <= " " or c == "\x7f" for c in path):
        return None
    return quote(path, safe="/:@!$&'()*+,;=-._~")


class Guard:
    """Wraps the app: checks ``Host`` and the token, adds the security headers."""

    def __init__(self, app: ASGIApp, token: str, page: Callable[[str, int, str], bytes]) -> None:
        self.app = app
        self.token = token
        self.page = page  # renders (message key, status, Accept-Language) to an HTML body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        language = headers.get("accept-language", "")
        if not is_loopback_host(headers.get("host", "")):
            await self._refuse(send, 421, "error.host", language)
            return
        if scope.get("path") == PUBLIC_STYLESHEET and scope.get("method") == "GET":
            await self._with_headers(scope, receive, send)  # package content, needed by the refusal pages
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        offered = query.get("token")
        if offered is not None and secrets.compare_digest(offered.encode(), self.token.encode()):
            rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
            path = local_path(scope.get("path", "/"))
            location = "/" if path is None else path + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await self._send(
                send, 303, b"", [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is the same as none
            cookies = SimpleCookie()
        held = cookies.get(COOKIE)
        if held is None or not secrets.compare_digest(held.value.encode(), self.token.encode()):
            await self._refuse(send, 403, "error.forbidden", language)
            return

        await self._with_headers(scope, receive, send)

    async def _with_headers(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                own = list(message.get("headers", []))
                has_policy = any(bytes(name).lower() == _CSP_HEADER for name, _ in own)
                added = [h for h in SECURITY_HEADERS if not (has_policy and h[0] == _CSP_HEADER)]
                message["headers"] = [*own, *added]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _refuse(self, send: Send, status: int, key: str, language: str) -> None:
        body = self.page(key, status, language)
        await self._send(send, status, body, [(b"content-type", b"text/html; charset=utf-8")])

    @staticmethod
    async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": body})
