"""The review UI's routes: each page validates its input, calls the service and renders a template.

Pages (every one takes ``persona`` and ``project`` query parameters, defaulting to the configuration):

* ``GET /memories``: filters (view, kind, basis, subject, fact key, text, validity window, as-of), paged;
* ``GET /memories/{id}``: the memory, its source event page with the quote highlighted, who said it,
  co-derived memories, relations, correction lineage and the timeline of its fact key, and the forms;
* ``POST /memories/{id}/correct``: ``memory_correct`` with the same fields;
* ``GET /memories/{id}/delete``: the dry-run preview; ``POST`` deletes after a typed confirmation;
* ``GET /recall``: ``memory_recall`` with each result's ``why``;
* ``GET /persona``: persona versions (read-only) and the current emotion;
* ``GET /review``: the oldest proposal waiting for review (after ``after``, the last one skipped), its
  source event with the quote highlighted and the neighbouring turns of the session; keys a / r / e / s
  (or j) accept, reject, edit and skip through a small inline script allowed by a per-response nonce;
* ``POST /review/{id}/accept|reject|edit``: the decision, then the next proposal.

Every page's header shows how many proposals wait.

Writes need the per-process CSRF token in the form and, when the browser names an ``Origin``, a
loopback origin. The access token is checked before any route by :class:`yiji.ui.guard.Guard`.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from yiji.errors import Conflict, InvalidInput, NotFound, YijiError
from yiji.models import parse
from yiji.models.lifecycle import CorrectRequest, DeleteRequest
from yiji.models.memories import BASES, KINDS, MemoryQuery, ReviewEdit
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import to_db
from yiji.ui import views
from yiji.ui.guard import Guard, csp_with_script, is_loopback_host
from yiji.ui.i18n import MESSAGES, name_of, pick_language

__all__ = ["PAGE_SIZE", "build_app"]

PAGE_SIZE = 20
TEXT_PAGE = 4000
REVIEWER = "ui"
REVIEW_TURNS = 3
"""Neighbouring turns of the session shown on each side of a proposal's source event."""
REVIEW_EDIT_FIELDS = ("text", "kind", "subject", "fact_key", "valid_at")
MAX_FORM_BYTES = 8 * 1024 * 1024
CONFIRM_WORDS = frozenset({MESSAGES["en"]["delete.word"], MESSAGES["zh"]["delete.word"]})
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LOCAL_MINUTE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$")
CORRECT_FIELDS = (
    "statement",
    "text",
    "quote",
    "kind",
    "basis",
    "subject",
    "fact_key",
    "valid_at",
    "confidence",
    "valence",
    "arousal",
    "gist",
    "role",
    "session",
    "occurred_at",
    "event_id",
)

T = TypeVar("T")


class _Page:
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

    def name(self, value: str) -> str:
        return name_of(self.lang, value)

    def scope_query(self, **extra: Any) -> str:
        """A query string carrying the scope plus ``extra`` (empty values dropped)."""
        items = {"persona": self.persona, "project": self.project, **extra}
        kept = [(k, str(v)) for k, v in items.items() if v not in (None, "", False)]
        return ("?" + urlencode(kept)) if kept else ""


