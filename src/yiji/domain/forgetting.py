"""Ordinary forgetting: how a memory is *presented* at a given moment, and its ranking freshness.

Forgetting in yiji is presentation plus ranking, never deletion. This module owns:

* :func:`freshness`: the ranking decay, ``0.5 ** (age_days / half_life_days)`` (180-day default half-life);
* :func:`present`: what a memory looks like at ``now`` (detailed text, authored gist, or extracted topic cues)
  and its time label (exact time, date, or decade);
* :func:`topic_cues`: the deterministic extractive fallback for faded records that have no authored gist.

Invariants:

* Pure: no I/O, no clock reads. ``now`` is a parameter; every threshold is a parameter whose default is a
  module constant. The stored text, quote and timestamps are never changed here; ``memory_read`` still shows
  the originals.
* Only the fading kinds (``episode``, ``observation``, ``emotion``) fade. ``fact``, ``preference``,
  ``agreement`` and ``growth`` always keep their full text and exact time.
* "Older than" is strict: a memory fades when ``now - valid_at > gist_after_days`` and its time label is
  coarsened when ``now - valid_at > coarsen_after_days``. A memory exactly at a threshold is not yet faded.
  Age is measured from ``valid_at`` (when the memory held), not from the database creation time; a
  memory valid in the future has a negative age and is shown in detail.
* A faded memory without an authored gist is shown as topic cues, labelled as extracted so nobody mistakes
  them for something the extractor or the user wrote. Labels are the constants below.
* Date and decade labels use the UTC calendar, like every stored time.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol

from yiji.domain.segment import jieba
from yiji.timeutil import utc

__all__ = [
    "COARSEN_AFTER_DAYS",
    "CUES_LABEL",
    "DETAILED_KINDS",
    "FADING_KINDS",
    "FRESHNESS_HALF_LIFE_DAYS",
    "GIST_AFTER_DAYS",
    "GIST_LABEL",
    "MAX_CUE_CHARS",
    "MAX_CUES",
    "MEMORY_KINDS",
    "PresentationMode",
    "Presentation",
    "present_memory",
    "decade_label",
    "exact_time_label",
    "freshness",
    "present",
    "topic_cues",
]

FRESHNESS_HALF_LIFE_DAYS: Final = 180.0
"""Default ranking half-life: a memory this old ranks with half the freshness of a new one."""

GIST_AFTER_DAYS: Final = 180.0
"""Default: fading kinds strictly older than this are shown by gist or topic cues."""

COARSEN_AFTER_DAYS: Final = 730.0
"""Default: faded memories strictly older than this get a decade instead of a date."""

MAX_CUES: Final = 5
"""Default number of topic cues extracted from one text."""

MAX_CUE_CHARS: Final = 24
"""Default: a longer cue is cut to this many characters."""

FADING_KINDS: Final = frozenset({"episode", "observation", "emotion"})
DETAILED_KINDS: Final = frozenset({"fact", "preference", "agreement", "growth"})
MEMORY_KINDS: Final = FADING_KINDS | DETAILED_KINDS

GIST_LABEL: Final = "gist (faded memory)"
CUES_LABEL: Final = "topic cues (extracted; faded memory without an authored gist)"
CUE_SEPARATOR: Final = " · "

PresentationMode = Literal["detailed", "gist", "topic_cues"]


@dataclass(frozen=True)
class Presentation:
    """How one memory is shown at one moment (ordinary forgetting): detailed, an authored gist, or
    labeled topic cues. The same record on the plain recall path and in the boundary models.

    ``text`` is what to show; ``label`` says how to read it (``None`` when detailed); ``faded`` is true for
    the gist and topic-cue modes; ``cues`` holds the extracted cues in topic-cue mode (empty otherwise).
    Presentation only: the stored text, quote and timestamps are unchanged and ``memory_read`` returns them.
    """

    mode: PresentationMode
    text: str
    time_label: str
    faded: bool
    time_coarsened: bool
    label: str | None = None
    cues: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON form, in field order."""
        return {**self.__dict__, "cues": list(self.cues)}


