"""The benchmarks behind docs/benchmarks.md's current table, one :class:`~yiji_bench.refresh.Row` each.

The table is written from this list by ``yiji bench refresh`` (:mod:`yiji_bench.refresh`), and
``tests/test_bench_refresh.py`` keeps the table's rows equal to it: a row of the table is added here, with
the commands that measure it and how its figure is read from their JSON, never by hand.

Placeholders in a command: ``{locomo}``, ``{madial}`` and ``{longmemeval}`` are the data sets under the
data root (:data:`yiji_bench.refresh.DATA_FILES`), ``{keep}`` a folder for kept archives, ``{answers}`` the
folder of an extraction endpoint's kept answers. ``minutes`` is a rough duration on the reference machine
(2 cores, quiet), estimated from the durations docs/benchmarks.md records, for a first refresh (nothing kept
yet; the extraction rows with every answer already kept: asking a CPU model takes about 15 s a turn).
"""

from __future__ import annotations

from typing import Any

from yiji_bench.extraction import SHIPPED_SETS, default_data, load_labelled
from yiji_bench.refresh import Results, Row, Run

__all__ = ["ROWS"]


def _f3(value: Any) -> str:
    return f"{float(value):.3f}"


def _ms(value: Any) -> str:
    return f"{float(value):,.1f}"


def _locomo(r: Results, run: str) -> str:
    return _f3(r[run]["overall"]["recall@10"])


def _locomo_bm25(r: Results, run: str) -> str:
    return _f3(r[run]["bm25"]["overall"]["recall@10"])


def _madial(r: Results, run: str, lang: str, key: str = "metrics") -> str:
    (found,) = [x for x in r[run] if x["lang"] == lang]
    return _f3(found[key]["recall@10"])


def _all10(r: Results, run: str, system: str = "yiji", metric: str = "turn:recall_all@10") -> str:
    return _f3(r[run]["figures"][system]["overall"][metric])


def _grid(r: Results, run: str) -> list[dict[str, Any]]:
    """The per-size rows of a LongMemEval run over several ``--scale`` values."""
    grid: list[dict[str, Any]] = r[run]["grid"]
    return grid


def _scaled(r: Results, run: str, metric: str = "turn:recall_all@10", bold: bool = True) -> str:
    """``**0.750** (0.600) / **0.717** (0.583)``: yiji (BM25) at each size of a several-size run."""
    mark = "**" if bold else ""
    return " / ".join(
        f"{mark}{_f3(g['yiji'][metric])}{mark} ({_f3(g['bm25'][metric])})" for g in _grid(r, run)
    )


def _scaled_any(r: Results, run: str) -> str:
    rows = _grid(r, run)
    ours = " / ".join(_f3(g["yiji"]["turn:recall_any@10"]) for g in rows)
    theirs = " / ".join(_f3(g["bm25"]["turn:recall_any@10"]) for g in rows)
    return f"any@10 {ours} ({theirs})"


def _warned(r: Results, *runs: str) -> str:
    warned = sum(g["warned_recalls"] for run in runs for g in _grid(r, run))
    return "no coverage warning" if warned == 0 else f"{warned} recalls warned of coverage"


def _events_per_scope(r: Results, run: str) -> str:
    return " / ".join(f"{round(g['events_per_scope']):,}" for g in _grid(r, run))


def _startup(r: Results, name: str) -> str:
    (row,) = [c for c in r["startup"]["commands"] if c["name"] == name]
    return _ms(row["median_ms"])


def _import(r: Results, fmt: str) -> dict[str, Any]:
    (row,) = [x for x in r["import"]["imports"] if x["format"] == fmt]
    found: dict[str, Any] = row
    return found


def _wal(r: Results, limited: bool) -> str:
    (phase,) = [x for x in r["wal"]["phases"] if (x["wal_limit_bytes"] is not None) == limited]
    return _ms(phase["peak_wal_mib"])


def _longmemeval(options: str) -> str:
    """A ``bench longmemeval`` run on the data set, its databases kept under ``{keep}/longmemeval``."""
    return f"longmemeval --data {{longmemeval}} {options} --keep {{keep}}/longmemeval"


