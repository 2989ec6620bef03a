"""``yiji bench`` commands that measure speed and size: ingestion, host-ingest, the hooks, recall and
resume latency, start-up, semantic search, the WAL and `yiji import`. Each handler imports what it measures
with in its body."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context
from yiji_bench.cli.common import data_path


def ingest_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.ingest import run_ingest_bench

    result = run_ingest_bench(args.single, args.batched, args.synchronous, args.imported)

    def human(r: dict[str, Any]) -> str:
        s, b = r["single"], r["batched"]
        text = (
            f"synchronous={r['synchronous']}\n"
            f"one by one : {s['events']} events in {s['seconds']} s = {s['events_per_second']} events/s "
            f"({s['ratio']}x the raw loop's {s['raw_events_per_second']} events/s)\n"
            f"one batch  : {b['events']} events in {b['seconds']} s = {b['events_per_second']} events/s "
            f"({b['ratio']}x the raw loop's {b['raw_events_per_second']} events/s)\n"
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


def host_ingest_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.host_ingest import run_host_ingest_bench

    result = run_host_ingest_bench(args.messages, args.runs)

    def human(r: dict[str, Any]) -> str:
        from yiji.domain.wording import counted

        def row(x: dict[str, float]) -> str:
            spread = f"min {x['min_ms']} ms, p95 {x['p95_ms']} ms, max {x['max_ms']} ms"
            return f"median {x['median_ms']} ms, {spread}"

        verdict = "met" if r["target_met"] else "NOT met"
        batch, runs = counted(r["messages"], "message"), counted(r["runs"], "process", "processes")
        return (
            f"host-ingest of {batch}, {runs}, start-up included\n"
            f"ingest : {row(r['ingest'])} (target median <= {r['target_ms']:.0f} ms: {verdict})\n"
            f"probe  : {row(r['probe'])} (empty stdin: start-up and one read)\n"
            f"work   : {row(r['in_process'])} (the same call in-process, no start-up)"
        )

    ctx.emit(result, human)


def hooks_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.hooks import run_hooks_bench, run_stop_auto_bench

    if args.auto:
        auto = run_stop_auto_bench(args.incremental_runs, args.lines, args.gap, args.delay)

        def said(r: dict[str, Any]) -> str:
            off, on = r["off"], r["on"]
            return (
                f"Stop, {r['runs']} runs {r['gap_s']} s apart, each after one more turn "
                f"({r['lines']}-line transcript):\n"
                f"auto off: p50 {off['median_ms']} ms, p95 {off['p95_ms']} ms, max {off['max_ms']} ms\n"
                f"auto on : p50 {on['median_ms']} ms, p95 {on['p95_ms']} ms, max {on['max_ms']} ms "
                f"({r['automatic_runs_logged']} automatic runs logged, {r['endpoint_calls']} endpoint calls "
                f"of {r['endpoint_delay_s']} s)\n"
                f"p95 on/off {r['p95_ratio']} (target <= {r['target_ratio']}: "
                f"{'met' if r['target_met'] else 'NOT met'})"
            )

        ctx.emit(auto, said)
        return
    result = run_hooks_bench(args.events, args.runs, args.lines, args.incremental_runs)

    def human(r: dict[str, Any]) -> str:
        s, t = r["session_start"], r["stop"]
        inc = t["incremental"]
        return (
            f"SessionStart, {s['events']}-event scope, {s['runs']} cold processes: p50 {s['median_ms']} ms, "
            f"p95 {s['p95_ms']} ms, max {s['max_ms']} ms (target p95 < {s['target_p95_ms']} ms, at most "
            f"{s['sent_limit']} characters as sent: {'met' if s['target_met'] else 'NOT met'}; at most "
            f"{s['printed_chars']} characters printed, {s['sent_chars']} as sent); "
            f"CPU p50 {s['cpu']['median_ms']} ms, p95 {s['cpu']['p95_ms']} ms\n"
            f"Stop, {t['lines']}-line transcript ({t['messages']} messages): first run {t['first_ms']} ms; "
            f"incremental (one turn) p50 {inc['median_ms']} ms, p95 {inc['p95_ms']} ms over "
            f"{t['incremental_runs']} runs (targets 3000 / 500 ms: "
            f"{'met' if t['target_met'] else 'NOT met'}); "
            f"CPU first {t['first_cpu_ms']} ms, incremental p50 {t['incremental_cpu']['median_ms']} ms"
        )

    ctx.emit(result, human)


def recall_command(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji_bench.recall_latency import run_recall_bench

    keep = Path(args.keep) if args.keep else None
    data = Path(data_path(args.data)) if args.data else None
    result = run_recall_bench(args.events or [100_000], rounds=args.rounds, keep=keep, data=data)

    def human(r: dict[str, Any]) -> str:
        lines = []
        for a in r["archives"]:
            built = f"built in {a['build_seconds']} s" if a["built_now"] else "kept"
            if a.get("plant_seconds") is not None:
                built += f"; copied and planted in {a['plant_seconds']} s"
            lines.append(
                f"{a['events']} events, {a['memories']} memories ({a['database_mib']} MiB, {built}): "
                f"{a['queries']} recalls, p50 {a['p50_ms']} ms, p95 {a['p95_ms']} ms, max {a['max_ms']} ms"
            )
        if "p95_ratio_largest_to_smallest" in r:
            lines.append(f"p95 largest / smallest: {r['p95_ratio_largest_to_smallest']}x")
        lines.append(
            "slowest (best of rounds, largest archive): "
            + ", ".join(f"{q['query']} {q['best_ms']} ms" for q in r["slowest_queries_largest"])
        )
        lines.append(
            f"peak RSS {r['peak_rss_mib']} MiB "
            f"(after opening the archives: {r['peak_rss_mib_after_build']} MiB)"
        )
        from yiji_bench.metrics import precision_line

        for x in r["quality"] or []:
            lines += [
                "",
                f"quality at {x['events']} events: {x['questions']} LongMemEval_S dev questions, their "
                f"haystacks ({x['events_planted']} events) planted at random ages in the archive's scope; "
                "BM25 exact over every event of the scope",
                x["table"],
                f"planted recalls: p50 {x['recall_ms']['p50']} ms, p95 {x['recall_ms']['p95']} ms "
                f"(limit {x['recall_limit']}); BM25 index built in {x['bm25_index_seconds']} s",
                precision_line(x["precision"]),
            ]
        if r["quality"] is None:
            lines.append("quality: skipped (give --data longmemeval_s_cleaned.json.xz to plant haystacks)")
        return "\n".join(lines)

    ctx.emit(result, human)


def startup_command(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji_bench.startup import run_startup_bench

    keep = Path(args.keep) if args.keep else None
    result = run_startup_bench(runs=args.runs, events=args.events, keep=keep)

    def human(r: dict[str, Any]) -> str:
        lines = [f"{r['runs']} runs each, median wall time (min)"]
        for row in r["commands"]:
            ratio = f"  {row['ratio']}x python -c pass" if "ratio" in row else ""
            lines.append(f"{row['name']:<28} {row['median_ms']:>8} ms ({row['min_ms']} ms){ratio}")
        return "\n".join(lines)

    ctx.emit(result, human)


def semantic_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.semantic_latency import run_semantic_bench

    result = run_semantic_bench(args.vectors, args.mode, rounds=args.rounds, sample=args.sample)

    def human(r: dict[str, Any]) -> str:
        return (
            f"{r['vectors']} vectors ({r['mode']} mode, scan limit {r['scan_limit']}); archive built in "
            f"{r['build_seconds']} s\nembedded {r['sample']} distinct texts at {r['vectors_per_second']} "
            f"vectors/s\nfirst recall (loads the model and the vectors) {r['first_ms']} ms\n"
            f"{r['queries']} recalls (query embedding included): p50 {r['p50_ms']} ms, "
            f"p95 {r['p95_ms']} ms, max {r['max_ms']} ms\n"
            f"whole-scope scan of {r['vectors']} vectors ({'packed int8' if r['packed'] else 'row by row'}): "
            f"load p50 {r['load_p50_ms']} ms, p95 {r['load_p95_ms']} ms (row by row: p50 "
            f"{r['row_load_p50_ms']} ms, p95 {r['row_load_p95_ms']} ms); scan p50 {r['scan_p50_ms']} ms, "
            f"p95 {r['scan_p95_ms']} ms; top-{r['top_k']} agreement with float32 {r['agreement']} "
            f"(int8 alone {r['agreement_int8']}, {r['agreement_queries']} queries)\n"
            f"peak RSS {r['peak_rss_mib']} MiB"
        )

    ctx.emit(result, human)


def resume_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.errors import InvalidInput
    from yiji_bench.resume import run_locomo_pack_share, run_resume_bench

    result: dict[str, Any] = {}
    mode = args.memories if isinstance(args.memories, str) else "none"
    if isinstance(args.memories, str) and not args.locomo:
        raise InvalidInput("memories", "a LoCoMo memory mode needs --locomo (or give a number)")
    if isinstance(args.memories, int) and args.memories:
        result["latency"] = run_resume_bench(args.memories, args.resumes, args.budget, args.model)
    if args.locomo:
        result["locomo"] = run_locomo_pack_share(data_path(args.locomo), args.errata, memories=mode)

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


def wal_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.wal import run_wal_bench

    result = run_wal_bench(seconds=args.seconds, readers=args.readers)

    def human(r: dict[str, Any]) -> str:
        lines = [
            f"{r['readers']} reader processes recalling without pause, one writer, {r['seconds']} s per phase"
        ]
        for x in r["phases"]:
            policy = (
                "no WAL limit" if x["wal_limit_bytes"] is None else f"WAL limit {x['wal_limit_bytes']} bytes"
            )
            lines.append(
                f"{policy:<26}: peak WAL {x['peak_wal_mib']} MiB for a {x['database_mib']} MiB database; "
                f"{x['events_written']} events written, {x['recalls']} recalls, "
                f"{x['reader_errors']} reader errors"
            )
        return "\n".join(lines)

    ctx.emit(result, human)


def import_command(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji_bench.import_memory import run_import_bench

    result = run_import_bench(events=args.events, keep=Path(args.keep) if args.keep else None)

    def human(r: dict[str, Any]) -> str:
        return "\n".join(
            f"{x['format']:<5}: {x['archive_mib']} MiB archive, {x['rows']} rows imported in "
            f"{x['seconds']} s, peak RSS {x['peak_rss_mib']} MiB"
            for x in r["imports"]
        )

    ctx.emit(result, human)
