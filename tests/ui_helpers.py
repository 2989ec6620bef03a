"""Helpers for the review-UI tests: a seeded archive, the ``yiji ui`` subprocess, and headless Chromium."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from yiji.config import Config
from yiji.models import EventIn, parse
from yiji.timeutil import FixedClock

from .conftest import require_tool
from .factory import make_service
from .lifecycle_helpers import derive, fact, note

SCRIPT_TEXT = "<script>document.title='pwned'</script> 提醒：周五交报告"


@dataclass
class Seeded:
    hangzhou: str
    shanghai: str
    tea: str
    hike: str
    script: str
    emotion: str


def seed(db_path: Path, now: datetime | None = None) -> Seeded:
    """A small bilingual archive: a moved home city, a preference, an old episode, an assistant emotion
    and a memory whose text holds markup."""
    clock = FixedClock(now or datetime(2026, 7, 1, 12, tzinfo=UTC), timedelta(milliseconds=1))
    service = make_service(db_path, clock=clock)
    try:

        def event(eid: str, text: str, when: str, role: str = "user", session: str = "s-2026") -> None:
            service.event_submit(
                parse(
                    EventIn,
                    {"id": eid, "session": session, "role": role, "text": text, "occurred_at": when},
                )
            )

        event(
            "ev-hz",
            "最近工作挺忙的。我住在杭州，每天早上都喝一杯龙井茶，周末常去西湖边散步。",
            "2026-03-01T09:00:00+08:00",
        )
        hangzhou, tea = derive(
            service,
            "ev-hz",
            fact("用户住在杭州", "我住在杭州", confidence=0.95),
            note("用户每天早上喝龙井茶", "每天早上都喝一杯龙井茶", "preference", confidence=0.9),
        )
        event("ev-sh", "告诉你个消息：我六月初搬到上海了，新家离公司很近。", "2026-06-02T20:00:00+08:00")
        (shanghai,) = derive(
            service,
            "ev-sh",
            fact("用户住在上海", "我六月初搬到上海了", valid_at="2026-06-01T00:00:00+08:00"),
        )
        event(
            "ev-hike",
            "We hiked up Baoshi Hill at sunrise; the view of the lake was unreal.",
            "2025-09-14T06:30:00+08:00",
            session="s-2025",
        )
        (hike,) = derive(
            service,
            "ev-hike",
            note(
                "Hiked Baoshi Hill at sunrise with a view of the lake",
                "We hiked up Baoshi Hill at sunrise",
                gist="Sunrise hike on Baoshi Hill",
            ),
        )
        event("ev-script", SCRIPT_TEXT, "2026-06-20T10:00:00+08:00")
        (script,) = derive(service, "ev-script", note(SCRIPT_TEXT, SCRIPT_TEXT, "agreement"))
        felt_at = (clock.now() - timedelta(hours=1)).isoformat()
        event("ev-feel", "听到你搬家顺利，我真的很开心！", felt_at, role="assistant")
        (feeling,) = derive(
            service,
            "ev-feel",
            {
                "text": "助手为用户搬家顺利感到开心",
                "quote": "我真的很开心",
                "kind": "emotion",
                "basis": "assistant_expression",
                "valence": 0.8,
                "arousal": 0.6,
            },
        )
        service.persona_set("你是一位温和、细心的陪伴者。记住用户说过的话，但不要假装记得没说过的事。")
        return Seeded(hangzhou, shanghai, tea, hike, script, feeling)
    finally:
        service.close()


@contextmanager
def ui_process(
    db_path: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Run ``yiji ui --no-browser --port 0`` as a user would; yield the printed URL (with its token) and
    the process. ``env`` replaces the environment (default: this process's)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "yiji", "--db", str(db_path), "ui", "--no-browser", "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/\S+)", line)
        assert found, f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        yield found.group(1), proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def ui_server(db_path: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """:func:`ui_process`, yielding the URL only."""
    with ui_process(db_path, *extra, env=env) as (url, _):
        yield url


@dataclass
class RawAnswer:
    data: bytes  # everything the server sent, read until it closed or the timeout passed
    sent: int  # bytes of the body written before the server stopped taking them

    @property
    def status(self) -> int:
        return int(self.data.split(b" ", 2)[1]) if self.data.startswith(b"HTTP/") else 0


def raw_request(port: int, head: str, body: Iterable[bytes] = (), timeout: float = 30.0) -> RawAnswer:
    """Send ``head`` (request line and headers, CRLF-separated, without the blank line), then ``body``
    piece by piece, over a plain socket while another thread reads the answer (so an answer sent before
    the body ends is not lost when the server closes)."""
    received: list[bytes] = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:

        def read() -> None:
            with contextlib.suppress(OSError):
                while chunk := sock.recv(65536):
                    received.append(chunk)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        sent = 0
        with contextlib.suppress(OSError):  # the server may answer and close before reading everything
            sock.sendall(head.encode("latin-1") + b"\r\n\r\n")
            for piece in body:
                if not reader.is_alive():
                    break
                sock.sendall(piece)
                sent += len(piece)
        reader.join(timeout)
    return RawAnswer(b"".join(received), sent)


def peak_rss_kib(pid: int) -> int:
    """The peak resident set size of a process (``VmHWM`` in ``/proc``), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


