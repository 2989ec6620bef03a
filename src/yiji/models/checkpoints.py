"""Boundary models for task checkpoints: what a host reports and what yiji returns.

A checkpoint is the host's own account of a task: its goal, the steps completed and pending, the
constraints to respect, the next action and the sequence number of the last event the account covers.
yiji checks its shape and that ``covered_seq`` names an event of the same scope and session; it does not
verify that the work happened. Every save appends a row; rows are never edited, except that a correction
or deletion in the scope marks them invalid.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from yiji.models.common import InputModel, OutputModel, Scope, ScopeId, SessionId, UtcTime, not_blank

__all__ = [
    "MAX_GOAL",
    "MAX_NEXT_ACTION",
    "MAX_STEP",
    "MAX_STEPS",
    "CheckpointIn",
    "CheckpointRecord",
    "CheckpointResult",
    "CheckpointState",
    "CheckpointView",
]

MAX_GOAL = 2000
"""Longest goal, in characters."""
MAX_NEXT_ACTION = 1000
"""Longest next action, in characters."""
MAX_STEP = 500
"""Longest single step or constraint, in characters."""
MAX_STEPS = 50
"""Most items in each of ``completed``, ``pending`` and ``constraints``."""


Step = Annotated[str, Field(min_length=1, max_length=MAX_STEP), AfterValidator(not_blank)]
Steps = Annotated[list[Step], Field(max_length=MAX_STEPS)]


class CheckpointIn(InputModel):
    """A task checkpoint reported by a host. Omitted persona/project take the configured defaults.

    ``covered_seq`` is the ``seq`` of the last event this account covers; it must name an event of the
    same persona, project and session. Omit it when no event of the session is covered yet.
    """

    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId
    goal: Annotated[str, Field(min_length=1, max_length=MAX_GOAL), AfterValidator(not_blank)]
    completed: Steps = []
    pending: Steps = []
    constraints: Steps = []
    next_action: (
        Annotated[str, Field(min_length=1, max_length=MAX_NEXT_ACTION), AfterValidator(not_blank)] | None
    ) = None
    covered_seq: Annotated[int, Field(ge=1, le=2**63 - 1)] | None = None


class CheckpointRecord(OutputModel):
    """A stored checkpoint. ``invalidated_at``/``invalid_reason`` are set by a correction or deletion."""

    id: str
    persona: str
    project: str
    session: str
    goal: str
    completed: list[str]
    pending: list[str]
    constraints: list[str]
    next_action: str | None = None
    covered_seq: int | None = None
    created_at: UtcTime
    invalidated_at: UtcTime | None = None
    invalid_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.invalidated_at is None


CheckpointState = Literal["valid", "invalidated", "none"]


class CheckpointResult(OutputModel):
    """The result of ``checkpoint_save``: the new row, in the scope it was saved in."""

    scope: Scope
    checkpoint: CheckpointRecord


class CheckpointView(OutputModel):
    """The checkpoint state of a session.

    ``state`` is ``valid`` when the latest checkpoint can be used, ``invalidated`` when the latest one was
    invalidated by a correction or deletion (it is then shown here for audit but never used), and
    ``none`` when the session has no checkpoint. ``history`` holds every checkpoint of the session,
    newest first, when it was asked for.
    """

    scope: Scope
    session: str
    state: CheckpointState
    checkpoint: CheckpointRecord | None = None
    history: list[CheckpointRecord] | None = None
