"""Grounding of extracted items in their source event, before validation decides.

Pure functions (no I/O, no clock) that turn what a model proposed into what the event supports:

* :func:`snap_quote`: a near-verbatim quote (whitespace, full-/half-width punctuation, a few edited
  characters) becomes the exact span of the source text; validation still checks the stored quote
  verbatim, so an unsnappable quote is rejected as before.
* :func:`basis_for_role`: who spoke decides the basis where the role determines it.
* :func:`clean_related`: links that cannot be followed are dropped, the memory is kept.
* :func:`dedupe_key`: one normalized identity for "the same memory", used to drop repeats within a
  batch and against the memories the event already has.
* ``valid_at``: relative dates in the quoted sentence ("昨天", "六月", "last week") resolved against
  the event's local time (:mod:`yiji.domain.relative_time`); the model's own ``valid_at`` is never
  trusted. A quote that speaks of now ("现在") is not dated by the rest of its sentence.
* The sentence of the source that contains a quote (:mod:`yiji.domain.sentences`): rules look at it,
  since a quote can cut "如果" or "吗" off its sentence.
* :func:`clauses` / :func:`clause_quote`: the event's text split into numbered clauses; a model that
  names clause numbers gets the exact span as its quote, so it never has to copy text.
* :func:`text_supported` / :func:`speaker_text`: a memory text that says more than its quote, or puts
  the other speaker in the subject, is replaced by the speaker's own words ("用户说：“……”"): their
  whole sentence (:func:`whole_sentence`); a clause that leaves out its subject is never quoted
  without the clauses before it (:func:`with_subject`).
* :func:`steer_keys`: a fact key outside the vocabulary is dropped; a known key sets its kind and
  the subject ``user``.
* :func:`unwrap_brackets`: the examples' placeholder brackets copied around the event's own words
  ("【Leeds】") are taken off; a copied placeholder itself is still refused by validation.
* A user's stated feeling or resolution is an observation about the user, never role emotion or
  growth; a keyed fact about someone else loses its key and keeps the speaker's words; what the words
  of a quote decide about its kind, and the extraction-only refusals, are in :mod:`yiji.domain.cues`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from yiji.domain import cues, words
from yiji.domain.fact_keys import FactKey
from yiji.domain.relative_time import RELATIVE_TIME_WORD, valid_from
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.domain.sentences import (
    about_someone_else,
    is_question_or_condition,
    names_a_subject,
    names_someone,
    sentence_of,
)
from yiji.domain.validation import CJK_CHAR, MAX_TEXT, PLACEHOLDER, MemoryCandidate, Rule, Violation

__all__ = [
    "Clause",
    "basis_for_role",
    "clause_quote",
    "clauses",
    "clean_related",
    "dedupe_key",
    "fragment_sentence",
    "ground",
    "mark_duplicates",
    "snap_quote",
    "speaker_text",
    "steer_keys",
    "text_supported",
    "unwrap_brackets",
    "whole_sentence",
    "with_subject",
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


def dedupe_key(text: str) -> str:
    """Normalized identity of a memory text: without case, width, spaces or punctuation. Two items of
    one event with the same text are one memory, whatever kinds a model gave them."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return _PUNCT.sub("", folded)


# -- clauses ---------------------------------------------------------------------------------------

_CLAUSE_END: Final = frozenset("。！？!?；;，,、\n")
_TRIM: Final = "。.！？!?；;，,、：:…\u201c\u201d\"'「」『』()（） \t\r\n\u3000"
MAX_CLAUSES: Final = 60
"""An event with more clauses than this has its tail merged into the last one."""


@dataclass(frozen=True, slots=True)
class Clause:
    """One numbered clause of an event's text: ``text[start:end]`` is its quotable span (no
    punctuation at either end), ``shown`` what the model sees (with the clause's own punctuation)."""

    start: int
    end: int
    shown: str


