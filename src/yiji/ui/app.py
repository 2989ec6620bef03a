"""The review UI's routes: each page validates its input, calls the service and renders a template.

Pages (every one takes ``persona`` and ``project`` query parameters, defaulting to the configuration):

* ``GET /memories``: filters (view, kind, basis, subject, fact key, text, validity window, as-of), paged;
* ``GET /memories/{id}``: the memory, its source event page with the quote highlighted, who said it,
  co-derived memories, relations, correction lineage and the timeline of its fact key, and the forms;
* ``POST /memories/{id}/correct``: ``memory_correct`` with the same fields;
* ``GET /memories/{id}/delete``: the dry-run preview; ``POST`` deletes after a typed confirmation;
* ``GET /recall``: ``memory_recall`` (optionally as of a day, or with history) with each result's ``why``
  in words;
* ``GET /conversations``: the scope's sessions; ``GET /conversation?session=``: one session's events in
  order (paged), each with the memories derived from it (``&event=`` opens the page holding that event);
* ``GET /persona``: persona versions (read-only) and the current emotion;
* ``GET /review``: the oldest proposal waiting for review (after ``after``, the last one skipped), its
  source event with the quote highlighted and the neighbouring turns of the session; keys a / r / e / s
  (or j) accept, reject, edit and skip through a small inline script allowed by a per-response nonce;
* ``POST /review/{id}/accept|reject|edit``: the decision, then the next proposal.

Every page's header shows how many proposals wait.

Times are shown in the display zone (``[display] timezone``) through the ``local_time`` filter, and the
browser's date fields are read in that zone. A change (a correction, a deletion, a review decision)
answers with a redirect that carries a signed, one-time confirmation cookie; the next page shows it once
and clears it.

Before each request the database file is checked to be the one opened: a file deleted, moved or
replaced while the UI runs makes every page a 503 error page, and nothing is written.

Writes need the per-process CSRF token in the form and, when the browser names an ``Origin``, a
loopback origin. A form body above :data:`MAX_FORM_BYTES` is answered 413: refused by its
``Content-Length`` before it is read, or, sent in chunks, as soon as it passes the cap. A field whose
bytes (percent-encoded or raw) are not UTF-8 text is answered 400 naming the field, as the command line
refuses such text: nothing is stored with U+FFFD in place of what was sent. The access token is checked
before any route by :class:`yiji.ui.guard.Guard`.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from yiji.display import visible
from yiji.errors import Conflict, DatabaseGone, InvalidInput, NotFound, YijiError
from yiji.invocation import yiji_command
from yiji.models import parse
from yiji.models.conversations import ConversationQuery, SessionQuery
from yiji.models.lifecycle import CorrectRequest, DeleteRequest
from yiji.models.memories import BASES, KINDS, MemoryQuery, ReviewEdit
from yiji.models.recall import RecallQuery
from yiji.service import MemoryService
from yiji.timeutil import display_zone, local_time
from yiji.ui import views
from yiji.ui.guard import PUBLIC_STYLESHEET, Guard, Receive, Scope, Send, csp_with_script, is_loopback_host
from yiji.ui.i18n import MESSAGES, counts_of, name_of, persona_note, pick_language

__all__ = ["CONVERSATION_PAGE", "PAGE_SIZE", "build_app"]

PAGE_SIZE = 20
CONVERSATION_PAGE = 50
SESSION_PAGE = 50
EVENT_TEXT_SHOWN = 2000
"""Characters of an event shown in the conversation page; the memory page pages through the rest."""
FLASH_COOKIE = "yiji_flash"
TEXT_PAGE = 4000
REVIEWER = "ui"
REVIEW_TURNS = 3
"""Neighbouring turns of the session shown on each side of a proposal's source event."""
REVIEW_EDIT_FIELDS = ("text", "kind", "subject", "fact_key", "valid_at")
MAX_FORM_BYTES = 8 * 1024 * 1024
CONFIRM_WORDS = frozenset({MESSAGES["en"]["delete.word"], MESSAGES["zh"]["delete.word"]})
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
M = TypeVar("M", bound=BaseModel)


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


def _given(model: type[M], raw: dict[str, Any]) -> M:
    """``raw`` parsed as ``model``, a field whose value is None left out so that it takes its default."""
    return parse(model, {k: v for k, v in raw.items() if v is not None})