def _when(value: datetime | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return to_db(value)[:16].replace("T", " ") + " UTC"


def _time_input(value: str | None, *, end_of_day: bool = False) -> str | None:
    """Browser date/datetime inputs lack a timezone: read them as UTC; other text is passed on as typed."""
    if not value:
        return None
    value = value.strip()
    if _DATE.match(value):
        return value + ("T23:59:59.999999Z" if end_of_day else "T00:00:00Z")
    if _LOCAL_MINUTE.match(value):
        return value + ("" if value.count(":") == 2 else ":00") + "Z"
    return value


def build_app(service: MemoryService, token: str, *, csrf: str | None = None) -> Guard:
    """The ASGI app over ``service``, behind the guard for ``token``."""
    csrf_token = csrf or secrets.token_urlsafe(32)
    env = Environment(
        loader=PackageLoader("yiji.ui", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(when=_when, KINDS=KINDS, BASES=BASES)
    env.filters["explain"] = views.explain
    stylesheet = resources.files("yiji.ui").joinpath("static/style.css").read_bytes()

    def render(
        request: Request, template: str, status: int = 200, *, nonce: str | None = None, **context: Any
    ) -> HTMLResponse:
        page = _Page(request, csrf_token)
        try:
            page.waiting = service.review_waiting(page.persona, page.project)
        except YijiError:  # an invalid scope: the page itself says so
            page.waiting = None
        html = env.get_template(template).render(page=page, t=page.t, nonce=nonce, **context)
        headers = {"content-security-policy": csp_with_script(nonce)} if nonce else None
        return HTMLResponse(html, status_code=status, headers=headers)

    def error_page(key: str, status: int, accept_language: str) -> bytes:
        lang = pick_language(accept_language)
        html = env.get_template("refused.html").render(lang=lang, message=MESSAGES[lang][key], status=status)
        return html.encode()

    def failure(request: Request, exc: YijiError) -> HTMLResponse:
        status = 404 if isinstance(exc, NotFound) else (409 if isinstance(exc, Conflict) else 400)
        if not isinstance(exc, InvalidInput | Conflict):
            status = 500
        return render(request, "error.html", status=status, message=exc.message)

    async def call(fn: Callable[[], T]) -> T:
        return await run_in_threadpool(fn)

    def scope_args(request: Request) -> dict[str, Any]:
        q = request.query_params
        return {"persona": q.get("persona") or None, "project": q.get("project") or None}

    async def read_form(request: Request) -> dict[str, str] | Response:
        """The urlencoded form of a write, after the CSRF and origin checks (or the refusal)."""
        origin = request.headers.get("origin")
        if origin not in (None, "null") and not is_loopback_host(urlsplit(origin).netloc):
            return render(request, "error.html", status=403, message=_Page(request, "").t("error.csrf"))
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return render(request, "error.html", status=413, message="form: too large")
        form = dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))
        offered = form.pop("csrf", "")
        if not secrets.compare_digest(offered.encode(), csrf_token.encode()):
            return render(request, "error.html", status=403, message=_Page(request, "").t("error.csrf"))
        return form

    async def home(request: Request) -> Response:
        return RedirectResponse("/memories" + _Page(request, "").scope_query(), status_code=303)

    async def memories(request: Request) -> Response:
        q = request.query_params
        raw: dict[str, Any] = {
            **scope_args(request),
            "view": q.get("view") or "current",
            "kinds": [q["kind"]] if q.get("kind") else None,
            "bases": [q["basis"]] if q.get("basis") else None,
            "subject": q.get("subject") or None,
            "fact_key": q.get("fact_key") or None,
            "text": q.get("text") or None,
            "since": _time_input(q.get("since")),
            "until": _time_input(q.get("until"), end_of_day=True),
            "as_of": _time_input(q.get("as_of"), end_of_day=True),
            "newest_first": True,
            "offset": q.get("offset") or 0,
            "limit": PAGE_SIZE,
        }
        filters = {k: q.get(k, "") for k in ("view", "kind", "basis", "subject", "fact_key", "text")}
        filters.update({k: q.get(k, "") for k in ("since", "until", "as_of")})
        filters["view"] = filters["view"] or "current"
        try:
            query = parse(MemoryQuery, {k: v for k, v in raw.items() if v is not None})
            result = await call(lambda: service.memory_page(query))
        except YijiError as exc:
            return render(
                request, "memories.html", status=400, page_data=None, filters=filters, error=exc.message
            )
        return render(request, "memories.html", page_data=result, filters=filters, error=None)

    async def memory(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        scope = scope_args(request)
        try:
            offset = int(request.query_params.get("offset") or 0)
        except ValueError:
            offset = -1
        try:
            view = await memory_view(memory_id, scope, offset)
        except YijiError as exc:
            return failure(request, exc)
        return render(
            request,
            "memory.html",
            **view,
            form=dict.fromkeys(CORRECT_FIELDS, "") | {"role": "user", "event_id": _correction_id()},
            error=None,
        )

    async def memory_view(memory_id: str, scope: dict[str, Any], offset: int) -> dict[str, Any]:
        """What the memory page shows: its evidence page, correction lineage and the fact key's timeline."""
        read = await call(lambda: service.memory_read(memory_id, **scope, offset=offset, limit=TEXT_PAGE))
        lineage = await call(lambda: service.memory_lineage(memory_id, **scope))
        record = read["memory"]
        facts = (
            await call(lambda: service.fact_history(record.subject, record.fact_key, **scope))
            if record.subject and record.fact_key
            else []
        )
        return memory_context(read, lineage, facts)

    def memory_context(read: dict[str, Any], lineage: list[Any], facts: list[Any]) -> dict[str, Any]:
        record = read["memory"]
        text = read["text"]
        quote = read["quote"]
        previous, following = views.page_links(text["offset"], text["limit"], text["total_chars"])
        quote_page = None
        if quote["start"] >= 0 and not (
            text["offset"] <= quote["start"] < text["offset"] + len(text["content"])
        ):
            quote_page = (quote["start"] // text["limit"]) * text["limit"]
        return {
            "read": read,
            "m": record,
            "presentation": service.present_memory(record, service.clock.now()),
            "segments": views.highlight(text["content"], text["offset"], quote["start"], quote["end"]),
            "previous": previous,
            "following": following,
            "quote_page": quote_page,
            "lineage": lineage if len(lineage) > 1 else [],
            "timeline": views.timeline(facts, record.id, service.clock.now()),
        }

    async def correct(request: Request) -> Response:
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        scope = scope_args(request)
        fields = {k: form.get(k, "") for k in CORRECT_FIELDS}
        raw: dict[str, Any] = {k: v for k, v in fields.items() if v.strip()}
        for key in ("valid_at", "occurred_at"):
            if key in raw:
                raw[key] = _time_input(raw[key])
        try:
            request_model = parse(CorrectRequest, {"memory_id": memory_id, **scope, **raw})
            result = await call(lambda: service.memory_correct(request_model))
        except YijiError as exc:
            try:
                view = await memory_view(memory_id, scope, 0)
            except YijiError as inner:
                return failure(request, inner)
            return render(
                request,
                "memory.html",
                status=409 if isinstance(exc, Conflict) else 400,
                **view,
                form=fields,
                error=exc.message,
            )
        target = f"/memories/{result.corrected_memory_id}" + _Page(request, "").scope_query()
        return RedirectResponse(target + "#lineage", status_code=303)

    async def delete_view(memory_id: str, scope: dict[str, Any]) -> dict[str, Any]:
        """The dry run of a deletion, with the memories and events it would remove."""
        plan = await call(
            lambda: service.memory_delete(DeleteRequest(memory_id=memory_id, dry_run=True, **scope))
        )
        doomed = await call(lambda: [service.memory_get(i, **scope) for i in plan.memory_ids])
        events = await call(lambda: [service.event_show(i, **scope) for i in plan.event_ids])
        return {"plan": plan, "doomed": doomed, "events": events, "memory_id": memory_id}

    async def delete_preview(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        try:
            view = await delete_view(memory_id, scope_args(request))
        except YijiError as exc:
            return failure(request, exc)
        return render(request, "delete.html", **view, error=None)

    async def delete(request: Request) -> Response:
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        scope = scope_args(request)
        if form.get("confirm", "").strip().lower() not in CONFIRM_WORDS:
            try:
                view = await delete_view(memory_id, scope)
            except YijiError as exc:
                return failure(request, exc)
            page = _Page(request, "")
            return render(request, "delete.html", status=400, **view, error=page.t("delete.mismatch"))
        try:
            done = await call(lambda: service.memory_delete(DeleteRequest(memory_id=memory_id, **scope)))
        except YijiError as exc:
            return failure(request, exc)
        return render(request, "deleted.html", result=done)

    async def recall(request: Request) -> Response:
        text = request.query_params.get("q", "")
        if not text.strip():
            return render(request, "recall.html", query="", result=None, error=None)
        try:
            query = parse(RecallQuery, {"query": text, **{k: v for k, v in scope_args(request).items() if v}})
            result = await call(lambda: service.memory_recall(query))
        except YijiError as exc:
            return render(request, "recall.html", status=400, query=text, result=None, error=exc.message)
        return render(request, "recall.html", query=text, result=result, error=None)

    async def persona(request: Request) -> Response:
        scope = scope_args(request)
        try:
            versions = await call(lambda: service.persona_history(scope["persona"]))
            feeling = await call(lambda: service.current_emotion(**scope))
        except YijiError as exc:
            return failure(request, exc)
        return render(request, "persona.html", versions=list(reversed(versions)), emotion=feeling.emotion)

    async def review(request: Request) -> Response:
        return await review_page(request, request.query_params.get("after") or None)

    async def review_page(
        request: Request,
        after: str | None,
        *,
        status: int = 200,
        error: str | None = None,
        form: dict[str, str] | None = None,
    ) -> Response:
        scope = scope_args(request)
        try:
            queue = await call(lambda: service.review_queue(**scope, limit=1, after=after))
            head = queue["proposals"][0] if queue["proposals"] else None
            shown = (
                await call(lambda: service.review_context(head.id, **scope, turns=REVIEW_TURNS))
                if head is not None
                else None
            )
        except NotFound:  # the proposal skipped to was decided or deleted meanwhile: start again
            return RedirectResponse("/review" + _Page(request, "").scope_query(), status_code=303)
        except YijiError as exc:
            return failure(request, exc)
        done = request.query_params.get("done")
        context: dict[str, Any] = {
            "queue": queue,
            "item": shown,
            "after": after or "",
            "error": error,
            "done": done if done in ("accept", "reject", "edit") else None,
        }
        if shown is not None:
            m, event = shown["memory"], shown["event"]
            start, end = shown["quote"]["start"], shown["quote"]["end"]
            offset = max(0, start - TEXT_PAGE // 2) if start >= 0 else 0
            window = event.text[offset : offset + TEXT_PAGE]
            context["segments"] = views.highlight(window, offset, start, end)
            context["cut"] = (offset > 0, offset + len(window) < len(event.text))
            context["form"] = form or {
                "text": m.text,
                "kind": m.kind,
                "subject": m.subject or "",
                "fact_key": m.fact_key or "",
                "valid_at": to_db(m.valid_at),
            }
        return render(request, "review.html", status=status, nonce=secrets.token_urlsafe(16), **context)

    async def review_decide(request: Request) -> Response:
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        action = request.path_params["action"]
        scope = scope_args(request)
        after = form.get("after") or None
        note = form.get("note", "").strip() or None
        edit = None
        try:
            if action == "edit":
                raw: dict[str, Any] = {}
                for key in REVIEW_EDIT_FIELDS:
                    value = form.get(key, "").strip()
                    if key in ("subject", "fact_key"):
                        raw[key] = value or None  # cleared: the key is dropped
                    elif value:
                        raw[key] = _time_input(value) if key == "valid_at" else value
                edit = parse(ReviewEdit, raw)
            result = await call(
                lambda: service.memory_review(
                    memory_id,
                    action,
                    **scope,
                    reviewer=REVIEWER,
                    note=note,
                    edit=edit,
                    accept=form.get("accept") == "1",
                )
            )
        except YijiError as exc:
            if isinstance(exc, NotFound):
                return failure(request, exc)
            fields = {k: form.get(k, "") for k in REVIEW_EDIT_FIELDS}
            status = 409 if isinstance(exc, Conflict) else 400
            return await review_page(request, after, status=status, error=exc.message, form=fields)
        target = "/review" + _Page(request, "").scope_query(after=after, done=result.action)
        return RedirectResponse(target, status_code=303)

    async def style(request: Request) -> Response:
        return Response(stylesheet, media_type="text/css; charset=utf-8")

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/memories", memories),
            Route("/memories/{memory_id}", memory),
            Route("/memories/{memory_id}/correct", correct, methods=["POST"]),
            Route("/memories/{memory_id}/delete", delete_preview, methods=["GET"]),
            Route("/memories/{memory_id}/delete", delete, methods=["POST"]),
            Route("/recall", recall),
            Route("/persona", persona),
            Route("/review", review),
            Route("/review/{memory_id}/{action:str}", review_decide, methods=["POST"]),
            Route("/static/style.css", style),
            Route("/favicon.ico", favicon),
        ]
    )
    return Guard(app, token, error_page)


def _correction_id() -> str:
    """An id for the correction event a form will create, so a resubmitted form does not store it twice."""
    return f"ui-correction-{uuid.uuid4().hex}"
