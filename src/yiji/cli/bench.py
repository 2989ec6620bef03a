"""``yiji bench ...``: benchmark commands that print numbers."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context


def _ingest(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.ingest import run_ingest_bench

    result = run_ingest_bench(args.single, args.batched, args.synchronous)

    def human(r: dict[str, Any]) -> str:
        s, b = r["single"], r["batched"]
        return (
            f"synchronous={r['synchronous']}\n"
            f"one by one : {s['events']} events in {s['seconds']} s = {s['events_per_second']} events/s\n"
            f"one batch  : {b['events']} events in {b['seconds']} s = {b['events_per_second']} events/s\n"
            f"size       : {b['bytes_per_1000_events']} bytes per 1,000 events"
        )

    ctx.emit(result, human)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("bench", help="benchmarks (print numbers)")
    bs = p.add_subparsers(dest="bench_command", required=True)
    i = bs.add_parser("ingest", parents=[common], help="event ingestion throughput")
    i.add_argument("--single", type=int, default=2000, help="events committed one by one")
    i.add_argument("--batched", type=int, default=20000, help="events in one transaction")
    i.add_argument("--synchronous", default="FULL", choices=["NORMAL", "FULL", "EXTRA"])
    i.set_defaults(func=_ingest)
