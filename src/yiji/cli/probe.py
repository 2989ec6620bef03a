"""``yiji probe`` (two chat models, one scripted conversation, blind report) and ``yiji probe summarize``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yiji.cli.context import Context, bounded_int, progress_bar
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    import httpx

    from yiji.config import ChatModelConfig
    from yiji.providers.chat import ChatClient


def _client(http: httpx.Client, side: str, section: ChatModelConfig) -> ChatClient:
    if not (section.base_url and section.model):
        raise InvalidInput(
            f"probe.{side}", "needs base_url and model in the configuration ([probe.a], [probe.b])"
        )
    from yiji.providers.chat import ChatClient

    return ChatClient(section, http)


def _run(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.evaluation.probe import run_probe, shipped_script

    if not args.out:
        raise InvalidInput("out", "required: the folder for the report (--out DIR)")
    script = Path(args.script) if args.script else shipped_script(args.lang)
    if not script.exists():
        raise InvalidInput("script", "the path does not exist")
    import httpx

    config = ctx.config
    with httpx.Client() as http:
        chats = (_client(http, "a", config.probe.a), _client(http, "b", config.probe.b))
        result = run_probe(config, script, Path(args.out), chats, seed=args.seed, progress=progress_bar)

    def human(r: dict[str, Any]) -> str:
        from yiji.domain.wording import counted
        from yiji.invocation import yiji_command

        return (
            f"{counted(r['turns'], 'turn')} -> {r['out']}/report.html (rate there, export ratings.json); "
            f"key.json holds the labels: open it only for `{yiji_command('probe summarize')}`"
        )

    ctx.emit(result, human)


def _summarize(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.evaluation.probe import summarize

    result = summarize(Path(args.ratings), Path(args.key))

    def human(r: dict[str, Any]) -> str:
        lines = [
            f"{side}: {m['model']}: rated {m['rated']}, naturalness {m['naturalness']}, "
            f"memory use {m['memory_use']}, errors {m['errors']}, preferred {m['preferred']}"
            for side, m in r["models"].items()
        ]
        return "\n".join([*lines, f"ties {r['ties']}"])

    ctx.emit(result, human)


COMMANDS = ("probe",)
"""The top-level commands :func:`register` adds."""


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    r = sub.add_parser(
        "probe",
        parents=[common],
        help="compare two chat models over one scripted conversation (blind report)",
    )
    ps = r.add_subparsers(dest="probe_command", required=False)
    r.add_argument("--script", help="conversation script (JSON); default: the shipped one for --lang")
    r.add_argument("--lang", choices=["zh", "en"], default="zh", help="shipped script language (default zh)")
    r.add_argument("--out", help="folder for report.html, report.json and key.json (required to run)")
    r.add_argument("--seed", type=bounded_int(0, 2**63 - 1), help="seed for the A/B labels (default random)")
    r.set_defaults(func=_run)
    s = ps.add_parser("summarize", parents=[common], help="join exported ratings with the key")
    s.add_argument("--ratings", required=True, help="ratings.json exported from report.html")
    s.add_argument("--key", required=True, help="key.json of the same run")
    s.set_defaults(func=_summarize)
