"""Every page of the review UI, rendered for a fixed database and clock, equals its pinned HTML.

The pinned pages (``tests/data/ui_pages.json``: each page's name mapped to its lines, each line with
its line end, so that a difference reads line by line) hold what each page showed when they were
written; any change to what a page renders shows here as a difference. Generated ids (random by
design) are replaced by their order of first appearance, and the per-response script nonce and the
command that runs yiji here (``YIJI``) by fixed words; everything else is compared byte for byte.

After a deliberate change to a page, rewrite the pins with ``YIJI_WRITE_UI_PAGES=1`` and read the
difference before committing it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from yiji.config import Config, DisplayConfig
from yiji.invocation import yiji_command
from yiji.models import parse
from yiji.models.lifecycle import CorrectRequest
from yiji.timeutil import FixedClock
from yiji.ui.app import build_app

from .factory import make_service
from .fakeprovider import FakeProvider
from .ui_helpers import Seeded, seed, seed_proposals

TOKEN = "pinned-token"
CSRF = "pinned-csrf"
NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)
PINS = Path(__file__).parent / "data" / "ui_pages.json"
WRITE = os.environ.get("YIJI_WRITE_UI_PAGES") == "1"
GENERATED = re.compile(r"\b[a-z]+_[0-9a-f]{32}\b|\bui-correction-[0-9a-f]{32}\b")
NONCE = re.compile(r'nonce="[^"]+"')


class Archive:
    """The seeded archive: the bilingual scope of :func:`tests.ui_helpers.seed`, a correction, and
    three proposals waiting for review."""

    def __init__(self, seeded: Seeded, proposals: list[str]) -> None:
        self.seeded = seeded
        self.proposals = proposals


@pytest.fixture
def archive(db_path: Path, fake_provider: FakeProvider) -> Archive:
    seeded = seed(db_path, NOW)
    proposals = seed_proposals(db_path, fake_provider, 3)
    service = make_service(db_path, clock=FixedClock(NOW))
    try:
        request = {"memory_id": seeded.tea, "statement": "我现在每天早上喝碧螺春", "event_id": "ev-fix"}
        service.memory_correct(parse(CorrectRequest, request))
    finally:
        service.close()
    return Archive(seeded, proposals)


@pytest.fixture
def client(db_path: Path, archive: Archive) -> Iterator[TestClient]:
    config = Config(db=db_path, display=DisplayConfig(timezone="Asia/Shanghai"))
    service = make_service(db_path, config, clock=FixedClock(NOW))
    with TestClient(build_app(service, TOKEN, csrf=CSRF), base_url="http://127.0.0.1:8765") as c:
        assert c.get(f"/memories?token={TOKEN}", follow_redirects=False).status_code == 303
        yield c
    service.close()


def _pages(archive: Archive) -> dict[str, tuple[str, str, int]]:
    """Each pinned page by name: its path, its language and its status."""
    s, p = archive.seeded, archive.proposals
    return {
        "memories": ("/memories", "en", 200),
        "memories-zh": ("/memories", "zh-CN", 200),
        "memories-history": ("/memories?view=history&offset=0", "en", 200),
        "memories-revoked": ("/memories?view=revoked", "en", 200),
        "memories-filtered": (
            "/memories?kind=fact&since=2026-01-01&until=2026-12-31&text=杭州",
            "zh-CN",
            200,
        ),
        "memories-as-of": ("/memories?as_of=2026-05-01", "en", 200),
        "memories-bad-filter": ("/memories?since=yesterday", "en", 400),
        "memories-bad-scope": ("/memories?persona=bad%20id", "en", 400),
        "memory-fact": (f"/memories/{s.hangzhou}", "en", 200),
        "memory-fact-zh": (f"/memories/{s.shanghai}", "zh-CN", 200),
        "memory-corrected": (f"/memories/{s.tea}", "en", 200),
        "memory-faded": (f"/memories/{s.hike}", "en", 200),
        "memory-script": (f"/memories/{s.script}", "en", 200),
        "memory-emotion": (f"/memories/{s.emotion}", "zh-CN", 200),
        "memory-proposed": (f"/memories/{p[0]}", "en", 200),
        "memory-offset": (f"/memories/{s.hangzhou}?offset=10", "en", 200),
        "memory-missing": ("/memories/mem_missing", "en", 404),
        "memory-other-scope": (f"/memories/{s.tea}?project=elsewhere", "en", 404),
        "delete": (f"/memories/{s.script}/delete", "en", 200),
        "delete-zh": (f"/memories/{s.hike}/delete", "zh-CN", 200),
        "delete-missing": ("/memories/mem_missing/delete", "en", 404),
        "recall-empty": ("/recall", "en", 200),
        "recall": ("/recall?q=Baoshi+hike+sunrise", "en", 200),
        "recall-zh": ("/recall?q=住在哪里", "zh-CN", 200),
        "recall-history": ("/recall?q=杭州&as_of=2026-04-01&history=1", "en", 200),
        "recall-raw": ("/recall?q=猫", "en", 200),
        "recall-bad": ("/recall?q=tea&as_of=someday", "en", 400),
        "conversations": ("/conversations", "en", 200),
        "conversations-zh": ("/conversations?offset=1", "zh-CN", 200),
        "conversation": ("/conversation?session=s-2026", "en", 200),
        "conversation-event": ("/conversation?session=cats&event=cat-1", "zh-CN", 200),
        "conversation-missing": ("/conversation?session=none", "en", 404),
        "persona": ("/persona", "en", 200),
        "persona-zh": ("/persona", "zh-CN", 200),
        "persona-other": ("/persona?persona=nobody", "en", 200),
        "review": ("/review", "en", 200),
        "review-zh": ("/review", "zh-CN", 200),
        "review-after": (f"/review?after={p[0]}", "en", 200),
        "review-end": (f"/review?after={p[2]}", "en", 200),
        "review-other-scope": ("/review?project=elsewhere", "en", 200),
    }


def _normalized(html: str) -> str:
    names: dict[str, str] = {}
    html = GENERATED.sub(lambda m: names.setdefault(m.group(0), f"id-{len(names) + 1}"), html)
    return NONCE.sub('nonce="nonce"', html).replace(yiji_command(), "YIJI")


def _pinned() -> dict[str, list[str]]:
    pins: dict[str, list[str]] = json.loads(PINS.read_text(encoding="utf-8"))
    return pins


def _check(name: str, html: str) -> None:
    if WRITE:
        pins = _pinned() if PINS.exists() else {}
        pins[name] = html.splitlines(keepends=True)
        text = json.dumps(pins, ensure_ascii=False, indent=1, sort_keys=True)
        PINS.write_text(text + "\n", encoding="utf-8")
    assert html == "".join(_pinned()[name]), name


def test_every_page_renders_as_pinned(client: TestClient, archive: Archive) -> None:
    pages = _pages(archive)
    for name, (path, language, status) in pages.items():
        answer = client.get(path, headers={"Accept-Language": language}, follow_redirects=False)
        assert answer.status_code == status, name
        _check(name, _normalized(answer.text))
    assert WRITE or set(_pinned()) == set(pages) | set(_FORMS)


_FORMS = ("correct-refused", "delete-refused", "review-edit-refused", "review-after-decision")


def test_pages_answering_a_refused_form_render_as_pinned(client: TestClient, archive: Archive) -> None:
    s, p = archive.seeded, archive.proposals
    refused = client.post(
        f"/memories/{s.hangzhou}/correct", data={"csrf": CSRF, "statement": "x", "valid_at": "someday"}
    )
    assert refused.status_code == 400
    _check("correct-refused", _normalized(refused.text))
    mismatch = client.post(f"/memories/{s.hike}/delete", data={"csrf": CSRF, "confirm": "yes"})
    assert mismatch.status_code == 400
    _check("delete-refused", _normalized(mismatch.text))
    bad_edit = client.post(f"/review/{p[1]}/edit", data={"csrf": CSRF, "after": p[0], "kind": "nonsense"})
    assert bad_edit.status_code == 400
    _check("review-edit-refused", _normalized(bad_edit.text))
    decided = client.post(f"/review/{p[0]}/accept", data={"csrf": CSRF}, follow_redirects=True)
    assert decided.status_code == 200
    _check("review-after-decision", _normalized(decided.text))
