"""Loaders for the public recall benchmarks: LoCoMo and MADial-Bench.

The data is never shipped with yiji: every loader takes the path the operator gives at run time and
only reads it. The loaders reproduce the input conventions of the reference retrieval baselines
(``locomo_retrieval_baseline.py``, ``madial_retrieval_baseline.py``) so that numbers are comparable:

* LoCoMo (snap-research/locomo, ``locomo10.json``): each turn (``dia_id`` such as ``D3:7``) is a
  document, dated at its session's ``session_N_date_time``; each QA item is a question whose gold
  set is its ``evidence`` turn ids, repaired by :func:`normalize_evidence` exactly as the baseline
  does. Questions without evidence are skipped and counted. The optional errata file
  (dial481/locomo-audit ``errors.json``) replaces the evidence of a question when its
  ``correct_evidence`` differs from the cited one and the question text matches; the published
  baseline numbers use no errata.
* MADial-Bench (hejunqing/MADial-Bench): each memory of a user's archive is a document dated at its
  ``time``; each dialogue is a query made of the history before its first ``test-turn`` with the
  ``<BOD>``/``<Speaker>:`` tags removed; the gold set is ``relevant-id``; the candidates are the
  memories of the dialogue's ``user-id`` (English memories take their user from the Chinese file,
  as upstream).

LoCoMo gives session times without a timezone; they are read as UTC.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

__all__ = [
    "LOCOMO_CATEGORIES",
    "LocomoConversation",
    "LocomoQuestion",
    "LocomoTurn",
    "MadialDialogue",
    "MadialMemory",
    "MadialSet",
    "baseline_memory_text",
    "baseline_turn_text",
    "load_locomo",
    "load_madial",
    "load_madial_embedding_rankings",
    "normalize_evidence",
    "parse_locomo_time",
]

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo QA categories. 5 (adversarial) is unanswerable by design and reported apart."""

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_TAG = re.compile(r"<[^>]+>:?")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    session: int
    speaker: str
    text: str
    occurred_at: datetime
    captions: tuple[str, ...] = ()
    image_urls: tuple[str, ...] = ()

    @property
    def session_key(self) -> str:
        """The session part of the turn id (``D3`` for ``D3:7``), as the baseline groups them."""
        return self.dia_id.split(":", maxsplit=1)[0]


@dataclass(frozen=True)
class LocomoQuestion:
    qa_index: int
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str | None


@dataclass(frozen=True)
class LocomoConversation:
    index: int
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]
    skipped: Counter[int]
    """Questions without any evidence id, by category (not scored)."""
    corrected: int
    """Questions whose evidence came from the errata file."""
    observations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The data set's per-session ``observation`` annotations: (text, cited turn ids), in session order."""

    @property
    def last_time(self) -> datetime:
        return max(turn.occurred_at for turn in self.turns)

    @property
    def unknown_evidence(self) -> int:
        """Gold ids that name no turn of the conversation (the baseline counts 2 in locomo10)."""
        ids = {turn.dia_id for turn in self.turns}
        return sum(g not in ids for q in self.questions for g in q.evidence)


@dataclass(frozen=True)
class MadialMemory:
    id: int
    user_id: int
    occurred_at: datetime
    scene: str
    emotion: str
    event: str
    time_text: str


@dataclass(frozen=True)
class MadialDialogue:
    id: int
    user_id: int
    query: str
    relevant: tuple[int, ...]


@dataclass(frozen=True)
class MadialSet:
    lang: str
    memories: tuple[MadialMemory, ...]
    dialogues: tuple[MadialDialogue, ...]

    def candidates(self, user_id: int) -> list[MadialMemory]:
        """The archive of one user, ordered by memory id (the baseline's tie order)."""
        return sorted((m for m in self.memories if m.user_id == user_id), key=lambda m: m.id)

    @property
    def last_time(self) -> datetime:
        return max(memory.occurred_at for memory in self.memories)


def parse_locomo_time(text: str) -> datetime:
    """Parse a LoCoMo session time such as ``1:56 pm on 8 May, 2023`` (read as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalize_evidence(ids: list[str]) -> list[str]:
    """Repair LoCoMo evidence ids like the baseline (``D8:6; D9:17``, ``D:11:26``, ``D30:05``)."""
    out: list[str] = []
    for item in ids:
        for part in re.split(r"[;,\s]+", item.strip()):
            match = _EVIDENCE.fullmatch(part)
            if match:
                out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return list(dict.fromkeys(out))


def baseline_turn_text(turn: LocomoTurn, *, captions: bool = True, speaker: bool = True) -> str:
    """The LoCoMo baseline's text of a turn: ``Speaker: text [shares a photo of ...]``."""
    text = turn.text
    if captions and turn.captions:
        text += " [shares a photo of " + turn.captions[0] + "]"
    if speaker:
        text = turn.speaker + ": " + text
    return text


