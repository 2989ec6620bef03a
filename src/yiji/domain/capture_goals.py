"""The goal of the checkpoint each host capture records, by reason (:mod:`yiji.service.capture`).

Such a checkpoint is a record of what was captured, not task state a host reported, so the session-start
pack leaves it out. A module of its own: the hook that builds that pack imports nothing else of capture.
"""

from __future__ import annotations

__all__ = ["CAPTURE_GOALS"]

CAPTURE_GOALS: dict[str, str] = {
    "event": "Conversation captured from the host as it happened",
    "backfill": "Conversation captured from the host's session log",
    "pre-summarize": "Conversation captured before the host summarized its context",
    "pre-return": "Conversation captured before the host replaced its context with a summary",
}
