"""LongMemEval_S for ``yiji bench longmemeval``: the loader, the fixed dev/test split, the plain BM25 row
and the official retrieval metrics.

The data (xiaowu0162/LongMemEval, ``longmemeval_s_cleaned.json``, optionally ``.xz``-compressed) is read
from the path the operator gives and never copied. Each question has its own haystack of chat sessions
(about 50 sessions, 490 turns); abstention questions (``question_id`` ending in ``_abs``) are skipped and
counted, as the official retrieval evaluation skips them.

Conventions, all fixed so that runs are comparable:

* **Split.** ``dev`` holds the questions whose ``sha256(question_id)`` hex digest starts with 0-7, ``test``
  those starting with 8-f. Questions keep the file's order inside a split.
* **Corpus.** One document per turn. ``both`` indexes every turn, ``user`` only the user's turns. A turn's
  baseline id is ``<session id>_<turn index + 1>`` (every turn counted, so numbers do not change with the
  protocol), its event id ``<session>:<turn index + 1>``. A haystack may list the same session twice (same
  turns, another date): the repeat's session becomes ``<session id>.2`` so event ids stay unique.
* **Gold.** Gold turns are the corpus turns with ``has_answer``; a question whose gold turns are all outside
  the corpus (the assistant's answers under ``user``) scores as the reference script scores an empty gold
  set (recall_all 1, recall_any 0, nDCG 0) and is counted.
* **Metrics** (:func:`evaluate`, :func:`to_session`) are those of ``longmemeval_retrieval_baseline.py``,
  itself the official ``evaluate_retrieval`` and ``evaluate_retrieval_turn2session``: a ranking is a list of
  corpus positions; session metrics take the first k distinct sessions, where only a gold turn counts for
  its session (a gold session's other turns are ids of another session, as upstream's ``noans`` ids).
* **BM25 row** (:func:`bm25_ranking`): the baseline's ``all`` mode, the regex tokenizer with its stopwords
  and ``rank_bm25.BM25Okapi`` (k1 = 1.5, b = 0.75, epsilon = 0.25) computed the same way, ties by corpus
  order.

Pure, apart from :func:`load_longmemeval`.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import math
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from yiji_bench.baselines import OKAPI_B, OKAPI_EPSILON, OKAPI_K1, SCRIPT_STOPWORDS, bm25_scores
from yiji_bench.metrics import paired

__all__ = [
    "BM25_VERSION",
    "KS",
    "Bm25Index",
    "MIN_SPAN_DAYS",
    "SCALES",
    "SCALE_VERSION",
    "FillerSession",
    "PROTOCOLS",
    "SPLITS",
    "LmeData",
    "LmeQuestion",
    "LmeReport",
    "LmeTurn",
    "MAIN_COLUMNS",
    "bm25_ranking",
    "bm25_scores",
    "corpus",
    "evaluate",
    "from_outline",
    "load_longmemeval",
    "outline_of",
    "parse_lme_time",
    "question_metrics",
    "regex_tokens",
    "scale_question",
    "select",
    "split_of",
    "to_session",
]

SPLITS = ("dev", "test", "all")
PROTOCOLS = ("both", "user")
SCALES = (1, 10, 20, 40)
"""Archive sizes of ``--scale``: the haystack alone, or inside an archive 10, 20 or 40 times bigger."""
MIN_SPAN_DAYS = 10
"""A scaled archive spans at least this many days per unit of scale (a year and more at 40x)."""
SCALE_VERSION = 1
"""Bump when the construction of a scaled archive changes: kept scaled databases are rebuilt."""
KS = (5, 10, 50)
"""Cut-offs of every metric (the reference script's, turn granularity)."""

K1, B, EPSILON = OKAPI_K1, OKAPI_B, OKAPI_EPSILON
BM25_VERSION = 1
"""Bump when the BM25 row changes: rankings kept from an earlier run are computed again."""

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class LmeTurn:
    """One turn of a haystack, in haystack order."""

    session: str
    """The session's unique key in this haystack (the session id, ``.2`` for a repeat)."""
    session_id: str
    """The data set's session id (a repeat shares it)."""
    index: int
    """0-based position in its session (every turn counted)."""
    role: str
    text: str
    has_answer: bool
    occurred_at: datetime

    @property
    def event_id(self) -> str:
        return f"{self.session}:{self.index + 1}"

    @property
    def baseline_id(self) -> str:
        """The reference script's corpus id (without its ``ANS|`` gold mark)."""
        return f"{self.session_id}_{self.index + 1}"


@dataclass(frozen=True)
class LmeQuestion:
    question_id: str
    question_type: str
    question: str
    question_date: datetime
    answer_session_ids: tuple[str, ...]
    turns: tuple[LmeTurn, ...]
    outline: bool = False
    """Read from an outline (:func:`outline_of`): every turn's text is empty."""

    @property
    def split(self) -> str:
        return split_of(self.question_id)


@dataclass(frozen=True)
class FillerSession:
    """A session of the file that may fill a scaled archive: no question's evidence, no gold turn."""

    session_id: str
    turns: tuple[tuple[str, str], ...]
    """(role, text) of each turn, in order."""


@dataclass(frozen=True)
class LmeData:
    questions: tuple[LmeQuestion, ...]
    """Non-abstention questions, in file order."""
    abstention: int
    """Abstention questions skipped."""
    filler: tuple[FillerSession, ...] = ()
    """Every session that may fill a scaled archive (each once, by session id), abstention questions'
    haystacks included."""


def parse_lme_time(text: str) -> datetime:
    """A LongMemEval date such as ``2023/05/20 (Sat) 07:47``, read as UTC."""
    return datetime.strptime(text.strip()[:10] + text.strip()[-5:], "%Y/%m/%d%H:%M").replace(tzinfo=UTC)


def split_of(question_id: str) -> str:
    """``dev`` when ``sha256(question_id)`` starts with 0-7, else ``test``."""
    return "dev" if hashlib.sha256(question_id.encode()).hexdigest()[0] in "01234567" else "test"


def _read(path: Path) -> Any:
    if path.suffix == ".xz":
        with lzma.open(path, "rb") as handle:
            return json.loads(handle.read())
    with path.open("rb") as handle:
        return json.loads(handle.read())


def _question(entry: Mapping[str, Any]) -> LmeQuestion:
    turns: list[LmeTurn] = []
    seen: dict[str, int] = {}
    for session_id, date, session in zip(
        entry["haystack_session_ids"], entry["haystack_dates"], entry["haystack_sessions"], strict=True
    ):
        seen[session_id] = seen.get(session_id, 0) + 1
        key = session_id if seen[session_id] == 1 else f"{session_id}.{seen[session_id]}"
        when = parse_lme_time(date)
        turns.extend(
            LmeTurn(key, session_id, i, t["role"], t["content"], bool(t.get("has_answer")), when)
            for i, t in enumerate(session)
        )
    return LmeQuestion(
        question_id=entry["question_id"],
        question_type=entry["question_type"],
        question=entry["question"],
        question_date=parse_lme_time(entry["question_date"]),
        answer_session_ids=tuple(entry["answer_session_ids"]),
        turns=tuple(turns),
    )


def load_longmemeval(path: str | Path) -> LmeData:
    """Load a LongMemEval JSON file (``.xz`` read compressed); abstention questions are counted, not kept."""
    entries = _read(Path(path))
    kept = [_question(e) for e in entries if not str(e["question_id"]).endswith("_abs")]
    return LmeData(questions=tuple(kept), abstention=len(entries) - len(kept), filler=_filler(entries))


def _filler(entries: Sequence[Mapping[str, Any]]) -> tuple[FillerSession, ...]:
    """The sessions of every entry that are no question's evidence and hold no gold turn, sorted by id."""
    evidence = {sid for e in entries for sid in e["answer_session_ids"]}
    pool: dict[str, FillerSession] = {}
    for e in entries:
        for session_id, session in zip(e["haystack_session_ids"], e["haystack_sessions"], strict=True):
            if session_id in evidence or session_id in pool or any(t.get("has_answer") for t in session):
                continue
            pool[session_id] = FillerSession(session_id, tuple((t["role"], t["content"]) for t in session))
    return tuple(pool[k] for k in sorted(pool))


def _rng(question_id: str, scale: int) -> random.Random:
    return random.Random(hashlib.sha256(f"{question_id}|{scale}".encode()).digest())


def scale_question(question: LmeQuestion, filler: Sequence[FillerSession], scale: int) -> LmeQuestion:
    """The question with its haystack inside an archive ``scale`` times bigger (see the module docstring):
    at least ``(scale - 1)`` times the haystack's turns of filler, every session at a drawn date, sessions
    in date order. Deterministic in (question id, scale, filler)."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(map(str, SCALES))}")
    if scale == 1:
        return question
    if question.outline:
        raise ValueError("an outline has no turn text: load the data file")
    rng = _rng(question.question_id, scale)
    own = {t.session_id for t in question.turns}
    sessions: list[list[LmeTurn]] = []
    for t in question.turns:
        if not sessions or sessions[-1][0].session != t.session:
            sessions.append([])
        sessions[-1].append(t)
    dates = [s[0].occurred_at for s in sessions]
    end = max(dates)
    span = scale * max(end - min(dates), timedelta(days=MIN_SPAN_DAYS))
    order = list(range(len(filler)))
    rng.shuffle(order)
    need, chosen = (scale - 1) * len(question.turns), 0
    for i in order:
        if chosen >= need:
            break
        f = filler[i]
        if f.session_id in own or not f.turns:
            continue
        sessions.append(
            [
                LmeTurn(f.session_id, f.session_id, k, role, text, False, end)
                for k, (role, text) in enumerate(f.turns)
            ]
        )
        chosen += len(f.turns)
    minutes = int(span.total_seconds() // 60)
    placed = []
    for position, session in enumerate(sessions):
        when = end - timedelta(minutes=rng.randint(0, minutes))
        placed.append((when, position, [replace(t, occurred_at=when) for t in session]))
    placed.sort(key=lambda x: (x[0], x[1]))
    return replace(question, turns=tuple(t for _, _, session in placed for t in session))


def outline_of(question: LmeQuestion) -> dict[str, Any]:
    """The question without its turns' text, as JSON data (a few kilobytes instead of half a megabyte):
    what a re-run over kept databases needs."""
    sessions: list[list[Any]] = []
    for t in question.turns:
        if not sessions or sessions[-1][0] != t.session:
            sessions.append([t.session, t.session_id, t.occurred_at.isoformat(), []])
        sessions[-1][3].append([t.role, int(t.has_answer)])
    return {
        "question_id": question.question_id,
        "question_type": question.question_type,
        "question": question.question,
        "question_date": question.question_date.isoformat(),
        "answer_session_ids": list(question.answer_session_ids),
        "sessions": sessions,
    }


def from_outline(data: Mapping[str, Any]) -> LmeQuestion:
    """The question :func:`outline_of` wrote, with empty turn texts (``outline`` set)."""
    turns = tuple(
        LmeTurn(session, session_id, i, role, "", bool(gold), datetime.fromisoformat(when))
        for session, session_id, when, roles in data["sessions"]
        for i, (role, gold) in enumerate(roles)
    )
    return LmeQuestion(
        question_id=data["question_id"],
        question_type=data["question_type"],
        question=data["question"],
        question_date=datetime.fromisoformat(data["question_date"]),
        answer_session_ids=tuple(data["answer_session_ids"]),
        turns=turns,
        outline=True,
    )


def select(questions: Iterable[LmeQuestion], split: str, limit: int | None = None) -> list[LmeQuestion]:
    """The questions of one split (``all``: every one), in file order, the first ``limit`` of them."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}")
    chosen = [q for q in questions if split in ("all", q.split)]
    return chosen if limit is None else chosen[:limit]


