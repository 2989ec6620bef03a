"""``yiji ui``: the local review web app (Starlette, uvicorn and Jinja2 are imported only here, on use)."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context, bounded_int

DEFAULT_PORT = 8765


def _ui(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.ui.server import serve

    serve(
        ctx.service,
        port=args.port,
        open_browser=not args.no_browser,
        persona=ctx.persona,
        project=ctx.project,
    )


COMMANDS = ("ui",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "ui",
        parents=[common],
        help="review and fix memories in a local web page (127.0.0.1 only)",
        description=(
            "Serve the review UI on 127.0.0.1 and open it in the browser. The printed link carries a "
            "token for this run; nothing else can open the pages. Ctrl-C stops the server."
        ),
    )
    p.add_argument(
        "--port",
        type=bounded_int(0, 65535),
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    p.add_argument("--no-browser", action="store_true", help="print the link without opening a browser")
    p.set_defaults(func=_ui)
