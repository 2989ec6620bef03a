"""``yiji bench`` commands that measure quality: evidence recall on LoCoMo, MADial-Bench and
LongMemEval_S, and extraction on the labelled sets. Each handler imports what it measures with in its body."""

from __future__ import annotations

import argparse
from typing import Any

from yiji.cli.context import Context
from yiji_bench.cli.common import data_path, reindex_line


def locomo_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.evidence import run_locomo
    from yiji_bench.metrics import precision_line

    result = run_locomo(data_path(args.data), args.errata, memories=args.memories, mode=args.mode)
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
            f"{precision_line(r['precision'])} (categories 1-4)\n"
            f"{r['questions']} questions; mode {r['mode']}; memories: {r['memories']} "
            f"({r['derived']['memories']} derived, {r['derived']['rejected']} rejected); "
            f"ingest {r['ingest_seconds']} s; "
            f"recall p50 {r['recall_ms']['p50']} ms, p95 {r['recall_ms']['p95']} ms"
            + reindex_line(r["reindex"])
        )

    ctx.emit(result, human)


def longmemeval_command(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.errors import InvalidInput
    from yiji_bench.longmemeval_run import run_longmemeval

    scales = list(dict.fromkeys(args.scale or [1]))
    if args.dump and len(scales) > 1:
        raise InvalidInput("dump", "writes the rankings of one archive size: give one --scale with --dump")
    runs = []
    for scale in scales:
        result = run_longmemeval(
            data_path(args.data),
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
    from yiji_bench.metrics import precision_line

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
        f"{precision_line(r['precision'])}\n"
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
        "precision": r["precision"],
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
        f"{'precision':>15} {'alone':>7} {'sign p':>7} {'recall p50/p95 ms':>18} {'resume p95':>10} "
        f"{'warned':>6}",
    ]
    for row in g["grid"]:
        cells = [f"{row['yiji'][k]:.3f} ({row['bm25'][k]:.3f})" for k in _GRID_METRICS]
        shares = row["precision"]
        cells.append(f"{shares['yiji']['precision']:.3f} ({shares['bm25']['precision']:.3f})")
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


def madial_command(ctx: Context, args: argparse.Namespace) -> None:
    from yiji_bench.evidence import run_madial
    from yiji_bench.metrics import precision_line

    data = data_path(args.data)
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
                + reindex_line(r["reindex"])
            )
            if r["bm25"] is not None:
                figures = " ".join(f"{k}={v:.3f}" for k, v in r["bm25"].items())
                lines.append(f"  plain BM25, the same memories: {figures}")
                lines.append("  " + _compared_line("recall@10", r["compared"]["recall@10"]))
            lines.append("  " + precision_line(r["precision"]))
        return "\n".join(lines)

    ctx.emit(results, human)


def exactness_command(ctx: Context, args: argparse.Namespace) -> None:
    from pathlib import Path

    from yiji.errors import InvalidInput
    from yiji_bench.exactness import run_exactness

    given = {name: getattr(args, name) for name in ("locomo", "longmemeval", "madial")}
    if not any(given.values()):
        raise InvalidInput("data", "name at least one data set: --locomo, --longmemeval or --madial")
    paths = {name: Path(data_path(value)) if value else None for name, value in given.items()}
    results = run_exactness(
        locomo=paths["locomo"],
        longmemeval=paths["longmemeval"],
        madial=paths["madial"],
        questions=args.questions,
        limit=args.limit,
    )

    def human(rs: list[dict[str, Any]]) -> str:
        lines = [f"recall's top {args.limit} against scoring every match with the final ranking"]
        lines += [
            f"{r['data']}: {r['differ']} of {r['queries']} lists differ ({r['share_differing']:.4f}); "
            f"as sets {r['differ_as_sets']} ({r['share_differing_as_sets']:.4f})"
            for r in rs
        ]
        return "\n".join(lines)

    ctx.emit(results, human)


def extraction_command(ctx: Context, args: argparse.Namespace) -> None:
    import json
    from pathlib import Path

    from yiji.cli.context import progress_bar
    from yiji.errors import InvalidInput
    from yiji_bench.extraction import (
        SHIPPED_SETS,
        compare_response_formats,
        default_data,
        run_ablation,
        run_extraction_sets,
        set_name,
    )

    named = [n for given in args.data or ["labelled"] for n in (SHIPPED_SETS if given == "all" else [given])]
    sets = [default_data(n) if n in SHIPPED_SETS else Path(data_path(n)) for n in dict.fromkeys(named)]
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
