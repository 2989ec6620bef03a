"""Identifier patterns and size limits shared by the boundary models and the pure validators.

Kept apart from the pydantic models so that a validator that must start quickly (host capture) applies
exactly the same rules without importing them.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Final

from yiji.errors import InvalidInput

__all__ = [
    "FUTURE_TOLERANCE",
    "ID_PATTERN",
    "ID_RULE",
    "MAX_EVENT_TEXT",
    "SCOPE_PATTERN",
    "SCOPE_RULE",
    "future_occurrence_warning",
    "pattern_rule",
    "resolve_scope",
]

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}$"
"""Event, memory and session ids: 1-128 letters, digits, ``.``, ``_``, ``:`` or ``-``."""
SCOPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$"
"""Persona, project and capture-instance ids: 1-64 letters, digits, ``.``, ``_`` or ``-``."""
ID_RULE = (
    "must start with a letter or digit and hold only letters, digits, '.', '_', ':' and '-', "
    "at most 128 characters"
)
""":data:`ID_PATTERN` in words, as an error states the rule a value broke."""
SCOPE_RULE = (
    "must start with a letter or digit and hold only letters, digits, '.', '_' and '-', at most 64 characters"
)
""":data:`SCOPE_PATTERN` in words."""
_PATTERN_RULES: Final = {ID_PATTERN: ID_RULE, SCOPE_PATTERN: SCOPE_RULE}
MAX_EVENT_TEXT = 1_000_000
"""Largest accepted event text, in characters (about 1 MB of ASCII)."""

_SCOPE_RE = re.compile(SCOPE_PATTERN)


def resolve_scope(persona: str | None, project: str | None, defaults: tuple[str, str]) -> tuple[str, str]:
    """The ``(persona, project)`` of a request, omitted parts from ``defaults`` (the configuration);
    each must match :data:`SCOPE_PATTERN`, else :class:`InvalidInput` names the field."""
    resolved = (
        persona if persona is not None else defaults[0],
        project if project is not None else defaults[1],
    )
    for field, value in zip(("persona", "project"), resolved, strict=True):
        if not _SCOPE_RE.match(value):
            raise InvalidInput(field, SCOPE_RULE)
    return resolved


def pattern_rule(pattern: object) -> str:
    """The rule a value that does not match ``pattern`` broke, in words (never the regular expression)."""
    return _PATTERN_RULES.get(str(pattern), "has a character or a length this field does not allow")


FUTURE_TOLERANCE: Final = timedelta(days=1)
"""How far ahead of now an event's ``occurred_at`` may be before submit warns (clock skew, time zones)."""


def future_occurrence_warning(occurred_at: datetime, now: datetime) -> str | None:
    """A warning when an event is dated more than a day ahead of ``now`` (it is still stored).

    Recall and resume read the world as of now, so such an event and its memories stay out of sight
    until that time: usually a wrong date or time zone.
    """
    ahead = occurred_at - now
    if ahead <= FUTURE_TOLERANCE:
        return None
    days = ahead.total_seconds() / 86400
    return (
        f"occurred_at is {days:.1f} days in the future: the event was stored, but recall and resume "
        "will not show it or its memories until then (check the date and time zone)"
    )
