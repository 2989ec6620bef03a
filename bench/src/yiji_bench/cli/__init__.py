"""``yiji bench ...``: benchmark commands that print numbers.

The ``yiji`` command finds this module through the ``yiji.commands`` entry point that the ``yiji-bench``
package declares (:data:`yiji.cli.PLUGIN_GROUP`): :data:`COMMANDS` and :func:`register`, as every command
module of ``yiji.cli``. The handlers live in :mod:`yiji_bench.cli.quality`, :mod:`yiji_bench.cli.speed` and
:mod:`yiji_bench.cli.table` (``yiji bench refresh``).
"""

from __future__ import annotations

import argparse
from typing import Any

from yiji_bench.cli import quality, speed, table
from yiji_bench.cli.common import archive_or_mode, positive

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
    i.set_defaults(func=speed.ingest_command)
    hi = bs.add_parser(
        "host-ingest", parents=[common], help="wall time of one `yiji host-ingest` process, start-up included"
    )
    hi.add_argument("--messages", type=int, default=50, help="messages per batch")
    hi.add_argument("--runs", type=int, default=10, help="timed processes per series")
    hi.set_defaults(func=speed.host_ingest_command)
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
    hk.set_defaults(func=speed.hooks_command)
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
    lo.set_defaults(func=quality.locomo_command)
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
    lm.add_argument("--limit", type=positive, help="only the first N questions of the split")
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
    lm.set_defaults(func=quality.longmemeval_command)
    ma = bs.add_parser("madial", parents=[common], help="memory recall on MADial-Bench (data from --data)")
    ma.add_argument("--data", required=True, help="path to the MADial-Bench folder (with data/)")
    ma.add_argument("--lang", action="append", choices=["zh", "en"], help="language(s); default both")
    ma.add_argument("--mode", choices=["fast", "semantic", "deep"], default="fast", help="recall mode")
    ma.add_argument(
        "--cross", action="store_true", help="also English dialogues as queries over the Chinese memories"
    )
    ma.set_defaults(func=quality.madial_command, lang=None)
    xa = bs.add_parser(
        "exactness",
        parents=[common],
        help="share of queries whose recall list differs from scoring every match with the final ranking",
    )
    xa.add_argument("--locomo", help="path to locomo10.json (every question)")
    xa.add_argument("--longmemeval", help="path to longmemeval_s_cleaned.json(.xz) (dev half, 1x)")
    xa.add_argument("--madial", help="path to the MADial-Bench folder (zh and en, every dialogue)")
    xa.add_argument(
        "--questions", type=positive, default=60, help="LongMemEval: the first N questions of the dev half"
    )
    xa.add_argument("--limit", type=positive, default=10, help="items of each list compared (recall's limit)")
    xa.set_defaults(func=quality.exactness_command)
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
    re_.set_defaults(func=speed.recall_command)
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
    se.set_defaults(func=speed.semantic_command)
    st = bs.add_parser(
        "startup", parents=[common], help="wall time of `yiji --help` and `yiji recall` vs `python -c pass`"
    )
    st.add_argument("--runs", type=int, default=10, help="runs of each command (interleaved)")
    st.add_argument("--events", type=int, default=100_000, help="events in the archive `yiji recall` reads")
    st.add_argument("--keep", metavar="DIR", help="keep the archive in DIR and reuse it next time")
    st.set_defaults(func=speed.startup_command)
    im = bs.add_parser("import", parents=[common], help="peak memory of `yiji import` on a large archive")
    im.add_argument("--events", type=int, default=300_000, help="events in the exported archive")
    im.add_argument("--keep", metavar="DIR", help="keep the source archive in DIR and reuse it next time")
    im.set_defaults(func=speed.import_command)
    wl = bs.add_parser("wal", parents=[common], help="peak WAL size under one writer and busy readers")
    wl.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    wl.add_argument("--readers", type=int, default=3, help="reader processes")
    wl.set_defaults(func=speed.wal_command)
    rs = bs.add_parser("resume", parents=[common], help="session_resume latency on a synthetic archive")
    rs.add_argument(
        "--memories",
        type=archive_or_mode,
        default=100_000,
        help="memories in the synthetic archive (one event each; 0 skips the latency part), or, with "
        "--locomo, 'observations' (derive LoCoMo's observations as memories; no latency part) or 'none'",
    )
    rs.add_argument("--resumes", type=int, default=200, help="timed session_resume calls")
    rs.add_argument("--budget", type=int, default=2000, help="context budget per call")
    rs.add_argument("--model", help="model name for the token counter (default: UTF-8 bytes)")
    rs.add_argument("--locomo", help="also measure gold-evidence share per pack on LoCoMo (locomo10.json)")
    rs.add_argument("--errata", help="optional audited evidence corrections for --locomo")
    rs.set_defaults(func=speed.resume_command)
    ex = bs.add_parser(
        "extraction",
        parents=[common],
        help="extraction precision/recall on a labelled set (configured endpoint)",
    )
    ex.add_argument(
        "--data",
        action="append",
        help="labelled turns (JSON file), or a set shipped with yiji: 'labelled' (default, 60 turns), "
        "'heldout' or 'reserved' to 'reserved18' (30 turns each, written later and first run as "
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
    ex.set_defaults(func=quality.extraction_command)
    rf = bs.add_parser(
        "refresh",
        parents=[common],
        help="rerun the benchmarks behind docs/benchmarks.md's current table and rewrite it",
    )
    rf.add_argument("--only", action="append", help="only this row, by its key (repeat it; --dry-run lists)")
    rf.add_argument("--dry-run", action="store_true", help="say what would run, and how long; run nothing")
    rf.add_argument(
        "--data-root",
        help="folder of the data sets (locomo/locomo10.json, madial/, "
        "longmemeval/longmemeval_s_cleaned.json.xz; default: $YIJI_BENCH_DATA); a row whose data is absent "
        "is not rerun",
    )
    rf.add_argument(
        "--keep-root",
        help="folder for the archives the benchmarks keep, reused by the next refresh (default: a temporary "
        "folder, removed afterwards)",
    )
    rf.add_argument("--answers", help="the extraction endpoint's kept answers, for the extraction rows")
    rf.add_argument("--extraction-config", help="configuration that names the extraction endpoint")
    rf.add_argument("--doc", help="the page to rewrite (default: docs/benchmarks.md of this repository)")
    rf.set_defaults(func=table.refresh_command)
