"""Stored or received text shown to a person: control and bidirectional characters made visible.

One rule for every adapter (the CLI's plain output, the review UI's pages, MCP error messages): C0
controls except newline and tab, DEL, C1 controls, and the bidirectional overrides and isolates that
reorder text on screen are written as escapes (``\\x1b``, ``\\u202e``). Terminal escapes (ESC, OSC, BEL)
in stored text must never reach a terminal, and U+202E must never make a page or a message read
differently from what is stored. JSON output stays exact; this is for display only.
"""

from __future__ import annotations

import re

__all__ = ["NAME_SHOWN", "shown_name", "visible"]

_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

NAME_SHOWN = 40
"""Characters of a name received from a client (an unknown field, say) quoted back in an error."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    r"""``text`` with control and bidirectional characters made visible (``\x1b``, ``\u202e``)."""
    return _INVISIBLE.sub(_escape, text)


def shown_name(name: str, limit: int = NAME_SHOWN) -> str:
    """A name the caller sent, safe to quote back: made visible, then cut to ``limit`` characters."""
    shown = visible(name[: limit * 6])  # an escape is at most 6 characters: enough input, never all of it
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
