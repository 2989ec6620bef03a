"""The review UI without a browser: language choice, the Host check, quote highlighting, timeline geometry,
and the app in process through Starlette's test client (real service, real SQLite file)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import httpx
import pytest
from starlette.testclient import TestClient

from yiji.config import Config, DisplayConfig
from yiji.models import EventIn, parse
from yiji.models.memories import DeriveRequest, MemoryRecord
from yiji.ui import views
from yiji.ui.app import build_app
from yiji.ui.guard import COOKIE, is_loopback_host
from yiji.ui.i18n import MESSAGES, persona_note, pick_language

from .conftest import run_yiji
from .factory import make_service
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
    service = make_service(db_path)
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
        "/review",
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
    done = client.post(
        f"/memories/{seeded.hike}/delete",
        data={"csrf": csrf.group(1), "confirm": "delete"},
        follow_redirects=False,
    )
    assert done.status_code == 303 and done.headers["location"] == "/memories"
    listing = client.get(done.headers["location"])
    assert flash_of(listing) == (
        "Deleted 1 event and 1 memory. Also removed: 0 relation edges, 0 vectors, 0 cues; "
        "0 checkpoints invalidated."
    )
    assert flash_of(client.get("/memories")) is None  # shown once
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
    assert busy.code == 2
    assert f"--port: {port} on 127.0.0.1 is in use" in busy.err and "--port 0 for a free one" in busy.err


def test_cli_ui_opens_on_the_scope_it_was_given(db_path: Path) -> None:
    """``yiji --project demo ui`` opens the demo project's memories, not the default scope's."""
    seed(db_path)  # the default scope's memories
    with ui_process(db_path, "--project", "elsewhere") as (url, _):
        assert parse_qs(urlsplit(url).query)["project"] == ["elsewhere"]
        with httpx.Client(timeout=30) as browser:
            page = browser.get(url, follow_redirects=True)
        assert page.status_code == 200
        assert "token=" not in str(page.url) and "project=elsewhere" in str(page.url)
        assert "用户每天早上喝龙井茶" not in page.text and 'value="elsewhere"' in page.text
    with ui_process(db_path) as (url, _):
        assert "project" not in parse_qs(urlsplit(url).query)
        with httpx.Client(timeout=30) as browser:
            assert "用户每天早上喝龙井茶" in browser.get(url, follow_redirects=True).text


def flash_of(page: Any) -> str | None:
    found = re.search(r'<p class="flash" role="status">([^<]*)</p>', page.text)
    return found.group(1) if found else None


@pytest.mark.parametrize(
    ("why", "parts", "factors", "matched", "context_of", "weak"),
    [
        (
            {"score": 3.9, "contributions": {"lexical": 3.0, "cue": 0.0, "session": 1.0, "cosine": 0.0},
             "factors": {"basis": 1.0, "confidence": 0.98, "freshness": 0.934}, "matched": ["龙井"]},
            [("lexical", "75%"), ("session", "25%")], [("confidence", "×0.98"), ("freshness", "×0.93")],
            ["龙井"], None, False,
        ),
        (
            {"score": 1.2, "contributions": {"neighbour": 1.0, "related": 0.004}, "factors": {"basis": 1.0},
             "context_of": "mem_x", "tier": "weak"},
            [("neighbour", "100%"), ("related", "<1%")], [], [], "mem_x", True,
        ),
        ({}, [], [], [], None, False),
    ],
)  # fmt: skip
def test_why_in_words_hides_what_did_not_count(
    why: dict[str, Any],
    parts: list[tuple[str, str]],
    factors: list[tuple[str, str]],
    matched: list[str],
    context_of: str | None,
    weak: bool,
) -> None:
    shown = views.why_in_words(why)
    assert (shown.parts, shown.factors, shown.matched, shown.context_of, shown.weak) == (
        parts, factors, matched, context_of, weak,
    )  # fmt: skip


def test_every_why_word_has_a_name_in_both_languages() -> None:
    for key in (
        "lexical",
        "cue",
        "related",
        "cosine",
        "neighbour",
        "session",
        "basis",
        "confidence",
        "freshness",
    ):
        assert f"why.{key}" in MESSAGES["zh"] and f"why.{key}" in MESSAGES["en"]
    for how in ("lexical", "cue", "related", "vector", "context", "weak"):
        assert f"how.{how}" in MESSAGES["zh"]
    assert MESSAGES["zh"]["why.lexical"] == "词语匹配" and MESSAGES["en"]["why.freshness"] == "freshness"


def test_a_flash_is_signed_and_carries_its_counts() -> None:
    value = views.flash_value("secret", "deleted", [1, 2, 0, 3, 0, 1])
    assert views.read_flash("secret", value) == views.Flash("deleted", (1, 2, 0, 3, 0, 1))
    assert views.read_flash("secret", views.flash_value("secret", "corrected")) == views.Flash(
        "corrected", ()
    )
    assert views.read_flash("other", value) is None  # planted by someone without this run's secret
    assert views.read_flash("secret", value.replace("deleted-1", "deleted-9")) is None
    assert views.read_flash("secret", None) is None and views.read_flash("secret", "<script>") is None
    with pytest.raises(ValueError, match="unknown confirmation"):
        views.flash_value("secret", "deleted", [1])


@pytest.mark.parametrize(
    ("value", "zone", "end_of_day", "expected"),
    [
        ("2026-06-01", "Asia/Shanghai", False, "2026-06-01T00:00:00+08:00"),
        ("2026-06-01", "Asia/Shanghai", True, "2026-06-01T23:59:59.999999+08:00"),
        ("2026-06-01T09:30", "America/New_York", False, "2026-06-01T09:30:00-04:00"),
        ("2026-06-01", "UTC", False, "2026-06-01T00:00:00+00:00"),
        ("2026-02-30", "UTC", False, "2026-02-30"),  # left for the service to refuse, naming the field
        ("yesterday", "UTC", False, "yesterday"),
        ("  ", "UTC", False, None),
        (None, "UTC", False, None),
    ],
)
def test_date_fields_are_read_in_the_display_zone(
    value: str | None, zone: str, end_of_day: bool, expected: str | None
) -> None:
    assert views.time_input(value, ZoneInfo(zone), "as_of", end_of_day=end_of_day) == expected


@pytest.mark.parametrize(
    ("note", "zh", "en"),
    [
        ("neutral default", "中性默认", "neutral default"),
        ("rollback to version 3", "回滚到第 3 版", "rolled back to version 3"),
        ("my own words", "my own words", "my own words"),
    ],
)
def test_persona_notes_in_the_page_language(note: str, zh: str, en: str) -> None:
    assert (persona_note("zh", note), persona_note("en", note)) == (zh, en)


@pytest.fixture
def shanghai(db_path: Path, seeded: Seeded) -> Iterator[TestClient]:
    """The app with ``[display] timezone = "Asia/Shanghai"``."""
    config = Config(db=db_path, display=DisplayConfig(timezone="Asia/Shanghai"))
    service = make_service(db_path, config)
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        c.get(f"/memories?token={TOKEN}")
        yield c
    service.close()


def test_times_show_in_the_display_zone(shanghai: TestClient, seeded: Seeded) -> None:
    page = shanghai.get(f"/memories/{seeded.tea}").text
    assert "2026-03-01 09:00 (+08:00)" in page and "UTC" not in page
    listing = shanghai.get("/memories?view=history").text
    assert "2026-03-01 09:00 (+08:00) →" in listing
    conversation = shanghai.get("/conversation?session=s-2026").text
    assert "2026-03-01 09:00 (+08:00)" in conversation


def test_the_as_of_field_is_a_day_in_the_display_zone(shanghai: TestClient, seeded: Seeded) -> None:
    # the move to Shanghai is valid from 2026-06-01 00:00 +08:00, which is still 31 May in UTC
    before = shanghai.get("/memories?as_of=2026-05-31&fact_key=home.city").text
    assert "用户住在杭州" in before and "用户住在上海" not in before
    on_the_day = shanghai.get("/memories?as_of=2026-06-01&fact_key=home.city").text
    assert "用户住在上海" in on_the_day and "用户住在杭州" not in on_the_day


def test_conversations_list_the_sessions(client: TestClient) -> None:
    zh = client.get("/conversations", headers={"Accept-Language": "zh-CN"}).text
    assert ">对话<" in zh and "第 1–2 个会话，共 2 个" in zh
    sessions = re.findall(r'class="session-link" href="/conversation\?session=([^"]+)"><bdi>', zh)
    assert sessions == ["s-2026", "s-2025"]  # the most recently active first
    assert "最近工作挺忙的" in zh  # how it began
    assert client.get("/conversations?offset=-1").status_code == 400
    assert client.get("/conversations?persona=bad%20id").status_code == 400


def test_a_conversation_shows_each_event_with_its_memories(client: TestClient, seeded: Seeded) -> None:
    page = client.get("/conversation?session=s-2026", headers={"Accept-Language": "en"}).text
    turns = re.findall(r'<li class="turn role-(\w+)-turn" id="e(\d+)">', page)
    assert [role for role, _ in turns] == ["user", "user", "user", "assistant"]
    first = page[page.index('id="e1"') : page.index('id="e2"')]
    assert "最近工作挺忙的" in first
    assert f'href="/memories/{seeded.hangzhou}"' in first and f'href="/memories/{seeded.tea}"' in first
    assert "&lt;script&gt;" in page and "<script>" not in page
    memory = client.get(f"/memories/{seeded.tea}").text
    assert 'href="/conversation?session=s-2026&amp;event=ev-hz#e1"' in memory
    assert client.get("/conversation?session=s-2026&event=ev-hz").status_code == 200
    assert client.get("/conversation?session=nobody").status_code == 404
    assert client.get("/conversation?session=s-2025&event=ev-hz").status_code == 404  # another session
    assert client.get("/conversation?session=s-2026&project=elsewhere").status_code == 404
    assert client.get("/conversation").status_code == 400


def test_a_long_conversation_is_paged_and_an_event_opens_its_page(client: TestClient, db_path: Path) -> None:
    service = make_service(db_path)
    try:
        for n in range(120):
            at = f"2026-05-01T{n // 60:02d}:{n % 60:02d}:00+08:00"
            role = "user" if n % 2 == 0 else "assistant"
            event = {
                "id": f"long-{n}",
                "session": "long",
                "role": role,
                "text": f"第 {n} 句",
                "occurred_at": at,
            }
            service.event_submit(parse(EventIn, event))
        service.memory_derive(
            parse(DeriveRequest, {"event_id": "long-76", "memories": [
                {"text": "第七十六句", "quote": "第 76 句", "kind": "episode", "basis": "user_statement"}]})
        )  # fmt: skip
    finally:
        service.close()
    first = client.get("/conversation?session=long", headers={"Accept-Language": "en"}).text
    assert "Events 1–50 of 120" in first and first.count('class="turn ') == 50
    assert "offset=50" in first and "Previous" not in first
    found = client.get("/conversation?session=long&event=long-76", headers={"Accept-Language": "en"}).text
    assert "Events 51–100 of 120" in found and ">第七十六句</bdi>" in found
    last = client.get("/conversation?session=long&offset=100", headers={"Accept-Language": "en"}).text
    assert "Events 101–120 of 120" in last and "Next" not in last


def test_relations_show_memory_texts(client: TestClient, seeded: Seeded) -> None:
    page = client.get(f"/memories/{seeded.tea}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    done = client.post(
        f"/memories/{seeded.tea}/correct", data={"csrf": csrf.group(1), "statement": "我喝碧螺春"},
        follow_redirects=False,
    )  # fmt: skip
    assert done.status_code == 303
    corrected = client.get(done.headers["location"], headers={"Accept-Language": "zh-CN"})
    assert flash_of(corrected) == "更正已保存：错误的记忆已撤销，由这条记忆取代。"
    relations = corrected.text[corrected.text.index('class="plain relations"') :].split("</ul>")[0]
    assert f'<a href="/memories/{seeded.tea}"><bdi>用户每天早上喝龙井茶</bdi></a>' in relations
    assert "本条" in relations and "更正" in relations
    assert seeded.tea[-8:] + "</code>" not in relations
    assert flash_of(client.get(done.headers["location"])) is None  # once


def test_recall_explains_in_words_and_takes_as_of_and_history(client: TestClient) -> None:
    zh = client.get("/recall?q=龙井茶", headers={"Accept-Language": "zh-CN"}).text
    why = zh[zh.index('class="why"') :]
    assert "词语匹配" in why and "新鲜度" in why and "匹配的词" in why
    assert "lexical" not in why and "0.000" not in why and "线索" not in why  # no cue: left out
    en = client.get("/recall?q=龙井茶", headers={"Accept-Language": "en"}).text
    assert "word match" in en and "freshness" in en and "lexical" not in en[en.index('class="why"') :]
    now = client.get("/recall?q=杭州").text
    assert "用户住在杭州" not in now  # moved away: not a current fact
    then = client.get("/recall?q=杭州&as_of=2026-04-01").text
    assert "用户住在杭州" in then and 'value="2026-04-01"' in then
    history = client.get("/recall?q=杭州&history=1").text
    assert "用户住在杭州" in history and 'name="history" value="1" checked' in history
    bad = client.get("/recall?q=杭州&as_of=someday")
    error = re.search(r'<p class="error" role="alert">([^<]*)</p>', bad.text)
    assert bad.status_code == 400 and error and "as_of" in error.group(1) and "someday" not in error.group(1)


def test_the_persona_page_is_in_chinese(client: TestClient) -> None:
    page = client.get("/persona", headers={"Accept-Language": "zh-CN"}).text
    assert "中性默认" in page and "neutral default" not in page
    assert "表达于" in page and "助手为用户搬家顺利感到开心" in page


@pytest.mark.parametrize(
    "path",
    ["//evil.com/x", "/\\evil.com", "/\\/evil.com", "//evil.com", "/%09/evil.com", "///evil.com/x"],
)
def test_the_token_exchange_never_redirects_off_site(db_path: Path, path: str) -> None:
    service = make_service(db_path)
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
        "/review",
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
    decision = client.post(f"/review/{seeded.tea}/accept", data={"csrf": csrf.group(1)})
    assert decision.status_code == 503
    assert db_path.exists() is (how == "replaced")


HOSTILE = "右\u202e到左\u2066隔离\u2069 \x1b[2J清屏 \x07铃"
SHOWN = "右\\u202e到左\\u2066隔离\\u2069 \\x1b[2J清屏 \\x07铃"


def _store_hostile(db_path: Path) -> str:
    """An event, a memory, a correction and a persona holding bidi controls and terminal escapes."""
    service = make_service(db_path)
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
        "conversations": client.get("/conversations"),
        "conversation": client.get("/conversation?session=s"),
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


def test_a_correction_that_is_not_utf8_is_refused_naming_the_field(
    client: TestClient, seeded: Seeded, db_path: Path
) -> None:
    page = client.get(f"/memories/{seeded.tea}").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    for statement in (b"%FF%FE", b"\xff\xfe"):
        refused = client.post(
            f"/memories/{seeded.tea}/correct",
            content=b"csrf=" + csrf.group(1).encode() + b"&statement=" + statement,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            follow_redirects=False,
        )
        assert refused.status_code == 400 and "statement: is not UTF-8 text" in refused.text
    bad_name = client.post(
        f"/memories/{seeded.tea}/correct",
        content=b"csrf=" + csrf.group(1).encode() + b"&st%FFment=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert bad_name.status_code == 400 and "form: a field name is not UTF-8 text" in bad_name.text
    service = make_service(db_path)
    try:
        assert service.memory_get(seeded.tea).revoked_at is None  # nothing was corrected
    finally:
        service.close()
    # a field of proper UTF-8, percent-encoded, still arrives whole
    kept = client.post(
        f"/memories/{seeded.tea}/correct",
        content=b"csrf="
        + csrf.group(1).encode()
        + b"&statement=%E6%88%91%E5%96%9D%E7%A2%A7%E8%9E%BA%E6%98%A5",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert kept.status_code == 303
