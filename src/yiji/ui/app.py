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

Each page's data comes from one call into :class:`yiji.service.review_pages.ReviewPages` (one read
snapshot; the header's count included); each change is one call into the service. The handlers are
methods of :class:`ReviewApp`, which names what it needs: those pages, the service's write use cases,
the display zone and the :class:`yiji.ui.render.Screen` that renders.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import tzinfo
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from yiji.display import visible
from yiji.errors import Conflict, DatabaseGone, InvalidInput, NotFound, YijiError
from yiji.models import parse
from yiji.models.conversations import ConversationQuery, SessionQuery
from yiji.models.lifecycle import CorrectRequest, DeleteRequest
from yiji.models.memories import MemoryQuery, MemoryRecord, ReviewEdit
from yiji.models.recall import RecallQuery
from yiji.service.review_pages import MemoryView, ReviewPages
from yiji.timeutil import display_zone
from yiji.ui import views
from yiji.ui.guard import PUBLIC_STYLESHEET, Guard, Receive, Scope, Send, is_loopback_host
from yiji.ui.i18n import MESSAGES
from yiji.ui.render import Screen, environment

if TYPE_CHECKING:
    from collections.abc import Callable

    from yiji.service import MemoryService

__all__ = ["CONVERSATION_PAGE", "PAGE_SIZE", "ReviewApp", "build_app"]

PAGE_SIZE = 20
CONVERSATION_PAGE = 50
SESSION_PAGE = 50
EVENT_TEXT_SHOWN = 2000
"""Characters of an event shown in the conversation page; the memory page pages through the rest."""
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


def build_app(service: MemoryService, token: str, *, csrf: str | None = None) -> Guard:
    """The ASGI app over ``service``, behind the guard for ``token``."""
    zone = display_zone(service.config.display_timezone)
    pages = ReviewPages(service.db, service.clock, service)
    screen = Screen(environment(zone), csrf or secrets.token_urlsafe(32), pages.waiting)
    return Guard(ReviewApp(pages, service, screen, zone), token, screen.error_page)


