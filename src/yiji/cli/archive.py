"""``yiji export|import|backup|restore``: portable archives and SQLite backups.

Progress bars go to standard error and only when it is a terminal.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, add_common, progress_bar

if TYPE_CHECKING:
    from yiji.models.archive import ArchiveResult

_VERBS = {"export": "exported", "import": "imported", "backup": "backed up", "restore": "restored"}


def _human(r: ArchiveResult) -> str:
    from yiji.domain.wording import counted

    direction = "to" if r.operation in ("export", "backup") else "from"
    what = "schema" if r.format == "sqlite" else "format"
    counts = ", ".join(f"{name}={count}" for name, count in r.counts.items())
    return (
        f"{_VERBS[r.operation]} {counted(sum(r.counts.values()), 'row')} {direction} {r.path} "
        f"({r.format}, {what} version {r.format_version})\n{counts}"
    )


def _whole_database(ctx: Context, command: str) -> None:
    """Archives and backups hold the whole database, every persona and project: a scope flag would
    read as a filter that is not applied, so it is refused, naming it."""
    from yiji.errors import InvalidInput

    for flag, value in (("persona", ctx.persona), ("project", ctx.project)):
        if value is not None:
            raise InvalidInput(
                flag, f"is not accepted by {command}: it covers the whole database, every persona and project"
            )


def _export(ctx: Context, args: argparse.Namespace) -> None:
    _whole_database(ctx, "export")
    fmt = args.format or ("jsonl" if args.path.endswith(".jsonl") else "json")
    ctx.emit(ctx.service.archive_export(args.path, fmt, progress=progress_bar), _human)


def _import(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.service.archive import check_source

    _whole_database(ctx, "import")
    check_source(args.path, args.format)  # before the destination database is created
    with ctx.new_database_or_none():
        ctx.emit(ctx.service.archive_import(args.path, args.format, progress=progress_bar), _human)


def _backup(ctx: Context, args: argparse.Namespace) -> None:
    _whole_database(ctx, "backup")
    ctx.emit(ctx.service.backup_create(args.path), _human)


def _restore(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.service.archive import check_source

    _whole_database(ctx, "restore")
    check_source(args.path, "sqlite")  # before the destination database is created
    with ctx.new_database_or_none():
        ctx.emit(ctx.service.backup_restore(args.path, progress=progress_bar), _human)


COMMANDS = ("export", "import", "backup", "restore")
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    # The common options without --persona and --project in the help: these commands cover the whole
    # database and refuse a scope (a scope given anyway is still parsed, so it is refused by name).
    whole = argparse.ArgumentParser(add_help=False)
    add_common(whole, suppress=True, scoped=False)
    e = sub.add_parser(
        "export",
        parents=[whole],
        help="write every authoritative table to a new JSON or JSONL archive",
        description="Write one consistent snapshot of every authoritative table, every persona and "
        "project, to a new archive file (0600). An existing file is never overwritten.",
    )
    e.add_argument("path", help="new archive file")
    e.add_argument("--format", choices=["json", "jsonl"], help="default: jsonl for *.jsonl, else json")
    e.set_defaults(func=_export)
    i = sub.add_parser(
        "import",
        parents=[whole],
        help="import an archive or SQLite backup into an empty database",
        description="Validate every record of an archive (JSON, JSONL, or a SQLite backup), then import "
        "it into an empty database. Nothing is written when any record breaks a rule.",
    )
    i.add_argument("path", help="archive or backup file")
    i.add_argument("--format", choices=["json", "jsonl", "sqlite"], help="default: detected")
    i.set_defaults(func=_import)
    b = sub.add_parser(
        "backup",
        parents=[whole],
        help="copy the database to a new file with SQLite's online backup API",
        description="Copy the live database (write-ahead log included) to a new, verified 0600 file. "
        "An existing file is never overwritten.",
    )
    b.add_argument("path", help="new backup file")
    b.set_defaults(func=_backup)
    r = sub.add_parser(
        "restore",
        parents=[whole],
        help="restore a SQLite backup into an empty database",
        description="Read a backup without modifying it, validate its content like an archive, and "
        "import it into an empty database.",
    )
    r.add_argument("path", help="backup file")
    r.set_defaults(func=_restore)
