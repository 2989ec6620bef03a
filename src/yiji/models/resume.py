"""Boundary models for ``session_resume``: the request and the budgeted context with its metadata.

The context is one JSON-encoded string (see :mod:`yiji.domain.budget` for its shape). The budget counts
that string only; the metadata below and any protocol overhead are outside it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from yiji.domain.budget import Omission, Trim
from yiji.models.checkpoints import CheckpointState
from yiji.models.common import InputModel, OutputModel, Scope, ScopeId, SessionId, UtcTime, not_blank

__all__ = [
    "DEFAULT_BUDGET",
    "MAX_BUDGET",
    "MAX_QUERY",
    "CheckpointUse",
    "RecallUse",
    "ResumeMetadata",
    "ResumeRequest",
    "ResumeResult",
]

DEFAULT_BUDGET = 4000
"""Budget when none is given, in the units of the chosen counter (tokens, or UTF-8 bytes).

Chosen to hold a typical chat's whole pack, the session's recent turns included (they come last, so a
tight budget drops them first). Measured in UTF-8 bytes (no model named) with ``budget`` 1, whose
``omitted`` list gives each component's size, and 100000 for the whole pack:

* ``yiji demo`` (Chinese and English turns) plus a checkpoint of session ``demo-recent``: persona and
  framing 976, checkpoint 360, recalled memories 706, 5 recent events 528; whole pack 2,570;
* ``examples/`` (Chinese: ``persona.txt``, ``history.jsonl``) plus the README's checkpoint of session
  ``s1``: persona and framing 682, checkpoint 359, 3 recent events 532; whole pack 1,573.

The former default, 2,000, left the demo's recent turns out (``omitted: recent_events``). 4,000 holds
the demo's whole pack with 1.4 KB to spare: five turns of about 90 Chinese characters (or 270 English
ones) each beside the same persona, checkpoint and recalled memories."""
MAX_BUDGET = 10_000_000
MAX_QUERY = 2000
"""Longest recall query, in characters (given or built from the checkpoint and recent events)."""


class ResumeRequest(InputModel):
    """What a host asks for when a session resumes.

    ``session`` selects the checkpoint and the recent events (without it: no checkpoint, and the recent
    events of the whole scope). ``budget`` is in tokens of ``model`` when an exact tokenizer for it is
    installed, otherwise in UTF-8 bytes. ``query`` steers the recalled memories; without it the query is
    built from the checkpoint's goal and next action and the recent events' text.
    """

    persona: ScopeId | None = None
    project: ScopeId | None = None
    session: SessionId | None = None
    budget: Annotated[int, Field(ge=0, le=MAX_BUDGET, strict=True)] = DEFAULT_BUDGET
    model: Annotated[str, Field(min_length=1, max_length=128), AfterValidator(not_blank)] | None = None
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY), AfterValidator(not_blank)] | None = None


class CheckpointUse(OutputModel):
    """Which checkpoint the pack is built from: ``state`` of the session's latest checkpoint."""

    state: CheckpointState
    checkpoint_id: str | None = None
    invalidated_at: UtcTime | None = None


class RecallUse(OutputModel):
    """How the recalled memories were chosen: ``query`` is ``given``, ``derived`` or ``none``;
    ``derived_query`` is the query built from the checkpoint and recent events, when it was used."""

    query: Literal["given", "derived", "none"]
    derived_query: str | None = None
    found: int = 0
    warnings: list[str] = []


class ResumeMetadata(OutputModel):
    """Everything about the pack except the context itself (outside the budget).

    ``used`` is the context's size in ``counter`` units; ``exact`` says whether ``counter`` is the model's
    own tokenizer; ``counter_note`` explains a fallback to UTF-8 bytes, and ``model_warning`` says why a
    named model did not pick its tokenizer (the ``tokenizers`` extra to install, or an unknown name).
    ``included``, ``omitted`` and ``empty`` name the components that went in, did not fit, and had nothing
    to show; ``trimmed`` the recalled component when only its best items fitted.
    """

    status: Literal["ok", "insufficient_budget"]
    budget: int
    used: int
    counter: str
    exact: bool
    counter_note: str | None = None
    model_warning: str | None = None
    included: list[str]
    omitted: list[Omission]
    empty: list[str]
    trimmed: list[Trim] = []
    checkpoint: CheckpointUse
    recall: RecallUse
    generated_at: UtcTime


class ResumeResult(OutputModel):
    """The result of ``session_resume``: the JSON-encoded context string and its metadata."""

    scope: Scope
    session: str | None = None
    context: str
    metadata: ResumeMetadata

    def brief(self) -> dict[str, Any]:
        """The compact result for agents (MCP): nulls, empty lists and the echo of the request left out.

        The context string is unchanged (it is what the budget counted); only the metadata is trimmed.
        """
        meta = self.metadata.model_dump(mode="json", exclude={"budget"})
        return {
            "scope": self.scope.model_dump(mode="json"),
            **({"session": self.session} if self.session is not None else {}),
            "context": self.context,
            "metadata": _lean(meta),
        }


def _lean(value: Any) -> Any:
    """``value`` without ``None``, empty lists and empty objects, at any depth."""
    if isinstance(value, dict):
        kept = {k: _lean(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v not in ([], {})}
    if isinstance(value, list):
        return [_lean(v) for v in value]
    return value
