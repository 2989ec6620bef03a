"""Words a user can use: headings, notices and refusals say what they mean in plain words, a bare
``yiji`` shows its help, and configuration that would silently turn something off is refused. The CLI through
its entry point, the MCP server through the SDK client, the review UI through Starlette's test client, real
SQLite files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from yiji.config import Config
from yiji.service import MemoryService
from yiji.ui.app import build_app

from .factory import make_service
from .inprocess import run_cli
from .mcp_helpers import error_text, memory_client, payload

TOKEN = "plain-words-token"
EVENT = "我们下周去苏州看园林，顺便吃松鼠鳜鱼。"
MEMORY = {
    "text": "用户下周去苏州",
    "quote": "我们下周去苏州看园林",
    "kind": "episode",
    "basis": "user_statement",
}


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "y.db")
    sent = run_cli("--db", path, "event", "submit", "--id", "e1", "--session", "s", "--role", "user", EVENT)
    assert sent.code == 0, sent.err
    derived = run_cli(
        "--db", path, "memory", "derive", "--event", "e1", "--input", "-", input=json.dumps([MEMORY])
    )  # fmt: skip
    assert derived.code == 0, derived.err
    return path


def test_the_recall_heading_is_plain(db: str) -> None:
    shown = run_cli("--db", db, "recall", "苏州")
    assert shown.code == 0, shown.err
    assert "── good matches (best first)" in shown.out
    assert "evidence of their own" not in shown.out


@pytest.fixture
def client(db: str) -> Iterator[TestClient]:
    service = make_service(db)
    with TestClient(build_app(service, TOKEN), base_url="http://127.0.0.1:8765") as c:
        assert c.get(f"/memories?token={TOKEN}", follow_redirects=False).status_code == 303
        yield c
    service.close()


def test_the_review_page_marks_only_what_the_memory_holds(client: TestClient) -> None:
    """园林 is in the memory's quote and source event, not in its text: it is not marked as matched on
    the memory but named as found in its source; 苏州, in the text, is marked."""
    for language, label, heading in (
        ("en", "Matched words", "In its source conversation only"),
        ("zh-CN", "匹配的词", "只在来源对话中"),
    ):
        page = client.get("/recall?q=园林", headers={"Accept-Language": language}).text
        why = page[page.index('class="why"') :]
        assert "<mark><bdi>园林</bdi></mark>" not in why and label not in why
        assert heading in why and '<span class="chip"><bdi>园林</bdi></span>' in why
        both = client.get("/recall?q=苏州园林", headers={"Accept-Language": language}).text
        why = both[both.index('class="why"') :]
        assert "<mark><bdi>苏州</bdi></mark>" in why and "<mark><bdi>园林</bdi></mark>" not in why
    tiers = client.get("/recall?q=苏州", headers={"Accept-Language": "zh-CN"}).text
    assert "较好的匹配" in tiers and "自身有证据" not in tiers


def test_bare_yiji_prints_its_help() -> None:
    bare = run_cli()
    assert bare.code == 0 and bare.err == ""
    assert bare.out.startswith("usage: yiji") and "recall" in bare.out and "serve" in bare.out


def test_an_empty_query_is_refused_in_plain_words(db: str) -> None:
    empty = run_cli("--db", db, "recall", "")
    assert empty.code == 2 and "query: must not be empty" in empty.err
    assert "String should" not in empty.err


@pytest.mark.anyio
async def test_an_empty_query_over_mcp_is_refused_in_plain_words(tmp_path: Path) -> None:
    async with memory_client(tmp_path / "m.db") as client:
        refused = await client.call_tool("memory_recall", {"query": ""})
    assert refused.isError and "query: must not be empty" in error_text(refused)


def test_an_endpoint_without_a_model_is_a_configuration_error(tmp_path: Path) -> None:
    config = tmp_path / "yiji.toml"
    config.write_text('[extraction]\nbase_url = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    db = str(tmp_path / "y.db")
    refused = run_cli(
        "--db", db, "--config", str(config), "event", "submit", "--session", "s", "--role", "user", "hi"
    )
    assert refused.code == 2
    assert "extraction.model: is required when extraction.base_url is set" in refused.err
    assert not Path(db).exists()
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    from_env = run_cli(
        "--db", db, "doctor", env={"YIJI_CONFIG": str(empty),
                                   "YIJI_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1"},
    )  # fmt: skip
    assert from_env.code == 2 and "embedding.model: is required" in from_env.err
    assert "$YIJI_EMBEDDING_BASE_URL" in from_env.err


def test_recall_reads_the_configured_default_limit(tmp_path: Path) -> None:
    db = str(tmp_path / "y.db")
    for n in range(4):
        sent = run_cli(
            "--db", db, "event", "submit", "--id", f"e{n}", "--session", f"s{n}", "--role", "user",
            f"Tea note {n}: oolong tea again.",
        )  # fmt: skip
        assert sent.code == 0, sent.err
    config = tmp_path / "yiji.toml"
    config.write_text("[recall]\ndefault_limit = 2\n", encoding="utf-8")
    limited = run_cli("--db", db, "--config", str(config), "recall", "oolong", "--json")
    assert limited.code == 0, limited.err
    assert len(json.loads(limited.out)["items"]) == 2
    flagged = run_cli("--db", db, "--config", str(config), "recall", "oolong", "--limit", "3", "--json")
    assert len(json.loads(flagged.out)["items"]) == 3
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    unconfigured = run_cli("--db", db, "--config", str(empty), "recall", "oolong", "--json")
    assert len(json.loads(unconfigured.out)["items"]) == 4


@pytest.mark.anyio
async def test_mcp_recall_reads_the_configured_default_limit(tmp_path: Path) -> None:
    db_path = tmp_path / "m.db"

    def factory() -> MemoryService:
        from dataclasses import replace

        from yiji.service import open_service

        base = Config(db=db_path)
        return open_service(replace(base, recall=replace(base.recall, default_limit=2)))

    async with memory_client(db_path, factory) as client:
        for n in range(4):
            await client.call_tool(
                "event_submit",
                {"session": f"s{n}", "role": "user", "text": f"Tea note {n}: oolong tea again."},
            )
        found = payload(await client.call_tool("memory_recall", {"query": "oolong"}))
        assert len(found["items"]) == 2
        more = payload(await client.call_tool("memory_recall", {"query": "oolong", "limit": 3}))
        assert len(more["items"]) == 3