class ReviewApp:
    """The routes: each page validates its input, makes one call for its data (``pages``) or its change
    (``service``) and renders through ``screen``; times typed in forms are read in the display ``zone``.

    Called as an ASGI app, it first checks that the database file is still the one opened (a 503 page
    for every request, the stylesheet aside, when it is not).
    """

    def __init__(
        self, pages: ReviewPages, service: MemoryService, screen: Screen, zone: tzinfo | None
    ) -> None:
        self.pages = pages
        self.service = service
        self.screen = screen
        self.zone = zone
        self.stylesheet = resources.files("yiji.ui").joinpath("static/style.css").read_bytes()
        self.app = Starlette(routes=self.routes())

    def routes(self) -> list[Route]:
        return [
            Route("/", self.home),
            Route("/memories", self.memories),
            Route("/memories/{memory_id}", self.memory),
            Route("/memories/{memory_id}/correct", self.correct, methods=["POST"]),
            Route("/memories/{memory_id}/delete", self.delete_preview, methods=["GET"]),
            Route("/memories/{memory_id}/delete", self.delete, methods=["POST"]),
            Route("/recall", self.recall),
            Route("/conversations", self.conversations),
            Route("/conversation", self.conversation),
            Route("/persona", self.persona),
            Route("/review", self.review),
            Route("/review/{memory_id}/{action:str}", self.review_decide, methods=["POST"]),
            Route("/static/style.css", self.style),
            Route("/favicon.ico", self.favicon),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Before each request: the database file must still be the one opened (else 503 for every page)."""
        if scope["type"] == "http" and scope.get("path") != PUBLIC_STYLESHEET:
            try:
                self.service.check_database()
            except DatabaseGone as exc:
                await self.screen.failure(Request(scope), exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    # -- helpers -------------------------------------------------------------------------------

    def time_input(self, value: str | None, field: str, *, end_of_day: bool = False) -> str | None:
        return views.time_input(value, self.zone, field, end_of_day=end_of_day)

    def scope_query(self, request: Request, **extra: Any) -> str:
        return self.screen.page(request).scope_query(**extra)

    async def read_form(self, request: Request) -> dict[str, str] | Response:
        """The urlencoded form of a write, after the CSRF and origin checks (or the refusal)."""
        origin = request.headers.get("origin")
        refused = self.screen.page(request).t("error.csrf")
        if origin not in (None, "null") and not is_loopback_host(urlsplit(origin).netloc):
            return self.screen.refusal(request, 403, refused)
        body = await _read_capped(request, MAX_FORM_BYTES)
        if body is None:  # and close the connection: the server would otherwise read the rest to discard it
            too_large = self.screen.refusal(request, 413, "form: too large")
            too_large.headers["connection"] = "close"
            return too_large
        try:
            form = form_fields(body)
        except InvalidInput as exc:
            return self.screen.refusal(request, 400, exc.message)
        offered = form.pop("csrf", "")
        if not secrets.compare_digest(offered.encode(), self.screen.csrf.encode()):
            return self.screen.refusal(request, 403, refused)
        return form

    def review_form(self, m: MemoryRecord) -> dict[str, str]:
        """The edit form of a proposal, filled with what it says now (review page and memory page)."""
        return {
            "text": m.text,
            "kind": m.kind,
            "subject": m.subject or "",
            "fact_key": m.fact_key or "",
            "valid_at": views.exact_time(m.valid_at, self.zone),
        }

    def memory_context(self, view: MemoryView) -> dict[str, Any]:
        """What the memory page's template shows of ``view``."""
        read = view.read
        record, text, start, end = read["memory"], read["text"], read["quote"]["start"], read["quote"]["end"]
        offset, limit, content = text["offset"], text["limit"], text["content"]
        previous, following = views.page_links(offset, limit, text["total_chars"])
        quote_page = None
        if start >= 0 and not (offset <= start < offset + len(content)):
            quote_page = (start // limit) * limit
        return {
            "waiting": view.waiting,
            "read": read,
            "review_form": self.review_form(record),
            "m": record,
            "presentation": view.presentation,
            "segments": views.highlight(content, offset, start, end),
            "previous": previous,
            "following": following,
            "quote_page": quote_page,
            "lineage": view.lineage if len(view.lineage) > 1 else [],
            "timeline": views.timeline(view.facts, record.id, view.now),
            "related": view.related,
        }

    # -- pages ---------------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        return RedirectResponse("/memories" + self.scope_query(request), status_code=303)

    async def memories(self, request: Request) -> Response:
        q = request.query_params
        filters = {k: q.get(k, "") for k in ("view", "kind", "basis", "subject", "fact_key", "text")}
        filters.update({k: q.get(k, "") for k in ("since", "until", "as_of")})
        filters["view"] = filters["view"] or "current"
        try:
            raw: dict[str, Any] = {
                **_scope(request),
                "view": q.get("view") or "current",
                "kinds": [q["kind"]] if q.get("kind") else None,
                "bases": [q["basis"]] if q.get("basis") else None,
                "subject": q.get("subject") or None,
                "fact_key": q.get("fact_key") or None,
                "text": q.get("text") or None,
                "since": self.time_input(q.get("since"), "since"),
                "until": self.time_input(q.get("until"), "until", end_of_day=True),
                "as_of": self.time_input(q.get("as_of"), "as_of", end_of_day=True),
                "newest_first": True,
                "offset": q.get("offset") or 0,
                "limit": PAGE_SIZE,
            }
            query = _given(MemoryQuery, raw)
            view = await _call(lambda: self.pages.memories(query))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput):
                return self.screen.failure(request, exc)
            return self.screen.render(
                request, "memories.html", status=400, page_data=None, filters=filters, error=exc.message
            )
        return self.screen.render(
            request,
            "memories.html",
            waiting=view.waiting,
            page_data=view.listing,
            filters=filters,
            error=None,
        )

    async def memory(self, request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        try:
            offset = int(request.query_params.get("offset") or 0)
        except ValueError:
            offset = -1
        try:
            view = await self.memory_view(request, memory_id, offset)
        except YijiError as exc:
            return self.screen.failure(request, exc)
        form = dict.fromkeys(CORRECT_FIELDS, "") | {"role": "user", "event_id": _correction_id()}
        return self.screen.render(request, "memory.html", **self.memory_context(view), form=form, error=None)

    async def memory_view(self, request: Request, memory_id: str, offset: int) -> MemoryView:
        persona, project = _scope(request).values()
        return await _call(
            lambda: self.pages.memory(memory_id, persona, project, offset=offset, limit=TEXT_PAGE)
        )

    async def correct(self, request: Request) -> Response:
        form = await self.read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        fields = {k: form.get(k, "") for k in CORRECT_FIELDS}
        raw: dict[str, Any] = {k: v for k, v in fields.items() if v.strip()}
        try:
            for key in ("valid_at", "occurred_at"):
                if key in raw:
                    raw[key] = self.time_input(raw[key], key)
            request_model = parse(CorrectRequest, {"memory_id": memory_id, **_scope(request), **raw})
            result = await _call(lambda: self.service.memory_correct(request_model))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput | Conflict):
                return self.screen.failure(request, exc)
            try:
                view = await self.memory_view(request, memory_id, 0)
            except YijiError as inner:
                return self.screen.failure(request, inner)
            status = 409 if isinstance(exc, Conflict) else 400
            context = self.memory_context(view)
            return self.screen.render(
                request, "memory.html", status, **context, form=fields, error=exc.message
            )
        target = f"/memories/{result.corrected_memory_id}" + self.scope_query(request)
        return self.screen.changed(target + "#lineage", "corrected")

    async def delete_preview(self, request: Request) -> Response:
        return await self.deletion_page(request)

    async def deletion_page(self, request: Request, status: int = 200, error: str | None = None) -> Response:
        """The dry run of a deletion, with the memories and events it would remove."""
        memory_id = request.path_params["memory_id"]
        persona, project = _scope(request).values()
        try:
            view = await _call(lambda: self.pages.deletion(memory_id, persona, project))
        except YijiError as exc:
            return self.screen.failure(request, exc)
        return self.screen.render(
            request,
            "delete.html",
            status,
            waiting=view.waiting,
            plan=view.plan,
            doomed=view.doomed,
            events=view.events,
            memory_id=memory_id,
            error=error,
        )

    async def delete(self, request: Request) -> Response:
        form = await self.read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        if form.get("confirm", "").strip().lower() not in CONFIRM_WORDS:
            return await self.deletion_page(request, 400, self.screen.page(request).t("delete.mismatch"))
        try:
            persona, project = _scope(request).values()
            request_model = DeleteRequest(memory_id=memory_id, persona=persona, project=project)
            done = await _call(lambda: self.service.memory_delete(request_model))
        except YijiError as exc:
            return self.screen.failure(request, exc)
        counts = (
            len(done.event_ids),
            len(done.memory_ids),
            done.relations,
            done.embeddings,
            done.cues,
            done.checkpoints,
        )
        return self.screen.changed("/memories" + self.scope_query(request), "deleted", counts)

    async def recall(self, request: Request) -> Response:
        q = request.query_params
        text = q.get("q", "")
        as_of, history = q.get("as_of", ""), bool(q.get("history"))
        form = {"as_of": as_of, "history": history}
        if not text.strip():
            return self.screen.render(request, "recall.html", query="", form=form, result=None, error=None)
        try:
            raw: dict[str, Any] = {
                "query": text,
                **{k: v for k, v in _scope(request).items() if v},
                "as_of": self.time_input(as_of, "as_of", end_of_day=True),
                "include_history": history,
            }
            query = _given(RecallQuery, raw)
            view = await _call(lambda: self.pages.recall(query))
        except YijiError as exc:
            if not isinstance(exc, InvalidInput):
                return self.screen.failure(request, exc)
            return self.screen.render(
                request, "recall.html", status=400, query=text, form=form, result=None, error=exc.message
            )
        return self.screen.render(
            request,
            "recall.html",
            waiting=view.waiting,
            query=text,
            form=form,
            result=view.result,
            hits={item.id: item for item in view.result.items},  # what a context item names (why.context_of)
            proposal_waits=view.proposed,
            error=None,
        )

    async def conversations(self, request: Request) -> Response:
        raw = {**_scope(request), "offset": request.query_params.get("offset") or 0, "limit": SESSION_PAGE}
        try:
            query = _given(SessionQuery, raw)
            view = await _call(lambda: self.pages.sessions(query))
        except YijiError as exc:
            return self.screen.failure(request, exc)
        return self.screen.render(request, "conversations.html", waiting=view.waiting, sessions=view.sessions)

    async def conversation(self, request: Request) -> Response:
        q = request.query_params
        raw = {
            **_scope(request),
            "session": q.get("session", ""),
            "event": q.get("event") or None,
            "offset": q.get("offset") or 0,
            "limit": CONVERSATION_PAGE,
        }
        try:
            query = _given(ConversationQuery, raw)
            view = await _call(lambda: self.pages.conversation(query))
        except YijiError as exc:
            return self.screen.failure(request, exc)
        return self.screen.render(
            request,
            "conversation.html",
            waiting=view.waiting,
            conversation=view.conversation,
            shown=EVENT_TEXT_SHOWN,
        )

    async def persona(self, request: Request) -> Response:
        persona, project = _scope(request).values()
        try:
            view = await _call(lambda: self.pages.persona(persona, project))
        except YijiError as exc:
            return self.screen.failure(request, exc)
        return self.screen.render(
            request,
            "persona.html",
            waiting=view.waiting,
            versions=view.versions,
            emotion=view.emotion,
            felt_in=view.felt_in,
        )

    async def review(self, request: Request) -> Response:
        return await self.review_page(request, request.query_params.get("after") or None)

    async def review_page(
        self,
        request: Request,
        after: str | None,
        *,
        status: int = 200,
        error: str | None = None,
        form: dict[str, str] | None = None,
    ) -> Response:
        persona, project = _scope(request).values()
        try:
            view = await _call(lambda: self.pages.review(persona, project, after=after, turns=REVIEW_TURNS))
        except NotFound:  # the proposal skipped to was decided or deleted meanwhile: start again
            return RedirectResponse("/review" + self.scope_query(request), status_code=303)
        except YijiError as exc:
            return self.screen.failure(request, exc)
        shown = view.proposal
        context: dict[str, Any] = {"review": view, "item": shown, "after": after or "", "error": error}
        if shown is not None:
            start, end, event_text = shown["quote"]["start"], shown["quote"]["end"], shown["event"].text
            offset = max(0, start - TEXT_PAGE // 2) if start >= 0 else 0
            window = event_text[offset : offset + TEXT_PAGE]
            context["segments"] = views.highlight(window, offset, start, end)
            context["cut"] = (offset > 0, offset + len(window) < len(event_text))
            context["form"] = form or self.review_form(shown["memory"])
        nonce = secrets.token_urlsafe(16)
        return self.screen.render(
            request, "review.html", status, waiting=view.waiting, nonce=nonce, **context
        )

    async def review_decide(self, request: Request) -> Response:
        form = await self.read_form(request)
        if isinstance(form, Response):
            return form
        memory_id = request.path_params["memory_id"]
        action = request.path_params["action"]
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
                        raw[key] = self.time_input(value, key) if key == "valid_at" else value
                edit = parse(ReviewEdit, raw)
            result = await _call(
                lambda: self.service.memory_review(
                    memory_id,
                    action,
                    **_scope(request),
                    reviewer=REVIEWER,
                    note=note,
                    edit=edit,
                    accept=form.get("accept") == "1",
                )
            )
        except YijiError as exc:
            if isinstance(exc, NotFound):
                return self.screen.failure(request, exc)
            fields = {k: form.get(k, "") for k in REVIEW_EDIT_FIELDS}
            status = 409 if isinstance(exc, Conflict) else 400
            return await self.review_page(request, after, status=status, error=exc.message, form=fields)
        target = "/review" + self.scope_query(request, after=after)
        if form.get("back") == "memory":  # decided on the memory's own page: show it as it is now
            target = f"/memories/{result.memory.id}" + self.scope_query(request)
        # confirmed as what the memory is now: accepted, rejected, or (edited, still waiting) edited
        state = result.memory.review_state
        return self.screen.changed(target, state if state in ("accepted", "rejected") else "edited")

    async def style(self, request: Request) -> Response:
        return Response(self.stylesheet, media_type="text/css; charset=utf-8")

    async def favicon(self, request: Request) -> Response:
        return Response(status_code=204)


async def _call(fn: Callable[[], T]) -> T:
    """A blocking service call, in a worker thread."""
    return await run_in_threadpool(fn)


def _scope(request: Request) -> dict[str, str | None]:
    q = request.query_params
    return {"persona": q.get("persona") or None, "project": q.get("project") or None}


def _given(model: type[M], raw: dict[str, Any]) -> M:
    """``raw`` parsed as ``model``, a field whose value is None left out so that it takes its default."""
    return parse(model, {k: v for k, v in raw.items() if v is not None})


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