def _shown(value: Any) -> Any:
    """Every value a template writes: text with its control and bidirectional characters made visible
    (``\\x1b``, ``\\u202e``) before it is escaped; markup the templates built is left as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def build_app(service: MemoryService, token: str, *, csrf: str | None = None) -> Guard:
    """The ASGI app over ``service``, behind the guard for ``token``."""
    csrf_token = csrf or secrets.token_urlsafe(32)
    env = Environment(
        loader=PackageLoader("yiji.ui", "templates"),
        autoescape=True,
        finalize=_shown,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    zone = display_zone(service.config.display_timezone)

    def shown_time(value: datetime | str | None) -> str:
        return "" if value is None else local_time(value, zone)

    def time_input(value: str | None, field: str, *, end_of_day: bool = False) -> str | None:
        return views.time_input(value, zone, field, end_of_day=end_of_day)

    env.globals.update(KINDS=KINDS, BASES=BASES, YIJI=yiji_command())  # YIJI: how to run yiji here
    env.filters["local_time"] = shown_time
    env.filters["why_in_words"] = views.why_in_words
    stylesheet = resources.files("yiji.ui").joinpath("static/style.css").read_bytes()

    def flash_text(page: _Page, flash: views.Flash | None) -> str | None:
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

    def render(
        request: Request, template: str, status: int = 200, *, nonce: str | None = None, **context: Any
    ) -> HTMLResponse:
        page = _Page(request, csrf_token)
        if status != 503:  # the database is gone: nothing to count
            try:
                page.waiting = service.review_waiting(page.persona, page.project)
            except YijiError:  # an invalid scope: the page itself says so
                page.waiting = None
        held = request.cookies.get(FLASH_COOKIE)
        flash = flash_text(page, views.read_flash(csrf_token, held))
        html = env.get_template(template).render(page=page, t=page.t, flash=flash, nonce=nonce, **context)
        headers = {"content-security-policy": csp_with_script(nonce)} if nonce else None
        response = HTMLResponse(html, status_code=status, headers=headers)
        if held is not None:  # shown once
            response.delete_cookie(FLASH_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    def changed(target: str, kind: str, counts: Sequence[int] = ()) -> RedirectResponse:
        """The answer to a change: back to a page, which confirms it once."""
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            FLASH_COOKIE,
            views.flash_value(csrf_token, kind, counts),
            path="/",
            httponly=True,
            samesite="strict",
        )
        return response

    def error_page(key: str, status: int, accept_language: str) -> bytes:
        lang = pick_language(accept_language)
        html = env.get_template("refused.html").render(lang=lang, message=MESSAGES[lang][key], status=status)
        return html.encode()

    def failure(request: Request, exc: YijiError) -> HTMLResponse:
        return render(request, "error.html", status=_status(exc), message=exc.message)

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
        body = await _read_capped(request, MAX_FORM_BYTES)
        if body is None:  # and close the connection: the server would otherwise read the rest to discard it
            refused = render(request, "error.html", status=413, message="form: too large")
            refused.headers["connection"] = "close"
            return refused
        try:
            form = form_fields(body)
        except InvalidInput as exc:
            return render(request, "error.html", status=400, message=exc.message)
        offered = form.pop("csrf", "")
        if not secrets.compare_digest(offered.encode(), csrf_token.encode()):
            return render(request, "error.html", status=403, message=_Page(request, "").t("error.csrf"))
        return form

    async def home(request: Request) -> Response:
        return RedirectResponse("/memories" + _Page(request, "").scope_query(), status_code=303)

    async def memories(request: Request) -> Response:
        q = request.query_params
        filters = {k: q.get(k, "") for k in ("view", "kind", "basis", "subject", "fact_key", "text")}
        filters.update({k: q.get(k, "") for k in ("since", "until", "as_of")})
        filters["view"] = filters["view"] or "current"
        try:
            raw: dict[str, Any] = {
                **scope_args(request),
                "view": q.get("view") or "current",
                "kinds": [q["kind"]] if q.get("kind") else None,
                "bases": [q["basis"]] if q.get("basis") else None,
                "subject": q.get("subject") or None,
                "fact_key": q.get("fact_key") or None,
                "text": q.get("text") or None,
                "since": time_input(q.get("since"), "since"),
                "until": time_input(q.get("until"), "until", end_of_day=True),
                "as_of": time_input(q.get("as_of"), "as_of", end_of_day=True),
                "newest_first": True,
                "offset": q.get("offset") or 0,
                "limit": PAGE_SIZE,
            }
            query = _given(MemoryQuery, raw)
            result = await call(lambda: service.memory_page(query))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput):
                return failure(request, exc)
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
        ends = {e for r in read["relations"] for e in (r.from_id, r.to_id)} - {record.id}
        related = await call(lambda: service.memory_get_many(sorted(ends), **scope)) if ends else {}
        return memory_context(read, lineage, facts, related)

    def review_form(m: Any) -> dict[str, str]:
        """The edit form of a proposal, filled with what it says now (review page and memory page)."""
        return {
            "text": m.text,
            "kind": m.kind,
            "subject": m.subject or "",
            "fact_key": m.fact_key or "",
            "valid_at": views.exact_time(m.valid_at, zone),
        }

    def memory_context(
        read: dict[str, Any], lineage: list[Any], facts: list[Any], related: dict[str, Any]
    ) -> dict[str, Any]:
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
            "review_form": review_form(record),
            "m": record,
            "presentation": service.present_memory(record, service.clock.now()),
            "segments": views.highlight(text["content"], text["offset"], quote["start"], quote["end"]),
            "previous": previous,
            "following": following,
            "quote_page": quote_page,
            "lineage": lineage if len(lineage) > 1 else [],
            "timeline": views.timeline(facts, record.id, service.clock.now()),
            "related": related,
        }

    async def correct(request: Request) -> Response:
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        scope = scope_args(request)
        fields = {k: form.get(k, "") for k in CORRECT_FIELDS}
        raw: dict[str, Any] = {k: v for k, v in fields.items() if v.strip()}
        try:
            for key in ("valid_at", "occurred_at"):
                if key in raw:
                    raw[key] = time_input(raw[key], key)
            request_model = parse(CorrectRequest, {"memory_id": memory_id, **scope, **raw})
            result = await call(lambda: service.memory_correct(request_model))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput | Conflict):
                return failure(request, exc)
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
        return changed(target + "#lineage", "corrected")

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
        counts = (
            len(done.event_ids),
            len(done.memory_ids),
            done.relations,
            done.embeddings,
            done.cues,
            done.checkpoints,
        )
        return changed("/memories" + _Page(request, "").scope_query(), "deleted", counts)

    async def recall(request: Request) -> Response:
        q = request.query_params
        text = q.get("q", "")
        as_of, history = q.get("as_of", ""), bool(q.get("history"))
        form = {"as_of": as_of, "history": history}
        if not text.strip():
            return render(request, "recall.html", query="", form=form, result=None, error=None)
        try:
            raw: dict[str, Any] = {
                "query": text,
                **{k: v for k, v in scope_args(request).items() if v},
                "as_of": time_input(as_of, "as_of", end_of_day=True),
                "include_history": history,
            }
            query = _given(RecallQuery, raw)
            result = await call(lambda: service.memory_recall(query))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput):
                return failure(request, exc)
            return render(
                request, "recall.html", status=400, query=text, form=form, result=None, error=exc.message
            )
        hits = {item.id: item for item in result.items}  # what a context item names (why.context_of)
        shown_raw = [i.event.id for i in result.items if i.event is not None]
        waiting = (
            await call(lambda: service.events_with_proposals(shown_raw, **scope_args(request)))
            if shown_raw
            else set()
        )
        return render(
            request,
            "recall.html",
            query=text,
            form=form,
            result=result,
            hits=hits,
            waiting=waiting,
            error=None,
        )

    async def conversations(request: Request) -> Response:
        raw = {
            **scope_args(request),
            "offset": request.query_params.get("offset") or 0,
            "limit": SESSION_PAGE,
        }
        try:
            query = _given(SessionQuery, raw)
            sessions = await call(lambda: service.session_page(query))
        except YijiError as exc:
            return failure(request, exc)
        return render(request, "conversations.html", sessions=sessions)

    async def conversation(request: Request) -> Response:
        q = request.query_params
        raw = {
            **scope_args(request),
            "session": q.get("session", ""),
            "event": q.get("event") or None,
            "offset": q.get("offset") or 0,
            "limit": CONVERSATION_PAGE,
        }
        try:
            query = _given(ConversationQuery, raw)
            found = await call(lambda: service.conversation_page(query))
        except YijiError as exc:
            return failure(request, exc)
        return render(request, "conversation.html", conversation=found, shown=EVENT_TEXT_SHOWN)

    async def persona(request: Request) -> Response:
        scope = scope_args(request)
        try:
            versions = await call(lambda: service.persona_history(scope["persona"]))
            feeling = await call(lambda: service.current_emotion(**scope))
            felt = [feeling.emotion.memory_id] if feeling.emotion else []
            source = await call(lambda: service.memory_get_many(felt, **scope)) if felt else {}
        except YijiError as exc:
            return failure(request, exc)
        return render(
            request,
            "persona.html",
            versions=list(reversed(versions)),
            emotion=feeling.emotion,
            felt_in=next(iter(source.values()), None),
        )

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
            waiting = await call(lambda: service.extraction_counts(**scope))
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
        context: dict[str, Any] = {
            "queue": queue,
            "item": shown,
            "after": after or "",
            "error": error,
            "to_extract": waiting["to_extract"],
        }
        if shown is not None:
            m, event = shown["memory"], shown["event"]
            start, end = shown["quote"]["start"], shown["quote"]["end"]
            offset = max(0, start - TEXT_PAGE // 2) if start >= 0 else 0
            window = event.text[offset : offset + TEXT_PAGE]
            context["segments"] = views.highlight(window, offset, start, end)
            context["cut"] = (offset > 0, offset + len(window) < len(event.text))
            context["form"] = form or review_form(m)
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
                        raw[key] = time_input(value, key) if key == "valid_at" else value
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
        target = "/review" + _Page(request, "").scope_query(after=after)
        if form.get("back") == "memory":  # decided on the memory's own page: show it as it is now
            target = f"/memories/{result.memory.id}" + _Page(request, "").scope_query()
        # confirmed as what the memory is now: accepted, rejected, or (edited, still waiting) edited
        state = result.memory.review_state
        return changed(target, state if state in ("accepted", "rejected") else "edited")

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
            Route("/conversations", conversations),
            Route("/conversation", conversation),
            Route("/persona", persona),
            Route("/review", review),
            Route("/review/{memory_id}/{action:str}", review_decide, methods=["POST"]),
            Route("/static/style.css", style),
            Route("/favicon.ico", favicon),
        ]
    )

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        """Before each request: the database file must still be the one opened (else 503 for every page)."""
        if scope["type"] == "http" and scope.get("path") != PUBLIC_STYLESHEET:
            try:
                service.check_database()
            except DatabaseGone as exc:
                await failure(Request(scope), exc)(scope, receive, send)
                return
        await app(scope, receive, send)

    return Guard(watched, token, error_page)


def _status(exc: YijiError) -> int:
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


async def _read_capped(request: Request, cap: int) -> bytes | None:
    """The request body, or None when it is larger than ``cap`` bytes.

    A declared ``Content-Length`` above the cap is refused before any of the body is read; a body
    without one (chunked) is read only until it passes the cap, so no more than ``cap`` bytes are ever
    held.
    """
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)


def form_fields(body: bytes) -> dict[str, str]:
    """The fields of an urlencoded form body, each decoded as strict UTF-8 (the last of a repeated name).

    Raises InvalidInput naming the field (never its value) whose bytes are not UTF-8 text.
    """
    # latin-1 maps every byte to one character and back, so the exact bytes of each name and value,
    # percent-encoded or not, reach the strict decoding below.
    pairs = parse_qsl(body.decode("latin-1"), keep_blank_values=True, encoding="latin-1")
    fields: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        try:
            name = raw_name.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("form", "a field name is not UTF-8 text") from None
        try:
            fields[name] = raw_value.encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(visible(name)[:40], "is not UTF-8 text") from None
    return fields


def _correction_id() -> str:
    """An id for the correction event a form will create, so a resubmitted form does not store it twice."""
    return f"ui-correction-{uuid.uuid4().hex}"
