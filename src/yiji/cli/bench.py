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


def _host_ingest(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.host_ingest import run_host_ingest_bench

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


def _hooks(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.hooks import run_hooks_bench, run_stop_auto_bench

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


def _locomo(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.evidence import run_locomo

    result = run_locomo(_data_path(args.data), args.errata, memories=args.memories, mode=args.mode)
    report = result.pop("report")
    result["table"] = report.table()

    def human(r: dict[str, Any]) -> str:
        o, b = r["overall"], r["bm25"]["overall"]
        return (
            f"{r['table']}\n\nLoCoMo categories 1-4: recall@10={o['recall@10']:.4f} mrr={o['mrr']:.4f} "
            f"context@10={o['context@10']:.4f} "
            f"recall@1000tok={o['recall@1000tok']:.4f} recall@2000tok={o['recall@2000tok']:.4f}\n"
            f"plain BM25 on the same turns: recall@10={b['recall@10']:.4f} mrr={b['mrr']:.4f} "
            f"recall@1000tok={b['recall@1000tok']:.4f} recall@2000tok={b['recall@2000tok']:.4f}\n"
            f"{_compared_line('recall@10', r['compared']['recall@10'])}\n"
            f"{r['questions']} questions; mode {r['mode']}; memories: {r['memories']} "
            f"({r['derived']['memories']} derived, {r['derived']['rejected']} rejected); "
            f"ingest {r['ingest_seconds']} s; "
            f"recall p50 {r['recall_ms']['p50']} ms, p95 {r['recall_ms']['p95']} ms"
            + _reindex_line(r["reindex"])
        )

    ctx.emit(result, human)


def _longmemeval(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.bench.evidence import run_longmemeval
    from yiji.errors import InvalidInput

    scales = list(dict.fromkeys(args.scale or [1]))
    if args.dump and len(scales) > 1:
        raise InvalidInput("dump", "writes the rankings of one archive size: give one --scale with --dump")
    runs = []
    for scale in scales:
        result = run_longmemeval(
            _data_path(args.data),
            split=args.split,
            protocol=args.protocol,
            mode=args.mode,
            limit=args.limit,
            keep=Path(args.keep) if args.keep else None,
            dump=Path(args.dump) if args.dump else None,
            scale=scale,
        )
        result["table"] = result.pop("report").table()
        runs.append(result)
    if len(runs) == 1:
        ctx.emit(runs[0], _longmemeval_run)
        return
    ctx.emit({"runs": runs, "grid": [_grid_row(r) for r in runs]}, _longmemeval_grid)


def _longmemeval_run(r: dict[str, Any]) -> str:
    d, s, e = r["databases"], r["seconds"], r["events_per_scope"]
    kept = f", kept in {d['kept_in']}" if d["kept_in"] else ""
    return (
        f"{r['table']}\n\nLongMemEval_S {r['split']} half, protocol {r['protocol']}, mode {r['mode']}, "
        f"scale {r['scale']}x: "
        f"{r['questions']} questions ({r['abstention_skipped']} abstention questions skipped; "
        f"{r['without_gold_in_corpus']} without a gold turn in the corpus)\n"
        f"events per scope: mean {e['mean']}, min {e['min']}, max {e['max']}\n"
        f"databases: {d['built']} built, {d['reused']} reused{kept}; "
        f"load {s['load']} s, ingest {s['ingest']} s, vectors {s['vectors']} s, bm25 {s['bm25']} s, "
        f"total {s['total']} s\n"
        f"recall p50 {r['recall_ms']['p50']} ms, p95 {r['recall_ms']['p95']} ms; "
        f"session_resume p50 {r['resume_ms']['p50']} ms, p95 {r['resume_ms']['p95']} ms\n"
        f"{_paired_line(r['paired']['turn:recall_all@10'])}\n"
        + (
            "recall warnings: "
            + "; ".join(f"{n} recalls: {w}" for w, n in sorted(r["recall_warnings"].items()))
            if r["recall_warnings"]
            else "recall warnings: none"
        )
    )


def _grid_row(r: dict[str, Any]) -> dict[str, Any]:
    """One archive size of a several-size LongMemEval run: quality beside BM25's, and latency."""
    ours, theirs = r["figures"]["yiji"]["overall"], r["figures"]["bm25"]["overall"]
    paired = r["paired"]["turn:recall_all@10"]
    return {
        "scale": r["scale"],
        "events_per_scope": r["events_per_scope"]["mean"],
        "yiji": {k: ours[k] for k in _GRID_METRICS},
        "bm25": {k: theirs[k] for k in _GRID_METRICS},
        "alone": [paired["ours_only"], paired["theirs_only"]],
        "sign_test_p": paired["sign_test_p"],
        "recall_ms": r["recall_ms"],
        "resume_ms": r["resume_ms"],
        "warned_recalls": sum(r["recall_warnings"].values()),
    }


_GRID_METRICS = ("turn:recall_all@10", "turn:recall_any@10", "session:recall_any@5")


def _longmemeval_grid(g: dict[str, Any]) -> str:
    blocks = [_longmemeval_run(r) for r in g["runs"]]
    first = g["runs"][0]
    lines = [
        f"LongMemEval_S {first['split']} half, protocol {first['protocol']}, mode {first['mode']}, "
        f"{first['questions']} questions at every size; yiji (plain BM25 on the same turns)",
        f"{'scale':>5} {'events':>7} {'all@10':>15} {'any@10':>15} {'session any@5':>15} "
        f"{'alone':>7} {'sign p':>7} {'recall p50/p95 ms':>18} {'resume p95':>10} {'warned':>6}",
    ]
    for row in g["grid"]:
        cells = [f"{row['yiji'][k]:.3f} ({row['bm25'][k]:.3f})" for k in _GRID_METRICS]
        latency = f"{row['recall_ms']['p50']} / {row['recall_ms']['p95']}"
        lines.append(
            f"{str(row['scale']) + 'x':>5} {row['events_per_scope']:>7} "
            + " ".join(f"{c:>15}" for c in cells)
            + f" {row['alone'][0]:>3}/{row['alone'][1]:<3} {row['sign_test_p']:>7} {latency:>18} "
            f"{row['resume_ms']['p95']:>10} {row['warned_recalls']:>6}"
        )
    return "\n\n".join(blocks) + "\n\n" + "\n".join(lines)


def _paired_line(p: dict[str, Any]) -> str:
    return (
        f"all@10 question by question: yiji alone {p['ours_only']}, BM25 alone {p['theirs_only']}, "
        f"both {p['both']}, neither {p['neither']} (two-sided sign test {_p_value(p['sign_test_p'])})"
    )


def _compared_line(metric: str, c: dict[str, Any]) -> str:
    return (
        f"{metric} question by question: yiji higher {c['higher']}, BM25 higher {c['lower']}, "
        f"the same {c['same']} (two-sided sign test {_p_value(c['sign_test_p'])})"
    )


def _p_value(p: float) -> str:
    """A sign test's p as printed: four decimals, or under the smallest of them."""
    return "p < 0.0001" if p < 0.0001 else f"p = {p}"


def _madial(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.evidence import run_madial

    data = _data_path(args.data)
    results = [run_madial(data, lang, mode=args.mode) for lang in args.lang or ["zh", "en"]]
    if args.cross:
        results.append(run_madial(data, "en", mode=args.mode, cross=True))

    def human(rs: list[dict[str, Any]]) -> str:
        lines = []
        for r in rs:
            lines.append(
                f"MADial-Bench {r['lang']} ({r['mode']}) n={r['dialogues']} "
                + " ".join(f"{k}={v:.3f}" for k, v in r["metrics"].items())
                + f" (recall p50 {r['recall_ms']['p50']} ms, p95 {r['recall_ms']['p95']} ms)"
                + _reindex_line(r["reindex"])
            )
            if r["bm25"] is not None:
                figures = " ".join(f"{k}={v:.3f}" for k, v in r["bm25"].items())
                lines.append(f"  plain BM25, the same memories: {figures}")
                lines.append("  " + _compared_line("recall@10", r["compared"]["recall@10"]))
        return "\n".join(lines)

    ctx.emit(results, human)


def _recall(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.bench.recall_latency import run_recall_bench

    keep = Path(args.keep) if args.keep else None
    data = Path(_data_path(args.data)) if args.data else None
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
        for x in r["quality"] or []:
            lines += [
                "",
                f"quality at {x['events']} events: {x['questions']} LongMemEval_S dev questions, their "
                f"haystacks ({x['events_planted']} events) planted at random ages in the archive's scope; "
                "BM25 exact over every event of the scope",
                x["table"],
                f"planted recalls: p50 {x['recall_ms']['p50']} ms, p95 {x['recall_ms']['p95']} ms "
                f"(limit {x['recall_limit']}); BM25 index built in {x['bm25_index_seconds']} s",
            ]
        if r["quality"] is None:
            lines.append("quality: skipped (give --data longmemeval_s_cleaned.json.xz to plant haystacks)")
        return "\n".join(lines)

    ctx.emit(result, human)


def _startup(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.bench.startup import run_startup_bench

    keep = Path(args.keep) if args.keep else None
    result = run_startup_bench(runs=args.runs, events=args.events, keep=keep)

    def human(r: dict[str, Any]) -> str:
        lines = [f"{r['runs']} runs each, median wall time (min)"]
        for row in r["commands"]:
            ratio = f"  {row['ratio']}x python -c pass" if "ratio" in row else ""
            lines.append(f"{row['name']:<28} {row['median_ms']:>8} ms ({row['min_ms']} ms){ratio}")
        return "\n".join(lines)

    ctx.emit(result, human)


def _reindex_line(reindex: dict[str, Any] | None) -> str:
    if not reindex:
        return ""
    return (
        f"\n  vectors: {reindex['vectors']} in {reindex['seconds']} s = "
        f"{reindex['vectors_per_second']} vectors/s"
    )


def _semantic(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.semantic_latency import run_semantic_bench

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


def _archive_or_mode(value: str) -> int | str:
    """``--memories`` of ``bench resume``: an archive size, or a LoCoMo memory mode."""
    if value in ("none", "observations"):
        return value
    return _at_least(value, 0, "must be a number, 'none' or 'observations'", "must not be negative")


def _positive(value: str) -> int:
    return _at_least(value, 1, "must be a whole number", "must be at least 1")


def _at_least(value: str, least: int, not_number: str, too_small: str) -> int:
    """``value`` as a whole number of at least ``least``; otherwise the argparse error named."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(not_number) from None
    if number < least:
        raise argparse.ArgumentTypeError(too_small)
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


def _extraction(ctx: Context, args: argparse.Namespace) -> None:
    import json
    from pathlib import Path

    from yiji.bench.extraction import (
        SHIPPED_SETS,
        compare_response_formats,
        default_data,
        run_ablation,
        run_extraction_sets,
        set_name,
    )
    from yiji.cli.context import progress_bar
    from yiji.errors import InvalidInput

    named = [n for given in args.data or ["labelled"] for n in (SHIPPED_SETS if given == "all" else [given])]
    sets = [default_data(n) if n in SHIPPED_SETS else Path(_data_path(n)) for n in dict.fromkeys(named)]
    answers = Path(args.answers) if args.answers else None
    if args.ablate:
        if answers is None:
            raise InvalidInput("--answers", "--ablate replays kept answers: give the folder")
        ablation = run_ablation(
            ctx.config, sets, answers=answers, rules=args.rule, limit=args.limit, progress=progress_bar
        )
        ctx.emit(ablation, _ablation_table)
        return
    if args.response_format:
        formats = compare_response_formats(
            ctx.config,
            sets,
            args.response_format,
            limit=args.limit,
            progress=progress_bar,
            answers=answers,
        )
        ctx.emit(formats, _formats_table)
        return
    log = Path(args.log).open("w", encoding="utf-8") if args.log else None  # noqa: SIM115

    def record(turn: dict[str, Any]) -> None:
        if log is not None:
            log.write(json.dumps(turn, ensure_ascii=False) + "\n")
            log.flush()

    try:
        result = run_extraction_sets(
            ctx.config,
            sets,
            limit=args.limit,
            progress=progress_bar,
            on_turn=record,
            answers=answers,
        )
    finally:
        if log is not None:
            log.close()

    def human(r: dict[str, Any]) -> str:
        if "pooled" not in r:
            return _one_report(r)
        rows = [
            f"{set_name(Path(s['data'])):<12} precision {s['precision']} "
            f"({s['faithful']}/{s['accepted']}), recall {s['recall']} ({s['recalled']}/{s['expected']}), "
            f"safety {s['assistant_as_user_fact']} / {s['user_key_on_forbidden']}"
            for s in r["sets"]
        ]
        return "\n".join(rows) + "\n\npooled: " + _one_report(r["pooled"])

    ctx.emit(result, human)


def _one_report(r: dict[str, Any]) -> str:
    lat = r["latency_s"]
    rules = ", ".join(f"{k} {v}" for k, v in r["rejections_by_rule"].items()) or "none"
    review = r["review_facts"]
    return (
        f"{r['turns']} turns, model {r['model']} ({r['still_pending']} left pending)\n"
        f"precision {r['precision']} ({r['faithful']}/{r['accepted']} accepted are faithful; "
        f"{r['precision_expected_only']} counting expected memories only)\n"
        f"recall    {r['recall']} ({r['recalled']}/{r['expected']} expected memories)\n"
        f"assistant statements as user facts: {r['assistant_as_user_fact']}; "
        f"user keys on hypotheticals/questions/third parties: {r['user_key_on_forbidden']}\n"
        f"duplicates {r['duplicates']}; rejections: {rules}\n"
        f"latency per event: p50 {lat['p50']} s, p95 {lat['p95']} s, max {lat['max']} s\n"
        f"small talk stored {r['small_talk_stored']}; texts that only restate their quote "
        f"{r['restates_quote']}; kind accuracy {r['kind_accuracy']} (of {r['kind_judged']})\n"
        f'review = "facts": {review["waiting"]} would wait (share {review["waiting_share"]}); '
        f"precision of the {review['accepted_at_once']} accepted at once "
        f"{review['precision_accepted_at_once']}"
    ) + (
        f"\nanswers: {r['answers']['replayed']} replayed, {r['answers']['asked']} asked of the endpoint"
        if "answers" in r
        else ""
    )


def _figures_cell(f: dict[str, Any] | None) -> str:
    if f is None:
        return "-"
    return f"P {f['precision']} R {f['recall']} S {f['safety']}"


def _ablation_table(r: dict[str, Any]) -> str:
    lines = [
        f"{len(r['sets'])} sets; with every rule: {_figures_cell(r['with_all_rules'])} "
        f"(P pooled precision, R pooled recall, S safety count)",
        f"{'rule':<34} {'fired':>5}  {'all sets: with -> without':<44} unseen sets: with -> without",
    ]
    for row in r["rules"]:
        every, unseen = row["all_sets"], row["unseen"]
        cell = (
            f"{_figures_cell(unseen['with'])} -> {_figures_cell(unseen['without'])}"
            f" ({row['unseen_sets'][0]} on)"
            if unseen
            else "none"
        )
        lines.append(
            f"{row['rule']:<34} {row['fired']:>5}  "
            f"{_figures_cell(every['with']) + ' -> ' + _figures_cell(every['without']):<44} {cell}"
            + ("" if row["keep"] else "   (pays nothing here)")
        )
    lines.append(
        f"answers: {r['answers']['replayed']} replayed, {r['answers']['asked']} asked of the endpoint"
    )
    return "\n".join(lines)


def _formats_table(r: dict[str, Any]) -> str:
    lines = []
    for fmt, result in r["formats"].items():
        p = result.get("pooled", result)
        empty = f", {p['answers']['asked']} asked" if "answers" in p else ""
        lines.append(
            f"{fmt:<20} precision {p['precision']} ({p['faithful']}/{p['accepted']}), recall {p['recall']} "
            f"({p['recalled']}/{p['expected']}), latency p50 {p['latency_s']['p50']} s{empty}"
        )
    return "\n".join(lines)


def _wal(ctx: Context, args: argparse.Namespace) -> None:
    from yiji.bench.wal import run_wal_bench

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


def _import(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.bench.import_memory import run_import_bench

    result = run_import_bench(events=args.events, keep=Path(args.keep) if args.keep else None)

    def human(r: dict[str, Any]) -> str:
        return "\n".join(
            f"{x['format']:<5}: {x['archive_mib']} MiB archive, {x['rows']} rows imported in "
            f"{x['seconds']} s, peak RSS {x['peak_rss_mib']} MiB"
            for x in r["imports"]
        )

    ctx.emit(result, human)


COMMANDS = ("bench",)
"""The top-level commands :func:`register` adds."""


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
    hk = bs.add_parser(
        "hooks", parents=[common], help="wall time of the Claude Code hooks, start-up included"
    )
    hk.add_argument("--events", type=int, default=10_000, help="events in the scope SessionStart resumes")
    hk.add_argument("--runs", type=int, default=20, help="timed SessionStart processes")
    hk.add_argument("--lines", type=int, default=2_000, help="lines of the transcript Stop captures")
    hk.add_argument(
        "--incremental-runs", type=int, default=10, help="timed Stop processes after one more turn"
    )
    hk.add_argument(
        "--auto",
        action="store_true",
        help="instead: Stop with [extraction] auto off and on (a detached run against a loopback endpoint); "
        "--incremental-runs timed runs each, --lines the transcript already captured",
    )
    hk.add_argument("--gap", type=float, default=2.0, help="with --auto: seconds between turns")
    hk.add_argument("--delay", type=float, default=0.2, help="with --auto: the endpoint's seconds per call")
    hk.set_defaults(func=_hooks)
    lo = bs.add_parser("locomo", parents=[common], help="evidence recall on LoCoMo (data read from --data)")
    lo.add_argument("--data", required=True, help="path to locomo10.json")
    lo.add_argument("--errata", help="optional audited evidence corrections (locomo-audit errors.json)")
    lo.add_argument("--mode", choices=["fast", "semantic", "deep"], default="fast", help="recall mode")
    lo.add_argument(
        "--memories",
        choices=["none", "observations"],
        default="none",
        help="derive LoCoMo's observations as memories of the turns they cite (default: raw turns only)",
    )
    lo.set_defaults(func=_locomo)
    lm = bs.add_parser(
        "longmemeval", parents=[common], help="evidence recall on LongMemEval_S (data read from --data)"
    )
    lm.add_argument("--data", required=True, help="path to longmemeval_s_cleaned.json (or .json.xz)")
    lm.add_argument(
        "--split",
        choices=["dev", "test", "all"],
        default="dev",
        help="dev: sha256(question_id) starts with 0-7; test: 8-f (tune on dev only)",
    )
    lm.add_argument(
        "--protocol",
        choices=["both", "user"],
        default="both",
        help="index both speakers' turns or the user's",
    )
    lm.add_argument("--mode", choices=["fast", "semantic"], default="fast", help="recall mode")
    lm.add_argument("--limit", type=_positive, help="only the first N questions of the split")
    lm.add_argument(
        "--scale",
        type=int,
        choices=[1, 10, 20, 40],
        action="append",
        help="place each haystack inside an archive N times bigger, filled with the file's other sessions "
        "(no question's evidence) at drawn dates; 1 (default): the haystack alone; repeat to measure "
        "several sizes in one run, with a grid of them at the end",
    )
    lm.add_argument(
        "--keep", metavar="DIR", help="keep each question's database in DIR and reuse it while current"
    )
    lm.add_argument(
        "--dump", metavar="FILE", help="write each question's top 20 (yiji and BM25) as JSON Lines"
    )
    lm.set_defaults(func=_longmemeval)
    ma = bs.add_parser("madial", parents=[common], help="memory recall on MADial-Bench (data from --data)")
    ma.add_argument("--data", required=True, help="path to the MADial-Bench folder (with data/)")
    ma.add_argument("--lang", action="append", choices=["zh", "en"], help="language(s); default both")
    ma.add_argument("--mode", choices=["fast", "semantic", "deep"], default="fast", help="recall mode")
    ma.add_argument(
        "--cross", action="store_true", help="also English dialogues as queries over the Chinese memories"
    )
    ma.set_defaults(func=_madial, lang=None)
    re_ = bs.add_parser("recall", parents=[common], help="recall latency on a synthetic bilingual archive")
    re_.add_argument(
        "--events",
        type=int,
        action="append",
        help="events (and as many memories); repeat to time several sizes in one run (default 100000)",
    )
    re_.add_argument("--rounds", type=int, default=5, help="passes over the query set")
    re_.add_argument("--keep", metavar="DIR", help="keep the archives in DIR and reuse them next time")
    re_.add_argument(
        "--data",
        help="LongMemEval_S file (.json or .json.xz): also plant 20 dev-half haystacks at random ages in "
        "the archive and print their recall beside BM25's over the same events (default: latency only)",
    )
    re_.set_defaults(func=_recall)
    se = bs.add_parser(
        "semantic", parents=[common], help="semantic/deep recall latency over a synthetic vector archive"
    )
    se.add_argument("--vectors", type=int, default=2000, help="memories with vectors in the archive")
    se.add_argument("--mode", choices=["semantic", "deep"], default="semantic")
    se.add_argument("--rounds", type=int, default=3, help="passes over the query set")
    se.add_argument(
        "--sample",
        type=int,
        default=2000,
        help="distinct texts embedded with the real model; larger archives reuse their vectors",
    )
    se.set_defaults(func=_semantic)
    st = bs.add_parser(
        "startup", parents=[common], help="wall time of `yiji --help` and `yiji recall` vs `python -c pass`"
    )
    st.add_argument("--runs", type=int, default=10, help="runs of each command (interleaved)")
    st.add_argument("--events", type=int, default=100_000, help="events in the archive `yiji recall` reads")
    st.add_argument("--keep", metavar="DIR", help="keep the archive in DIR and reuse it next time")
    st.set_defaults(func=_startup)
    im = bs.add_parser("import", parents=[common], help="peak memory of `yiji import` on a large archive")
    im.add_argument("--events", type=int, default=300_000, help="events in the exported archive")
    im.add_argument("--keep", metavar="DIR", help="keep the source archive in DIR and reuse it next time")
    im.set_defaults(func=_import)
    wl = bs.add_parser("wal", parents=[common], help="peak WAL size under one writer and busy readers")
    wl.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    wl.add_argument("--readers", type=int, default=3, help="reader processes")
    wl.set_defaults(func=_wal)
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
    ex = bs.add_parser(
        "extraction",
        parents=[common],
        help="extraction precision/recall on a labelled set (configured endpoint)",
    )
    ex.add_argument(
        "--data",
        action="append",
        help="labelled turns (JSON file), or a set shipped with yiji: 'labelled' (default, 60 turns), "
        "'heldout' or 'reserved' to 'reserved16' (30 turns each, written later and first run as "
        "checks on unseen turns), or 'all' (every shipped set). Repeat it to score several sets in one "
        "run: each is reported, then all of them pooled",
    )
    ex.add_argument("--limit", type=int, help="only the first N turns (of each set)")
    ex.add_argument("--log", help="write each turn's stored memories and outcome here (JSON lines)")
    ex.add_argument(
        "--answers",
        help="keep the endpoint's answers in this folder and replay any request already answered "
        "there: after a change of the rules only, the set runs again in seconds (at temperature 0 a "
        "model gives the same answer; another model, prompt or set asks the endpoint)",
    )
    ex.add_argument(
        "--ablate",
        action="store_true",
        help="with --answers: replay the kept answers with each extraction word rule switched off in "
        "turn and print, per rule, the turns it changed and pooled precision, recall and safety with "
        "and without it, over every set and over the sets written after the rule",
    )
    ex.add_argument(
        "--rule",
        action="append",
        help="with --ablate: only this rule id (repeat it); default: every switchable rule",
    )
    ex.add_argument(
        "--response-format",
        action="append",
        choices=("json_schema", "json_object_schema", "json_object"),
        help="score the sets once per response format, side by side (repeat it); a format never run "
        "with --answers asks the endpoint",
    )
    ex.set_defaults(func=_extraction)
