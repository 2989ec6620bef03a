"""Boundary models for derived memories: what a caller supplies to ``memory_derive`` and what yiji returns.

Shape checks live here (types, ranges, lengths); the grounding rules (quote in source, role/basis,
single-valued keys, archived categories) live in :mod:`yiji.domain.validation` and apply to every path
that creates a memory.
``confidence`` is model-supplied ranking metadata, not a calibrated probability. The stored memory
itself is :class:`yiji.domain.records.MemoryRecord` (one definition for the plain recall path and these
models), named here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from yiji.domain.forgetting import Presentation
from yiji.domain.records import MemoryRecord
from yiji.models.common import (
    AwareTime,
    EventId,
    InputModel,
    Offset,
    OutputModel,
    Page,
    Scope,
    ScopeId,
    SessionId,
    UtcTime,
)
from yiji.models.events import EventRecord

__all__ = [
    "BASES",
    "KINDS",
    "Basis",
    "DeriveRequest",
    "DeriveResult",
    "Kind",
    "ListedMemory",
    "MemoryIn",
    "MemoryPage",
    "MemoryQuery",
    "MemoryRecord",
    "REVIEW_STATES",
    "Rejection",
    "ReviewEdit",
    "ReviewResult",
    "ReviewState",
    "RelationRecord",
    "RememberRequest",
    "RememberResult",
]

Kind = Literal["fact", "preference", "episode", "observation", "emotion", "agreement", "growth"]
Basis = Literal["user_statement", "assistant_expression", "inference"]
KINDS: tuple[str, ...] = ("fact", "preference", "episode", "observation", "emotion", "agreement", "growth")
BASES: tuple[str, ...] = ("user_statement", "assistant_expression", "inference")
VIEWS: tuple[str, ...] = ("current", "history", "revoked")
ReviewState = Literal["accepted", "proposed", "rejected"]
REVIEW_STATES: tuple[str, ...] = ("accepted", "proposed", "rejected")


class MemoryIn(InputModel):
    """One memory derived from one event. ``related`` names other items of the same batch (by index)
    or existing memories of the scope (by id)."""

    text: Annotated[str, Field(min_length=1, max_length=4000)]
    quote: Annotated[str, Field(min_length=1, max_length=4000)]
    kind: Kind
    basis: Basis
    confidence: Annotated[float, Field(ge=0, le=1)] = 0.8
    subject: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    fact_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    valid_at: AwareTime | None = None
    valence: Annotated[float | None, Field(ge=-1, le=1)] = None
    arousal: Annotated[float | None, Field(ge=0, le=1)] = None
    gist: Annotated[str | None, Field(min_length=1, max_length=400)] = None
    related: Annotated[list[int | str], Field(max_length=32)] = []


class DeriveRequest(InputModel):
    """Memories a caller derived from one stored event. With ``propose`` they wait in the review queue
    (``review_state`` proposed) for a person to accept, edit or reject, as extracted proposals do."""

    event_id: EventId
    persona: ScopeId | None = None
    project: ScopeId | None = None
    memories: Annotated[list[MemoryIn], Field(min_length=1, max_length=100)]
    propose: Annotated[bool, Field(strict=True)] = False


class RememberRequest(InputModel):
    """A statement of the user's to remember: stored as a user event, and one memory whose quote is the
    whole statement (a user statement about ``subject``), under the rules of ``memory_derive``."""

    text: Annotated[str, Field(min_length=1, max_length=4000)]
    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId = "remember"
    kind: Kind = "fact"
    subject: Annotated[str, Field(min_length=1, max_length=200)] = "user"
    fact_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    occurred_at: AwareTime | None = None
    propose: Annotated[bool, Field(strict=True)] = False


class RememberResult(OutputModel):
    """The stored event and the memory grounded in it (``proposed`` when it waits for review)."""

    scope: Scope
    event: EventRecord
    memory_id: str
    review_state: ReviewState = "accepted"


@dataclass(frozen=True, kw_only=True)
class ListedMemory(MemoryRecord):
    """A listed memory: the stored record plus how it is presented at the time of listing."""

    presentation: Presentation

    @classmethod
    def of(cls, record: MemoryRecord, presentation: Presentation) -> ListedMemory:
        return cls(**record.__dict__, presentation=presentation)

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: the record's, then its presentation's."""
        return {**super().as_dict(), "presentation": self.presentation.as_dict()}


class RelationRecord(OutputModel):
    from_id: str
    to_id: str
    type: str
    created_at: UtcTime


class Rejection(OutputModel):
    """An item refused by a grounding rule: its index in the batch, the field and the rule id."""

    index: int
    field: str
    rule: str


class DeriveResult(OutputModel):
    """``review_states``: each memory's state now; ``review_state``: their one state, or ``mixed``. A
    claim already stored is that memory, in its own state, listed in ``existing_ids``; ``created`` is
    false when nothing new was stored."""

    scope: Scope
    event_id: str
    memory_ids: list[str]
    review_state: ReviewState | Literal["mixed"] = "accepted"
    review_states: list[ReviewState] = []
    existing_ids: list[str] = []
    rejected: list[Rejection] = []
    created: bool = True


class MemoryQuery(InputModel):
    """What to list for review: filters, a view and a page.

    ``view``: ``current`` lists memories valid at ``as_of`` (default now) and not revoked; ``history``
    adds expired and not-yet-started ones; ``revoked`` lists only corrected (revoked) memories.
    ``include_revoked`` adds revoked memories to the current or history view.
    ``text`` matches a substring of the memory text, quote or gist; ``since``/``until`` bound the start
    of validity (``since`` inclusive, ``until`` exclusive). ``review`` picks the review state (accepted
    memories unless asked: proposals wait in the review queue, rejected ones are kept for audit).
    """

    persona: ScopeId | None = None
    project: ScopeId | None = None
    kinds: Annotated[list[Kind] | None, Field(max_length=7)] = None
    bases: Annotated[list[Basis] | None, Field(max_length=3)] = None
    subject: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    fact_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    text: Annotated[str | None, Field(min_length=1, max_length=400)] = None
    since: AwareTime | None = None
    until: AwareTime | None = None
    as_of: AwareTime | None = None
    view: Literal["current", "history", "revoked"] = "current"
    include_revoked: bool = False
    newest_first: bool = False
    review: ReviewState = "accepted"
    offset: Offset = 0
    limit: Annotated[int, Field(ge=1, le=10_000)] = 100


class ReviewEdit(InputModel):
    """Changes to a waiting proposal before it is accepted (each optional; checked as ``memory derive``
    checks a memory). ``fact_key`` and ``subject`` may be set to null to drop the key."""

    text: Annotated[str | None, Field(min_length=1, max_length=4000)] = None
    kind: Kind | None = None
    subject: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    fact_key: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    valid_at: AwareTime | None = None


class ReviewResult(OutputModel):
    """A review decision: the memory as it is now and what happened to it."""

    scope: Scope
    action: Literal["accept", "reject", "edit"]
    memory: MemoryRecord


class MemoryPage(Page):
    """One page of a listing: ``total`` matches in all, ``next_offset`` is null on the last page."""

    memories: list[ListedMemory]
