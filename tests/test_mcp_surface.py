"""The MCP surface a client sees, pinned: every tool with its description, input schema, output schema
(none today) and annotations, and every prompt with its arguments, as the official SDK client receives
them, compared byte for byte with ``tests/data/surface/mcp_tools.json``.

A change to the surface is a deliberate act: regenerate the file with
``uv run python -m tests.test_mcp_surface`` and review the diff (key order included, as on the wire).
"""

from __future__ import annotations

import ast
import inspect
import json
import tempfile
import textwrap
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from mcp.server.fastmcp.prompts import Prompt
from pydantic import Field

from yiji.mcp_server import TOOLS, YijiMCP
from yiji.mcp_server.server import hints

from .mcp_helpers import memory_client

SNAPSHOT = Path(__file__).parent / "data" / "surface" / "mcp_tools.json"


async def surface(db_path: Path) -> str:
    """The server's surface as JSON text, in the order and form the client received it."""
    async with memory_client(db_path) as client:
        tools = (await client.list_tools()).tools
        prompts = (await client.list_prompts()).prompts
    seen: dict[str, Any] = {
        "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
        "prompts": [p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in prompts],
    }
    return json.dumps(seen, ensure_ascii=False, indent=1) + "\n"


@pytest.mark.anyio
async def test_the_tool_list_is_the_pinned_one(tmp_path: Path) -> None:
    seen = await surface(tmp_path / "m.db")
    pinned = SNAPSHOT.read_text(encoding="utf-8")
    assert seen == pinned, "the MCP surface changed; see this module's docstring"


@pytest.mark.anyio
async def test_the_snapshot_names_every_tool_and_parameter(tmp_path: Path) -> None:
    """The pin is not empty: fourteen tools, each with annotations and a described input schema."""
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert len(pinned["tools"]) == 14
    for tool in pinned["tools"]:
        assert set(tool) >= {"name", "description", "inputSchema", "annotations"}, tool["name"]
        assert all(p.get("description") for p in tool["inputSchema"]["properties"].values())
    assert [p["name"] for p in pinned["prompts"]] == ["resume"]


async def _described(text: Annotated[str, Field(description="Some text.")]) -> str:
    """A tool whose one parameter is described."""
    return text


async def _undescribed(text: Annotated[str, Field(description="Some text.")], limit: int = 3) -> str:
    """A tool with a parameter nobody described."""
    return text * limit


@pytest.mark.anyio
async def test_a_parameter_without_a_description_is_refused_at_registration() -> None:
    server = YijiMCP("t")
    server.add_tool(_described, annotations=hints(read_only=True))
    [tool] = await server.list_tools()
    assert tool.description == "A tool whose one parameter is described."
    assert tool.inputSchema["properties"]["text"] == {"type": "string", "description": "Some text."}
    with pytest.raises(TypeError, match="parameter limit has no description"):
        server.add_tool(_undescribed, annotations=hints())
    with pytest.raises(TypeError, match="no annotations"):
        server.add_tool(_described, name="again")
    with pytest.raises(TypeError, match="argument limit has no description"):
        server.add_prompt(Prompt.from_function(_undescribed, name="p"))


def test_each_tool_parameter_is_written_once() -> None:
    """A tool's parameters are stated in its signature only: its body never copies one by keyword
    (``persona=persona``) into a model or a call, it hands on :func:`yiji.mcp_server.server.arguments`."""
    copies = []
    for tool, _ in TOOLS:
        tree = ast.parse(textwrap.dedent(inspect.getsource(tool)))
        function = tree.body[0]
        assert isinstance(function, ast.AsyncFunctionDef)
        named = {a.arg for a in function.args.args + function.args.kwonlyargs}
        for statement in function.body:
            copies += [
                (function.name, node.arg)
                for node in ast.walk(statement)
                if isinstance(node, ast.keyword)
                and node.arg in named
                and isinstance(node.value, ast.Name)
                and node.value.id == node.arg
            ]
    assert copies == []


async def _write() -> None:
    with tempfile.TemporaryDirectory() as folder:
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(await surface(Path(folder) / "m.db"), encoding="utf-8")


if __name__ == "__main__":
    anyio.run(_write)