def baseline_memory_text(memory: MadialMemory) -> str:
    """The text the MADial baseline indexes for a memory: ``time event``."""
    return f"{memory.time_text} {memory.event}"


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _read_jsonl(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _errata(path: Path) -> dict[tuple[int, int], tuple[str, list[str]]]:
    fixes: dict[tuple[int, int], tuple[str, list[str]]] = {}
    for entry in _read_json(path):
        correct, cited = entry.get("correct_evidence"), entry.get("cited_evidence")
        if correct and sorted(correct) != sorted(cited):
            # question_id is "locomo_<conversation index>_qa<qa index>", both 0-based
            qid = entry["question_id"]
            key = (int(qid.split("_")[1]), int(qid.split("qa")[1]))
            fixes[key] = (entry["question"], correct)
    return fixes


def load_locomo(path: str | Path, errata: str | Path | None = None) -> list[LocomoConversation]:
    """Load ``locomo10.json`` (and optionally the locomo-audit errata) into conversations."""
    fixes = _errata(Path(errata)) if errata is not None else {}
    conversations: list[LocomoConversation] = []
    for index, sample in enumerate(_read_json(Path(path))):
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION.fullmatch(key)))
        turns: list[LocomoTurn] = []
        for number in numbers:
            when = parse_locomo_time(conv[f"session_{number}_date_time"])
            turns.extend(
                LocomoTurn(
                    dia_id=raw["dia_id"],
                    session=number,
                    speaker=raw["speaker"],
                    text=raw.get("text", ""),
                    occurred_at=when,
                    captions=(raw["blip_caption"],) if raw.get("blip_caption") else (),
                    image_urls=tuple(raw.get("img_url") or ()),
                )
                for raw in conv[f"session_{number}"]
            )
        questions: list[LocomoQuestion] = []
        skipped: Counter[int] = Counter()
        corrected = 0
        for qa_index, qa in enumerate(sample["qa"]):
            gold = normalize_evidence(qa.get("evidence", []))
            fix = fixes.get((index, qa_index))
            if fix is not None and fix[0] == qa["question"]:
                gold = normalize_evidence(fix[1])
                corrected += 1
            if not gold:
                skipped[qa["category"]] += 1
                continue
            answer = qa.get("answer")
            questions.append(
                LocomoQuestion(
                    qa_index=qa_index,
                    question=qa["question"],
                    category=qa["category"],
                    evidence=tuple(gold),
                    answer=None if answer is None else str(answer),
                )
            )
        observed = sample.get("observation") or {}
        observations = tuple(
            (str(text), tuple(normalize_evidence(cited if isinstance(cited, list) else [cited])))
            for number in numbers
            for notes in (observed.get(f"session_{number}_observation") or {}).values()
            for text, cited in notes
        )
        conversations.append(
            LocomoConversation(
                index=index,
                sample_id=sample["sample_id"],
                speaker_a=conv["speaker_a"],
                speaker_b=conv["speaker_b"],
                turns=tuple(turns),
                questions=tuple(questions),
                skipped=skipped,
                corrected=corrected,
                observations=observations,
            )
        )
    return conversations


def _madial_file(root: Path, lang: str, kind: str) -> Path:
    folder = "ch" if lang == "zh" else lang
    return root / "data" / folder / f"MADial-Bench-{lang}-{kind}.json"


def _dialogue_query(turns: list[str], test_turns: list[int]) -> str:
    history = "".join(turns[: min(test_turns)])
    return _TAG.sub(" ", history)


def load_madial(root: str | Path, lang: str = "zh") -> MadialSet:
    """Load one language (``zh`` or ``en``) of MADial-Bench from its repository folder ``root``."""
    if lang not in ("zh", "en"):
        raise ValueError("lang must be 'zh' or 'en'")
    base = Path(root)
    user_of = {
        int(key): int(value["user-id"])
        for row in _read_jsonl(_madial_file(base, "zh", "memory"))
        for key, value in row.items()
    }
    memories = [
        MadialMemory(
            id=int(key),
            user_id=user_of[int(key)],
            occurred_at=datetime.combine(date.fromisoformat(value["time"]), time(), tzinfo=UTC),
            scene=value["scene"],
            emotion=value["emotion"],
            event=value["event"],
            time_text=value["time"],
        )
        for row in _read_jsonl(_madial_file(base, lang, "memory"))
        for key, value in row.items()
    ]
    dialogues = [
        MadialDialogue(
            id=int(row.get("id", position)),
            user_id=int(row["user-id"]),
            query=_dialogue_query(row["dialogue"], row["test-turn"]),
            relevant=tuple(int(i) for i in row["relevant-id"]),
        )
        for position, row in enumerate(_read_jsonl(_madial_file(base, lang, "dialogue")))
    ]
    return MadialSet(lang=lang, memories=tuple(memories), dialogues=tuple(dialogues))


def load_madial_embedding_rankings(
    root: str | Path,
) -> dict[str, list[tuple[list[int], frozenset[int]]]]:
    """The authors' released Chinese top-20 lists by model: ``name -> [(ranked, gold)]``."""
    out: dict[str, list[tuple[list[int], frozenset[int]]]] = {}
    for path in sorted((Path(root) / "embeddings" / "ch").glob("*_top_20_ids.json")):
        name = path.name.replace("_zh_top_20_ids.json", "")
        out[name] = [
            ([int(i) for i in row["top_20_ids"]], frozenset(int(i) for i in row["relevant_id"]))
            for row in _read_jsonl(path)
        ]
    return out
