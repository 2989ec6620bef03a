"""Grounding of extracted items in their source event, before validation decides.

Pure functions (no I/O, no clock) that turn what a model proposed into what the event supports:

* :func:`snap_quote`: a near-verbatim quote (whitespace, full-/half-width punctuation, a few edited
  characters) becomes the exact span of the source text; validation still checks the stored quote
  verbatim, so an unsnappable quote is rejected as before.
* :func:`basis_for_role`: who spoke decides the basis where the role determines it.
* :func:`clean_related`: links that cannot be followed are dropped, the memory is kept.
* :func:`dedupe_key`: one normalized identity for "the same memory", used to drop repeats within a
  batch and against the memories the event already has.
* :func:`resolve_relative_time`: relative dates in the quoted sentence ("昨天", "六月", "last week")
  resolved against the event's local time; the model's own ``valid_at`` is never trusted.
* :func:`sentence_of`: the sentence of the source that contains a quote (rules look at it, since a
  quote can cut "如果" or "吗" off its sentence).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from yiji.domain.validation import MemoryCandidate, Rule, Violation, sentence_of

__all__ = [
    "basis_for_role",
    "clean_related",
    "dedupe_key",
    "ground",
    "mark_duplicates",
    "resolve_relative_time",
    "sentence_of",
    "snap_quote",
]

MAX_EDITS: Final = 3
"""At most this many edited characters (and at most one in eight) for a quote to be snapped."""
_SNAP_SCAN_LIMIT: Final = 6000
"""Sources longer than this are only matched exactly or modulo width/whitespace."""


def _norm_char(ch: str) -> str:
    folded = unicodedata.normalize("NFKC", ch)
    return folded.lower() if len(folded) == 1 else ch.lower()


def _normalized(text: str) -> tuple[str, list[int]]:
    """``text`` without whitespace, width-folded, with the original index of each kept character."""
    chars: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        chars.append(_norm_char(ch))
        index.append(i)
    return "".join(chars), index


def _span(text: str, index: list[int], start: int, end: int) -> str:
    return text[index[start] : index[end - 1] + 1]


def snap_quote(quote: str, source: str) -> str | None:
    """The exact span of ``source`` that ``quote`` stands for, or ``None`` when there is none."""
    if not quote.strip():
        return None
    if quote in source:
        return quote
    q, _ = _normalized(quote)
    s, index = _normalized(source)
    if not q or not s:
        return None
    found = s.find(q)
    if found >= 0:
        return _span(source, index, found, found + len(q))
    budget = min(MAX_EDITS, len(q) // 8)
    if budget == 0 or len(s) > _SNAP_SCAN_LIMIT:
        return None
    # Semi-global edit distance (the quote may start anywhere in the source), tracking each
    # alignment's start so the matched span can be cut out of the original text.
    prev = [0] * (len(s) + 1)
    prev_start = list(range(len(s) + 1))
    for i in range(1, len(q) + 1):
        cur = [i] + [0] * len(s)
        cur_start = [0] * (len(s) + 1)
        qc = q[i - 1]
        for j in range(1, len(s) + 1):
            cost = 0 if s[j - 1] == qc else 1
            best, start = prev[j - 1] + cost, prev_start[j - 1]
            if prev[j] + 1 < best:
                best, start = prev[j] + 1, prev_start[j]
            if cur[j - 1] + 1 < best:
                best, start = cur[j - 1] + 1, cur_start[j - 1]
            cur[j], cur_start[j] = best, start
        prev, prev_start = cur, cur_start
    end = min(range(1, len(s) + 1), key=lambda j: (prev[j], -j))
    if prev[end] > budget or prev_start[end] >= end:
        return None
    return _span(source, index, prev_start[end], end).strip() or None


def basis_for_role(basis: str, role: str) -> str:
    """The basis the event's role determines; inference stays inference, other roles infer."""
    if basis == "inference":
        return basis
    if role == "user":
        return "user_statement"
    if role == "assistant":
        return "assistant_expression"
    return "inference"


def clean_related(related: tuple[int | str, ...], index: int, size: int) -> tuple[int | str, ...]:
    """Only batch links that point at another item of the batch (existing-memory ids are dropped:
    a model cannot know them)."""
    kept: list[int | str] = []
    for link in related:
        if isinstance(link, bool) or not isinstance(link, int):
            continue
        if 0 <= link < size and link != index and link not in kept:
            kept.append(link)
    return tuple(kept)


_PUNCT: Final = re.compile(r"[\W_]+", re.UNICODE)


