"""Transcript lines and hook payloads in the hosts' own shapes.

Claude Code: the hooks reference (code.claude.com/docs/en/hooks: common fields ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``permission_mode``; ``source`` for SessionStart,
``prompt`` for UserPromptSubmit, ``trigger``/``custom_instructions`` for PreCompact, ``stop_hook_active``
for Stop, ``reason`` for SessionEnd) and the session transcript lines (``type`` user/assistant, ``message``
with ``content`` a string or blocks ``text``/``thinking``/``tool_use``/``tool_result``, ``uuid``,
``parentUuid``, ``isSidechain``, ``sessionId``, ``cwd``, ``timestamp``; after compaction a
``system``/``compact_boundary`` line and a user line with ``isCompactSummary``).

Codex: the generated hook input schemas (codex-rs/hooks/schema/generated/*.command.input.schema.json) and
rollout lines (``{"timestamp", "type", "payload"}`` with ``session_meta``, ``turn_context``,
``response_item`` messages/reasoning/function calls, ``event_msg`` ``user_message``/``agent_message``/
``agent_reasoning``, ``compacted``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def ts(second: int) -> str:
    at = datetime(2026, 11, 30, 10, tzinfo=UTC) + timedelta(seconds=second)
    return at.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def cc_line(
    kind: str,
    uuid: str,
    content: Any,
    *,
    session: str,
    cwd: str,
    second: int,
    parent: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"model": "claude-sonnet-4-5", "id": f"msg_{uuid[:8]}", "type": "message"}
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.0.30",
        "gitBranch": "main",
        "type": kind,
        "message": message,
        "uuid": uuid,
        "timestamp": ts(second),
        **extra,
    }


def cc_turns(session: str, cwd: str, pairs: list[tuple[str, str]], *, first: int = 0) -> list[dict[str, Any]]:
    """A Claude Code conversation: each pair a user prompt and an assistant reply, the reply after a
    thinking block, a tool call and its result, as the host writes them (one line per content block)."""
    lines: list[dict[str, Any]] = []
    parent = None
    for n, (question, answer) in enumerate(pairs, start=first):
        tool = f"toolu_{n:04d}"
        blocks: list[tuple[str, str, Any, dict[str, Any]]] = [
            ("aaaa", "user", question, {}),
            ("bbbb", "assistant", [{"type": "thinking", "thinking": "Let me look.", "signature": "sig"}], {}),
            (
                "cccc",
                "assistant",
                [{"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "ls"}}],
                {},
            ),
            (
                "dddd",
                "user",
                [{"type": "tool_result", "tool_use_id": tool, "content": "README.md\nsrc"}],
                {"toolUseResult": {"stdout": "README.md\nsrc", "stderr": ""}},
            ),
            ("eeee", "assistant", [{"type": "text", "text": answer}], {}),
        ]
        for k, (mark, kind, content, extra) in enumerate(blocks):
            uuid = f"{n:04d}{mark}-0000-4000-8000-{session[-12:]}"
            lines.append(
                cc_line(
                    kind, uuid, content, session=session, cwd=cwd, second=n * 5 + k, parent=parent, **extra
                )
            )
            parent = uuid
    return lines


def cc_compaction(session: str, cwd: str, second: int) -> list[dict[str, Any]]:
    """What Claude Code appends when it compacts: a boundary and the summary as a user line."""
    boundary = {
        "parentUuid": None,
        "logicalParentUuid": "x",
        "isSidechain": False,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "compactMetadata": {"trigger": "manual", "preTokens": 51234},
        "uuid": f"9999ffff-0000-4000-8000-{session[-12:]}",
        "sessionId": session,
        "cwd": cwd,
        "timestamp": ts(second),
    }
    summary = cc_line(
        "user",
        f"9999eeee-0000-4000-8000-{session[-12:]}",
        "This session is being continued from a previous conversation. Summary: the user likes SQLite.",
        session=session,
        cwd=cwd,
        second=second + 1,
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )
    return [boundary, summary]


def codex_meta(session: str, cwd: str) -> dict[str, Any]:
    return {
        "timestamp": ts(0),
        "type": "session_meta",
        "payload": {
            "id": session,
            "timestamp": ts(0),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.46.0",
            "instructions": None,
            "source": "cli",
            "git": {},
        },
    }


def codex_turns(cwd: str, pairs: list[tuple[str, str]], *, first: int = 1) -> list[dict[str, Any]]:
    """Codex rollout lines of each turn: injected context, the prompt as a response item and an event,
    the turn context, reasoning, a shell call and its output, the reply as a response item and an event."""
    lines: list[dict[str, Any]] = []
    for n, (question, answer) in enumerate(pairs, start=first):
        t = n * 10
        lines += [
            {
                "timestamp": ts(t),
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_text",
                            "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>",
                        }
                    ],
                },
            },
            {
                "timestamp": ts(t),
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": question}],
                },
            },
            {
                "timestamp": ts(t),
                "type": "event_msg",
                "payload": {"type": "user_message", "message": question, "kind": "plain"},
            },
            {
                "timestamp": ts(t),
                "type": "turn_context",
                "payload": {
                    "cwd": cwd,
                    "approval_policy": "on-request",
                    "model": "gpt-5-codex",
                    "summary": "auto",
                },
            },
            {
                "timestamp": ts(t + 1),
                "type": "response_item",
                "payload": {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "**Looking**"}],
                    "encrypted_content": "gAAA",
                },
            },
            {
                "timestamp": ts(t + 1),
                "type": "event_msg",
                "payload": {"type": "agent_reasoning", "text": "**Looking**"},
            },
            {
                "timestamp": ts(t + 2),
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": '{"command":["ls"]}',
                    "call_id": f"call_{n}",
                },
            },
            {
                "timestamp": ts(t + 3),
                "type": "response_item",
                "payload": {
                    "type": "function_call_output",
                    "call_id": f"call_{n}",
                    "output": '{"output":"README.md\\n"}',
                },
            },
            {
                "timestamp": ts(t + 4),
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": answer}],
                },
            },
            {
                "timestamp": ts(t + 4),
                "type": "event_msg",
                "payload": {"type": "agent_message", "message": answer},
            },
        ]
    return lines


def codex_compacted(second: int) -> dict[str, Any]:
    return {
        "timestamp": ts(second),
        "type": "compacted",
        "payload": {"message": "Summary of the earlier conversation.", "replacement_history": []},
    }


def write_lines(
    path: Path, lines: list[dict[str, Any]], *, partial: str | None = None, mode: str = "a"
) -> None:
    with path.open(mode, encoding="utf-8") as file:
        for line in lines:
            file.write(json.dumps(line, ensure_ascii=False) + "\n")
        if partial is not None:
            file.write(partial)


def cc_payload(event: str, session: str, transcript: Path, cwd: Path | str, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": event,
        "permission_mode": "default",
        **extra,
    }


def codex_payload(
    event: str, session: str, transcript: Path, cwd: Path | str, **extra: Any
) -> dict[str, Any]:
    base = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": event,
        "model": "gpt-5-codex",
    }
    if event in ("Stop", "PreCompact", "UserPromptSubmit"):
        base["turn_id"] = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
    if event in ("Stop", "SessionStart", "UserPromptSubmit"):
        base["permission_mode"] = "default"
    return base | extra
