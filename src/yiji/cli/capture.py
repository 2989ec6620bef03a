"""``yiji host-ingest``: commit a host's visible messages offline, with a compare-and-set cursor.

Standard input holds JSON lines (one message each); standard output gets exactly one JSON line,
``{"ok": true, "cursor": M}``, or ``{"ok": false, "cursor": K, "conflict": ...}`` with exit code 3 when the
stored cursor was not ``--expect-cursor`` (or an event id is taken by another payload). Empty input answers
the stored cursor. No extraction provider is constructed. This module runs at every compaction of a host,
so it imports only what it uses, when it uses it: plainly valid input is checked without pydantic and the
capture use case opens the database without the rest of the service.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from yiji.cli.context import bounded_int

if TYPE_CHECKING:
    from yiji.cli.context import Context

__all__ = ["register"]

MAX_SEQ = 2**63 - 1
"""Equal to ``yiji.domain.capture.MAX_SEQ`` (a test checks), restated so that building the parser does not
import the domain module."""


def _read_lines() -> list[dict[str, Any]]:
    """The JSON lines on standard input, each decoded as strict UTF-8 whatever the locale."""
    from yiji.cli.context import stdin_bytes, utf8_text
    from yiji.domain import jsonstream
    from yiji.errors import InvalidInput

    if sys.stdin.isatty():
        return []
    lines: list[dict[str, Any]] = []
    for number, data in enumerate(stdin_bytes(), start=1):
        raw = utf8_text(data, f"stdin line {number}", "the line")
        if not raw.strip():
            continue
        value, error = jsonstream.decode(raw)  # every parser failure is a rule, never an exception
        if error is not None and error != jsonstream.NOT_JSON:
            raise InvalidInput(f"stdin line {number}", error)
        if not isinstance(value, dict):
            raise InvalidInput(f"stdin line {number}", "must be a JSON object")
        lines.append(value)
    return lines


def _host_ingest(ctx: Context, args: argparse.Namespace) -> int:
    from yiji.domain.capture import plain_batch
    from yiji.service.capture import capture_batch

    raw: dict[str, Any] = {
        "instance": args.instance,
        "session": args.session,
        "expect_cursor": args.expect_cursor,
        "reason": args.reason,
        "persona": ctx.persona,
        "project": ctx.project,
        "lines": _read_lines(),
    }
    raw = {k: v for k, v in raw.items() if v is not None}
    batch = plain_batch(raw)
    if batch is None:  # the boundary model converts what it may, or names the field and the rule
        from yiji.models.capture import parse_batch

        batch = parse_batch(raw)
    result = capture_batch(ctx.config, batch)
    print(json.dumps(result.as_dict()), flush=True)
    if result.ok and batch.lines:  # [extraction] auto: a detached, bounded run; the host does not wait
        from yiji.cli.autorun import start

        start(ctx.config, getattr(args, "config", None))
    return 0 if result.ok else 3


COMMANDS = ("host-ingest",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "host-ingest",
        parents=[common],
        help="commit a host's visible messages (JSON lines on stdin) with a compare-and-set cursor",
        description=(
            "Commit visible messages from an agent host in one transaction: the events, a capture checkpoint "
            "and the cursor move from --expect-cursor to the last message's seq. Prints one JSON line. "
            "Exit 3 with the stored cursor when it was not the expected one. Empty stdin answers the "
            "stored cursor. Offline: no extraction provider is used."
        ),
    )
    p.add_argument("--instance", required=True, help="capture installation id (1-64 letters, digits, . _ -)")
    p.add_argument("--session", required=True, help="host session id")
    p.add_argument(
        "--expect-cursor",
        type=bounded_int(-1, MAX_SEQ),
        help="the cursor the host believes is stored (-1 before the first capture); omit to only read it",
    )
    p.add_argument(
        "--reason",
        choices=["event", "pre-summarize", "pre-return", "backfill"],
        default="event",
        help="why the host sends this batch (recorded in the capture checkpoint)",
    )
    p.set_defaults(func=_host_ingest)
