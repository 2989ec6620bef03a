"""A proposed memory can be settled on its own page, and the recall page says when a proposal waits
(Starlette's test client, real service, real SQLite file). The proposal comes from ``memory derive
--propose`` (no extraction endpoint needed), through the CLI as a user types it. The recall page labels
each tier of its list."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from yiji.ui.app import build_app

from .conftest import run_yiji
from .factory import make_service

TOKEN = "test-token-proposed"
MEMORY = [
    {
        "text": "用户养了一只柯基叫豆豆",
        "quote": "我养了一只柯基叫豆豆",
        "kind": "fact",
        "basis": "user_statement",
    }
]


@pytest.fixture
def proposed(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "p.db"
    submitted = run_yiji(
        "--db", str(db), "event", "submit", "--id", "e1", "--session", "s1", "--role", "user",
        "我养了一只柯基叫豆豆，今天带它去公园",
    )  # fmt: skip
    assert submitted.code == 0, submitted.err
    memories = tmp_path / "m.json"
    memories.write_text(json.dumps(MEMORY, ensure_ascii=False), encoding="utf-8")
    derived = run_yiji(
        "--db", str(db), "memory", "derive", "--event", "e1", "--input", str(memories), "--propose"
    )
    assert derived.code == 0, derived.err
    found = re.search(r"proposed (mem_\w+) \(waiting for review\)", derived.out)
    assert found, derived.out
    assert "review" in derived.out.splitlines()[-1]
    again = run_yiji(
        "--db", str(db), "--json", "memory", "derive", "--event", "e1", "--input", str(memories), "--propose"
    )
    assert json.loads(again.out)["memory_ids"] == [found.group(1)]  # proposing it again stores it once
    return db, found.group(1)


@pytest.fixture
def client(proposed: tuple[Path, str]) -> Iterator[TestClient]:
    db, _ = proposed
    service = make_service(db)
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        assert c.get(f"/review?token={TOKEN}", follow_redirects=False).status_code == 303
        yield c
    service.close()


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found
    return found.group(1)


def test_the_cli_queue_lists_the_proposal(proposed: tuple[Path, str]) -> None:
    db, memory_id = proposed
    queue = run_yiji("--db", str(db), "--json", "review", "list")
    assert [m["id"] for m in json.loads(queue.out)["proposals"]] == [memory_id]
    remembered = run_yiji("--db", str(db), "--json", "memory", "list")
    assert json.loads(remembered.out)["memories"] == []


def test_a_proposed_memory_page_offers_accept_reject_edit(
    client: TestClient, proposed: tuple[Path, str]
) -> None:
    _, memory_id = proposed
    page = client.get(f"/memories/{memory_id}", headers={"Accept-Language": "en"})
    assert page.status_code == 200
    html = page.text
    assert 'id="accept-form"' in html and 'id="reject-form"' in html and 'id="edit-form"' in html
    assert 'id="to-review"' in html and 'href="/review' in html
    assert 'id="correct"' not in html and "/delete" not in html  # neither Correct nor Delete
    accepted = client.post(
        f"/review/{memory_id}/accept", data={"csrf": _csrf(html), "back": "memory"}, follow_redirects=False
    )
    assert accepted.status_code == 303
    assert accepted.headers["location"].startswith(f"/memories/{memory_id}")
    now = client.get(f"/memories/{memory_id}", headers={"Accept-Language": "en"}).text
    assert 'id="correct"' in now and 'id="accept-form"' not in now  # accepted: correct it from now on


def test_an_edit_on_the_memory_page_keeps_it_waiting(client: TestClient, proposed: tuple[Path, str]) -> None:
    _, memory_id = proposed
    html = client.get(f"/memories/{memory_id}").text
    edited = client.post(
        f"/review/{memory_id}/edit",
        data={"csrf": _csrf(html), "back": "memory", "text": "用户有一只叫豆豆的柯基", "kind": "fact"},
        follow_redirects=False,
    )
    assert edited.status_code == 303
    after = client.get(f"/memories/{memory_id}").text
    assert "用户有一只叫豆豆的柯基" in after and 'id="accept-form"' in after


def test_the_recall_page_says_a_proposal_waits(client: TestClient) -> None:
    page = client.get("/recall", params={"q": "柯基"}, headers={"Accept-Language": "en"})
    assert page.status_code == 200
    html = page.text
    assert "a memory proposed from it waits for review" in html
    assert "no derived memory" not in html
    assert 'class="tier-label" data-tier="hit"' in html


def test_the_recall_page_labels_each_tier(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert run_yiji("--db", str(db), "demo").code == 0
    service = make_service(db)
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        c.get(f"/review?token={TOKEN}", follow_redirects=False)
        html = c.get(
            "/recall",
            # the weak match names "glad", which the asked-for fact does not: evidence of its own
            params={"q": "where does the user live and what glad news", "project": "demo"},
            headers={"Accept-Language": "en"},
        ).text
    service.close()
    tiers = re.findall(r'class="tier-label" data-tier="(\w+)"', html)
    assert tiers == ["fact", "weak"], tiers
    assert "Asked-for facts" in html and "Weaker matches" in html
