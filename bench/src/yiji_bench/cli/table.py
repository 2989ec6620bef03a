"""``yiji bench refresh``: rerun the benchmarks behind docs/benchmarks.md's current table and rewrite it
(:mod:`yiji_bench.refresh`; the rows are :data:`yiji_bench.current.ROWS`)."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context


def refresh_command(ctx: Context, args: argparse.Namespace) -> int:
    from pathlib import Path

    from yiji_bench.current import ROWS
    from yiji_bench.refresh import Inputs, default_doc, refresh

    inputs = Inputs.from_environment(args.data_root, args.keep_root, args.answers, args.extraction_config)
    doc = Path(args.doc) if args.doc else default_doc()
    result = refresh(doc, ROWS, inputs, only=args.only or (), dry_run=args.dry_run)

    def human(r: dict[str, Any]) -> str:
        lines = []
        for row in r["rows"]:
            if row["state"] == "rerun":
                said = f"rerun in {row['seconds']} s, load {row['load']}: {row['figure']}"
            elif row["state"] == "would run":
                said = f"would run (about {row['minutes']:g} min): " + "; ".join(row["commands"])
            else:
                said = f"{row['state']}: {row['why']}"
            lines.append(f"{row['key']}: {said}")
        if r["removed"]:
            lines.append(f"removed from the table (no benchmark measures them): {len(r['removed'])} rows")
        if any(row["state"] == "would run" for row in r["rows"]):
            total = sum(row["minutes"] for row in r["rows"] if row["state"] == "would run")
            lines.append(f"about {total:g} min in all; nothing was run or written (--dry-run)")
        else:
            lines.append(f"{r['doc']} written")
        return "\n".join(lines)

    ctx.emit(result, human)
    return 1 if any(row["state"] == "failed" for row in result["rows"]) else 0