def dedupe_key(text: str, kind: str) -> tuple[str, str]:
    """Normalized identity: kind and text without case, width, spaces or punctuation."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return (kind, _PUNCT.sub("", folded))


# -- relative time ---------------------------------------------------------------------------------

_CN_DIGITS: Final = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_MONTHS_EN: Final = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}


def _cn_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if text.startswith("十") and len(text) == 2:
        return 10 + _CN_DIGITS.get(text[1], 0)
    if text.endswith("十") and len(text) == 2:
        return _CN_DIGITS.get(text[0], 0) * 10
    if len(text) == 3 and text[1] == "十":
        return _CN_DIGITS.get(text[0], 0) * 10 + _CN_DIGITS.get(text[2], 0)
    if len(text) == 1:
        return _CN_DIGITS.get(text)
    return None


def _day(local: datetime) -> datetime:
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _past_month(local: datetime, month: int) -> datetime:
    """Month ``month`` of this year, or of last year when it has not begun yet."""
    year = local.year if month <= local.month else local.year - 1
    return _month_start(year, month, local)


_NUM: Final = r"(\d{1,2}|[一二两三四五六七八九十]{1,3})"
_RULES: Final[list[tuple[re.Pattern[str], str]]] = [
    (re.compile(r"(\d{4})\s*年\s*" + _NUM + r"\s*月"), "year_month"),
    (re.compile(r"(\d{4})\s*年"), "year"),
    (re.compile(_NUM + r"\s*(?:天|日)前"), "days_ago"),
    (re.compile(r"(\d+)\s+days?\s+ago", re.I), "days_ago"),
    (re.compile(r"大前天"), "d-3"),
    (re.compile(r"前天|day before yesterday", re.I), "d-2"),
    (re.compile(r"昨天|昨晚|昨日|yesterday|last night", re.I), "d-1"),
    (re.compile(r"上(?:个)?(?:周|星期|礼拜)|last week", re.I), "last_week"),
    (re.compile(r"上(?:个)?月|last month", re.I), "last_month"),
    (re.compile(r"前年"), "y-2"),
    (re.compile(r"去年|last year", re.I), "last_year"),
    (
        re.compile(
            r"(?<![\d一二两三四五六七八九十年])" + _NUM + r"\s*月(?!\s*[\d一二两三四五六七八九十]+\s*[日号])"
        ),
        "month",
    ),
    (re.compile(r"\b(" + "|".join(_MONTHS_EN) + r")\b", re.I), "month_en"),
]
_FUTURE: Final = re.compile(r"明天|后天|下(?:个)?(?:周|星期|月)|明年|tomorrow|next (?:week|month|year)", re.I)


def resolve_relative_time(sentence: str, local_time: datetime) -> datetime | None:
    """When ``sentence`` dates what it states relative to ``local_time`` (aware, the event's local
    time), the start of that day/week/month/year in the same timezone; ``None`` when it does not,
    or when it speaks of the future (a plan starts to hold at the event's time)."""
    if _FUTURE.search(sentence):
        return None
    for pattern, how in _RULES:
        match = pattern.search(sentence)
        if match is None:
            continue
        resolved = _resolve(how, match, local_time)
        if resolved is not None and resolved <= local_time:
            return resolved
        return None
    return None


def _resolve(how: str, match: re.Match[str], local: datetime) -> datetime | None:
    day = _day(local)
    if how == "year_month":
        month = _cn_number(match.group(2))
        return _month_start(int(match.group(1)), month, local) if month and 1 <= month <= 12 else None
    if how == "year":
        year = int(match.group(1))
        return _month_start(year, 1, local) if 1900 <= year <= local.year else None
    if how == "days_ago":
        n = _cn_number(match.group(1))
        return day - timedelta(days=n) if n is not None else None
    if how.startswith("d-"):
        return day - timedelta(days=int(how[2:]))
    if how == "last_week":
        monday = day - timedelta(days=day.weekday())
        return monday - timedelta(days=7)
    if how == "last_month":
        year, month = (local.year, local.month - 1) if local.month > 1 else (local.year - 1, 12)
        return _month_start(year, month, local)
    if how == "last_year":
        return _month_start(local.year - 1, 1, local)
    if how == "y-2":
        return _month_start(local.year - 2, 1, local)
    if how == "month":
        month = _cn_number(match.group(1))
        return _past_month(local, month) if month and 1 <= month <= 12 else None
    if how == "month_en":
        return _past_month(local, _MONTHS_EN[match.group(1).lower()])
    return None


def ground(
    candidates: list[MemoryCandidate], *, role: str, source: str, local_time: datetime
) -> list[MemoryCandidate]:
    """Every candidate with its quote snapped, basis from the role, links cleaned and ``valid_at``
    from the quoted sentence (``None`` unless the text dates it)."""
    size = len(candidates)
    out: list[MemoryCandidate] = []
    for i, c in enumerate(candidates):
        quote = c.quote.strip() if isinstance(c.quote, str) else c.quote
        if isinstance(quote, str):
            quote = snap_quote(quote, source) or quote
        sentence = sentence_of(quote, source) if isinstance(quote, str) else ""
        out.append(
            replace(
                c,
                quote=quote,
                basis=basis_for_role(c.basis, role) if isinstance(c.basis, str) else c.basis,
                related=clean_related(c.related, i, size),
                valid_at=resolve_relative_time(sentence, local_time),
            )
        )
    return out


def mark_duplicates(
    candidates: Sequence[MemoryCandidate],
    verdicts: Sequence[Sequence[Violation]],
    existing: Iterable[tuple[str, str]] = (),
) -> list[list[Violation]]:
    """``verdicts`` plus a ``duplicate`` violation for every otherwise valid candidate that repeats
    an earlier valid candidate of the batch or one of ``existing`` (text, kind)."""
    seen = {dedupe_key(text, kind) for text, kind in existing}
    out: list[list[Violation]] = []
    for cand, problems in zip(candidates, verdicts, strict=True):
        marked = list(problems)
        if not marked and isinstance(cand.text, str):
            key = dedupe_key(cand.text, cand.kind)
            if key in seen:
                marked.append(Violation("text", Rule.DUPLICATE))
            seen.add(key)
        out.append(marked)
    return out
