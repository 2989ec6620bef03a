"""The review UI without a browser: language choice, the Host check, quote highlighting, timeline geometry,
and the app in process through Starlette's test client (real service, real SQLite file)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from yiji.config import Config
from yiji.db import Database
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest, MemoryRecord
from yiji.service import MemoryService
from yiji.ui import views
from yiji.ui.app import build_app
from yiji.ui.guard import COOKIE, is_loopback_host
from yiji.ui.i18n import MESSAGES, pick_language

from .conftest import run_yiji
from .ui_helpers import SCRIPT_TEXT, Seeded, peak_rss_kib, raw_request, seed, ui_process

TOKEN = "test-token-123"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "en"),
        ("", "en"),
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("fr-FR, zh-TW;q=0.5", "zh"),
        ("de, fr", "en"),
        ("en;q=0.2, zh;q=0.7", "zh"),
        ("zh;q=0, en;q=0.1", "en"),
        ("zh;q=bogus, en", "en"),
    ],
)
def test_pick_language(header: str | None, expected: str) -> None:
    assert pick_language(header) == expected


def test_both_languages_have_the_same_words() -> None:
    assert set(MESSAGES["zh"]) == set(MESSAGES["en"])


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8765", True),
        ("127.0.0.1", True),
        ("localhost:80", True),
        ("LOCALHOST", True),
        ("[::1]:8765", True),
        ("evil.example", False),
        ("127.0.0.1.evil.example", False),
        ("localhost.evil.example:8765", False),
        ("127.0.0.2:8765", False),
        ("127.0.0.1:80x", False),
        ("", False),
        ("[::1]junk", False),
    ],
)
def test_is_loopback_host(host: str, ok: bool) -> None:
    assert is_loopback_host(host) is ok


@pytest.mark.parametrize(
    ("content", "offset", "start", "end", "expected"),
    [
        ("abcdef", 0, 2, 4, [("ab", False), ("cd", True), ("ef", False)]),
        ("abcdef", 0, 0, 6, [("abcdef", True)]),
        ("cdef", 2, 0, 4, [("cd", True), ("ef", False)]),  # the quote began on the previous page
        ("abcd", 0, 2, 9, [("ab", False), ("cd", True)]),  # and goes on to the next
        ("abcdef", 10, 2, 4, [("abcdef", False)]),  # on another page
        ("abcdef", 0, -1, -1, [("abcdef", False)]),  # not found
    ],
)
def test_highlight(content: str, offset: int, start: int, end: int, expected: list[tuple[str, bool]]) -> None:
    assert [(s.text, s.quote) for s in views.highlight(content, offset, start, end)] == expected


@pytest.mark.parametrize(
    ("offset", "limit", "total", "expected"),
    [(0, 10, 5, (None, None)), (0, 10, 25, (None, 10)), (10, 10, 25, (0, 20)), (20, 10, 25, (10, None))],
)
def test_page_links(offset: int, limit: int, total: int, expected: tuple[int | None, int | None]) -> None:
    assert views.page_links(offset, limit, total) == expected


def _fact(mid: str, start: datetime, end: datetime | None) -> MemoryRecord:
    return MemoryRecord(
        id=mid, persona="p", project="q", event_id="e", kind="fact", basis="user_statement", text=mid,
        quote=mid, confidence=1.0, valid_at=start, invalid_at=end, origin="manual", created_at=start,
    )  # fmt: skip


def test_timeline_geometry() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    facts = [_fact("a", t0, t0 + timedelta(days=25)), _fact("b", t0 + timedelta(days=25), None)]
    line = views.timeline(facts, "b", t0 + timedelta(days=100))
    assert line is not None
    a, b = line.bars
    assert (a.left, a.width, a.focus, a.open_ended) == (0.0, 25.0, False, False)
    assert (b.left, b.width, b.focus, b.open_ended) == (25.0, 75.0, True, True)
    assert views.timeline([], "x", t0) is None


@pytest.fixture
def seeded(db_path: Path) -> Seeded:
    return seed(db_path, datetime.now(UTC))


@pytest.fixture
def client(db_path: Path, seeded: Seeded) -> Iterator[TestClient]:
    service = MemoryService(Database(db_path), Config(db=db_path))
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        assert c.get(f"/memories?token={TOKEN}", follow_redirects=False).status_code == 303
        yield c
    service.close()


def test_pages_render_in_both_languages(client: TestClient, seeded: Seeded) -> None:
    zh = client.get("/memories", headers={"Accept-Language": "zh-CN"})
    en = client.get("/memories", headers={"Accept-Language": "en"})
    assert '<html lang="zh-CN">' in zh.text and "当前" in zh.text
    assert '<html lang="en">' in en.text and "Current" in en.text
    for path in [
        "/recall?q=tea",
        "/persona",
        f"/memories/{seeded.hangzhou}",
        f"/memories/{seeded.hike}/delete",
    ]:
        assert client.get(path).status_code == 200, path


def test_stored_text_is_escaped(client: TestClient, seeded: Seeded) -> None:
    page = client.get(f"/memories/{seeded.script}").text
    assert "<script>" not in page
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    assert SCRIPT_TEXT not in page


def test_bad_filters_name_the_field(client: TestClient) -> None:
    page = client.get("/memories?since=yesterday")
    error = re.search(r'<p class="error" role="alert">([^<]*)</p>', page.text)
    assert page.status_code == 400 and error
    assert "since" in error.group(1) and "yesterday" not in error.group(1)
    assert client.get("/memories?offset=9223372036854775808").status_code == 400
    assert client.get("/memories?view=everything").status_code == 400


def test_unknown_memory_and_scope(client: TestClient, seeded: Seeded) -> None:
    assert client.get("/memories/mem_missing").status_code == 404
    assert client.get(f"/memories/{seeded.tea}?project=elsewhere").status_code == 404
    assert client.get("/memories?persona=bad%20id").status_code == 400


def test_deletion_needs_the_typed_word(client: TestClient, seeded: Seeded) -> None:
    preview = client.get(f"/memories/{seeded.hike}/delete")
    csrf = re.search(r'name="csrf" value="([^"]+)"', preview.text)
    assert csrf
    refused = client.post(f"/memories/{seeded.hike}/delete", data={"csrf": csrf.group(1), "confirm": "yes"})
    assert refused.status_code == 400
    assert client.get(f"/memories/{seeded.hike}").status_code == 200
    done = client.post(f"/memories/{seeded.hike}/delete", data={"csrf": csrf.group(1), "confirm": "delete"})
    assert done.status_code == 200 and "Deleted 1 event(s)" in done.text
    assert client.get(f"/memories/{seeded.hike}").status_code == 404


def test_a_repeated_correction_form_is_stored_once(client: TestClient, seeded: Seeded) -> None:
    page = client.get(f"/memories/{seeded.tea}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    event_id = re.search(r'name="event_id" value="([^"]+)"', page)
    assert csrf and event_id
    form = {"csrf": csrf.group(1), "event_id": event_id.group(1), "statement": "我喝碧螺春"}
    first = client.post(f"/memories/{seeded.tea}/correct", data=form, follow_redirects=False)
    again = client.post(f"/memories/{seeded.tea}/correct", data=form, follow_redirects=False)
    assert first.status_code == again.status_code == 303
    assert first.headers["location"] == again.headers["location"]


def test_cli_ui_checks_the_port(db_path: Path) -> None:
    bad = run_yiji("--db", str(db_path), "ui", "--no-browser", "--port", "70000")
    assert bad.code == 2 and "argument --port: must be a whole number from 0 to 65535" in bad.err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = run_yiji("--db", str(db_path), "ui", "--no-browser", "--port", str(port))
    assert busy.code == 2 and "port: is in use" in busy.err


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.916016, "0.916"),
        (True, "yes"),
        ({"lexical": 1.0, "cosine": 0.0}, "lexical 1.000 · cosine 0.000"),
        (["fts", "related"], "fts, related"),
        ("text", "text"),
    ],
)
def test_explain(value: object, shown: str) -> None:
    assert views.explain(value) == shown


@pytest.mark.parametrize(
    "path",
    ["//evil.com/x", "/\\evil.com", "/\\/evil.com", "//evil.com", "/%09/evil.com", "///evil.com/x"],
)
def test_the_token_exchange_never_redirects_off_site(db_path: Path, path: str) -> None:
    service = MemoryService(Database(db_path), Config(db=db_path))
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        answer = c.get(f"http://127.0.0.1:8765{path}?token={TOKEN}&persona=p", follow_redirects=False)
    service.close()
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"


def test_the_token_exchange_keeps_a_local_path_and_its_query(client: TestClient) -> None:
    answer = client.get(f"/memories/m%C3%A9?view=history&token={TOKEN}", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/memories/m%C3%A9?view=history"


def _chunks(size: int, total: int) -> Iterator[bytes]:
    piece = b"x" * size
    for _ in range(total // size):
        yield f"{size:x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def test_large_request_bodies_are_refused_without_being_read(db_path: Path, seeded: Seeded) -> None:
    mib = 1024 * 1024
    with ui_process(db_path) as (url, proc):
        parts = urlsplit(url)
        port, token = parts.port, parse_qs(parts.query)["token"][0]
        assert port is not None
        head = [
            f"POST /memories/{seeded.tea}/correct HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            f"Cookie: {COOKIE}={token}",
            "Content-Type: application/x-www-form-urlencoded",
        ]
        # declared: 300 MiB announced, 1 MiB sent; the answer comes without waiting for the rest
        declared = raw_request(
            port, "\r\n".join([*head, f"Content-Length: {300 * mib}"]), [b"x" * mib], timeout=15
        )
        assert declared.status == 413, declared.data[:200]
        # streamed: chunks without a length are read up to the cap, then refused
        before = peak_rss_kib(proc.pid)
        streamed = raw_request(
            port, "\r\n".join([*head, "Transfer-Encoding: chunked"]), _chunks(256 * 1024, 200 * mib)
        )
        grown_mib = (peak_rss_kib(proc.pid) - before) / 1024
        assert streamed.status == 413, streamed.data[:200]
        assert streamed.sent < 100 * mib, f"the server read {streamed.sent / mib:.0f} MiB of 200"
        assert grown_mib < 40, f"the server grew by {grown_mib:.0f} MiB"


def _remove_database(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_deleted_or_replaced_database_file_is_an_error_page(
    client: TestClient, seeded: Seeded, db_path: Path, tmp_path: Path, how: str
) -> None:
    page = client.get(f"/memories/{seeded.tea}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    _remove_database(db_path)
    if how == "replaced":
        other = tmp_path / "other.db"
        seed(other)
        other.rename(db_path)
    for path in [
        "/memories",
        f"/memories/{seeded.tea}",
        "/recall?q=tea",
        "/persona",
        f"/memories/{seeded.hike}/delete",
    ]:
        answer = client.get(path)
        assert answer.status_code == 503, path
        assert "was deleted, moved or replaced" in answer.text
    form = {"csrf": csrf.group(1), "statement": "我喝碧螺春"}
    correction = client.post(f"/memories/{seeded.tea}/correct", data=form, follow_redirects=False)
    assert correction.status_code == 503
    deletion = client.post(
        f"/memories/{seeded.hike}/delete", data={"csrf": csrf.group(1), "confirm": "delete"}
    )
    assert deletion.status_code == 503
    assert db_path.exists() is (how == "replaced")


HOSTILE = "右\u202e到左\u2066隔离\u2069 \x1b[2J清屏 \x07铃"
SHOWN = "右\\u202e到左\\u2066隔离\\u2069 \\x1b[2J清屏 \\x07铃"


def _store_hostile(db_path: Path) -> str:
    """An event, a memory, a correction and a persona holding bidi controls and terminal escapes."""
    service = MemoryService(Database(db_path), Config(db=db_path))
    try:
        service.event_submit(
            parse(EventIn, {"id": "ev-hostile", "session": "s", "role": "user", "text": f"我说：{HOSTILE}"})
        )
        (memory,) = service.memory_derive(
            parse(
                DeriveRequest,
                {
                    "event_id": "ev-hostile",
                    "memories": [
                        {"text": HOSTILE, "quote": HOSTILE, "kind": "fact", "basis": "user_statement"}
                    ],
                },
            )
        ).memory_ids
        service.persona_set(f"人设 {HOSTILE}")
        return memory
    finally:
        service.close()


def test_stored_text_is_isolated_and_its_controls_are_visible(client: TestClient, db_path: Path) -> None:
    memory = _store_hostile(db_path)
    pages = {
        "list": client.get("/memories"),
        "memory": client.get(f"/memories/{memory}"),
        "delete preview": client.get(f"/memories/{memory}/delete"),
        "persona": client.get("/persona"),
        "recall": client.get("/recall?q=清屏"),
    }
    for name, page in pages.items():
        assert page.status_code == 200, name
        for raw in ("\u202e", "\u2066", "\u2069", "\x1b", "\x07"):
            assert raw not in page.text, (name, raw)
        isolated = re.findall(r"<bdi>(.*?)</bdi>", page.text, flags=re.S)
        assert any(SHOWN in text for text in isolated), name
        assert SHOWN not in re.sub(r"<bdi>.*?</bdi>", "", page.text, flags=re.S), (
            f"{name}: shown outside <bdi>"
        )


def test_a_huge_request_line_is_answered_414(db_path: Path, seeded: Seeded) -> None:
    with ui_process(db_path) as (url, _):
        parts = urlsplit(url)
        port, token = parts.port, parse_qs(parts.query)["token"][0]
        assert port is not None
        host = f"Host: 127.0.0.1:{port}\r\nCookie: {COOKIE}={token}"
        cases = [
            (f"GET /recall?q={'a' * 1024 * 1024} HTTP/1.1\r\n{host}", b"414"),
            (f"GET /recall?q={'a' * 4 * 1024 * 1024} HTTP/1.1\r\n{host}", b"414"),
            (f"GET /recall?q=tea HTTP/1.1\r\n{host}\r\nX-Padding: {'b' * 1024 * 1024}", b"431"),
        ]
        for head, status in cases:
            with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
                sock.sendall(f"{head}\r\n\r\n".encode())  # whole: no reset while it is sent
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:100]
            assert b"longer than 64 KiB" in answer
        ok = raw_request(port, f"GET /recall?q=tea HTTP/1.1\r\n{host}\r\nConnection: close")
        assert ok.status == 200
