"""Review of extracted memories: which arrive ``proposed`` and wait for a person.

A small local model stores a wrong memory about one time in four on conversations its rules were not
written against, so an operator can have extraction *propose* memories instead of storing them. The
policy (``[extraction] review``) decides per memory:

* ``none``: every extracted memory is accepted at once (the default);
* ``facts``: single-valued keyed facts (a ``subject`` and ``fact_key``: where someone lives, their job)
  and agreements wait; a wrong one of these replaces a true current fact or binds the assistant to
  something never agreed. Everything else is accepted;
* ``all``: every extracted memory waits.

Manual derivations, corrections and imported memories never wait: a person (or the archive) vouches
for them.

The review states yiji writes (:data:`STATE_RULES`, one row per state, read by :func:`state_problems`):
extraction (or ``memory derive --propose``) stores a memory ``proposed`` (never reviewed, no end of
validity, not revoked) or ``accepted``; corrections and imports are never proposed; a decision moves
a proposal to ``accepted`` or ``rejected`` and records ``reviewed_at`` and ``reviewed_by`` together
(a note only with them); only an accepted memory takes part in intervals (``invalid_at``) and can be
corrected (``revoked_at``). An archive import refuses any other combination, and ``doctor`` names
such rows of a database. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "POLICIES",
    "STATE_RULES",
    "ReviewPolicy",
    "StateRule",
    "arrival_state",
    "rejected_identity",
    "state_problems",
]

ReviewPolicy = Literal["none", "facts", "all"]
POLICIES: Final = ("none", "facts", "all")


def arrival_state(policy: str, kind: str, subject: str | None, fact_key: str | None) -> str:
    """``proposed`` or ``accepted``: the review state an extracted memory is stored with."""
    if policy == "all":
        return "proposed"
    if policy == "facts" and ((subject and fact_key) or kind == "agreement"):
        return "proposed"
    return "accepted"


def rejected_identity(quote: str, kind: str, subject: str | None, fact_key: str | None) -> tuple[object, ...]:
    """What makes an extracted memory the same claim as a rejected one of the same event: the same
    quote read as the same kind of memory about the same key (the wording may differ between tries)."""
    return (quote, kind, subject, fact_key)


ORIGINS: Final = ("extraction", "manual", "correction", "import")


@dataclass(frozen=True)
class StateRule:
    """What a memory in one review state can hold.

    ``origins``: where such a memory comes from; ``reviewed``: whether ``reviewed_at``/``reviewed_by``
    are ``never``, ``always`` or ``maybe`` set; ``closes``: whether it may have an end of validity
    (``invalid_at``); ``revokes``: whether it may be revoked by a correction (``revoked_at``)."""

    origins: frozenset[str]
    reviewed: Literal["never", "always", "maybe"]
    closes: bool
    revokes: bool


STATE_RULES: Final[Mapping[str, StateRule]] = {
    # stored by extraction under a review policy, or by ``memory derive --propose``; it waits,
    # untouched by intervals and corrections
    "proposed": StateRule(frozenset({"extraction", "manual"}), "never", closes=False, revokes=False),
    # stored at once (any origin), or a proposal a person accepted; it lives like any memory
    "accepted": StateRule(frozenset(ORIGINS), "maybe", closes=True, revokes=True),
    # a proposal a person rejected: kept for audit, out of intervals and corrections
    "rejected": StateRule(frozenset({"extraction", "manual"}), "always", closes=False, revokes=False),
}
REVIEWED_ORIGINS: Final = frozenset({"extraction", "manual"})
"""Only a proposal is ever reviewed, and only extraction and a manual derivation propose."""


def state_problems(row: Mapping[str, object]) -> list[tuple[str, str]]:
    """The ways a stored memory's review columns break :data:`STATE_RULES`, as ``(column, rule)``.

    ``row`` holds ``review_state``, ``origin``, ``reviewed_at``, ``reviewed_by``, ``review_note``,
    ``invalid_at`` and ``revoked_at`` (other keys are ignored). Empty when yiji could have written it.
    """
    state = str(row["review_state"])
    rule = STATE_RULES.get(state)
    if rule is None:
        return [("review_state", "unknown_review_state")]
    at, by, note = (row.get(c) is not None for c in ("reviewed_at", "reviewed_by", "review_note"))
    problems: list[tuple[str, str]] = []
    if row["origin"] not in rule.origins:
        problems.append(("origin", f"origin_never_{state}"))
    if rule.reviewed == "never" and (at or by or note):
        problems.append(
            ("reviewed_at" if at else "reviewed_by" if by else "review_note", f"{state}_never_reviewed")
        )
    elif rule.reviewed == "always" and not (at and by):
        problems.append(("reviewed_by" if at else "reviewed_at", f"{state}_always_reviewed"))
    elif at != by:
        problems.append(("reviewed_by" if at else "reviewed_at", "reviewed_at_and_reviewed_by_together"))
    if note and not at and rule.reviewed != "never":
        problems.append(("review_note", "review_note_only_with_a_review"))
    if (
        at
        and rule.reviewed != "never"
        and row["origin"] not in REVIEWED_ORIGINS
        and row["origin"] in rule.origins
    ):
        problems.append(("origin", "reviewed_only_if_proposed"))
    if row.get("invalid_at") is not None and not rule.closes:
        problems.append(("invalid_at", f"{state}_never_closed"))
    if row.get("revoked_at") is not None and not rule.revokes:
        problems.append(("revoked_at", f"{state}_never_revoked"))
    return problems