_MADIAL = (
    Run("fast", "madial --data {madial}"),
    Run("semantic", "madial --data {madial} --mode semantic --cross"),
)
"""The MADial-Bench runs, which the Chinese and the English rows share (run once)."""
_EXTRACTION = (Run("all", "extraction --data all --answers {answers}", extraction=True),)
"""The extraction run, which the three extraction rows share (run once)."""
_SETS = f"{len(SHIPPED_SETS)} labelled sets"
"""What the extraction run scores: every shipped set."""
_TURNS = f"{sum(len(load_labelled(default_data(name))) for name in SHIPPED_SETS):,}"
"""Their turns, counted from the sets, so the row cannot go stale when a set is added."""


def _locomo_row(r: Results) -> str:
    return f"**{_locomo(r, 'fast')}** ({_locomo_bm25(r, 'fast')}); {_locomo(r, 'semantic')}"


def _madial_zh(r: Results) -> str:
    bm25 = _madial(r, "fast", "zh", "bm25")
    return f"**{_madial(r, 'fast', 'zh')}** ({bm25}); {_madial(r, 'semantic', 'zh')}"


def _madial_en(r: Results) -> str:
    cross = _madial(r, "semantic", "en->zh")
    return f"{_madial(r, 'fast', 'en')}; {_madial(r, 'semantic', 'en')}, {cross}"


def _lme_both(r: Results) -> str:
    session = _all10(r, "semantic", metric="session:recall_any@5")
    return f"**{_all10(r, 'fast')}** / **{_all10(r, 'semantic')}** ({_all10(r, 'fast', 'bm25')}); {session}"


def _lme_120(r: Results) -> str:
    semantic = f"semantic 40x dev {_all10(r, 'semantic-dev')}, test **{_all10(r, 'semantic-test')}**"
    return f"dev {_scaled(r, 'dev')}; test {_scaled(r, 'test')}; {semantic}"


def _resume_locomo(r: Results) -> str:
    def share(run: str, column: str) -> str:
        return _f3(r[run]["locomo"]["overall"][column])

    raw = f"{share('raw', 'pack@1000')} / {share('raw', 'pack@2000')}"
    bm25 = f"{share('raw', 'bm25@1000')} / {share('raw', 'bm25@2000')}"
    return f"{raw} ({bm25}); {share('observations', 'pack@1000')} / {share('observations', 'pack@2000')}"


def _extraction(r: Results, *path: str) -> str:
    """A pooled extraction figure (a share to three places, a count as it is); ``-`` where there was nothing
    to count (no memory accepted)."""
    value: Any = r["all"]["pooled"]
    for name in path:
        value = value[name]
    if value is None:
        return "-"
    return _f3(value) if isinstance(value, float) else str(value)


def _restating(r: Results) -> str:
    """The share of accepted memories whose text only restates its quote, to three places."""
    pooled = r["all"]["pooled"]
    return _f3(pooled["restates_quote"] / pooled["accepted"]) if pooled["accepted"] else "-"


def _resume(r: Results) -> str:
    x = r["resume"]["latency"]
    verdict = "met" if x["target_met"] else "not met"
    target = f"target p95 {x['target_p95_ms']:g} ms: {verdict}"
    return f"{_ms(x['p50_ms'])} / **{_ms(x['p95_ms'])} ms** (max {_ms(x['max_ms'])} ms; {target})"


def _recall_1m(r: Results) -> str:
    archive, quality = r["recall"]["archives"][0], r["recall"]["quality"][0]["figures"]
    ours, theirs = (_f3(quality[s]["overall"]["turn:recall_all@10"]) for s in ("yiji", "bm25"))
    latency = f"{_ms(archive['p50_ms'])} / **{_ms(archive['p95_ms'])} ms**"
    planted = r["recall"]["quality"][0]["recall_ms"]
    asked = f"{_ms(planted['p50'])} / **{_ms(planted['p95'])} ms**"
    return f"{latency}; planted {asked}, **{ours}** ({theirs}); peak RSS {r['recall']['peak_rss_mib']} MiB"


