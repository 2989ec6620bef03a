"""Identifier patterns and size limits shared by the boundary models and the pure validators.

Kept apart from the pydantic models so that a validator that must start quickly (host capture) applies
exactly the same rules without importing them.
"""

from __future__ import annotations

__all__ = ["ID_PATTERN", "MAX_EVENT_TEXT", "SCOPE_PATTERN"]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"
"""Event, memory and session ids: 1-128 letters, digits, ``.``, ``_``, ``:`` or ``-``."""
SCOPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$"
"""Persona, project and capture-instance ids: 1-64 letters, digits, ``.``, ``_`` or ``-``."""
MAX_EVENT_TEXT = 1_000_000
"""Largest accepted event text, in characters (about 1 MB of ASCII)."""
