"""Operator commands: ``doctor``, ``config show``, ``serve``, ``demo``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from yiji.cli.context import Context
from yiji.errors import restore_advice

EVENT_FTS_NOTE = (
    "                (event_fts indexes only conversation events without a derived memory, recall's "
    "raw-event fallback; other events are found through their memories or not searched, so it counts "
    "fewer than events)"
)


def _doctor(ctx: Context, args: argparse.Namespace) -> int:
    report = ctx.service.doctor(scan_for=args.scan_for or (), clean=args.clean)

    def human(r: dict[str, Any]) -> str:
        from yiji.domain.wording import counted

        lines = [
            f"database        {r['database']}",
            f"schema version  {r['schema_version']}",
            f"integrity       {', '.join(r['integrity_check'])}",
            f"foreign keys    {counted(r['foreign_key_violations'], 'violation')}",
            f"pending         {counted(r['pending_extractions'], 'extraction')}",
            "review          " + ", ".join(f"{state}={count}" for state, count in r["review"].items()),
            "tables          " + ", ".join(f"{name}={count}" for name, count in r["tables"].items()),
        ]
        tables = r["tables"]
        if tables.get("events", 0) != tables.get("event_fts", 0):
            lines.append(EVENT_FTS_NOTE)
        lines += [
            f"scanned {s['label']}: "
            + (f"found in {', '.join(s['found_in'])}" if s["found_in"] else "not found")
            for s in r.get("scan", [])
        ]
        lines += [f"cleaned: {name}" for name in r.get("cleaned", [])]
        lines += [f"problem: {p}" for p in r["problems"]]
        if "integrity_check failed" in r["problems"]:
            lines.append(f"the database is damaged: {restore_advice()}")
        lines += [f"warning: {w}" for w in r["warnings"]]
        lines.append("ok" if r["ok"] else "NOT OK")
        return "\n".join(lines)

    ctx.emit(report, human)
    return 0 if report["ok"] else 1


def _config_show(ctx: Context, args: argparse.Namespace) -> None:
    ctx.emit(ctx.config.public_dict())


def _serve(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.mcp_server import run_stdio

    run_stdio(ctx.config)


def _demo(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.demo import remove_demo, run_demo

    if args.remove:
        remove_demo(ctx, sys.stdout)
    else:
        run_demo(ctx, sys.stdout)


COMMANDS = ("doctor", "config", "serve", "demo")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    doctor = sub.add_parser(
        "doctor", parents=[common], help="check integrity, foreign keys, counts, pending work"
    )
    doctor.add_argument(
        "--scan-for",
        action="append",
        metavar="TEXT",
        help="an id or phrase that should be gone; reports the tables holding it, never the text "
        "(repeatable; exit 1 when found)",
    )
    doctor.add_argument(
        "--clean",
        action="store_true",
        help="remove temporary files left in the database's folder by an interrupted restore, export or "
        "backup (a running one is never touched)",
    )
    doctor.set_defaults(func=_doctor)
    c = sub.add_parser("config", help="show the configuration (never a secret)")
    cs = c.add_subparsers(dest="config_command", required=True)
    cs.add_parser("show", parents=[common]).set_defaults(func=_config_show)
    sub.add_parser("serve", parents=[common], help="run the stdio MCP server").set_defaults(func=_serve)
    demo = sub.add_parser(
        "demo",
        parents=[common],
        help="store a short bilingual conversation in project demo (or --project) and show the result",
    )
    demo.add_argument(
        "--remove",
        action="store_true",
        help="permanently delete the demo's events and everything derived from them (nothing else)",
    )
    demo.set_defaults(func=_demo)