def corpus(question: LmeQuestion, protocol: str) -> list[LmeTurn]:
    """The documents of one question: every turn (``both``) or the user's turns (``user``)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}")
    return [t for t in question.turns if protocol == "both" or t.role == "user"]


def regex_tokens(text: str) -> list[str]:
    """The reference script's tokenizer: lower-case ``[a-z0-9]+`` runs, stopwords removed."""
    return [t for t in _WORD.findall(text.lower()) if t not in SCRIPT_STOPWORDS]


class Bm25Index:
    """The BM25 row over a large corpus: postings built once, then each query scores only the documents
    that hold one of its terms.

    :meth:`top` equals the first ``k`` of :func:`bm25_ranking` exactly: the corpus statistics (document
    count, lengths, document frequencies, the idf floor) are those of every document, taken in the same
    order of operations; a document without a query term scores 0 there, and adding a term's 0.0 never
    changes a sum, so the scored documents get the same floats; the rest tie at 0 in corpus order.
    """

    def __init__(self, documents: Iterable[str]) -> None:
        from array import array

        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.lengths: array[int] = array("I")
        total = 0
        for position, text in enumerate(documents):
            tokens = regex_tokens(text)
            total += len(tokens)
            self.lengths.append(len(tokens))
            tf: dict[str, int] = {}
            for word in tokens:
                tf[word] = tf.get(word, 0) + 1
            for word, f in tf.items():
                docs, freqs = self.postings.get(word) or self.postings.setdefault(
                    word, (array("I"), array("I"))
                )
                docs.append(position)
                freqs.append(f)
        self.size = len(self.lengths)
        self.avgdl = total / self.size if self.size else 0.0
        self.idf: dict[str, float] = {}
        idf_sum = 0.0
        negative = []
        for word, (docs, _) in self.postings.items():  # first-seen order, as bm25_scores counts
            value = math.log(self.size - len(docs) + 0.5) - math.log(len(docs) + 0.5)
            self.idf[word] = value
            idf_sum += value
            if value < 0:
                negative.append(word)
        if self.idf:
            floor = EPSILON * (idf_sum / len(self.idf))
            for word in negative:
                self.idf[word] = floor

    def top(self, question: str, k: int) -> tuple[list[int], list[float]]:
        """The first ``k`` positions of :func:`bm25_ranking` and their scores."""
        scores: dict[int, float] = {}
        for q in regex_tokens(question):
            weight = self.idf.get(q) or 0
            docs, freqs = self.postings.get(q) or ((), ())
            for i, f in zip(docs, freqs, strict=True):
                part = weight * (f * (K1 + 1) / (f + K1 * (1 - B + B * self.lengths[i] / self.avgdl)))
                scores[i] = scores.get(i, 0.0) + part
        positive = sorted((i for i, v in scores.items() if v > 0), key=lambda i: (-scores[i], i))
        ranked = positive[:k]
        position = 0
        while len(ranked) < k and position < self.size:
            if not scores.get(position):
                ranked.append(position)
            position += 1
        if len(ranked) < k:
            ranked += sorted((i for i, v in scores.items() if v < 0), key=lambda i: (-scores[i], i))[
                : k - len(ranked)
            ]
        return ranked, [scores.get(i, 0.0) for i in ranked]


