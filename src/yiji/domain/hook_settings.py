"""yiji's entries in a host's hook settings (Claude Code ``settings.json``, Codex ``hooks.json``), the
settings file as JSON text, and the trust Codex keeps for its hooks.

Both hosts read the same shape: ``{"hooks": {EVENT: [{"matcher"?: ..., "hooks": [{"type": "command",
"command": ..., "timeout": seconds}]}]}}``. :func:`merge` gives each event yiji handles one handler that
runs ``<command> hook <host> <EVENT>``; :func:`remove` takes yiji's handlers out again. Both leave every
other key, event, group and handler as they were and are idempotent; an earlier yiji handler is replaced
where it stands (so its position, which Codex's trust is keyed by, stays), never doubled.

A handler is yiji's by an exact marker, never by a substring: the field ``"yiji": "<host>"`` that
:func:`merge` writes (both hosts keep fields they do not use: Claude Code runs such a handler, Codex reads
and hashes only its own fields). A handler without the marker is yiji's only as an earlier release
wrote it: a command whose words end exactly with ``hook <host> <EVENT>`` (the event it is filed under,
``--recall`` allowed after it) whose program is named exactly ``yiji`` (or is ``uv``, ``uvx`` or a
``python`` given the word ``yiji``). A user's
``~/bin/yiji-notify.sh hook claude-code Stop`` is neither; yiji's handler that a user edited
(``... Stop 2>>f``) still carries its marker.

Settings text: :func:`parse` accepts only strict JSON (``NaN``/``Infinity`` are not JSON, duplicate keys
are refused, at most :data:`MAX_DEPTH` levels) and keeps every number's own text, so :func:`dumps` writes
``1e400`` back as ``1e400``; a lone surrogate escape is written back as the same escape.

Codex runs a hook from ``hooks.json`` only after a person trusted it: ``config.toml`` then holds
``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash = "sha256:..."``, the hash of
the handler's normalized identity (:func:`codex_trusted_hash`, checked against Codex 0.171.0).

The events, the time each host gives a hook (``timeout``) and the limit yiji keeps inside it are data
here: :data:`HOST_EVENTS`, :data:`HOST_TIMEOUT_SECONDS`, :func:`time_limit`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shlex
from pathlib import PurePosixPath
from typing import Any

__all__ = [
    "EVENTS",
    "HOST_EVENTS",
    "HOST_TIMEOUT_SECONDS",
    "MARKER",
    "MAX_DEPTH",
    "TIME_LIMIT_SECONDS",
    "Number",
    "SettingsError",
    "codex_trust_key",
    "codex_trusted_hash",
    "command_option",
    "dumps",
    "handler_command",
    "holds_ours",
    "merge",
    "moved",
    "ours",
    "ours_positions",
    "parse",
    "plain",
    "remove",
    "time_limit",
]

CAPTURE_EVENTS: tuple[str, ...] = ("PreCompact", "Stop", "StopFailure", "Interrupt", "SessionEnd")
EVENTS: tuple[str, ...] = ("SessionStart", "UserPromptSubmit", *CAPTURE_EVENTS)
HOST_EVENTS: dict[str, tuple[str, ...]] = {
    # Claude Code 2.1.332: StopFailure ends a turn an API error cut short (no Stop then)
    "claude-code": ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "StopFailure", "SessionEnd"),
    # Codex 0.171.0: Interrupt ends a turn the person interrupted (no Stop then)
    "codex": ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "Interrupt", "SessionEnd"),
}
HOST_TIMEOUT_SECONDS: dict[str, dict[str, int]] = {
    "claude-code": {
        "SessionStart": 15,
        "UserPromptSubmit": 10,
        "PreCompact": 20,
        "Stop": 20,
        "StopFailure": 20,
        "SessionEnd": 20,
    },
    # Codex clamps SessionEnd and Interrupt hooks to 3 s (and hashes the clamped value)
    "codex": {
        "SessionStart": 15,
        "UserPromptSubmit": 10,
        "PreCompact": 20,
        "Stop": 20,
        "Interrupt": 3,
        "SessionEnd": 3,
    },
}
"""The ``timeout`` written into the host's settings (seconds)."""
MARKER = "yiji"
"""The field that marks a handler as yiji's; its value is the host's name."""
MAX_DEPTH = 128
"""The deepest nesting of a settings file yiji reads (Codex's JSON reader stops at 128 levels)."""