@contextmanager
def browser_session(language: str, size: tuple[int, int] = (1280, 900)) -> Iterator[Any]:
    """The headless Chromium a browser test drives (chromium and chromedriver from PATH), waiting up to
    5 s for an element: a form submission returns before the next page has loaded."""
    binary = require_tool("chromium", "browser tests of the review UI (Debian package chromium)")
    driver = require_tool("chromedriver", "browser tests of the review UI (Debian package chromium-driver)")
    pytest.importorskip("selenium")
    with chromium(binary, driver, language=language, size=size) as b:
        b.implicitly_wait(5)
        yield b


@contextmanager
def chromium(
    binary: str, driver: str, *, language: str = "en-US", size: tuple[int, int] = (1280, 900)
) -> Iterator[Any]:
    """Headless Chromium through Selenium, with an explicit driver path (selenium-manager never runs)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="yiji-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = binary
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={profile}")
        options.add_argument(f"--window-size={size[0]},{size[1]}")
        options.add_argument(f"--lang={language}")
        options.add_experimental_option("prefs", {"intl.accept_languages": language})
        browser = webdriver.Chrome(options=options, service=Service(executable_path=driver))
        try:
            yield browser
        finally:
            browser.quit()


PETS = ("豆豆", "Milo", "年糕", "Luna", "可乐")


def seed_proposals(db_path: Path, provider: Any, count: int) -> list[str]:
    """``count`` proposals waiting for review, each from its own user turn between assistant turns,
    made by extraction (``[extraction] review = "all"``) against the loopback ``provider`` (a
    :class:`tests.fakeprovider.FakeProvider`). Returns their ids, oldest first."""
    import httpx

    from yiji.config import ExtractionConfig
    from yiji.service import build_extractor

    from .fakeprovider import chat_reply

    config = Config(
        db=db_path,
        extraction=ExtractionConfig(
            base_url=provider.base_url,
            model="fake",
            timeout_seconds=5,
            review="all",
        ),
    )
    clock = FixedClock(datetime(2026, 7, 1, 12, tzinfo=UTC), timedelta(minutes=1))
    ids: list[str] = []
    with httpx.Client() as http:
        service = make_service(db_path, config, clock=clock, extractor=build_extractor(config, http))
        try:
            for i in range(count):
                pet = PETS[i % len(PETS)]
                quote = f"我家第{i + 1}只猫叫{pet}"
                provider.script_chat(
                    chat_reply(
                        {
                            "memories": [
                                {
                                    "text": f"用户家的第{i + 1}只猫叫{pet}",
                                    "quote": quote,
                                    "kind": "fact",
                                    "basis": "user_statement",
                                    "confidence": 0.8,
                                }
                            ]
                        }
                    ),
                    chat_reply({"memories": []}),
                )
                said = service.event_submit(
                    parse(
                        EventIn, {"id": f"cat-{i}", "session": "cats", "role": "user", "text": f"{quote}。"}
                    )
                )
                ids.extend(said.memory_ids)
                service.event_submit(
                    parse(
                        EventIn,
                        {
                            "id": f"cat-{i}-reply",
                            "session": "cats",
                            "role": "assistant",
                            "text": f"{pet}真可爱！",
                        },
                    )
                )
        finally:
            service.close()
    assert len(ids) == count
    return ids
