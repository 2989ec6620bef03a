"""Rendering the review UI's pages: the Jinja2 environment, what every template receives, the header's
count of proposals waiting, and the one-time confirmation (flash) after a change.

Every value a template writes passes :func:`shown` (control and bidirectional characters made visible)
before Jinja2 escapes it; undefined names are errors (``StrictUndefined``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from yiji.display import visible
from yiji.errors import Conflict, DatabaseGone, InvalidInput, NotFound, YijiError
from yiji.invocation import yiji_command
from yiji.models.memories import BASES, KINDS
from yiji.timeutil import local_time
from yiji.ui import views
from yiji.ui.guard import csp_with_script
from yiji.ui.i18n import MESSAGES, counts_of, name_of, persona_note, pick_language

__all__ = ["FLASH_COOKIE", "Page", "Screen", "environment", "shown", "status_of"]

FLASH_COOKIE = "yiji_flash"

Waiting = Callable[[str | None, str | None], int]
"""How many proposals of a scope (persona, project) wait for review."""


class Page:
    """What every template receives: the language, its words, the scope and the CSRF token."""

    def __init__(self, request: Request, csrf: str) -> None:
        self.lang = pick_language(request.headers.get("accept-language"))
        self.words = MESSAGES[self.lang]
        self.persona = request.query_params.get("persona") or None
        self.project = request.query_params.get("project") or None
        self.csrf = csrf
        self.path = request.url.path
        self.waiting: int | None = None

    def t(self, key: str, **values: Any) -> str:
        text = self.words.get(key, key)
        return text.format(**values) if values else text

    def counted(self, key: str, **numbers: int) -> str:
        """The message ``key`` with counts, each in the words the language takes (``1 memory``)."""
        return self.t(key, **counts_of(self.lang, **numbers))

    def name(self, value: str) -> str:
        return name_of(self.lang, value)

    def note(self, value: str) -> str:
        return persona_note(self.lang, value)

    def scope_query(self, **extra: Any) -> str:
        """A query string carrying the scope plus ``extra`` (empty values dropped)."""
        items = {"persona": self.persona, "project": self.project, **extra}
        kept = [(k, str(v)) for k, v in items.items() if v not in (None, "", False)]
        return ("?" + urlencode(kept)) if kept else ""


def shown(value: Any) -> Any:
    """Every value a template writes: text with its control and bidirectional characters made visible
    (``\\x1b``, ``\\u202e``) before it is escaped; markup the templates built is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def environment(zone: tzinfo | None) -> Environment:
    """The templates, with times shown in the display ``zone``."""
    env = Environment(
        loader=PackageLoader("yiji.ui", "templates"),
        autoescape=True,
        finalize=shown,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def shown_time(value: datetime | str | None) -> str:
        return "" if value is None else local_time(value, zone)

    env.globals.update(KINDS=KINDS, BASES=BASES, YIJI=yiji_command())  # YIJI: how to run yiji here
    env.filters["local_time"] = shown_time
    env.filters["why_in_words"] = views.why_in_words
    return env


def status_of(exc: YijiError) -> int:
    """The HTTP status of an error a service call raised."""
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, InvalidInput):
        return 400
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, DatabaseGone):
        return 503
    return 500


class Screen:
    """Turns a page's data into a response: the template with the page's words, the header's count and
    a confirmation left by the change before (shown once), or the redirect that confirms a change."""

    def __init__(self, env: Environment, csrf: str, waiting: Waiting) -> None:
        self.env = env
        self.csrf = csrf
        self._waiting = waiting

    def page(self, request: Request) -> Page:
        return Page(request, self.csrf)

    def render(
        self,
        request: Request,
        template: str,
        status: int = 200,
        *,
        waiting: int | None = None,
        nonce: str | None = None,
        **context: Any,
    ) -> HTMLResponse:
        """``template`` for ``request``; ``waiting`` is the header's count when the page's data holds it
        (else it is read here, and left out on an invalid scope, which the page itself names)."""
        page = self.page(request)
        if waiting is not None:
            page.waiting = waiting
        elif status != 503:  # the database is gone: nothing to count
            try:
                page.waiting = self._waiting(page.persona, page.project)
            except YijiError:  # an invalid scope: the page itself says so
                page.waiting = None
        held = request.cookies.get(FLASH_COOKIE)
        flash = self._flash_text(page, views.read_flash(self.csrf, held))
        html = self.env.get_template(template).render(
            page=page, t=page.t, flash=flash, nonce=nonce, **context
        )
        headers = {"content-security-policy": csp_with_script(nonce)} if nonce else None
        response = HTMLResponse(html, status_code=status, headers=headers)
        if held is not None:  # shown once
            response.delete_cookie(FLASH_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def failure(self, request: Request, exc: YijiError) -> HTMLResponse:
        return self.render(request, "error.html", status=status_of(exc), message=exc.message)

    def refusal(self, request: Request, status: int, message: str) -> HTMLResponse:
        return self.render(request, "error.html", status=status, message=message)

    def changed(self, target: str, kind: str, counts: Sequence[int] = ()) -> RedirectResponse:
        """The answer to a change: back to a page, which confirms it once."""
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            FLASH_COOKIE,
            views.flash_value(self.csrf, kind, counts),
            path="/",
            httponly=True,
            samesite="strict",
        )
        return response

    def error_page(self, key: str, status: int, accept_language: str) -> bytes:
        """The page the guard answers with before any route (no scope, no header)."""
        lang = pick_language(accept_language)
        html = self.env.get_template("refused.html").render(
            lang=lang, message=MESSAGES[lang][key], status=status
        )
        return html.encode()

    @staticmethod
    def _flash_text(page: Page, flash: views.Flash | None) -> str | None:
        if flash is None:
            return None
        if flash.kind == "deleted":
            events, memories, relations, embeddings, cues, checkpoints = flash.counts
            done = page.counted("delete.done", events=events, memories=memories)
            counts = page.counted(
                "delete.counts",
                relations=relations,
                embeddings=embeddings,
                cues=cues,
                checkpoints=checkpoints,
            )
            return done + ("" if page.lang == "zh" else " ") + counts
        return page.t(f"flash.{flash.kind}")