TIME_LIMIT_SECONDS: dict[str, float] = {
    "SessionStart": 8.0,
    "UserPromptSubmit": 5.0,
    "PreCompact": 10.0,
    "Stop": 10.0,
    "StopFailure": 10.0,
    "Interrupt": 10.0,
    "SessionEnd": 10.0,
}
"""The limit yiji keeps inside each hook, at most half a second short of the host's ``timeout``."""


def time_limit(host: str, event: str) -> float:
    """The limit yiji keeps inside a hook: on expiry it exits 0 and nothing acknowledged is lost."""
    timeout = HOST_TIMEOUT_SECONDS.get(host, {}).get(event, 20)
    return min(TIME_LIMIT_SECONDS.get(event, 10.0), timeout - 0.5)


def plain(value: Any) -> Any:
    """``value`` with each :class:`Number` as a Python number where one holds it, else as its text."""
    if isinstance(value, Number):
        number = float(value.text)
        return number if number - number == 0 else value.text
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def handler_command(command: str, host: str, event: str, *, recall: bool = False) -> str:
    """The command a host runs; ``UserPromptSubmit`` installed to recall says so."""
    return f"{command} hook {host} {event}" + (" --recall" if recall and event == "UserPromptSubmit" else "")


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


def ours(handler: Any, host: str, event: str) -> bool:
    """Whether ``handler`` (filed under ``event``) is yiji's for ``host``: its marker, or the exact
    command line an earlier release wrote (see the module docstring)."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    if MARKER in handler:
        return bool(handler[MARKER] == host)
    text = handler.get("command")
    if not isinstance(text, str):
        return False
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    if words[-1:] == ["--recall"]:
        words = words[:-1]
    if len(words) < 4 or words[-3:] != ["hook", host, event]:
        return False
    program = PurePosixPath(words[0]).name
    if program == "yiji":
        return True
    launcher = program in ("uv", "uvx") or program.startswith("python")
    return launcher and "yiji" in words[1:-3]


def _groups(hooks: dict[str, Any], event: str) -> list[Any]:
    groups = hooks.get(event)
    return groups if isinstance(groups, list) else []


def holds_ours(settings: dict[str, Any], host: str) -> bool:
    """Whether ``settings`` holds a handler of yiji's for ``host``."""
    hooks = settings.get("hooks")
    return isinstance(hooks, dict) and any(
        ours(handler, host, event)
        for event in hooks
        for group in _groups(hooks, event)
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
    )


def _handler(command: str, host: str, event: str, recall: bool) -> dict[str, Any]:
    return {
        "type": "command",
        "command": handler_command(command, host, event, recall=recall),
        "timeout": HOST_TIMEOUT_SECONDS[host][event],
        MARKER: host,
    }


def merge(
    settings: dict[str, Any], host: str, command: str, events: tuple[str, ...], *, recall: bool = False
) -> dict[str, Any]:
    """``settings`` with one yiji handler per event in ``events``: an earlier yiji handler of that event
    is replaced where it stands, others of yiji's are taken out (groups left empty by that go too), and
    an event without one gets a new group at its end. ``ValueError`` names a part that is not the shape
    both hosts read (``hooks``, ``hooks.EVENT``)."""
    out = copy.deepcopy(settings)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("hooks")
    placed: set[str] = set()
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            if event in events:
                raise ValueError(f"hooks.{event}")
            continue
        kept = []
        for group in groups:
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
                kept.append(group)
                continue
            handlers = []
            for handler in group["hooks"]:
                if not ours(handler, host, event):
                    handlers.append(handler)
                elif event in events and event not in placed:
                    handlers.append(_handler(command, host, event, recall))
                    placed.add(event)
            if handlers or not group["hooks"]:
                group["hooks"] = handlers
                kept.append(group)
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
    for event in events:
        if event not in placed:
            hooks.setdefault(event, []).append({"hooks": [_handler(command, host, event, recall)]})
    if not hooks and settings.get("hooks") != {}:
        del out["hooks"]  # nothing left but what yiji added or took out
    return out


def remove(settings: dict[str, Any], host: str) -> dict[str, Any]:
    """``settings`` without yiji's handlers for ``host``; groups and events left empty by that go too,
    and ``hooks`` itself when nothing else is left in it."""
    return merge(settings, host, "", ())


# -- the settings file as text ----------------------------------------------------------------------


class SettingsError(ValueError):
    """A settings file yiji will not read: ``rule`` says why, in words, without quoting the file."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


class Number:
    """A JSON number with a fraction or exponent, kept as the text it was written with (``1e400`` stays
    ``1e400``, ``1.10`` stays ``1.10``); integers are read as Python's exact ``int``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Number) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Number({self.text!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> Number:
        return self