def _pieces(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for i, ch in enumerate(text):
        after = text[i + 1 : i + 2]
        if ch == ".":  # a full stop ends an English sentence; 3.5 and e.g. do not
            if after and not after.isspace():
                continue
        elif ch not in _CLAUSE_END or (ch == "," and after.isdigit()):  # 30,000
            continue
        spans.append((start, i + 1))
        start = i + 1
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def clauses(text: str) -> list[Clause]:
    """The clauses of ``text``: split after sentence and clause punctuation, pieces without a letter,
    digit or CJK character left out, at most :data:`MAX_CLAUSES` (the rest joins the last)."""
    out: list[Clause] = []
    for start, end in _pieces(text):
        piece = text[start:end]
        if not any(ch.isalnum() for ch in piece):
            continue
        lead = len(piece) - len(piece.lstrip(_TRIM))
        tail = len(piece.rstrip(_TRIM))
        if tail <= lead:
            continue
        out.append(Clause(start + lead, start + tail, piece.strip()))
    if len(out) > MAX_CLAUSES:
        last = out[MAX_CLAUSES - 1]
        tail_end = out[-1].end
        out = [*out[: MAX_CLAUSES - 1], Clause(last.start, tail_end, text[last.start : tail_end].strip())]
    return out


def clause_quote(text: str, numbers: Sequence[int]) -> str | None:
    """The exact span of ``text`` from the first to the last of the 1-based clause ``numbers``, or
    ``None`` when a number is not a clause of ``text``."""
    found = clauses(text)
    if not numbers or any(isinstance(n, bool) or not 1 <= n <= len(found) for n in numbers):
        return None
    first, last = found[min(numbers) - 1], found[max(numbers) - 1]
    return text[first.start : last.end]


# -- what a memory text may say ---------------------------------------------------------------------

_SPEAKERS: Final = {"user": ("用户", "The user"), "assistant": ("助手", "The assistant")}
_LATIN_WORD: Final = re.compile(r"[a-z0-9]+")
_FRAME_CJK: Final = words.word_set("text_frame", "zh")
_FRAME_EN: Final = words.word_set("text_frame", "en")
_SUBJECT: Final = {
    "user": re.compile(r"^\s*(?:用户|the user\b|user\b)", re.I),
    "assistant": re.compile(r"^\s*(?:助手|the assistant\b|assistant\b)", re.I),
}
"""A memory text that opens with a speaker as its subject."""
_OTHER_SUBJECT: Final = {"user": _SUBJECT["assistant"], "assistant": _SUBJECT["user"]}


def speaker_text(quote: str, role: str) -> str:
    """The speaker's own words as a memory text: ``用户说：“…”`` or ``The user said: "…"``."""
    zh, en = _SPEAKERS.get(role, (role, role.capitalize()))
    if CJK_CHAR.search(quote):
        return f"{zh}说：\u201c{quote}\u201d"
    return f'{en} said: "{quote}"'


_COPULA_FIRST: Final = re.compile(r"\s*(?:[就也还都才又]?是(?![不否的])|(?:is|was|are|were)\b)", re.I)
"""A clause that opens with its verb "是" / "is": its subject was said before it ("是个女儿")."""


def _names_no_one(quote: str) -> bool:
    """Whether ``quote`` names neither speaker nor anyone else, and is more than small talk."""
    return not (names_a_subject(quote) or cues.small_talk(quote))


_OBJECT: Final = re.compile(r"(?:[给跟和对向帮让叫陪替为带问]|告诉)(?:我|你|您|他|她|它)(?:们)?")
"""A person after a preposition or a verb of telling: whom it is done to, not who does it."""


def _subject_left_out(quote: str) -> bool:
    """Whether ``quote`` leaves out whom or what it is about: it names no one but as an object
    ("天天给我发表情包" of "我爸最近在学用智能手机，天天给我发表情包"), or it opens with "是" (whoever
    it then names, "是个女儿" of "我哥哥当爸爸了，是个女儿", is not its subject)."""
    if _names_no_one(_OBJECT.sub("", quote)):
        return True
    return bool(_COPULA_FIRST.match(quote)) and not cues.small_talk(quote)


def with_subject(quote: str, source: str) -> str:
    """``quote`` with the clauses before it in its sentence when it leaves out its subject: a clause
    such as "现在退休了" after "我爸爸以前是老师", "一周要上三次" after "夜班最累" or "是个女儿" after
    "我哥哥上个月当爸爸了" does not say whom or what it is about, and the speaker's words alone would
    read as a statement about the speaker. Small talk ("哈哈") stays as it is, to be refused. The
    result is still an exact span of ``source``."""
    at = source.find(quote) if quote else -1
    if at < 0 or not _subject_left_out(quote):
        return quote
    sentence = sentence_of(quote, source)
    start = at - sentence.find(quote)
    head = source[start:at]
    if not any(ch.isalnum() for ch in head):
        return quote
    start += len(head) - len(head.lstrip(_TRIM))
    return source[start : at + len(quote)]


SPOKEN_SENTENCE_CHARS: Final = 80
"""A sentence up to this long is quoted whole when a memory keeps the speaker's own words."""


def whole_sentence(quote: str, source: str) -> str:
    """The sentence of ``source`` that holds ``quote`` (:func:`sentence_of`), without its end
    punctuation, when it is at most :data:`SPOKEN_SENTENCE_CHARS` long; else ``quote``. The
    speaker's words are kept whole: a small model's choice of clause ("前天我去体检" of "前天我去体检，
    医生说我血压有点高") often leaves out what the sentence was saying."""
    at = source.find(quote) if quote else -1
    if at < 0:
        return quote
    sentence = sentence_of(quote, source)
    text = sentence.strip(_TRIM)
    if not text or len(text) > SPOKEN_SENTENCE_CHARS or quote not in text:
        return quote
    start = at - sentence.find(quote) + len(sentence) - len(sentence.lstrip(_TRIM))
    return source[start : start + len(text)]


FRAGMENT_CHARS: Final = 4
"""A quote of at most this many CJK characters, cut from a longer sentence, may be a fragment."""


def fragment_sentence(quote: str, source: str) -> str | None:
    """The whole sentence of ``quote`` when the quote is only a fragment of it: a few CJK characters
    at the sentence's start that name no one and are not small talk, such as "拙政园" of
    "拙政园，人太多了，排队排了一个小时" (an answer to "which gardens?"): a topic that states nothing
    on its own. A short clause after others ("叫团子") is left to :func:`with_subject`. ``None`` for
    any other quote."""
    if not quote or len(quote) > FRAGMENT_CHARS or not CJK_CHAR.search(quote) or quote not in source:
        return None
    if re.search(r"[A-Za-z]", quote) or not _names_no_one(quote):
        return None
    sentence = sentence_of(quote, source).strip(_TRIM)
    return sentence if sentence != quote and sentence.startswith(quote) else None


def unwrap_brackets(value: str, source: str) -> str:
    """``value`` with the example placeholders' brackets taken off the event's own words: a small
    model copies the style of "【城市B】" around a word it read ("用户搬到【Leeds】"). Brackets around
    anything the event does not say stay, so a copied placeholder is still refused."""
    if "【" not in value:
        return value
    return PLACEHOLDER.sub(
        lambda m: m.group(1) if m.group(1).strip() and m.group(1) in source else m.group(0), value
    )


def text_supported(text: str, quote: str, role: str) -> bool:
    """Whether ``text`` says no more than ``quote``, from the speaker's side.

    Its subject is not the other speaker ("用户……" from an assistant event), it is written in the
    quote's script, and its content (CJK characters and Latin words, without the words every memory
    frame uses) is found in the quote but for at most one in four items (one when there are three to
    seven, none below three): room for a paraphrase ("住在" for "搬到"), none for a name, place or
    time taken from elsewhere, and none for a relative day, week, month or year the quote does not
    name ("用户昨天去体检" of "前天我去体检"). A user's text about the user is not supported by a quote
    about someone else that the text does not name ("用户最近在学用智能手机" of "我爸最近在学用智能手机")."""
    other = _OTHER_SUBJECT.get(role)
    if other is not None and other.search(text):
        return False
    if role == "user" and names_someone(quote) and not names_someone(text) and _SUBJECT[role].search(text):
        return False  # "用户最近在学用智能手机" of "我爸最近在学用智能手机": someone else's doing
    folded_text = unicodedata.normalize("NFKC", text).lower()
    folded_quote = unicodedata.normalize("NFKC", quote).lower()
    chars = [ch for ch in CJK_CHAR.findall(folded_text) if ch not in _FRAME_CJK]
    words = [
        w for w in _LATIN_WORD.findall(folded_text) if w not in _FRAME_EN and (len(w) >= 3 or w.isdigit())
    ]
    if CJK_CHAR.search(folded_text) and not CJK_CHAR.search(folded_quote):
        return False
    if any(when.lower() not in folded_quote for when in RELATIVE_TIME_WORD.findall(folded_text)):
        return False  # "用户昨天去体检" of "前天我去体检"
    if words and not chars and not re.search(r"[a-z]", folded_quote):
        return False
    missing = [ch for ch in chars if ch not in folded_quote]
    missing += [w for w in words if w not in folded_quote and w[:4] not in folded_quote]
    content = len(chars) + len(words)
    return len(missing) <= (max(1, content // 4) if content >= 3 else 0)


def steer_keys(c: MemoryCandidate, keys: Mapping[str, FactKey], role: str) -> MemoryCandidate:
    """A key in ``keys`` sets its kind and, on a user event, the subject ``user``; a key whose quote
    is about something the key does not mean moves to the key meant, if any
    (:meth:`FactKey.belongs_elsewhere`). Any other key, a key whose quote lacks the words it needs
    (:meth:`FactKey.stated_in`), or a key whose value is a placeholder copied from the examples
    ("【职位】"), is dropped with its subject and value, and the memory stays an unkeyed one."""
    if c.fact_key is None:
        return c
    known = keys.get(c.fact_key) if isinstance(c.fact_key, str) else None
    if known is not None and isinstance(c.quote, str) and known.belongs_elsewhere(c.quote):
        moved = known.moved_to
        known = keys.get(moved) if moved is not None else None
        c = replace(c, fact_key=moved)
    unstated = known is not None and isinstance(c.quote, str) and not known.stated_in(c.quote)
    if known is None or unstated or (isinstance(c.value, str) and PLACEHOLDER.search(c.value)):
        subject = None if c.subject == "user" else c.subject
        return replace(c, fact_key=None, subject=subject, value=None)
    subject = c.subject if c.subject is not None or role != "user" else "user"
    return replace(c, kind=known.kind, subject=subject)


def _kind_for_role(c: MemoryCandidate, role: str, source: str, plan: RulePlan) -> MemoryCandidate:
    """A user's feeling or resolution is an observation about the user: role emotion and growth are
    the assistant's own. An assistant's item takes the kind its words in ``source`` give it
    (:func:`yiji.domain.cues.assistant_kind`)."""
    if role == "user" and c.kind in {"emotion", "growth"} and plan.on("user_feeling_observation"):
        return replace(c, kind="observation", valence=None, arousal=None)
    if role == "assistant" and plan.on("assistant_kind"):
        return cues.assistant_kind(c, source)
    return c


def ground(
    candidates: list[MemoryCandidate],
    *,
    role: str,
    source: str,
    local_time: datetime,
    fact_keys: Mapping[str, FactKey] | None = None,
    plan: RulePlan = ALL_ON,
) -> list[MemoryCandidate]:
    """Every candidate with its quote snapped, basis from the role, links cleaned, ``valid_at`` from
    the quoted sentence (``None`` unless the text dates it), a user's feeling as an observation, an
    unkeyed "fact" that is a plan, a dated happening or a like/dislike made an observation, episode or
    preference, a key on a past state dropped, and a text that says more than its quote replaced by
    the speaker's words of its whole sentence (:func:`text_supported`, :func:`whole_sentence`), an
    observation rather than an unkeyed fact when those words name no one (:func:`_said`); a clause that
    leaves out its subject is quoted with the clauses before it in its sentence, and one whose subject
    is named there is always stored as the speaker's words (:func:`with_subject`), as is the whole
    sentence of an unkeyed fragment (:func:`fragment_sentence`). An assistant's growth that only looks
    back is quoted on to the change it led to (:func:`yiji.domain.cues.growth_quote`). An agreement
    whose text leaves out the time its sentence gives is the speaker's words of that sentence
    (:func:`yiji.domain.cues.time_left_out`).

    With ``fact_keys``, keys outside that vocabulary are dropped (:func:`steer_keys`). Each of these
    steps has an id in :data:`yiji.domain.rule_plan.GROUNDING_STEPS`; ``plan`` may switch it off."""
    size = len(candidates)
    out: list[MemoryCandidate] = []
    for i, c in enumerate(candidates):
        quote = c.quote.strip() if isinstance(c.quote, str) else c.quote
        if isinstance(quote, str):
            quote = snap_quote(quote, source) or quote
        sentence = sentence_of(quote, source) if isinstance(quote, str) else ""
        grounded = replace(
            c,
            text=unwrap_brackets(c.text, source) if isinstance(c.text, str) else c.text,
            value=unwrap_brackets(c.value, source) if isinstance(c.value, str) else c.value,
            quote=quote,
            basis=basis_for_role(c.basis, role) if isinstance(c.basis, str) else c.basis,
            related=clean_related(c.related, i, size),
            valid_at=valid_from(quote, sentence, local_time) if isinstance(quote, str) else None,
        )
        grounded = _kind_for_role(grounded, role, source, plan)
        if fact_keys is not None and plan.on("steer_keys"):
            grounded = steer_keys(grounded, fact_keys, role)
        checkable = isinstance(quote, str) and bool(quote) and quote in source and isinstance(c.text, str)
        someone_else = checkable and grounded.subject == "user" and about_someone_else(quote, source)
        someone_else = someone_else and plan.on("someone_else_unkeyed")
        if someone_else and not is_question_or_condition(quote, source):
            grounded = replace(grounded, fact_key=None, subject=None, value=None)
        by_words = plan.on("kind_by_words")
        if by_words:
            grounded = cues.kind_by_words(grounded, sentence, dated=grounded.valid_at is not None)
        if checkable and role == "assistant" and grounded.kind == "growth" and plan.on("growth_quote"):
            quote = cues.growth_quote(quote, source)
            if quote != grounded.quote:  # the look back now quoted with the change it led to
                grounded = replace(grounded, quote=quote, text=speaker_text(quote, role))
        if checkable:
            whole = with_subject(quote, source) if plan.on("with_subject") else quote
            borrowed = whole != quote and names_someone(whole)  # about someone named before it
            # a bare clause as the whole memory ("一吃就起疹子"): what it is about is before it
            bare = (
                whole != quote
                and grounded.fact_key is None
                and dedupe_key(grounded.text) == dedupe_key(quote)
            )
            fragment = (
                fragment_sentence(quote, source)
                if grounded.fact_key is None and plan.on("fragment_sentence")
                else None
            )
            if fragment is not None:
                whole = fragment
                if grounded.kind == "fact":  # a fragment states no lasting fact
                    grounded = replace(grounded, kind="observation")
            misread = not text_supported(grounded.text, quote, role)
            unsupported = someone_else or borrowed or bare or fragment or misread
            if unsupported and plan.on("speaker_words"):
                if not cues.small_talk(quote) and plan.on("whole_sentence"):  # "好的" of "好的，说定了" stays
                    whole = whole_sentence(whole, source)
                spoken = _spoken(grounded, whole, role)
                if spoken is not None:
                    grounded = _said(spoken) if misread else spoken
                    if (whole != quote or grounded is not spoken) and by_words:  # the words decide the kind
                        grounded = cues.kind_by_words(grounded, sentence, dated=grounded.valid_at is not None)
            timed = grounded.kind == "agreement" and plan.on("agreement_time")
            if timed and cues.time_left_out(grounded.text, sentence):
                # what was agreed includes when
                spoken = _spoken(grounded, whole_sentence(grounded.quote, source), role)
                if spoken is not None and not cues.time_left_out(spoken.text, sentence):
                    grounded = spoken
        out.append(grounded)
    return out


def _said(c: MemoryCandidate) -> MemoryCandidate:
    """An unkeyed ``fact`` whose text said more than its quote, stored in the speaker's words that name
    no one (:func:`yiji.domain.sentences.names_a_subject`), is an ``observation``: the words state no
    lasting fact about anyone ("Only texts", "Lost four games out of five"), only that they were said;
    what the words themselves decide then applies (:func:`yiji.domain.cues.kind_by_words`: a name given,
    "His name is Biscuit", is a fact). Words with their subject ("I'm a pharmacist at the children's
    hospital") stay a fact, and so does a keyed fact (its key's words are in the quote:
    :meth:`FactKey.stated_in`)."""
    if c.kind != "fact" or c.fact_key is not None or not isinstance(c.quote, str) or names_a_subject(c.quote):
        return c
    return replace(c, kind="observation")


def _spoken(c: MemoryCandidate, words: str, role: str) -> MemoryCandidate | None:
    """``c`` stored as the speaker's own ``words`` (:func:`speaker_text`), or ``None`` when that text
    would be too long for a memory."""
    spoken = speaker_text(words, role)
    return replace(c, text=spoken, quote=words) if len(spoken) <= MAX_TEXT else None


def mark_duplicates(
    candidates: Sequence[MemoryCandidate],
    verdicts: Sequence[Sequence[Violation]],
    existing: Iterable[tuple[str, str]] = (),
    plan: RulePlan = ALL_ON,
) -> list[list[Violation]]:
    """``verdicts`` plus a ``duplicate`` violation for every otherwise valid candidate whose text
    repeats an earlier valid candidate of the batch or one of ``existing`` (text, kind), in any kind,
    and for every one in the speaker's own words (:func:`speaker_text`) whose quote lies inside the
    quote of another such candidate of the batch: the longer one already holds those words. Nothing
    is marked when ``plan`` switches ``duplicate`` off."""
    spoken = [
        c.quote if not v and isinstance(c.quote, str) and _in_speakers_words(c) else None
        for c, v in zip(candidates, verdicts, strict=True)
    ]
    seen = {dedupe_key(text) for text, _ in existing}
    out: list[list[Violation]] = []
    for i, (cand, problems) in enumerate(zip(candidates, verdicts, strict=True)):
        marked = list(problems)
        if not marked and isinstance(cand.text, str):
            key = dedupe_key(cand.text)
            quote = spoken[i]
            inside = quote is not None and any(
                other is not None and j != i and quote in other and quote != other
                for j, other in enumerate(spoken)
            )
            if (key in seen or inside) and plan.on(Rule.DUPLICATE):
                marked.append(Violation("text", Rule.DUPLICATE))
            seen.add(key)
        out.append(marked)
    return out


def _in_speakers_words(c: MemoryCandidate) -> bool:
    return isinstance(c.quote, str) and c.text in {speaker_text(c.quote, role) for role in _SPEAKERS}
