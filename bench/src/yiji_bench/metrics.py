"""Recall metrics, defined exactly as the reference baselines compute them.

LoCoMo (``locomo_retrieval_baseline.py``), for one question with ranked turn ids and a gold set:

* ``recall@k`` = |gold ∩ top-k| / |gold|; ``all@k`` = every gold turn in the top k; ``any@k`` = at
  least one, for k in :data:`LOCOMO_KS`;
* ``sess_recall@k`` = fraction of gold sessions among the first k distinct sessions of the ranking
  (a session is ranked by its best turn; the session of ``D3:7`` is ``D3``);
* ``mrr`` = 1 / (1 + rank of the first gold turn), 0 when no gold turn is ranked;
* ``recall@Btok`` = recall of the turns packed greedily, in rank order, into B tokens (B in
  :data:`LOCOMO_BUDGETS`), stopping at the first turn that does not fit; a turn costs
  :func:`approx_tokens` of its text.

The baseline ranks every turn of the conversation; a ranking that stops early (bounded candidates)
scores 0 for the gold turns it leaves out, so its MRR can only be lower than with a full ranking.

MADial-Bench (``madial_retrieval_baseline.py``), for k in :data:`MADIAL_KS`: ``recall@k``,
``any@k`` and ``ndcg@k`` with binary gains and the ideal DCG of min(k, |gold|) hits.

yiji adds one LoCoMo figure the baseline has no notion of: ``context@10`` = |gold ∩ (top 10 ∪ the turns
the top 10 items carry as their context)| / |gold|. A hit's neighbouring turns without evidence of their own
travel with it instead of taking places in the list, so ``recall@10`` does not see them, while a reader of
the result (and a resume pack) does.

Rows are averaged per LoCoMo category; "overall" is categories 1-4 (adversarial questions are
reported apart), as in the baseline.

**Precision of the returned list**, beside recall, for every data set with gold evidence: per question,
the share of the items a recall at its default limit returns (:data:`DEFAULT_LIMIT`; distinct source
turns, a memory counting as its turn) that are gold evidence, averaged over the questions, with the mean
length of the list; an empty list counts 0. BM25 returns its first :data:`DEFAULT_LIMIT` turns with a
positive score (:func:`bm25_list`): it has no notion of where its evidence ends. Recall at k scores the
first k of a list; precision says how much of what a host is given (a prompt hook, a pack) it wanted.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from yiji.models.recall import RecallQuery
from yiji_bench.datasets import LOCOMO_CATEGORIES

__all__ = [
    "LOCOMO_BUDGETS",
    "LOCOMO_COLUMNS",
    "LOCOMO_KS",
    "MADIAL_COLUMNS",
    "MADIAL_KS",
    "OVERALL_CATEGORIES",
    "DEFAULT_LIMIT",
    "ListPrecision",
    "LocomoReport",
    "bm25_list",
    "approx_tokens",
    "compared",
    "locomo_metrics",
    "madial_metrics",
    "mean_metrics",
    "packed_greedily",
    "paired",
    "precision_line",
    "sign_test",
]

DEFAULT_LIMIT: int = RecallQuery.model_fields["limit"].default
"""The items a recall returns when the caller gives no limit: the list whose precision is measured."""

LOCOMO_KS = (1, 5, 10, 20)
LOCOMO_BUDGETS = (500, 1000, 2000)
LOCOMO_COLUMNS = (
    "recall@5",
    "recall@10",
    "all@5",
    "all@10",
    "any@5",
    "any@10",
    "recall@20",
    "sess_recall@1",
    "sess_recall@5",
    "mrr",
    "recall@500tok",
    "recall@1000tok",
    "recall@2000tok",
)
"""The columns of the baseline's printed table, in its order."""

OVERALL_CATEGORIES = (1, 2, 3, 4)
"""The LoCoMo categories of the baseline's "overall" row (5, adversarial, is reported apart)."""

MADIAL_KS = (1, 3, 5, 10)
MADIAL_COLUMNS = tuple(f"{m}@{k}" for m in ("recall", "any", "ndcg") for k in MADIAL_KS)


