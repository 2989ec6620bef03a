"""The ``remember`` skill shipped for Claude Code and Codex (Agent Skills: a folder with ``SKILL.md``, YAML
front matter ``name`` and ``description``): every tool and argument it tells the model to use exists in
yiji's MCP server, and following its steps through the SDK client leaves a proposal that waits for a
person, quoting the user's words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .mcp_helpers import memory_client, payload

ROOT = Path(__file__).resolve().parent.parent
SKILLS = [
    ROOT / "integrations" / host / "skills" / "remember" / "SKILL.md" for host in ("claude-code", "codex")
]


def _front_matter(text: str) -> dict[str, str]:
    found = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert found, "SKILL.md must open with YAML front matter"
    fields = {}
    for line in found.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


@pytest.mark.parametrize("path", SKILLS, ids=["claude-code", "codex"])
def test_the_skill_has_the_agent_skills_front_matter(path: Path) -> None:
    fields = _front_matter(path.read_text(encoding="utf-8"))
    assert fields["name"] == path.parent.name == "remember"
    assert 0 < len(fields["description"]) <= 1024  # the open standard's limit
    assert "memory_derive" in fields["description"]


def _step_arguments(text: str, tool: str) -> set[str]:
    """The argument names the step that calls ``tool`` lists (bullets such as "- `role`: ...")."""
    step = text.split(f"MCP tool `{tool}`", 1)[1]
    step = re.split(r"\n\d\. ", step, maxsplit=1)[0]
    return set(re.findall(r"^\s+- `(\w+)`", step, re.M))


@pytest.mark.anyio
async def test_every_tool_and_argument_the_skill_names_exists_and_its_steps_leave_a_proposal(
    tmp_path: Path,
) -> None:
    text = SKILLS[0].read_text(encoding="utf-8")
    assert text.split("\n---\n", 1)[1] == SKILLS[1].read_text(encoding="utf-8").split("\n---\n", 1)[
        1
    ].replace("codex mcp add", "claude mcp add")
    submit_args = _step_arguments(text, "event_submit")
    derive_args = _step_arguments(text, "memory_derive")
    assert submit_args == {"role", "text", "session"}
    assert {"event_id", "propose", "memories", "text", "quote", "kind", "basis", "confidence"} <= derive_args
    words = "以后这个项目的缩进一律用 tab，不要用空格。"
    async with memory_client(tmp_path / "m.db") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert submit_args <= set(tools["event_submit"].inputSchema["properties"])
        item_fields = set(tools["memory_derive"].inputSchema["$defs"]["MemoryIn"]["properties"])
        assert derive_args - {"event_id", "propose", "memories"} <= item_fields | {"subject", "fact_key"}
        assert {"event_id", "propose", "memories", "project"} <= set(
            tools["memory_derive"].inputSchema["properties"]
        )

        # the steps, as a host model follows them
        event = payload(
            await client.call_tool(
                "event_submit",
                {"role": "user", "text": words, "session": "remember", "project": "atlas-1a2b3c4d"},
            )
        )["event"]
        proposed = payload(
            await client.call_tool(
                "memory_derive",
                {
                    "event_id": event["id"],
                    "propose": True,
                    "project": "atlas-1a2b3c4d",
                    "memories": [
                        {
                            "text": "用户要求这个项目的缩进一律用 tab",
                            "quote": "以后这个项目的缩进一律用 tab，不要用空格",
                            "kind": "preference",
                            "basis": "user_statement",
                            "confidence": 0.9,
                        }
                    ],
                },
            )
        )
        assert proposed["review_state"] == "proposed"
        recalled = payload(
            await client.call_tool("memory_recall", {"query": "缩进 tab", "project": "atlas-1a2b3c4d"})
        )
        waiting = payload(
            await client.call_tool("memory_list", {"review": "proposed", "project": "atlas-1a2b3c4d"})
        )
    assert [m["id"] for m in waiting["memories"]] == proposed["memory_ids"]
    # a proposal is not remembered: recall finds the user's words as a raw turn, not the memory
    assert [i["type"] for i in recalled["items"]] == ["raw_event"]
    assert not {i["id"] for i in recalled["items"]} & set(proposed["memory_ids"])
