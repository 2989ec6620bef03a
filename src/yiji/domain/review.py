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
for them. Pure: no I/O.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = ["POLICIES", "ReviewPolicy", "arrival_state", "rejected_identity"]

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
