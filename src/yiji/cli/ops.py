"""Operator commands: ``doctor``, ``scopes``, ``config show``, ``serve``, ``demo``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, add_page_options
from yiji.errors import restore_advice

if TYPE_CHECKING:
    from yiji.service.scopes import ScopeList

EVENT_FTS_NOTE = (
    "                (event_fts indexes only conversation events without a derived memory, recall's "
    "raw-event fallback; other events are found through their memories or not searched, so it counts "
    "fewer than events)"
)


def _doctor(ctx: Context, args: argparse.Namespace) -> int:
    report = ctx.service.doctor(scan_for=args.scan_for or (), clean=args.clean)
    if args.redact_secrets:
        report["redacted"] = ctx.service.redact_stored_secrets()
    report["secrets"] = ctx.service.secret_scan()
    if report["secrets"]["events"] or report["secrets"]["memories"]:
        from yiji.invocation import yiji_command

        report["warnings"].append(
            f"stored text holds secrets ({report['secrets']['events']} events, "
            f"{report['secrets']['memories']} memories); {yiji_command('doctor --redact-secrets')} "
            "replaces them"
        )

    def human(r: dict[str, Any]) -> str:
        from yiji.domain.wording import counted, padded
        from yiji.invocation import yiji_command

        say = ctx.words
        violations, pending = r["foreign_key_violations"], r["pending_extractions"]
        waiting = r["awaiting_extraction"]
        rows = [
            ("database", str(r["database"])),
            ("schema", str(r["schema_version"])),
            ("integrity", ", ".join(r["integrity_check"])),
            (
                "foreign_keys",
                say["cli.doctor.violations"].format(n=violations, counted=counted(violations, "violation")),
            ),
            (
                "pending",
                say["cli.doctor.extractions"].format(n=pending, counted=counted(pending, "extraction")),
            ),
            (
                "to_extract",
                say["cli.doctor.without_memories"].format(
                    n=waiting, counted=counted(waiting, "event"), command=yiji_command("extraction run")
                ),
            ),
            ("review", ", ".join(f"{state}={count}" for state, count in r["review"].items())),
            ("tables", ", ".join(f"{name}={count}" for name, count in r["tables"].items())),
        ]
        lines = [f"{padded(say['cli.doctor.' + name], 16)}{value}" for name, value in rows]
        tables = r["tables"]
        if tables.get("events", 0) != tables.get("event_fts", 0):
            lines.append(EVENT_FTS_NOTE)
        for s in r.get("scan", []):
            where = say["cli.doctor.found_in"].format(where=", ".join(s["found_in"]))
            result = where if s["found_in"] else say["cli.doctor.not_found"]
            lines.append(say["cli.doctor.scanned"].format(label=s["label"], result=result))
        lines += [f"{say['cli.doctor.cleaned']}: {name}" for name in r.get("cleaned", [])]
        if "redacted" in r:
            done = r["redacted"]
            lines.append(f"redacted        {done['events']} events, {done['memories']} memories")
        found = r["secrets"]
        lines.append(
            f"secrets         {found['events']} events, {found['memories']} memories"
            + "".join(f"; {rule}={count}" for rule, count in found["rules"].items())
        )
        lines += [f"{say['cli.doctor.problem']}: {p}" for p in r["problems"]]
        if "integrity_check failed" in r["problems"]:
            lines.append(f"the database is damaged: {restore_advice()}")
        lines += [f"{say['cli.warning']}: {w}" for w in r["warnings"]]
        lines.append(say["cli.doctor.ok"] if r["ok"] else say["cli.doctor.not_ok"])
        return "\n".join(lines)

    ctx.emit(report, human)
    return 0 if report["ok"] else 1


def _scopes(ctx: Context, args: argparse.Namespace) -> None:
    listed = ctx.service.scope_list(ctx.persona, ctx.project, limit=args.limit, offset=args.offset)
    ctx.emit(listed, lambda r: _scope_table(ctx, r))


def _scope_table(ctx: Context, r: ScopeList) -> str:
    """The scopes as a table, ``*`` on the scope commands use now, and how to reach another."""
    from yiji.cli.context import more_line
    from yiji.domain.wording import counted, padded, shown_width
    from yiji.invocation import yiji_command

    say = ctx.words
    current = (r.current["persona"], r.current["project"])
    rows = [
        (
            say["persona"].lower(),
            say["project"].lower(),
            *(
                say[f"cli.scopes.{name}"]
                for name in ("events", "sessions", "memories", "to_extract", "newest")
            ),
        )
    ]
    rows += [
        (
            s.persona,
            s.project,
            str(s.events),
            str(s.sessions),
            str(s.memories),
            str(s.to_extract),
            ctx.when(s.newest_event_at) if s.newest_event_at else "-",
        )
        for s in r.scopes
    ]
    widths = [max(shown_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        ("* " if n and row[:2] == current else "  ")
        + "  ".join(
            padded(cell, width, right=2 <= i <= 5)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for n, row in enumerate(rows if r.scopes else [])
    ]
    lines.append(more_line(r.total, r.offset, len(r.scopes), r.next_offset, "scope", words=say))
    here = "/".join(current)
    said = say["cli.scopes.current" if r.current_holds else "cli.scopes.empty"].format(here=here)
    other = next(((s.persona, s.project) for s in r.scopes if (s.persona, s.project) != current), None)
    if other is not None:
        flags = ("" if other[0] == current[0] else f"--persona {other[0]} ") + f"--project {other[1]}"
        said += say["cli.scopes.another"].format(command=yiji_command(f"{flags} recall ..."))
    doctor = yiji_command("doctor")
    unread = [
        f"{counted(count, f'{host} transcript')} held no conversation yiji reads (see {doctor})"
        for host, count in r.unread_transcripts.items()
    ]
    return "\n".join([*lines, said, *unread])


def _config_show(ctx: Context, args: argparse.Namespace) -> None:
    ctx.emit(ctx.config.public_dict())


def _serve(ctx: Context, args: argparse.Namespace) -> None:
    import dataclasses

    from yiji.domain.limits import resolve_scope
    from yiji.mcp_server import run_stdio

    # --persona/--project are the server's default scope: a tool call that names none uses them, as
    # host-ingest and ui do. Checked here so that a bad id stops the server before it starts.
    persona, project = resolve_scope(ctx.persona, ctx.project, (ctx.config.persona, ctx.config.project))
    config = dataclasses.replace(ctx.config, persona=persona, project=project)
    run_stdio(config, on_new_database=ctx.announce_new_database)


def _demo(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.demo import remove_demo, run_demo

    if args.remove:
        remove_demo(ctx, sys.stdout)
    else:
        run_demo(ctx, sys.stdout)


COMMANDS = ("doctor", "scopes", "config", "serve", "demo")
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
        "--redact-secrets",
        dest="redact_secrets",
        action="store_true",
        help="replace the secrets stored text still holds (text stored before redaction, or found by rules "
        "added since) by [redacted:<rule>] markers, with the index rewritten and their vectors dropped",
    )
    doctor.add_argument(
        "--clean",
        action="store_true",
        help="remove temporary files left in the database's folder by an interrupted restore, export or "
        "backup (a running one is never touched)",
    )
    doctor.set_defaults(func=_doctor)
    scopes = sub.add_parser(
        "scopes",
        parents=[common],
        help="list the scopes (persona and project) the database holds, with their counts",
        description=(
            "List every scope the database holds something in, the most recently active first: its "
            "events, sessions, memories (accepted, not revoked), events to extract (conversation turns of "
            "[extraction] run_roles without memories yet: yiji extraction run) and newest event; * marks "
            "the scope commands use now. --persona or --project list only that persona's or project's "
            "scopes. Other commands reach a scope with --persona and --project, e.g. yiji --project "
            "atlas-1a2b3c4d recall ... (the Claude Code and Codex hooks file a folder's sessions under such "
            "a project: yiji hook project)."
        ),
    )
    add_page_options(scopes, limit=100)
    scopes.set_defaults(func=_scopes)
    c = sub.add_parser("config", help="show the configuration (never a secret)")
    cs = c.add_subparsers(dest="config_command", required=True)
    cs.add_parser("show", parents=[common]).set_defaults(func=_config_show)
    sub.add_parser(
        "serve",
        parents=[common],
        help="run the stdio MCP server (--persona/--project: the scope of tool calls that name none)",
    ).set_defaults(func=_serve)
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
