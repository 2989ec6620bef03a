"""Where a recalled list ends: a cut that follows the scores, not a count.

A recall returns the items its evidence supports, not a fixed number padded with weak matches. The
ranking (:mod:`yiji.domain.ranking`) lists its hits first, then weak matches best first; this module
decides which of them stay::

    an item stays when  it is strong (a hit, an asked-for fact)
                   or   score >= share * best                    a floor relative to the best item
                   or   it carries a query word that no item     evidence the stronger ones lack
                        kept before it carries

so a partial word match ("use" for "Uses") at a tenth of the best answer's score goes, and so does one
more mention of words the list already holds; a weak match that is the only one to name a thing the
question asks about (the second of two places it names) stays. ``share`` is
:attr:`yiji.domain.ranking_plan.Weights.cut_share`, chosen on the dev halves of the benchmarks (the
grid is in ``docs/benchmarks.md``). A limit caps the list after the cut, never pads it.

Invariants (property-tested): the best item always stays; a higher ``share`` keeps a subset; the cut
of a prefix is the prefix of the cut (a limit and the cut commute); every dropped item lies under the
floor and holds only words some item kept before it holds. Pure: scores and words in, positions out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Listed", "kept_positions"]


@dataclass(frozen=True)
class Listed:
    """One item of a ranked list as the cut sees it: its ``score``, the query ``words`` its own evidence
    matches, and whether it is ``strong`` (a hit or an asked-for fact: always kept)."""

    score: float
    words: frozenset[str] = frozenset()
    strong: bool = False


def kept_positions(items: Sequence[Listed], share: float) -> list[int]:
    """The positions of ``items`` (in rank order) that stay: strong ones, those scoring at least
    ``share`` of the best item's score, and those carrying a word no item kept before them carries."""
    if not 0.0 <= share <= 1.0:
        raise ValueError("share must be within [0, 1]")
    if not items:
        return []
    floor = share * max(item.score for item in items)
    seen: set[str] = set()
    kept: list[int] = []
    for position, item in enumerate(items):
        if item.strong or item.score >= floor or not item.words <= seen:
            kept.append(position)
            seen |= item.words
    return kept