def freshness(age: timedelta, half_life_days: float = FRESHNESS_HALF_LIFE_DAYS) -> float:
    """Ranking freshness in (0, 1]: ``0.5 ** (age_days / half_life_days)``; 1.0 for ``age <= 0``."""
    if not half_life_days > 0:
        raise ValueError("half_life_days must be positive")
    if age <= timedelta(0):
        return 1.0
    return float(0.5 ** ((age / timedelta(days=1)) / half_life_days))


def exact_time_label(when: datetime) -> str:
    """An exact UTC time to the second, e.g. ``2026-03-01T08:00:00Z``."""
    return utc(when).isoformat(timespec="seconds").replace("+00:00", "Z")


def decade_label(when: datetime) -> str:
    """The UTC decade of ``when``, e.g. ``2010s``."""
    return f"{utc(when).year // 10 * 10}s"


def present(
    kind: str,
    text: str,
    gist: str | None,
    valid_at: datetime,
    now: datetime,
    *,
    gist_after_days: float = GIST_AFTER_DAYS,
    coarsen_after_days: float = COARSEN_AFTER_DAYS,
    max_cues: int = MAX_CUES,
    max_cue_chars: int = MAX_CUE_CHARS,
) -> Presentation:
    """Present a memory of ``kind`` whose validity starts at ``valid_at``, as seen at ``now``.

    * Detailed kinds, and fading kinds not strictly older than ``gist_after_days``: full text, exact time.
    * Fading kinds strictly older than ``gist_after_days``: the authored ``gist`` if it has any
      non-blank text, otherwise :func:`topic_cues` of ``text``; the time label is the UTC date, or the
      decade when strictly older than ``coarsen_after_days``. Only faded memories are coarsened, so a
      ``coarsen_after_days`` below ``gist_after_days`` coarsens every faded memory.
    """
    if kind not in MEMORY_KINDS:
        raise ValueError(f"unknown memory kind {kind!r}")
    if gist_after_days < 0 or coarsen_after_days < 0:
        raise ValueError("gist_after_days and coarsen_after_days must not be negative")
    age = utc(now) - utc(valid_at)
    if kind in DETAILED_KINDS or not age > timedelta(days=gist_after_days):
        return Presentation(
            mode="detailed",
            text=text,
            time_label=exact_time_label(valid_at),
            faded=False,
            time_coarsened=False,
        )
    coarsened = age > timedelta(days=coarsen_after_days)
    time_label = decade_label(valid_at) if coarsened else utc(valid_at).date().isoformat()
    if gist is not None and gist.strip():
        return Presentation(
            mode="gist",
            text=gist.strip(),
            time_label=time_label,
            faded=True,
            time_coarsened=coarsened,
            label=GIST_LABEL,
        )
    cues = topic_cues(text, max_cues=max_cues, max_cue_chars=max_cue_chars)
    return Presentation(
        mode="topic_cues",
        text=CUE_SEPARATOR.join(cues),
        time_label=time_label,
        faded=True,
        time_coarsened=coarsened,
        label=CUES_LABEL,
        cues=cues,
    )


# -- topic cues ------------------------------------------------------------------------------

