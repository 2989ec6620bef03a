"""docs/clients.md is configuration to copy: every snippet on it is parsed as its client reads it (JSON,
TOML, a ``claude mcp add`` / ``codex mcp add`` line, a bare command line), the command it names is started
with the placeholders filled in (this checkout, a fresh database, the ``uv`` running the tests, the
installed ``yiji``), and the official MCP client completes ``initialize`` and lists the tools over stdio.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "clients.md"


@dataclass(frozen=True)
class Snippet:
    where: str  # the heading it sits under and its language
    command: str
    args: tuple[str, ...]


def _blocks(text: str) -> list[tuple[str, str, str]]:
    """(heading, language, body) of every fenced block."""
    blocks = []
    heading = ""
    for match in re.finditer(r"^## ([^\n]+)$|^```(\w*)\n(.*?)^```$", text, re.M | re.S):
        if match.group(1):
            heading = match.group(1)
        else:
            blocks.append((heading, match.group(2), match.group(3)))
    return blocks


def _server(config: dict[str, object], key: str) -> tuple[str, tuple[str, ...]]:
    servers = config[key]
    assert isinstance(servers, dict) and list(servers) == ["yiji"], servers
    entry = servers["yiji"]
    assert isinstance(entry, dict)
    if key == "servers":  # VS Code names the transport
        assert entry["type"] == "stdio"
    command, args = entry["command"], entry["args"]
    assert isinstance(command, str) and isinstance(args, list)
    return command, tuple(str(a) for a in args)


def snippets(text: str) -> list[Snippet]:
    found = []
    for heading, language, body in _blocks(text):
        where = f"{heading} ({language})"
        if language == "json":
            config = json.loads(body)
            key = "servers" if "servers" in config else "mcpServers"
            found.append(Snippet(where, *_server(config, key)))
        elif language == "toml":
            config = tomllib.loads(body)
            found.append(Snippet(where, *_server(config, "mcp_servers")))
        elif language == "text":
            words = shlex.split(body)
            if words[:3] in (["claude", "mcp", "add"], ["codex", "mcp", "add"]):
                server = words[words.index("--") + 1 :]
                options = words[3 : words.index("--")]
                assert options[-1] == "yiji", options  # the name comes right before --
            else:
                server = words
            found.append(Snippet(where, server[0], tuple(server[1:])))
        else:
            raise AssertionError(f"{where}: a block clients.md does not know how to check")
    return found


def _fill(value: str, db: Path, uv: str, yiji: Path) -> str:
    value = value.replace("/path/to/yiji.db", str(db)).replace("/path/to/yiji-command", str(yiji))
    value = value.replace("/path/to/yiji/.uv/bin/uv", uv)  # the Quickstart's uv: the one running tests
    value = value.replace("/path/to/yiji", str(ROOT)).replace("/path/to/uv", uv)
    return {"uv": uv, "yiji": str(yiji)}.get(value, value)


def _uv() -> str:
    """The uv that runs the tests (`uv run` names itself in $UV), else the one on PATH."""
    uv = os.environ.get("UV") or shutil.which("uv")
    assert uv, "the README's test command, `.uv/bin/uv run pytest`, runs the tests with uv"
    return uv


async def _tools(command: str, args: list[str], env: dict[str, str]) -> list[str]:
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        initialized = await client.initialize()
        assert initialized.serverInfo.name == "yiji"
        return [tool.name for tool in (await client.list_tools()).tools]


def test_the_page_has_a_snippet_for_every_client() -> None:
    found = snippets(PAGE.read_text(encoding="utf-8"))
    headings = {s.where.split(" (")[0] for s in found}
    assert {
        "Claude Desktop",
        "Claude Code",
        "Cursor",
        "Codex",
        "VS Code",
        "Any other stdio client",
    } <= headings
    languages = {s.where for s in found}
    assert "Codex (toml)" in languages and "Codex (text)" in languages and "VS Code (json)" in languages
    for snippet in found:
        line = [snippet.command, *snippet.args]
        # an explicit database, and from a checkout never the development tools
        assert line[-3:] == ["serve", "--db", "/path/to/yiji.db"], snippet
        if "run" in line:
            assert line[line.index("run") + 1] == "--no-dev", snippet


SNIPPETS = snippets(PAGE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"{i}-{s.where}" for i, s in enumerate(SNIPPETS)])
async def test_each_snippet_starts_a_server_the_sdk_client_lists(snippet: Snippet, tmp_path: Path) -> None:
    yiji = Path(sys.executable).parent / "yiji"
    assert yiji.exists(), f"the yiji command is not installed beside {sys.executable}"
    db = tmp_path / "memory" / "yiji.db"
    db.parent.mkdir()
    uv = _uv()
    command = _fill(snippet.command, db, uv, yiji)
    args = [_fill(a, db, uv, yiji) for a in snippet.args]
    # A client's environment: no yiji settings, a home of its own; uv may not reach the network
    env = {k: v for k, v in os.environ.items() if not k.startswith(("YIJI_", "VIRTUAL_ENV"))}
    env |= {"HOME": str(tmp_path / "home"), "UV_OFFLINE": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.setdefault("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))
    tools = await _tools(command, args, env)
    assert {"memory_recall", "event_submit", "session_resume", "memory_delete"} <= set(tools)
    # the server uses the database it was given, not a default one in the client's home
    assert not (tmp_path / "home" / ".local" / "share" / "yiji").exists()