def approx_tokens(text: str) -> int:
    """The baseline's token estimate for packing: one token per four characters, at least one."""
    return max(1, len(text) // 4)


def _session(turn_id: str) -> str:
    return turn_id.split(":", maxsplit=1)[0]


def locomo_metrics(
    ranked: Sequence[str],
    gold: Sequence[str],
    cost: Mapping[str, int],
    carried: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, float]:
    """The baseline's per-question metrics for ``ranked`` turn ids against the ``gold`` ids.

    ``cost`` maps every ranked id to its token cost (see :func:`approx_tokens`). ``gold`` must not
    be empty; the baseline skips such questions. With ``carried`` (a ranked turn's context turns),
    ``context@10`` too.
    """
    if not gold:
        raise ValueError("gold must not be empty")
    rank = {turn: position for position, turn in reversed(list(enumerate(ranked)))}
    gold_sessions = {_session(g) for g in gold}
    sessions = list(dict.fromkeys(_session(turn) for turn in ranked))
    first = min((rank[g] for g in gold if g in rank), default=None)
    out: dict[str, float] = {"mrr": 0.0 if first is None else 1.0 / (first + 1)}
    for k in LOCOMO_KS:
        top = set(ranked[:k])
        hits = sum(g in top for g in gold)
        out[f"recall@{k}"] = hits / len(gold)
        out[f"all@{k}"] = float(hits == len(gold))
        out[f"any@{k}"] = float(hits > 0)
        out[f"sess_recall@{k}"] = len(gold_sessions & set(sessions[:k])) / len(gold_sessions)
    for budget in LOCOMO_BUDGETS:
        packed = set(packed_greedily(ranked, cost, budget))
        out[f"recall@{budget}tok"] = sum(g in packed for g in gold) / len(gold)
    if carried is not None:
        shown = {t for turn in ranked[:10] for t in (turn, *carried.get(turn, ()))}
        out["context@10"] = sum(g in shown for g in gold) / len(gold)
    return out


def packed_greedily(ranked: Sequence[str], cost: Mapping[str, int], budget: int) -> list[str]:
    """The first turns of ``ranked`` whose ``cost`` fits in ``budget`` together, stopping at the first that
    does not fit, as the LoCoMo baseline packs its ranking."""
    used, packed = 0, []
    for turn in ranked:
        if used + cost[turn] > budget:
            break
        used += cost[turn]
        packed.append(turn)
    return packed


def madial_metrics(ranked: Sequence[int], gold: Iterable[int]) -> dict[str, float]:
    """The MADial baseline's recall@k, any@k and nDCG@k for one dialogue (``gold`` not empty)."""
    wanted = set(gold)
    if not wanted:
        raise ValueError("gold must not be empty")
    out: dict[str, float] = {}
    for k in MADIAL_KS:
        hits = [1 if r in wanted else 0 for r in ranked[:k]]
        dcg = sum(h / math.log2(i + 2) for i, h in enumerate(hits))
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(wanted))))
        out[f"recall@{k}"] = sum(hits) / len(wanted)
        out[f"any@{k}"] = float(any(hits))
        out[f"ndcg@{k}"] = dcg / ideal
    return out


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Average each metric over ``rows`` (all rows must have the same keys)."""
    if not rows:
        return {}
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}


@dataclass
class LocomoReport:
    """Accumulates per-question LoCoMo metrics by category and prints the baseline's table."""

    rows: dict[int, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, category: int, metrics: Mapping[str, float]) -> None:
        self.rows[category].append(dict(metrics))

    def count(self, categories: Iterable[int]) -> int:
        return sum(len(self.rows.get(c, [])) for c in categories)

    def mean(self, categories: Iterable[int]) -> dict[str, float]:
        return mean_metrics([row for c in categories for row in self.rows.get(c, [])])

    def overall(self) -> dict[str, float]:
        """Categories 1-4, the baseline's "overall" row."""
        return self.mean(OVERALL_CATEGORIES)

    def table(self, columns: Sequence[str] = LOCOMO_COLUMNS) -> str:
        lines = [f"{'category':<22}{'n':>5}" + "".join(f"{c:>15}" for c in columns)]

        def row(name: str, categories: Sequence[int]) -> None:
            values = self.mean(categories)
            lines.append(
                f"{name:<22}{self.count(categories):>5}" + "".join(f"{values[c]:>15.4f}" for c in columns)
            )

        for category in sorted(self.rows):
            row(f"{category} {LOCOMO_CATEGORIES.get(category, '?')}", [category])
        row("overall (cat 1-4)", OVERALL_CATEGORIES)
        row("all incl. adversarial", [1, 2, 3, 4, 5])
        return "\n".join(lines)


