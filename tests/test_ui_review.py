"""The review queue page in process (Starlette's test client, real service, real SQLite file): the
source turn with its quote highlighted and context, the header count, the nonce that allows only the
page's own script, and decisions with bad input refused and nothing changed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from yiji.service import MemoryService
from yiji.ui.app import build_app

from .factory import make_service
from .fakeprovider import FakeProvider
from .ui_helpers import seed_proposals

TOKEN = "test-token-review"


@pytest.fixture
def proposals(db_path: Path, fake_provider: FakeProvider) -> list[str]:
    return seed_proposals(db_path, fake_provider, 4)


@pytest.fixture
def service(db_path: Path, proposals: list[str]) -> Iterator[MemoryService]:
    svc = make_service(db_path)
    yield svc
    svc.close()


@pytest.fixture
def client(service: MemoryService) -> Iterator[TestClient]:
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        assert c.get(f"/review?token={TOKEN}", follow_redirects=False).status_code == 303
        yield c


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found.group(1)


def test_the_queue_shows_the_oldest_proposal_in_its_conversation(
    client: TestClient, proposals: list[str]
) -> None:
    page = client.get("/review", headers={"Accept-Language": "zh-CN"})
    assert page.status_code == 200
    html = page.text
    assert f'data-memory-id="{proposals[0]}"' in html
    assert "<mark>我家第1只猫叫豆豆</mark>" in html  # the quote, highlighted in its source turn
    assert "豆豆真可爱！" in html  # the turn after it
    assert '<h2 class="memory-title"><bdi>' in html  # stored text cannot reorder the page
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} \([+-]\d{2}:\d{2}\)", html)  # times in the local zone
    assert 'id="review-count"' in html and ">4</span>" in html
    policy = page.headers["content-security-policy"]
    nonce = re.search(r"script-src 'nonce-([^']+)'", policy)
    assert nonce and f'<script nonce="{nonce.group(1)}">' in html
    assert "default-src 'none'" in policy and policy.count("content-security-policy") == 0
    assert html.count("<script") == 1
    other = client.get("/memories")  # pages without a script keep the policy with no script at all
    assert "script-src" not in other.headers["content-security-policy"]
    assert ">4</span>" in other.text  # the header counts waiting proposals on every page
    opened = client.get(f"/memories/{proposals[0]}", headers={"Accept-Language": "en"})
    assert opened.status_code == 200 and "proposed" in opened.text  # one memory's page names its state
    skipped = client.get(f"/review?after={proposals[0]}")
    assert f'data-memory-id="{proposals[1]}"' in skipped.text


def _flash(page: Any) -> str | None:
    found = re.search(r'<p class="flash" role="status">([^<]*)</p>', page.text)
    return found.group(1) if found else None


def _edit(client: TestClient, memory_id: str, **fields: str) -> Any:
    """Post a proposal's edit form as the page sends it: key and validity start empty unless given."""
    return client.post(
        f"/review/{memory_id}/edit", data={"subject": "", "fact_key": "", "valid_at": "", **fields}
    )


def test_decisions_and_bad_input(client: TestClient, service: MemoryService, proposals: list[str]) -> None:
    csrf = _csrf(client.get("/review").text)
    accepted = client.post(
        f"/review/{proposals[0]}/accept", data={"csrf": csrf, "after": ""}, follow_redirects=False
    )
    assert accepted.status_code == 303 and accepted.headers["location"].startswith("/review")
    assert service.memory_get(proposals[0]).reviewed_by == "ui"
    english = {"Accept-Language": "en"}
    assert _flash(client.get(accepted.headers["location"], headers=english)) == (
        "Accepted: the memory is remembered now."
    )
    assert _flash(client.get("/review")) is None  # confirmed once
    rejected = client.post(f"/review/{proposals[1]}/reject", data={"csrf": csrf, "note": "不是我家的猫"})
    assert rejected.status_code == 200 and f'data-memory-id="{proposals[2]}"' in rejected.text
    assert _flash(rejected) == "Rejected: it will not be remembered, and is kept for audit only."
    assert service.memory_get(proposals[1]).review_note == "不是我家的猫"

    before = service.memory_get(proposals[2])
    invalid = _edit(client, proposals[2], csrf=csrf, text="用户养猫", kind="emotion")
    assert invalid.status_code == 400  # the rule in the words the CLI and MCP use, not its id
    assert "basis: an emotion and its values need basis assistant_expression" in invalid.text
    assert "emotion_requires_assistant_expression" not in invalid.text
    assert 'value="用户养猫"' in invalid.text  # what was typed is kept in the form
    assert service.memory_get(proposals[2]) == before
    again = client.post(f"/review/{proposals[0]}/accept", data={"csrf": csrf})
    assert again.status_code == 409 and "not proposed" in again.text
    unknown = client.post("/review/mem_nope/accept", data={"csrf": csrf})
    assert unknown.status_code == 404
    forged = client.post(f"/review/{proposals[2]}/accept", data={"csrf": "wrong"})
    assert forged.status_code == 403 and service.memory_get(proposals[2]).review_state == "proposed"

    edited = _edit(
        client,
        proposals[2],
        csrf=csrf,
        text="用户的第三只猫叫年糕",
        kind="fact",
        valid_at="2026-06-01",
        accept="1",
    )
    assert edited.status_code == 200
    now = service.memory_get(proposals[2])
    assert (now.text, now.review_state) == ("用户的第三只猫叫年糕", "accepted")
    assert now.valid_at.isoformat().startswith("2026-06-01")
    assert service.review_counts() == {"accepted": 2, "proposed": 1, "rejected": 1}


@pytest.mark.parametrize(
    "text", [b"%FF%FE", b"\xff\xfe", b"%E5%AE", b"ok%C0%80"], ids=["escaped", "raw", "cut", "overlong"]
)
def test_an_edit_that_is_not_utf8_is_refused_naming_the_field(
    client: TestClient, service: MemoryService, proposals: list[str], text: bytes
) -> None:
    csrf = _csrf(client.get("/review").text)
    body = b"csrf=" + csrf.encode() + b"&subject=&fact_key=&valid_at=&text=" + text + b"&accept=1"
    refused = client.post(
        f"/review/{proposals[0]}/edit",
        content=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert refused.status_code == 400 and "text: is not UTF-8 text" in refused.text
    stored = service.memory_get(proposals[0])
    assert stored.review_state == "proposed" and "\ufffd" not in stored.text


def test_the_queue_says_how_many_turns_wait_for_extraction(
    client: TestClient, service: MemoryService
) -> None:
    from yiji.models import EventIn, parse

    assert 'id="to-extract"' not in client.get("/review").text  # every seeded turn was extracted
    for n in range(2):
        service.event_submit(parse(EventIn, {"session": "cap", "role": "user", "text": f"captured turn {n}"}))
    service.event_submit(parse(EventIn, {"session": "cap", "role": "assistant", "text": "a long tool log"}))
    page = client.get("/review", headers={"Accept-Language": "en"}).text
    assert '<p class="sub" id="to-extract">2 conversation turns have no memories yet' in page
    assert "有 2 条对话还没有抽取记忆" in client.get("/review", headers={"Accept-Language": "zh-CN"}).text