def _lme_latency(r: Results) -> str:
    fast, semantic = r["fast"], r["semantic"]
    recall = f"{_ms(fast['recall_ms']['p50'])} / **{_ms(fast['recall_ms']['p95'])} ms**"
    resume = f"{_ms(fast['resume_ms']['p50'])} / **{_ms(fast['resume_ms']['p95'])} ms**"
    slow = f"{_ms(semantic['recall_ms']['p50'])} / {_ms(semantic['recall_ms']['p95'])} ms"
    scope = f"{round(fast['events_per_scope']['mean']):,} events per scope"
    return f"fast recall {recall}; resume {resume}; semantic recall {slow} ({scope})"


def _hooks(r: Results) -> str:
    start, stop = r["hooks"]["session_start"], r["hooks"]["stop"]
    opening = f"SessionStart {_ms(start['median_ms'])} / **{_ms(start['p95_ms'])} ms**"
    closing = f"Stop {_ms(stop['first_ms'])} ms / **{_ms(stop['incremental']['p95_ms'])} ms**"
    cpu = (
        f"CPU first {_ms(stop['first_cpu_ms'])} ms, one more turn p50 "
        f"{_ms(stop['incremental_cpu']['median_ms'])} ms"
    )
    prompt = r["hooks"]["prompt_recall"]
    recall = f"UserPromptSubmit --recall {_ms(prompt['median_ms'])} / **{_ms(prompt['p95_ms'])} ms**"
    return f"{opening} (CPU p95 {_ms(start['cpu']['p95_ms'])} ms); {closing} ({cpu}); {recall}"


def _hooks_auto(r: Results) -> str:
    x = r["auto"]
    ratio = f"on/off {x['p95_ratio']}, target at most {x['target_ratio']}"
    p50 = f"{_ms(x['off']['median_ms'])} / {_ms(x['on']['median_ms'])} ms"
    return f"p95 {_ms(x['off']['p95_ms'])} / **{_ms(x['on']['p95_ms'])} ms** ({ratio}); p50 {p50}"


def _semantic(r: Results) -> str:
    deep = r["deep"]
    return f"{_ms(r['semantic']['p95_ms'])} ms; {_ms(deep['p95_ms'])} ms ({deep['peak_rss_mib']:,} MiB)"


def _startup_row(r: Results) -> str:
    chinese, english = _startup(r, "yiji recall (Chinese)"), _startup(r, "yiji recall (English)")
    python = _startup(r, "python -c pass")
    return f"{_startup(r, 'yiji --help')} ms; {chinese} / {english} ms (`python -c pass` {python} ms)"


def _ingest(r: Results) -> str:
    single, batched = r["ingest"]["single"], r["ingest"]["batched"]
    one = f"**{single['ratio']}x** ({single['events_per_second']:,} events/s)"
    batch = f"**{batched['ratio']}x** ({batched['events_per_second']:,} events/s)"
    return f"{one}; {batch}; {batched['bytes_per_1000_events']:,}"


def _import_row(r: Results) -> str:
    jsonl, whole = _import(r, "jsonl"), _import(r, "json")
    return (
        f"**{jsonl['peak_rss_mib']} / {whole['peak_rss_mib']} MiB** "
        f"(archives {jsonl['archive_mib']} / {whole['archive_mib']} MiB)"
    )