def _int(text: str) -> int | Number:
    return int(text) if len(text) < 4000 else Number(text)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise SettingsError("an object in the settings file names one key twice")
    return found


def _no_constant(name: str) -> Any:
    raise SettingsError(f"{name} is not JSON (the settings file must be strict JSON)")


def parse(text: str) -> dict[str, Any]:
    """The settings object of ``text``, numbers kept as written; :class:`SettingsError` otherwise."""
    if len(re.findall(r"[\[{]", text)) > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise SettingsError(f"the settings file nests deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_float=Number,
            parse_int=_int,
            parse_constant=_no_constant,
        )
    except SettingsError:
        raise
    except (ValueError, RecursionError):
        raise SettingsError("the settings file is not valid JSON") from None
    if not isinstance(value, dict):
        raise SettingsError("the settings file must hold a JSON object")
    return value


def _depth(text: str) -> int:
    """How deep the brackets of ``text`` nest, strings skipped (a bound checked before parsing)."""
    deepest = depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_SURROGATE = re.compile("[\ud800-\udfff]")


def _string(value: str) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, indent: str = "  ", level: int = 0) -> str:
    """``value`` as JSON text indented by two spaces (as ``json.dumps(indent=2, ensure_ascii=False)``),
    with :class:`Number` written as its own text and lone surrogates as ``\\uXXXX`` escapes."""
    pad = indent * (level + 1)
    if isinstance(value, Number):
        return value.text
    if isinstance(value, str):
        return _string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value, allow_nan=False)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{_string(k)}: {dumps(v, indent, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent * level + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        items = [pad + dumps(v, indent, level + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + indent * level + "]"
    raise TypeError(type(value).__name__)


# -- Codex's trust ----------------------------------------------------------------------------------


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def codex_trust_key(hooks_file: str, event: str, group: int, handler: int) -> str:
    """The key of a handler's ``[hooks.state."..."]`` entry in Codex's ``config.toml``."""
    return f"{hooks_file}:{_snake(event)}:{group}:{handler}"


def codex_trusted_hash(event: str, handler: dict[str, Any], matcher: str | None = None) -> str:
    """The ``trusted_hash`` Codex records when a person trusts ``handler``: SHA-256 of the canonical
    JSON (sorted keys, no spaces) of ``{event_name, matcher?, hooks: [{type, command, timeout, async,
    statusMessage?}]}``."""
    timeout = handler.get("timeout")
    entry: dict[str, Any] = {
        "type": "command",
        "command": handler["command"],
        "timeout": max(1, int(timeout)) if timeout is not None else 600,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        entry["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [entry]}
    if matcher is not None:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def ours_positions(settings: dict[str, Any], host: str) -> list[tuple[str, int, int, dict[str, Any]]]:
    """``(event, group index, handler index, handler)`` of each of yiji's handlers for ``host``."""
    hooks = settings.get("hooks")
    found: list[tuple[str, int, int, dict[str, Any]]] = []
    if not isinstance(hooks, dict):
        return found
    for event in hooks:
        for g, group in enumerate(_groups(hooks, event)):
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for h, handler in enumerate(group["hooks"]):
                    if ours(handler, host, event):
                        found.append((event, g, h, handler))
    return found


def moved(
    before: dict[str, Any], after: dict[str, Any], host: str
) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """``(event, old position, new position)`` of each handler that is not yiji's and that
    :func:`merge` or :func:`remove` moved (a group of yiji's before it went away): positions are
    ``(group index, handler index)``, what Codex keys its trust by. Merging keeps the order of every
    other handler, so the n-th of an event before is the n-th after."""
    found: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
    old_hooks, new_hooks = before.get("hooks"), after.get("hooks")
    if not isinstance(old_hooks, dict) or not isinstance(new_hooks, dict):
        return found

    def others(hooks: dict[str, Any], event: str) -> list[tuple[int, int]]:
        return [
            (g, h)
            for g, group in enumerate(_groups(hooks, event))
            if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for h, handler in enumerate(group["hooks"])
            if not ours(handler, host, event)
        ]

    for event in old_hooks:
        old, new = others(old_hooks, event), others(new_hooks, event)
        if len(old) == len(new):
            found.extend((event, a, b) for a, b in zip(old, new, strict=True) if a != b)
    return found