def bm25_ranking(question: str, documents: Sequence[str]) -> tuple[list[int], list[float]]:
    """The BM25 row's ranking of ``documents`` (positions, best first; ties by position) and scores."""
    scores = bm25_scores([regex_tokens(d) for d in documents], regex_tokens(question))
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i)), scores


def _dcg(rel: Sequence[int], k: int) -> float:
    rel = rel[:k]
    return sum(r / math.log2(i + 2) if i else r for i, r in enumerate(rel)) if rel else 0.0


def evaluate(
    ranking: Sequence[int], gold: set[str], ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    """(recall_any@k, recall_all@k, ndcg_any@k) of ``ranking`` (positions in ``ids``) against ``gold`` ids."""
    top = {ids[i] for i in ranking[:k]}
    any_ = float(any(g in top for g in gold))
    all_ = float(all(g in top for g in gold))
    rels = [1 if d in gold else 0 for d in ids]
    ideal = _dcg(sorted(rels, reverse=True), k)
    nd = _dcg([rels[i] for i in ranking], k) / ideal if ideal else 0.0
    return any_, all_, nd


def to_session(
    ranking: Sequence[int], gold: set[str], ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    """The official turn-to-session conversion: :func:`evaluate` on session ids, over the shortest prefix
    of the ranking that holds k distinct sessions."""

    def strip(x: str) -> str:
        return "_".join(x.split("_")[:-1])

    gold_sessions = {strip(g) for g in gold}
    sids = [strip(x) for x in ids]
    ek = k
    while ek <= len(sids) and len({sids[i] for i in ranking[:ek]}) < k:
        ek += 1
    return evaluate(ranking, gold_sessions, sids, ek)


def question_metrics(ranking: Sequence[int], documents: Sequence[LmeTurn]) -> dict[str, float]:
    """Every ``turn:`` and ``session:`` metric of one ranking of the corpus ``documents``."""
    ids = [("ANS|" if t.has_answer else "") + t.baseline_id for t in documents]
    gold = {d for d in ids if d.startswith("ANS|")}
    out: dict[str, float] = {}
    for k in KS:
        for level, values in (
            ("turn", evaluate(ranking, gold, ids, k)),
            ("session", to_session(ranking, gold, ids, k)),
        ):
            for name, value in zip(("recall_any", "recall_all", "ndcg_any"), values, strict=True):
                out[f"{level}:{name}@{k}"] = value
    return out


MAIN_COLUMNS = (
    "turn:recall_all@5",
    "turn:recall_all@10",
    "turn:recall_any@10",
    "turn:ndcg_any@10",
    "session:recall_any@5",
    "session:recall_all@10",
)
"""The columns of the human table (the JSON has every metric)."""


@dataclass
class LmeReport:
    """Per-question metrics of the ranked systems (``yiji`` and ``bm25``), by question type."""

    rows: dict[str, dict[str, list[dict[str, float]]]] = field(default_factory=dict)

    def add(self, system: str, question_type: str, metrics: Mapping[str, float]) -> None:
        self.rows.setdefault(system, {}).setdefault(question_type, []).append(dict(metrics))

    def mean(self, system: str, question_type: str | None = None) -> dict[str, float]:
        by_type = self.rows.get(system, {})
        rows = [r for t, rs in by_type.items() if question_type in (None, t) for r in rs]
        if not rows:
            return {}
        return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in rows[0]}

    def types(self) -> list[str]:
        return sorted({t for by_type in self.rows.values() for t in by_type})

    def count(self, question_type: str | None = None) -> int:
        by_type = next(iter(self.rows.values()), {})
        return sum(len(rs) for t, rs in by_type.items() if question_type in (None, t))

    def as_dict(self) -> dict[str, Any]:
        return {
            system: {
                "overall": self.mean(system),
                "by_type": {t: self.mean(system, t) for t in self.types()},
            }
            for system in self.rows
        }

    def paired(self, metric: str = "turn:recall_all@10") -> dict[str, float]:
        """yiji against BM25 question by question on a 0/1 ``metric`` (:func:`yiji_bench.metrics.paired`)."""
        ours = [r[metric] for t in self.types() for r in self.rows.get("yiji", {}).get(t, [])]
        theirs = [r[metric] for t in self.types() for r in self.rows.get("bm25", {}).get(t, [])]
        return paired(ours, theirs)

    def table(self, columns: Sequence[str] = MAIN_COLUMNS) -> str:
        lines = [f"{'':<6}{'question type':<27}{'n':>4}" + "".join(f"{c:>23}" for c in columns)]
        for question_type in [*self.types(), None]:
            for system in self.rows:
                values = self.mean(system, question_type)
                name = question_type or "overall"
                lines.append(
                    f"{system:<6}{name:<27}{self.count(question_type):>4}"
                    + "".join(f"{values[c]:>23.4f}" for c in columns)
                )
        return "\n".join(lines)
