"""Helpers to talk to yiji's MCP server through the official SDK client (in memory and over stdio)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolResult, TextContent

from yiji.config import Config
from yiji.mcp_server import build_server
from yiji.service import MemoryService, open_service

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
"""The handshake a raw client (one line of JSON on ``yiji serve``'s standard input) sends first (id 1)."""


@asynccontextmanager
async def memory_client(db_path: Path, factory: Any | None = None) -> AsyncIterator[ClientSession]:
    """An SDK client connected in memory to a server over ``db_path`` (or a custom service factory)."""

    def default_factory() -> MemoryService:
        return open_service(Config(db=db_path))

    server = build_server(factory or default_factory)
    async with create_connected_server_and_client_session(server) as client:
        yield client


@asynccontextmanager
async def stdio_client_session(
    db_path: Path,
    env: dict[str, str] | None = None,
    errlog: TextIO | None = None,
    serve_args: tuple[str, ...] = (),
) -> AsyncIterator[ClientSession]:
    """An SDK client talking to a real ``yiji serve`` subprocess (its log to ``errlog`` when given;
    ``serve_args`` follow ``serve`` on its command line)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "yiji", "--db", str(db_path), "serve", *serve_args],
        env={**os.environ, **(env or {})},
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def payload(result: CallToolResult) -> Any:
    """The structured result of a successful tool call."""
    assert not result.isError, error_text(result)
    if result.structuredContent is not None:
        return result.structuredContent
    block = result.content[0]
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def error_text(result: CallToolResult) -> str:
    return " ".join(b.text for b in result.content if isinstance(b, TextContent))