ROWS: tuple[Row, ...] = (
    Row(
        key="locomo",
        measure="LoCoMo evidence recall@10, raw turns: fast (BM25); semantic",
        runs=(
            Run("fast", "locomo --data {locomo}"),
            Run("semantic", "locomo --data {locomo} --mode semantic"),
        ),
        figure=_locomo_row,
        command="`yiji bench locomo --data locomo10.json` (`--mode semantic`)",
        data="LoCoMo, categories 1-4, 1,536 questions",
        minutes=12,
    ),
    Row(
        key="locomo-observations",
        measure="LoCoMo recall@10, observations derived as memories: fast; semantic",
        runs=(
            Run("fast", "locomo --data {locomo} --memories observations"),
            Run("semantic", "locomo --data {locomo} --memories observations --mode semantic"),
        ),
        figure=lambda r: f"**{_locomo(r, 'fast')}**; {_locomo(r, 'semantic')}",
        command="the same with `--memories observations`",
        data="LoCoMo, categories 1-4, 1,536 questions",
        minutes=12,
    ),
    Row(
        key="madial-zh",
        measure="MADial-Bench recall@10, Chinese: fast (BM25); semantic",
        runs=_MADIAL,
        figure=_madial_zh,
        command="`yiji bench madial --data MADial-Bench` (`--mode semantic --cross`)",
        data="MADial-Bench zh",
        minutes=3,
    ),
    Row(
        key="madial-en",
        measure="MADial-Bench recall@10, English: fast; semantic, and English questions over Chinese "
        "memories",
        runs=_MADIAL,
        figure=_madial_en,
        command="the same runs as the row above",
        data="MADial-Bench en",
        minutes=0,
    ),
    Row(
        key="longmemeval-user",
        measure="LongMemEval_S, user turns: every evidence turn in the top 10 (recall_all@10), "
        "fast / semantic (BM25)",
        runs=(
            Run("fast", _longmemeval("--protocol user --split test")),
            Run("semantic", _longmemeval("--protocol user --split test --mode semantic")),
        ),
        figure=lambda r: (
            f"**{_all10(r, 'fast')}** / **{_all10(r, 'semantic')}** ({_all10(r, 'fast', 'bm25')})"
        ),
        command="`yiji bench longmemeval --data longmemeval_s_cleaned.json.xz --protocol user --split test` "
        "(`--mode semantic`)",
        data="test half (no setting was tuned on it)",
        minutes=30,
    ),
    Row(
        key="longmemeval-both",
        measure="LongMemEval_S, both speakers: recall_all@10 fast / semantic (BM25); session recall_any@5, "
        "semantic",
        runs=(
            Run("fast", _longmemeval("--split test")),
            Run("semantic", _longmemeval("--split test --mode semantic")),
        ),
        figure=_lme_both,
        command="the same without `--protocol user`",
        data="test half",
        minutes=30,
    ),
    Row(
        key="longmemeval-scaled-dev",
        measure="LongMemEval_S, both speakers, the haystack inside an archive 10x / 20x / 40x bigger: "
        "recall_all@10 fast (BM25 on the same turns), dev half",
        runs=(Run("grid", _longmemeval("--split dev --scale 10 --scale 20 --scale 40 --limit 60")),),
        figure=lambda r: (
            f"{_scaled(r, 'grid')}; {_scaled_any(r, 'grid')}; events per scope {_events_per_scope(r, 'grid')}"
        ),
        command="`yiji bench longmemeval --data longmemeval_s_cleaned.json.xz --split dev --scale N "
        "--limit 60 --keep DIR`",
        data="dev half, first 60 questions",
        minutes=15,
    ),
    Row(
        key="longmemeval-scaled-test",
        measure="the same, test half (no setting was tuned on it)",
        runs=(Run("grid", _longmemeval("--split test --scale 10 --scale 20 --scale 40 --limit 60")),),
        figure=lambda r: f"{_scaled(r, 'grid')}; {_scaled_any(r, 'grid')}",
        command="the same with `--split test`",
        data="test half, first 60 questions",
        minutes=15,
    ),
    Row(
        key="longmemeval-scaled-120",
        measure="the same, first 120 questions of each half, 20x / 40x: dev; test; semantic 40x",
        runs=(
            Run("dev", _longmemeval("--split dev --scale 20 --scale 40 --limit 120")),
            Run("test", _longmemeval("--split test --scale 20 --scale 40 --limit 120")),
            Run("semantic-dev", _longmemeval("--split dev --scale 40 --limit 120 --mode semantic")),
            Run("semantic-test", _longmemeval("--split test --scale 40 --limit 120 --mode semantic")),
        ),
        figure=_lme_120,
        command="the same with `--scale 20 --scale 40 --limit 120` (`--mode semantic --scale 40`)",
        data="first 120 questions of each half",
        minutes=90,
    ),
    Row(
        key="longmemeval-semantic-scaled",
        measure="LongMemEval_S, both speakers, semantic, 10x / 40x: recall_all@10 dev (BM25); test half "
        "(BM25)",
        runs=(
            Run("dev", _longmemeval("--split dev --mode semantic --scale 10 --scale 40 --limit 60")),
            Run("test", _longmemeval("--split test --mode semantic --scale 10 --scale 40 --limit 60")),
        ),
        figure=lambda r: f"dev {_scaled(r, 'dev')}; test {_scaled(r, 'test')}; {_warned(r, 'dev', 'test')}",
        command="`yiji bench longmemeval ... --mode semantic --scale N --limit 60 --keep DIR`",
        data="first 60 questions of each half; the whole scope's vectors compared",
        minutes=45,
    ),
    Row(
        key="resume-locomo",
        measure="LoCoMo gold evidence in a `session_resume` pack of 1,000 / 2,000 tokens: raw turns (BM25's "
        "ranking packed greedily, the same token counter, no framing); with observations",
        runs=(
            Run("raw", "resume --memories 0 --locomo {locomo}"),
            Run("observations", "resume --memories observations --locomo {locomo}"),
        ),
        figure=_resume_locomo,
        command="`yiji bench resume --memories 0 --locomo locomo10.json` (`--memories observations`)",
        data="LoCoMo, categories 1-4",
        minutes=15,
    ),
    Row(
        key="extraction",
        measure="extraction precision / recall, a local model, every labelled set pooled; memory texts that "
        "only restate their quote",
        runs=_EXTRACTION,
        figure=lambda r: (
            f"**{_extraction(r, 'precision')}** / {_extraction(r, 'recall')}; "
            f"{_extraction(r, 'restates_quote')} of {_extraction(r, 'accepted')} ({_restating(r)})"
        ),
        command="`yiji --config FILE bench extraction --data all --answers DIR`",
        data=f"{_SETS}, {_TURNS} turns; the endpoint the configuration names (Qwen2.5-Coder-1.5B-Instruct "
        "Q4_K_M on llama-cpp-python, `json_object`)",
        minutes=5,
    ),
    Row(
        key="extraction-safety",
        measure="extraction safety: assistant statements stored as user facts; user keys on hypotheticals, "
        "questions or third parties",
        runs=_EXTRACTION,
        figure=lambda r: (
            f"**{_extraction(r, 'assistant_as_user_fact')} / {_extraction(r, 'user_key_on_forbidden')}**"
        ),
        command="the same run as the row above",
        data=_SETS,
        minutes=0,
    ),
    Row(
        key="extraction-review",
        measure='`review = "facts"`: share of stored memories that wait; precision of those stored at once',
        runs=_EXTRACTION,
        figure=lambda r: (
            f"{_extraction(r, 'review_facts', 'waiting_share')}; "
            f"{_extraction(r, 'review_facts', 'precision_accepted_at_once')}"
        ),
        command="the same run",
        data=_SETS,
        minutes=0,
    ),
    Row(
        key="resume",
        measure="`session_resume` latency, p50 / p95",
        runs=(Run("resume", "resume"),),
        figure=_resume,
        command="`yiji bench resume`",
        data="100,000 synthetic memories, 200 resumes, budget 2,000",
        minutes=8,
    ),
    Row(
        key="recall-1m",
        measure="recall latency at 1,000,000 events, p50 / p95 (exact candidates): synthetic queries; the "
        "questions of 20 planted LongMemEval haystacks, and their all@10 (BM25)",
        runs=(Run("recall", "recall --events 1000000 --keep {keep}/recall --data {longmemeval}"),),
        figure=_recall_1m,
        command="`yiji bench recall --events 1000000 --keep DIR --data longmemeval_s_cleaned.json.xz`",
        data="synthetic archive plus 20 dev haystacks",
        minutes=15,
    ),
    Row(
        key="longmemeval-40x-latency",
        measure="recall and `session_resume` latency in a 40x archive, p50 / p95",
        runs=(
            Run("fast", _longmemeval("--split dev --scale 40 --limit 30")),
            Run("semantic", _longmemeval("--split dev --scale 40 --limit 30 --mode semantic")),
        ),
        figure=_lme_latency,
        command="`yiji bench longmemeval ... --split dev --scale 40 --limit 30 --keep DIR` "
        "(`--mode semantic`)",
        data="LongMemEval_S dev, first 30 questions",
        minutes=10,
    ),
    Row(
        key="hooks",
        measure="Claude Code / Codex hooks: `SessionStart` (the read-only coding pack) on a 10,000-event "
        "scope, cold process, p50 / p95; `Stop` on 2,000 transcript lines, first run / one more turn p95; "
        "`UserPromptSubmit --recall` (Chinese and English prompts in turn), p50 / p95",
        runs=(Run("hooks", "hooks"),),
        figure=_hooks,
        command="`yiji bench hooks`",
        data="synthetic",
        minutes=5,
    ),
    Row(
        key="hooks-auto",
        measure="`Stop` with `[extraction] auto` off / on: one more turn, 40 runs each 2 s apart in blocks "
        "off, on, on, off, 500-line transcript captured, the automatic run against a loopback endpoint of "
        "0.2 s a call",
        runs=(Run("auto", "hooks --auto --incremental-runs 40 --lines 500"),),
        figure=_hooks_auto,
        command="`yiji bench hooks --auto --incremental-runs 40 --lines 500`",
        data="synthetic",
        minutes=8,
    ),
    Row(
        key="recall-latency",
        measure="recall latency at 20,000 / 100,000 events, p50 / p95 (exact candidates)",
        runs=(Run("recall", "recall --events 20000 --events 100000 --rounds 3 --keep {keep}/recall"),),
        figure=lambda r: "; ".join(
            f"{_ms(a['p50_ms'])} / {_ms(a['p95_ms'])} ms" for a in r["recall"]["archives"]
        ),
        command="`yiji bench recall --events 20000 --events 100000 --rounds 3 --keep DIR`",
        data="synthetic",
        minutes=5,
    ),
    Row(
        key="semantic",
        measure="semantic recall latency, p95: 2,000 vectors; 100,000 vectors in `deep` mode (peak RSS)",
        runs=(
            Run("semantic", "semantic --vectors 2000 --mode semantic --rounds 5"),
            Run("deep", "semantic --vectors 100000 --mode deep"),
        ),
        figure=_semantic,
        command="`yiji bench semantic --vectors 2000 --mode semantic --rounds 5`; "
        "`--vectors 100000 --mode deep`",
        data="synthetic",
        minutes=15,
    ),
    Row(
        key="startup",
        measure="start-up: `yiji --help`; `yiji recall` on 100,000 events, Chinese / English (medians)",
        runs=(Run("startup", "startup --keep {keep}/startup --runs 20"),),
        figure=_startup_row,
        command="`yiji bench startup --keep DIR --runs 20`",
        data="synthetic",
        minutes=3,
    ),
    Row(
        key="ingest",
        measure="one event committed at a time, against SQLite's raw insert loop on the same disk; one "
        "batch; bytes per 1,000 events",
        runs=(Run("ingest", "ingest --imported 0"),),
        figure=_ingest,
        command="`yiji bench ingest --imported 0`",
        data="synthetic, `synchronous=FULL`",
        minutes=2,
    ),
    Row(
        key="import",
        measure="peak RSS of `yiji import` on a JSONL / JSON archive of 200,000 events",
        runs=(Run("import", "import --events 200000 --keep {keep}/import"),),
        figure=_import_row,
        command="`yiji bench import --events 200000 --keep DIR`",
        data="synthetic, 400,000 rows",
        minutes=10,
    ),
    Row(
        key="wal",
        measure="peak WAL size, one writer and three busy readers",
        runs=(Run("wal", "wal"),),
        figure=lambda r: f"**{_wal(r, True)} MiB** ({_wal(r, False)} MiB without yiji's limit)",
        command="`yiji bench wal`",
        data="synthetic, 30 s per phase",
        minutes=2,
    ),
    Row(
        key="host-ingest",
        measure="one `yiji host-ingest` process with 50 messages, start-up included (median)",
        runs=(Run("host-ingest", "host-ingest"),),
        figure=lambda r: f"**{_ms(r['host-ingest']['ingest']['median_ms'])} ms**",
        command="`yiji bench host-ingest`",
        data="synthetic",
        minutes=1,
    ),
)
