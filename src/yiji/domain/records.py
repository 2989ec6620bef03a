"""The stored records every path reads, defined once, as frozen dataclasses without pydantic.

``yiji recall`` starts without pydantic, and the boundary models embed these same classes as fields: one
definition per concept serves both. Their JSON form is the same on each path: :meth:`MemoryRecord.as_dict`
and :meth:`RawEvent.as_dict` on the plain path, pydantic's ``model_dump(mode="json")`` of a model that
holds one on the other (a test compares them). Times are aware datetimes in UTC, written as yiji's
fixed-width UTC strings (:data:`UtcTime`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from yiji.timeutil import to_db

__all__ = ["RAW_EXCERPT_CHARS", "RAW_LABEL", "MemoryRecord", "RawEvent", "SessionSummary", "UtcTime"]

RAW_EXCERPT_CHARS = 2000
"""Raw-event fallback text is capped at this many characters, with an explicit ``truncated`` flag."""
RAW_LABEL = "raw event (no derived memory); original text, not a checked fact"


class _UtcText:
    """Pydantic's serialiser for :data:`UtcTime`, built when a model that holds one is first built (so
    pydantic is imported there, never by a module that only defines or reads records)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import PlainSerializer

        return PlainSerializer(to_db, return_type=str).__get_pydantic_core_schema__(source, handler)

    def __repr__(self) -> str:
        return "UtcText()"


UtcTime = Annotated[datetime, _UtcText()]
"""An output time, serialized as yiji's fixed-width UTC string."""


def _time_or_none(value: datetime | None) -> str | None:
    return None if value is None else to_db(value)


@dataclass(frozen=True, kw_only=True)
class MemoryRecord:
    """A stored memory as read (built by keyword; the optional parts default to ``None``)."""

    id: str
    persona: str
    project: str
    event_id: str
    kind: str
    basis: str
    text: str
    quote: str
    confidence: float
    subject: str | None = None
    fact_key: str | None = None
    valid_at: UtcTime
    invalid_at: UtcTime | None = None
    revoked_at: UtcTime | None = None
    revoked_reason: str | None = None
    valence: float | None = None
    arousal: float | None = None
    gist: str | None = None
    origin: str
    created_at: UtcTime
    review_state: str = "accepted"
    """``accepted`` (remembered), ``proposed`` (waiting for a person) or ``rejected`` (kept for audit)."""
    reviewed_at: UtcTime | None = None
    reviewed_by: str | None = None
    review_note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (times as UTC strings), in field order."""
        out = dict(self.__dict__)
        for name in ("valid_at", "invalid_at", "revoked_at", "created_at", "reviewed_at"):
            out[name] = _time_or_none(out[name])
        return out


@dataclass(frozen=True)
class RawEvent:
    """A conversation event with no derived memory, returned as labeled fallback evidence."""

    id: str
    seq: int
    session: str
    role: str
    occurred_at: UtcTime
    text: str
    truncated: bool
    total_chars: int
    label: str = RAW_LABEL

    @classmethod
    def of(
        cls,
        event_id: str,
        seq: int,
        session: str,
        role: str,
        occurred_at: datetime,
        text: str,
        cap: int = RAW_EXCERPT_CHARS,
    ) -> RawEvent:
        """The excerpt of a whole event text: at most ``cap`` characters."""
        return cls(event_id, seq, session, role, occurred_at, text[:cap], len(text) > cap, len(text))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (the time as a UTC string), in field order."""
        return {**self.__dict__, "occurred_at": to_db(self.occurred_at)}


@dataclass(frozen=True)
class SessionSummary:
    """A session: how many events it holds, when its first and last ones occurred, how it opened."""

    session: str
    events: int
    first_at: UtcTime
    last_at: UtcTime
    opening: str
    """The start of the first event's text (at most 200 characters)."""
