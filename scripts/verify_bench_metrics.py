"""Check that yiji_bench reproduces the reference baseline tables exactly.

Runs the LoCoMo baseline's own BM25 (imported from the given baseline script) over yiji's loaders
and metrics, then scores the MADial authors' released embedding rankings. Compare the output with
``locomo_bm25_baseline.txt`` and ``madial_bm25_baseline.txt``.

Usage::

    uv run python scripts/verify_bench_metrics.py --baseline /path/locomo_retrieval_baseline.py \
        --locomo /path/locomo10.json --madial /path/madial
"""

from __future__ import annotations

import argparse
import importlib.util
from collections import Counter
from pathlib import Path

from yiji_bench.datasets import baseline_turn_text, load_locomo, load_madial_embedding_rankings
from yiji_bench.metrics import (
    MADIAL_COLUMNS,
    LocomoReport,
    approx_tokens,
    locomo_metrics,
    madial_metrics,
    mean_metrics,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="locomo_retrieval_baseline.py")
    ap.add_argument("--locomo", type=Path, required=True, help="locomo10.json")
    ap.add_argument("--madial", type=Path, required=True, help="MADial-Bench repository folder")
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("locomo_baseline", a.baseline)
    assert spec is not None and spec.loader is not None
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)

    conversations = load_locomo(a.locomo)
    report = LocomoReport()
    for c in conversations:
        ids = [t.dia_id for t in c.turns]
        texts = [baseline_turn_text(t) for t in c.turns]
        engine = base.BM25([base.tokenize(t) for t in texts])
        cost = {d: approx_tokens(t) for d, t in zip(ids, texts, strict=True)}
        for q in c.questions:
            scores = engine.scores(base.tokenize(q.question))
            order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
            report.add(q.category, locomo_metrics([ids[i] for i in order], q.evidence, cost))
    print(report.table())
    skipped = sum((c.skipped for c in conversations), start=Counter[int]())
    unknown = sum(c.unknown_evidence for c in conversations)
    print(f"skipped (no evidence): {dict(skipped)}; gold ids not present in conversation: {unknown}")
    for name, rows in load_madial_embedding_rankings(a.madial).items():
        m = mean_metrics([madial_metrics(ranked, gold) for ranked, gold in rows])
        label = f"authors' {name} zh"
        print(f"{label:<28} n={len(rows):<4}" + " ".join(f"{k}={m[k]:.3f}" for k in MADIAL_COLUMNS))


if __name__ == "__main__":
    main()
