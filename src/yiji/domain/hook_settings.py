"""yiji's entries in a host's hook settings (Claude Code ``settings.json``, Codex ``hooks.json``).

Both hosts read the same shape: ``{"hooks": {EVENT: [{"matcher"?: ..., "hooks": [{"type": "command",
"command": ..., "timeout": seconds}]}]}}``. :func:`merge` adds one group per event that runs
``<command> hook <host> <EVENT>`` and :func:`remove` takes yiji's handlers out again; both leave every
other key, event, group and handler as they were, and both are idempotent (merging twice equals merging
once; yiji's earlier entries are replaced, never doubled). A handler is yiji's when it is a command whose
text ends with ``hook <host> <EVENT>`` (and ``--recall``) and names ``yiji``.

The events, the time each host may give a hook (``timeout``) and the limit yiji keeps inside it are data
here: :data:`HOST_EVENTS`, :data:`HOST_TIMEOUT_SECONDS`, :data:`TIME_LIMIT_SECONDS`.
"""

from __future__ import annotations

import copy
import re
import shlex
from typing import Any

__all__ = [
    "EVENTS",
    "HOST_EVENTS",
    "HOST_TIMEOUT_SECONDS",
    "TIME_LIMIT_SECONDS",
    "command_option",
    "handler_command",
    "holds_ours",
    "merge",
    "remove",
]

EVENTS: tuple[str, ...] = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
HOST_EVENTS: dict[str, tuple[str, ...]] = {
    "claude-code": EVENTS,
    "codex": ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop"),  # Codex has no SessionEnd hook
}
TIME_LIMIT_SECONDS: dict[str, float] = {
    "SessionStart": 8.0,
    "UserPromptSubmit": 5.0,
    "PreCompact": 10.0,
    "Stop": 10.0,
    "SessionEnd": 10.0,
}
"""The limit yiji keeps inside each hook (below the host's): on expiry it exits 0 and nothing is lost."""
HOST_TIMEOUT_SECONDS: dict[str, int] = {
    "SessionStart": 15,
    "UserPromptSubmit": 10,
    "PreCompact": 20,
    "Stop": 20,
    "SessionEnd": 20,
}
"""The ``timeout`` written into the host's settings (seconds, both hosts)."""


def handler_command(command: str, host: str, event: str) -> str:
    """The command a host runs; ``UserPromptSubmit`` is installed only to recall, so it says so."""
    return f"{command} hook {host} {event}" + (" --recall" if event == "UserPromptSubmit" else "")


def command_option(command: str, flag: str) -> str | None:
    """The value the installed ``command`` gives ``flag`` (``--project P`` or ``--project=P``; the last
    one when repeated), or ``None`` when it gives none or is not a command line a shell can split."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    found = None
    for index, word in enumerate(words):
        if word == flag and index + 1 < len(words):
            found = words[index + 1]
        elif word.startswith(flag + "="):
            found = word[len(flag) + 1 :]
    return found


def _ours(handler: Any, host: str) -> bool:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    text = handler.get("command")
    if not isinstance(text, str) or "yiji" not in text:
        return False
    return re.search(rf"\bhook {re.escape(host)} ({'|'.join(EVENTS)})( --recall)?\s*$", text) is not None


def holds_ours(settings: dict[str, Any], host: str) -> bool:
    """Whether ``settings`` holds a handler of yiji's for ``host``."""
    hooks = settings.get("hooks")
    return isinstance(hooks, dict) and any(
        _ours(handler, host)
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
    )


def remove(settings: dict[str, Any], host: str) -> dict[str, Any]:
    """``settings`` without yiji's handlers for ``host``; groups and events left empty by that go too."""
    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                handlers = [h for h in group["hooks"] if not _ours(h, host)]
                if not handlers and group["hooks"]:
                    continue  # the group held only yiji's handlers
                group["hooks"] = handlers
            kept.append(group)
        if kept:
            hooks[event] = kept
        elif groups:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def merge(settings: dict[str, Any], host: str, command: str, events: tuple[str, ...]) -> dict[str, Any]:
    """``settings`` with one yiji group per event in ``events`` (earlier yiji handlers replaced)."""
    out = remove(settings, host)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("hooks")
    for event in events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"hooks.{event}")
        handler = {
            "type": "command",
            "command": handler_command(command, host, event),
            "timeout": HOST_TIMEOUT_SECONDS[event],
        }
        groups.append({"hooks": [handler]})
    return out
