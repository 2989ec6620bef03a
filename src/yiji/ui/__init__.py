"""``yiji ui``: a local review web app, an adapter over :class:`yiji.service.MemoryService`.

A person browses, checks and fixes what yiji remembers: memories with filters and pages, one memory with
its highlighted evidence, correction lineage and fact timeline, corrections, permanent deletion with a
dry-run preview, recall with its explanation, persona versions and the current emotion, and the review
queue of proposed memories (accept, reject, edit or skip by keyboard).

Invariants (enforced in :mod:`yiji.ui.guard` and the templates):

* bound to 127.0.0.1 only; a request whose ``Host`` is not a loopback name is refused;
* a random per-process token, given once in the URL, then kept in an HttpOnly, SameSite=Strict cookie;
* every write (POST) carries a per-process CSRF token and a same-origin ``Origin`` when the browser sends one;
* no external asset: the stylesheet is served from this package; a Content-Security-Policy forbids
  everything else. No script, except the review queue's few lines of keyboard handling, inline in its
  template and allowed by a nonce made for that one response;
* every stored text is escaped (Jinja2 autoescape), so text such as ``<script>`` shows as text; its
  control and bidirectional characters are shown as escapes (``\\x1b``, ``\\u202e``: one rule,
  :func:`yiji.display.visible`, applied to every value a template writes), and each element showing
  stored text is a ``<bdi>``, so right-to-left text cannot reorder what is around it;
* request bodies, request lines and headers are bounded: 413, 414 and 431, never a reset connection;
* the database file is the one opened: deleted, moved or replaced, every page is a 503 error page;
* no SQL and no domain rule here: each page gets its data from one call into
  :class:`yiji.service.review_pages.ReviewPages` (one read snapshot) and renders it; each change is one
  service call.

Starlette, uvicorn and Jinja2 are imported only when the app is built, so the rest of the CLI starts
without them.
"""