# Words too common to say what a memory was about. Single-character Chinese words are mostly
# caught by their part-of-speech tags; these lists cover the rest, plus domain words ("user").
_ZH_STOPWORDS: Final = frozenset(
    """
    我们 你们 他们 她们 它们 咱们 大家 自己 这个 那个 这些 那些 这样 那样 这里 那里 这么 那么 一个 一些
    一下 一点 有点 什么 怎么 怎样 为什么 没有 可以 可能 应该 就是 还是 或者 但是 不过 而且 因为 所以
    如果 虽然 然后 已经 还有 觉得 感觉 感到 知道 认为 表示 说过 告诉 今天 昨天 明天 现在 刚才 时候
    以后 之前 一起 真的 非常 比较 其实 特别 有些 东西 事情 用户 助手 对方
    """.split()
)
_EN_STOPWORDS: Final = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each even ever few for from
    further get got had has have having he her here hers herself him himself his how i if in into is it
    its itself just let like made make many may me might more most much must my myself no nor not now of
    off often on once only or other our ours ourselves out over own really said same say says she should
    so some still such than that the their theirs them themselves then there these they this those
    through to too under until up upon us very was we were what when where which while who whom why will
    with would yes yet you your yours yourself yourselves user users assistant ok okay
    """.split()
)
_ZH_NAME_TAGS: Final = frozenset({"nr", "nrt", "nrfg", "ns", "nt", "nz"})
_ZH_NOUN_TAGS: Final = frozenset({"n", "ng", "nl", "vn", "an", "l", "i", "j"})
_ZH_VERB_TAGS: Final = frozenset({"v", "vd", "a", "ad", "b"})


class _Shown(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def gist(self) -> str | None: ...
    @property
    def valid_at(self) -> datetime: ...


class _Settings(Protocol):
    @property
    def gist_after_days(self) -> float: ...
    @property
    def coarsen_after_days(self) -> float: ...


def present_memory(memory: _Shown, now: datetime, settings: _Settings) -> Presentation:
    """:func:`present` for any stored memory, with the configured fading thresholds."""
    return present(
        memory.kind,
        memory.text,
        memory.gist,
        memory.valid_at,
        now,
        gist_after_days=settings.gist_after_days,
        coarsen_after_days=settings.coarsen_after_days,
    )


def topic_cues(text: str, *, max_cues: int = MAX_CUES, max_cue_chars: int = MAX_CUE_CHARS) -> tuple[str, ...]:
    """Up to ``max_cues`` salient words or short phrases of ``text``, in order of first appearance.

    Deterministic and extractive: every cue is a substring of ``text`` (cut to ``max_cue_chars``).
    Chinese is segmented with jieba's part-of-speech tagger; English words come from the same
    segmentation. Punctuation, numbers, stopwords and function words are dropped; adjacent capitalized
    English words are joined into one phrase ("Great Gatsby"); repeats count once (case-insensitive).
    Salience ranks names (people, places, organizations, capitalized English) above other nouns and
    lowercase English words, and those above Chinese verbs and adjectives; ties go to the more frequent,
    then the longer, then the earlier cue.
    """
    if max_cues <= 0 or max_cue_chars <= 0:
        raise ValueError("max_cues and max_cue_chars must be positive")
    candidates = _candidates(jieba().tag(text))
    seen: dict[str, _Candidate] = {}
    for cand in candidates:
        key = cand.text.casefold()
        if key in seen:
            seen[key].count += 1
            seen[key].tier = min(seen[key].tier, cand.tier)
        else:
            seen[key] = cand
    ranked = sorted(seen.values(), key=lambda c: (c.tier, -c.count, -len(c.text), c.position))
    chosen = sorted(ranked[:max_cues], key=lambda c: c.position)
    return tuple(c.text[:max_cue_chars] for c in chosen)


@dataclass
class _Candidate:
    text: str
    tier: int
    position: int
    count: int = 1


def _candidates(tagged: list[tuple[str, str]]) -> list[_Candidate]:
    out: list[_Candidate] = []
    phrase: list[str] = []
    phrase_start = 0
    pending_space = False

    def flush() -> None:
        if phrase:
            out.append(_Candidate(" ".join(phrase), 0, phrase_start))
            phrase.clear()

    for position, (word, tag) in enumerate(tagged):
        if word == " " and phrase and not pending_space:
            pending_space = True  # one plain space may continue a capitalized phrase
            continue
        pending_space = False
        if tag == "eng" and _is_content_english(word) and word[0].isupper():
            if not phrase:
                phrase_start = position
            phrase.append(word)
            continue
        flush()
        tier = _tier(word, tag)
        if tier is not None:
            out.append(_Candidate(word, tier, position))
    flush()
    return out


def _tier(word: str, tag: str) -> int | None:
    """Salience tier of a segmented word (lower is more salient), or ``None`` if it is no cue."""
    if tag == "eng":
        return 1 if _is_content_english(word) and len(word) >= 3 else None
    if not _has_cjk(word) or word in _ZH_STOPWORDS:
        return None
    if tag in _ZH_NAME_TAGS:
        return 0
    if tag in _ZH_NOUN_TAGS:
        return 1
    if tag in _ZH_VERB_TAGS and len(word) >= 2:
        return 2
    return None


def _is_content_english(word: str) -> bool:
    return len(word) >= 2 and any(ch.isalpha() for ch in word) and word.casefold() not in _EN_STOPWORDS


def _has_cjk(word: str) -> bool:
    return any(unicodedata.name(ch, "").startswith("CJK UNIFIED IDEOGRAPH") for ch in word)
