"""Agent hosts' transcripts (Claude Code, Codex): which lines are conversation, and their stable ids.

A host appends its session to a JSON Lines file. Capture reads it from a byte offset: the offset just past
the last captured line is the capture cursor (the host ``seq`` of :mod:`yiji.domain.capture`), so the same
bytes give the same messages, the same ids and the same cursor whether a hook or an import reads them.

Complete lines only. A line is complete when a newline ends it, or when it is the last line of the data
and decodes as a JSON object (a JSON object cut anywhere does not decode, so a line the host is still
writing is never taken); reading stops before the first line that is not complete, and the next read
starts there. A complete line that is not a JSON object is skipped.

Codex wrote the conversation as ``event_msg`` lines of type ``user_message`` / ``agent_message`` up to
0.147; from 0.148 on it writes ``event_msg`` lines of type ``item_completed`` whose ``item`` is a
``UserMessage`` or ``AgentMessage`` with text blocks. Both are read (checked on rollouts written by 0.147.0,
0.148.0 and 0.171.0). A transcript that shows the model answered (a line of the host's ``answered``
shapes) but holds no conversation yiji reads is flagged (:attr:`TranscriptRead.answered`), so a host
that changes its format again is seen rather than silently missed.

Conversation only: the person's text and the assistant's visible text. Tool calls, tool results,
thinking, images, the host's compaction summaries, side chains (sub-agents) and the host's own injected
records (slash-command echoes, environment context) are left out; which lines and prefixes those are is
data (``domain/data/transcripts.json``), one entry per host.

Text that UTF-8 cannot hold (a lone surrogate, which a JSON ``\ud83d`` escape can write) is repaired:
each such code point becomes U+FFFD, and the read counts the messages repaired.

Stable ids: Claude Code gives every line a ``uuid``: the event id is ``claude-code:<session>:<uuid>``.
Codex lines carry no id: the event id is ``codex:<session>:<byte offset of the line>``, which an
append-only file keeps. A Claude Code session forked from another (``--fork-session``) begins with copies
of the parent's lines, each naming its origin in ``forkedFrom``: such a line keeps its origin's id
(``claude-code:<parent session>:<uuid>``), so a turn the parent's capture stored is not stored again.
An id longer than 128 characters (a long session id) takes the SHA-256 of the session instead:
``<host>:sha256.<32 hex digits>:<message>``, the same whoever reads the line.

:func:`scope_project` is the rule that turns a working directory into a project id.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, Literal

from yiji.domain.limits import MAX_EVENT_TEXT
from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "HOSTS",
    "PROJECT_RULES",
    "Host",
    "TranscriptMessage",
    "TranscriptRead",
    "complete_lines",
    "event_id",
    "read_transcript",
    "scope_project",
]

Host = Literal["claude-code", "codex"]
HOSTS: tuple[Host, ...] = ("claude-code", "codex")
PROJECT_RULES: tuple[str, ...] = ("git-root", "cwd", "configured")


@dataclass(frozen=True)
class TranscriptMessage:
    """One conversation message of a transcript; ``end`` is the byte offset just past its line."""

    message_id: str
    role: str
    text: str
    occurred_at: datetime
    start: int
    end: int
    origin: str | None = None
    """The session the message was first written in, when another (a fork's copy of its parent's line)."""


@dataclass
class TranscriptRead:
    """What one read of a transcript found from ``start``.

    ``end`` is the offset just past the last complete line read (``start`` when none was);
    ``session`` and ``cwd`` are what the transcript itself says, where a line says it; ``answered``:
    some line shows the model answered; ``repaired``: messages whose text had to be repaired.
    """

    start: int
    end: int
    messages: list[TranscriptMessage] = field(default_factory=list)
    session: str | None = None
    cwd: str | None = None
    answered: bool = False
    repaired: int = 0

    @property
    def unread(self) -> bool:
        """The model answered, yet no line was conversation yiji reads: a format it does not know."""
        return self.answered and not self.messages


_MESSAGE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MAX_EVENT_ID = 128
"""The longest event id (:data:`yiji.domain.limits.ID_PATTERN`)."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class _Rules:
    roles: Mapping[str, str]
    items: Mapping[str, str]
    answered: tuple[tuple[tuple[tuple[str, ...], str], ...], ...]
    skip_flags: tuple[str, ...]
    skip_prefixes: tuple[str, ...]


@cache
def _rules(host: str) -> _Rules:
    data = json.loads((resources.files("yiji.domain") / "data" / "transcripts.json").read_text("utf-8"))
    entry = data[host]
    answered = tuple(
        tuple((tuple(key.split(".")), value) for key, value in shape.items()) for shape in entry["answered"]
    )
    return _Rules(
        dict(entry["roles"]),
        dict(entry["items"]),
        answered,
        tuple(entry["skip_flags"]),
        tuple(entry["skip_prefixes"]),
    )


