"""``yiji bench ...``: benchmark commands that print numbers."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context


def _ingest(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.ingest import run_ingest_bench

    result = run_ingest_bench(args.single, args.batched, args.synchronous, args.imported)

    def human(r: dict[str, Any]) -> str:
        s, b = r["single"], r["batched"]
        text = (
            f"synchronous={r['synchronous']}\n"
            f"one by one : {s['events']} events in {s['seconds']} s = {s['events_per_second']} events/s\n"
            f"one batch  : {b['events']} events in {b['seconds']} s = {b['events_per_second']} events/s\n"
            f"size       : {b['bytes_per_1000_events']} bytes per 1,000 events"
        )
        if "imported" in r:
            m = r["imported"]
            text += (
                f"\nimport     : {m['events']} events (JSON Lines, {m['file_bytes']} bytes) "
                f"in {m['seconds']} s"
                f" = {m['events_per_second']} events/s ({m['ratio_to_batched']}x the batch rate)"
            )
        return text

    ctx.emit(result, human)


def _host_ingest(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.host_ingest import run_host_ingest_bench

    result = run_host_ingest_bench(args.messages, args.runs)

    def human(r: dict[str, Any]) -> str:
        def row(x: dict[str, float]) -> str:
            spread = f"min {x['min_ms']} ms, p95 {x['p95_ms']} ms, max {x['max_ms']} ms"
            return f"median {x['median_ms']} ms, {spread}"

        verdict = "met" if r["target_met"] else "NOT met"
        return (
            f"host-ingest of {r['messages']} messages, {r['runs']} processes, start-up included\n"
            f"ingest : {row(r['ingest'])} (target median <= {r['target_ms']:.0f} ms: {verdict})\n"
            f"probe  : {row(r['probe'])} (empty stdin: start-up and one read)\n"
            f"work   : {row(r['in_process'])} (the same call in-process, no start-up)"
        )

    ctx.emit(result, human)


def _locomo(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.evidence import run_locomo

    result = run_locomo(_data_path(args.data), args.errata, memories=args.memories)
    report = result.pop("report")
    result["table"] = report.table()

    def human(r: dict[str, Any]) -> str:
        o = r["overall"]
        return (
            f"{r['table']}\n\nLoCoMo categories 1-4: recall@10={o['recall@10']:.4f} mrr={o['mrr']:.4f} "
            f"recall@1000tok={o['recall@1000tok']:.4f} recall@2000tok={o['recall@2000tok']:.4f}\n"
            f"{r['questions']} questions; memories: {r['memories']} ({r['derived']['memories']} derived, "
            f"{r['derived']['rejected']} rejected); ingest {r['ingest_seconds']} s; "
            f"recall p50 {r['recall_ms']['p50']} ms, p95 {r['recall_ms']['p95']} ms"
        )

    ctx.emit(result, human)


def _madial(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.evidence import run_madial

    results = [run_madial(_data_path(args.data), lang) for lang in args.lang or ["zh", "en"]]

    def human(rs: list[dict[str, Any]]) -> str:
        return "\n".join(
            f"MADial-Bench {r['lang']} n={r['dialogues']} "
            + " ".join(f"{k}={v:.3f}" for k, v in r["metrics"].items())
            + f" (recall p50 {r['recall_ms']['p50']} ms)"
            for r in rs
        )

    ctx.emit(results, human)


def _recall(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.recall_latency import run_recall_bench

    result = run_recall_bench(args.events, rounds=args.rounds)

    def human(r: dict[str, Any]) -> str:
        return (
            f"{r['events']} events, {r['memories']} memories ({r['database_mib']} MiB, built in "
            f"{r['build_seconds']} s)\n{r['queries']} recalls: p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms, "
            f"max {r['max_ms']} ms\npeak RSS {r['peak_rss_mib']} MiB (after building: "
            f"{r['peak_rss_mib_after_build']} MiB)"
        )

    ctx.emit(result, human)


def _archive_or_mode(value: str) -> int | str:
    """``--memories`` of ``bench resume``: an archive size, or a LoCoMo memory mode."""
    if value in ("none", "observations"):
        return value
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number, 'none' or 'observations'") from None
    if number < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return number


def _data_path(value: str) -> str:
    from pathlib import Path

    from yiji.errors import InvalidInput

    if not Path(value).exists():
        raise InvalidInput("data", "the path does not exist")
    return value


def _resume(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.resume import run_locomo_pack_share, run_resume_bench
    from yiji.errors import InvalidInput

    result: dict[str, Any] = {}
    mode = args.memories if isinstance(args.memories, str) else "none"
    if isinstance(args.memories, str) and not args.locomo:
        raise InvalidInput("memories", "a LoCoMo memory mode needs --locomo (or give a number)")
    if isinstance(args.memories, int) and args.memories:
        result["latency"] = run_resume_bench(args.memories, args.resumes, args.budget, args.model)
    if args.locomo:
        result["locomo"] = run_locomo_pack_share(_data_path(args.locomo), args.errata, memories=mode)

    def human(r: dict[str, Any]) -> str:
        lines = []
        if "latency" in r:
            x = r["latency"]
            verdict = "met" if x["target_met"] else "NOT met"
            lines += [
                f"archive    : {x['memories']} memories, built in {x['build_seconds']} s, "
                f"{x['database_bytes']} bytes",
                f"resume     : {x['resumes']} calls, budget {x['budget']} ({x['counter']}), "
                f"mean used {x['mean_used']}",
                f"latency    : p50 {x['p50_ms']} ms, p95 {x['p95_ms']} ms, max {x['max_ms']} ms "
                f"(target p95 <= {x['target_p95_ms']} ms: {verdict})",
                f"included   : {x['included']}",
                f"omitted    : {x['omitted']}",
            ]
        if "locomo" in r:
            x = r["locomo"]
            lines += [
                "",
                f"LoCoMo gold evidence share per pack ({x['counter']} tokens; {x['questions']} questions; "
                f"memories: {x['memories']}, {x['derived']['memories']} derived)",
                x["table"],
                f"recalled component omitted for size: {x['recalled_omitted_share']}",
                f"resume p50 {x['resume_p50_ms']} ms, p95 {x['resume_p95_ms']} ms",
            ]
        return "\n".join(lines)

    ctx.emit(result, human)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("bench", help="benchmarks (print numbers)")
    bs = p.add_subparsers(dest="bench_command", required=True)
    i = bs.add_parser("ingest", parents=[common], help="event ingestion throughput")
    i.add_argument("--single", type=int, default=2000, help="events committed one by one")
    i.add_argument("--batched", type=int, default=20000, help="events in one transaction")
    i.add_argument("--synchronous", default="FULL", choices=["NORMAL", "FULL", "EXTRA"])
    i.add_argument(
        "--imported", type=int, default=100_000, help="events imported from a JSON Lines file (0 skips)"
    )
    i.set_defaults(func=_ingest)
    hi = bs.add_parser(
        "host-ingest", parents=[common], help="wall time of one `yiji host-ingest` process, start-up included"
    )
    hi.add_argument("--messages", type=int, default=50, help="messages per batch")
    hi.add_argument("--runs", type=int, default=10, help="timed processes per series")
    hi.set_defaults(func=_host_ingest)
    lo = bs.add_parser("locomo", parents=[common], help="evidence recall on LoCoMo (data read from --data)")
    lo.add_argument("--data", required=True, help="path to locomo10.json")
    lo.add_argument("--errata", help="optional audited evidence corrections (locomo-audit errors.json)")
    lo.add_argument(
        "--memories",
        choices=["none", "observations"],
        default="none",
        help="derive LoCoMo's observations as memories of the turns they cite (default: raw turns only)",
    )
    lo.set_defaults(func=_locomo)
    ma = bs.add_parser("madial", parents=[common], help="memory recall on MADial-Bench (data from --data)")
    ma.add_argument("--data", required=True, help="path to the MADial-Bench folder (with data/)")
    ma.add_argument("--lang", action="append", choices=["zh", "en"], help="language(s); default both")
    ma.set_defaults(func=_madial, lang=None)
    re_ = bs.add_parser("recall", parents=[common], help="recall latency on a synthetic bilingual archive")
    re_.add_argument("--events", type=int, default=100_000, help="events (and as many memories)")
    re_.add_argument("--rounds", type=int, default=5, help="passes over the query set")
    re_.set_defaults(func=_recall)
    rs = bs.add_parser("resume", parents=[common], help="session_resume latency on a synthetic archive")
    rs.add_argument(
        "--memories",
        type=_archive_or_mode,
        default=100_000,
        help="memories in the synthetic archive (one event each; 0 skips the latency part), or, with "
        "--locomo, 'observations' (derive LoCoMo's observations as memories; no latency part) or 'none'",
    )
    rs.add_argument("--resumes", type=int, default=200, help="timed session_resume calls")
    rs.add_argument("--budget", type=int, default=2000, help="context budget per call")
    rs.add_argument("--model", help="model name for the token counter (default: UTF-8 bytes)")
    rs.add_argument("--locomo", help="also measure gold-evidence share per pack on LoCoMo (locomo10.json)")
    rs.add_argument("--errata", help="optional audited evidence corrections for --locomo")
    rs.set_defaults(func=_resume)