def sign_test(wins: int, losses: int) -> float:
    """The exact two-sided sign test: the probability, were both systems equally good, of a split of
    ``wins + losses`` discordant questions at least this uneven (ties are left out, as the test does)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / (1 << n)
    return min(1.0, 2 * tail)


def paired(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, float]:
    """Question by question, for a 0/1 metric of two systems on the same questions (such as recall_all@10):
    how many only ours gets, only theirs, both and neither, and :func:`sign_test` of the split. A margin
    of a few questions in thirty is often within chance, and this says how far."""
    if len(ours) != len(theirs):
        raise ValueError("both systems must be scored on the same questions")
    found = Counter((a >= 1.0, b >= 1.0) for a, b in zip(ours, theirs, strict=True))
    wins, losses = found[True, False], found[False, True]
    both = found[True, True]
    return {
        "ours_only": wins,
        "theirs_only": losses,
        "both": both,
        "neither": len(ours) - wins - losses - both,
        "sign_test_p": round(sign_test(wins, losses), 4),
    }


def compared(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, float]:
    """Question by question, for any metric of two systems on the same questions (such as LoCoMo's
    fractional recall@10): how many questions ours scores higher, lower and the same, and
    :func:`sign_test` of the split."""
    if len(ours) != len(theirs):
        raise ValueError("both systems must be scored on the same questions")
    higher = sum(a > b for a, b in zip(ours, theirs, strict=True))
    lower = sum(a < b for a, b in zip(ours, theirs, strict=True))
    return {
        "higher": higher,
        "lower": lower,
        "same": len(ours) - higher - lower,
        "sign_test_p": round(sign_test(higher, lower), 4),
    }


def bm25_list(ranking: Sequence[str], scores: Sequence[float], limit: int = DEFAULT_LIMIT) -> list[str]:
    """BM25's returned list: the first ``limit`` ids of its ``ranking`` whose score (``scores``, in the
    ranking's order) is positive."""
    return [i for i, score in zip(ranking[:limit], scores, strict=False) if score > 0]


@dataclass
class ListPrecision:
    """Precision of each system's returned list, per question, averaged (see the module docstring)."""

    rows: dict[str, list[tuple[float, int]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, system: str, returned: Iterable[str], gold: Iterable[str]) -> None:
        """One question: the ids ``system`` returned (repeats counted once) against its ``gold`` ids."""
        listed, wanted = list(dict.fromkeys(returned)), set(gold)
        share = sum(i in wanted for i in listed) / len(listed) if listed else 0.0
        self.rows[system].append((share, len(listed)))

    def as_dict(self) -> dict[str, dict[str, float]]:
        """For each system: mean ``precision``, mean ``length`` of the list, ``questions``."""
        return {
            system: {
                "precision": round(sum(p for p, _ in rows) / len(rows), 4),
                "length": round(sum(n for _, n in rows) / len(rows), 2),
                "questions": len(rows),
            }
            for system, rows in self.rows.items()
            if rows
        }


def precision_line(figures: Mapping[str, Mapping[str, float]]) -> str:
    """One line of a report: each system's precision and mean list length."""
    parts = [
        f"{'plain BM25' if system == 'bm25' else system} {f['precision']:.4f} ({f['length']:.1f} items)"
        for system, f in figures.items()
    ]
    return f"precision of the returned list (default limit {DEFAULT_LIMIT}): " + ", ".join(parts)