def _at(line: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        line = line.get(key) if isinstance(line, dict) else None
    return line


def _answered(line: dict[str, Any], rules: _Rules) -> bool:
    """The line shows the model answered in this conversation (a side chain's answer does not)."""
    if any(line.get(flag) is True for flag in rules.skip_flags):
        return False
    return any(all(_at(line, path) == value for path, value in shape) for shape in rules.answered)


def complete_lines(data: bytes, base: int) -> Iterator[tuple[int, int, Any]]:
    """``(start, end, value)`` of each complete line of ``data`` (which starts at offset ``base``),
    ``value`` being the decoded JSON, or ``None`` for a complete line that is not JSON."""
    position = 0
    size = len(data)
    while position < size:
        newline = data.find(b"\n", position)
        last = newline < 0
        stop = size if last else newline
        raw = data[position:stop]
        value = _decode(raw)
        if last and not isinstance(value, dict):
            return  # being written: not complete yet
        yield base + position, base + (stop if last else stop + 1), value
        position = stop + 1


def _decode(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _text_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [  # Claude Code and Codex's user items write "text", Codex's agent items "Text"
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in ("text", "Text") and isinstance(b.get("text"), str)
    ]
    return "\n".join(texts)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value, "timestamp")
    except InvalidInput:
        return None


_Found = tuple[str, str, str, datetime, str | None]
"""A conversation line: message id, role, text, time, and the session it came from when another one's."""


def _fork_origin(line: dict[str, Any], uuid: str) -> tuple[str, str | None]:
    """The id and session of the line a fork copied (Claude Code's ``forkedFrom``), else the line's own."""
    origin = line.get("forkedFrom")
    if not isinstance(origin, dict):
        return uuid, None
    session, message = origin.get("sessionId"), origin.get("messageUuid")
    if not (isinstance(session, str) and isinstance(message, str)):
        return uuid, None
    if _SESSION.fullmatch(session) is None or _MESSAGE_ID.fullmatch(message) is None:
        return uuid, None
    return message, session


def _claude_code(line: dict[str, Any], rules: _Rules) -> _Found | None:
    role = rules.roles.get(str(line.get("type")))
    message = line.get("message")
    uuid = line.get("uuid")
    if role is None or not isinstance(message, dict) or not isinstance(uuid, str):
        return None
    if _MESSAGE_ID.fullmatch(uuid) is None:
        return None
    if any(line.get(flag) is True for flag in rules.skip_flags):
        return None
    at = _time(line.get("timestamp"))
    if at is None:
        return None
    message_id, origin = _fork_origin(line, uuid)
    if origin is not None and origin == line.get("sessionId"):
        origin = None
    return message_id, role, _text_blocks(message.get("content")), at, origin


def _codex(line: dict[str, Any], rules: _Rules, start: int) -> _Found | None:
    payload = line.get("payload")
    if line.get("type") != "event_msg" or not isinstance(payload, dict):
        return None
    at = _time(line.get("timestamp"))
    if at is None:
        return None
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict):  # 0.148 on
        role = rules.items.get(str(item.get("type")))
        text: Any = _text_blocks(item.get("content"))
    else:  # up to 0.147
        role = rules.roles.get(str(payload.get("type")))
        text = payload.get("message")
    if role is None or not isinstance(text, str):
        return None
    return str(start), role, text, at, None


def _header(host: Host, line: dict[str, Any], read: TranscriptRead) -> None:
    """What the transcript says about its session and working directory."""
    if host == "codex":
        payload = line.get("payload")
        if line.get("type") == "session_meta" and isinstance(payload, dict):
            if isinstance(payload.get("id"), str):
                read.session = payload["id"]
            if isinstance(payload.get("cwd"), str):
                read.cwd = payload["cwd"]
        return
    if read.session is None and isinstance(line.get("sessionId"), str):
        read.session = line["sessionId"]
    if read.cwd is None and isinstance(line.get("cwd"), str):
        read.cwd = line["cwd"]


def read_transcript(host: Host, data: bytes, base: int = 0) -> TranscriptRead:
    """The conversation messages in the complete lines of ``data``, read from offset ``base``."""
    rules = _rules(host)
    read = TranscriptRead(start=base, end=base)
    for start, end, value in complete_lines(data, base):
        read.end = end
        if not isinstance(value, dict):
            continue
        _header(host, value, read)
        read.answered = read.answered or _answered(value, rules)
        found = _claude_code(value, rules) if host == "claude-code" else _codex(value, rules, start)
        if found is None:
            continue
        message_id, role, text, at, origin = found
        text = text.strip()
        if not text or text.startswith(rules.skip_prefixes):
            continue
        text = text[:MAX_EVENT_TEXT]
        if _LONE_SURROGATE.search(text):
            text = _LONE_SURROGATE.sub(REPLACEMENT, text)
            read.repaired += 1
        read.messages.append(TranscriptMessage(message_id, role, text, at, start, end, origin))
    return read


def event_id(host: Host, session: str, message_id: str) -> str:
    """The stable yiji event id of a transcript message: ``<host>:<session>:<message>``, or, when that
    is longer than :data:`MAX_EVENT_ID`, ``<host>:sha256.<first 32 hex digits of the session's
    SHA-256>:<message>``."""
    full = f"{host}:{session}:{message_id}"
    if len(full) <= MAX_EVENT_ID:
        return full
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{host}:sha256.{digest}:{message_id}"


_NOT_SCOPE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_PROJECT_NAME = 48


def scope_project(root: str, rule: str, configured: str) -> str:
    """The project id for a host working in directory ``root`` (already resolved by the rule: the git
    root or the working directory itself), or ``configured`` for the ``configured`` rule.

    ``<name>-<hash>``: the directory's base name with every run of characters a project id may not
    hold turned into ``-`` (at most 48 characters; ``project`` when nothing is left), then the first
    8 hex digits of the SHA-256 of the absolute path, so two checkouts named alike stay apart.
    """
    if rule == "configured":
        return configured
    normalized = root.rstrip("/\\") or root
    base = re.split(r"[/\\]", normalized)[-1]
    name = _NOT_SCOPE.sub("-", base).strip("-._")[:MAX_PROJECT_NAME].strip("-._") or "project"
    digest = hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name}-{digest}"
