"""Validation rules for derived memories: the one place that decides whether a memory may exist.

Every path that creates a memory (automatic extraction, manual derivation, corrections, imports)
builds a :class:`MemoryCandidate`, describes its source with :class:`SourceEvent`, and asks this
module. The module is pure: no I/O, no clock, no database. It returns :class:`Violation` values (a
stable rule id plus the field it concerns) and never echoes the offending value, so a rejection can
be shown, logged or stored as an extraction error without leaking user text.

Rules (``rule id``: field, meaning):

* ``text_empty`` / ``text_too_long``: text, blank after strip / longer than ``MAX_TEXT``.
* ``quote_empty`` / ``quote_too_long``: quote, the same with ``MAX_QUOTE``.
* ``quote_not_in_source``: quote, not a verbatim substring of the source event's text.
* ``kind_unknown`` / ``basis_unknown``: kind / basis, not one of :data:`KINDS` / :data:`BASES`.
* ``confidence_out_of_range``: confidence, not a finite number in [0, 1].
* ``role_unknown`` / ``category_unknown``: role / category of the source event, not a known value.
* ``source_archived``: category, the source is ``reference`` or ``persona`` material.
* ``user_statement_requires_user_event``: basis, a user statement from a non-user event.
* ``assistant_expression_requires_assistant_event``: basis, an assistant expression from another
  role.
* ``inference_cannot_have_fact_key``: fact_key, on an inference.
* ``inference_cannot_be_growth``: kind, growth on an inference.
* ``fact_key_requires_user_statement``: fact_key, on an assistant expression.
* ``fact_key_requires_fact_or_preference``: fact_key, on a kind other than fact/preference.
* ``fact_key_requires_subject``: subject, missing while a fact_key is given.
* ``fact_key_format`` / ``fact_key_too_long``: fact_key, not lowercase ASCII ``snake_case`` (dots
  allowed, e.g. ``home.city``) / longer than ``MAX_FACT_KEY``. One spelling per property, in every
  language, so a Chinese and an English statement of the same property close each other's intervals.
* ``subject_empty`` / ``subject_too_long``: subject, given but blank / longer than ``MAX_SUBJECT``.
* ``emotion_requires_assistant_expression``: basis (kind emotion) or valence/arousal, on another
  basis.
* ``emotion_values_require_emotion_kind``: valence/arousal, on a kind other than emotion.
* ``emotion_values_required``: valence/arousal, missing on kind emotion.
* ``valence_out_of_range`` / ``arousal_out_of_range``: valence not in [-1, 1] / arousal not in
  [0, 1].
* ``valid_at_invalid``: valid_at, naive, unparseable or not a time.
* ``gist_empty`` / ``gist_too_long``: gist, given but blank / longer than ``MAX_GIST``.
* ``related_invalid``: related, a negative or boolean index, or a blank id.
* ``related_out_of_range`` / ``related_self``: related, a batch index outside the batch / to itself.

Invariants and honest limits:

* ``confidence`` is model-supplied *ranking metadata*, not a calibrated probability; the only rule
  is the range.
* The quote check is exact (no Unicode normalization, no whitespace folding): callers that want to
  forgive surrounding whitespace strip before building the candidate. An exact quote is necessary
  but cannot prove entailment: the extracting model can still misread a question, a negation or
  who is speaking. Review and correction remain important.
* Reference and persona material is archived but never extracted as lived experience: every
  candidate from such an event is rejected.
* Single-valued facts (``subject`` + ``fact_key``) come only from user-stated facts and
  preferences; role emotion comes only from assistant expressions; inferences never become keyed
  facts or growth.
* Lengths count Unicode code points (``len(str)``), so Chinese and English share the same limits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Final

from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "ARCHIVED_CATEGORIES",
    "BASES",
    "CATEGORIES",
    "KINDS",
    "MAX_FACT_KEY",
    "MAX_GIST",
    "MAX_QUOTE",
    "MAX_SUBJECT",
    "MAX_TEXT",
    "ROLES",
    "MemoryCandidate",
    "Rule",
    "SourceEvent",
    "Violation",
    "ensure_valid",
    "future_occurrence_warning",
    "raise_for",
    "resolve_valid_at",
    "validate_batch",
    "validate_memory",
]

KINDS: Final = ("fact", "preference", "episode", "observation", "emotion", "agreement", "growth")
BASES: Final = ("user_statement", "assistant_expression", "inference")
ROLES: Final = ("user", "assistant", "system", "tool")
CATEGORIES: Final = ("conversation", "reference", "persona", "correction")
ARCHIVED_CATEGORIES: Final = frozenset({"reference", "persona"})
"""Categories that are stored as source material but never yield memories."""

MAX_TEXT: Final = 500
"""Longest derived memory text, in code points. A memory is one small claim, not a summary."""
MAX_QUOTE: Final = 1000
"""Longest quote, in code points."""
MAX_GIST: Final = 200
"""Longest gist (the short form surfaced for old episodes), in code points."""
MAX_SUBJECT: Final = 100
MAX_FACT_KEY: Final = 100

_FACT_KEY = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*")
_FACT_KINDS: Final = frozenset({"fact", "preference"})


class Rule(StrEnum):
    """Stable rule ids: they appear in errors, stored extraction errors and tests. Never rename."""

    TEXT_EMPTY = "text_empty"
    TEXT_TOO_LONG = "text_too_long"
    QUOTE_EMPTY = "quote_empty"
    QUOTE_TOO_LONG = "quote_too_long"
    QUOTE_NOT_IN_SOURCE = "quote_not_in_source"
    KIND_UNKNOWN = "kind_unknown"
    BASIS_UNKNOWN = "basis_unknown"
    CONFIDENCE_OUT_OF_RANGE = "confidence_out_of_range"
    ROLE_UNKNOWN = "role_unknown"
    CATEGORY_UNKNOWN = "category_unknown"
    SOURCE_ARCHIVED = "source_archived"
    USER_STATEMENT_REQUIRES_USER_EVENT = "user_statement_requires_user_event"
    ASSISTANT_EXPRESSION_REQUIRES_ASSISTANT_EVENT = "assistant_expression_requires_assistant_event"
    INFERENCE_CANNOT_HAVE_FACT_KEY = "inference_cannot_have_fact_key"
    INFERENCE_CANNOT_BE_GROWTH = "inference_cannot_be_growth"
    FACT_KEY_REQUIRES_USER_STATEMENT = "fact_key_requires_user_statement"
    FACT_KEY_REQUIRES_FACT_OR_PREFERENCE = "fact_key_requires_fact_or_preference"
    FACT_KEY_REQUIRES_SUBJECT = "fact_key_requires_subject"
    FACT_KEY_FORMAT = "fact_key_format"
    FACT_KEY_TOO_LONG = "fact_key_too_long"
    SUBJECT_EMPTY = "subject_empty"
    SUBJECT_TOO_LONG = "subject_too_long"
    EMOTION_REQUIRES_ASSISTANT_EXPRESSION = "emotion_requires_assistant_expression"
    EMOTION_VALUES_REQUIRE_EMOTION_KIND = "emotion_values_require_emotion_kind"
    EMOTION_VALUES_REQUIRED = "emotion_values_required"
    VALENCE_OUT_OF_RANGE = "valence_out_of_range"
    AROUSAL_OUT_OF_RANGE = "arousal_out_of_range"
    VALID_AT_INVALID = "valid_at_invalid"
    GIST_EMPTY = "gist_empty"
    GIST_TOO_LONG = "gist_too_long"
    RELATED_INVALID = "related_invalid"
    RELATED_OUT_OF_RANGE = "related_out_of_range"
    RELATED_SELF = "related_self"


@dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """A memory someone proposes to store, before it has an id.

    ``kind``/``basis`` are plain strings so an unknown value from a model or an archive becomes a
    rule violation rather than a crash. ``valid_at`` may be an aware datetime or an ISO 8601 string
    with a timezone (as it arrives from extraction, MCP or an archive); ``None`` means "from the
    source event's occurrence time" (see :func:`resolve_valid_at`). ``related`` holds batch indexes
    (``int``, another candidate of the same batch) or ids of existing memories (``str``).
    """

    text: str
    quote: str
    kind: str
    basis: str
    confidence: float
    subject: str | None = None
    fact_key: str | None = None
    valid_at: datetime | str | None = None
    valence: float | None = None
    arousal: float | None = None
    gist: str | None = None
    related: tuple[int | str, ...] = ()

    @classmethod
    def of(cls, item: Any) -> MemoryCandidate:
        """A candidate from any object with the same attribute names (a boundary or provider model)."""
        return cls(
            text=item.text,
            quote=item.quote,
            kind=item.kind,
            basis=item.basis,
            confidence=item.confidence,
            subject=item.subject,
            fact_key=item.fact_key,
            valid_at=item.valid_at,
            valence=item.valence,
            arousal=item.arousal,
            gist=item.gist,
            related=tuple(item.related),
        )


@dataclass(frozen=True, slots=True)
class SourceEvent:
    """What validation needs to know about the event a memory is derived from."""

    role: str
    category: str
    text: str


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: the field it concerns and the stable rule id. Never the value."""

    field: str
    rule: Rule

    def __str__(self) -> str:
        return f"{self.field}: {self.rule}"


def _in_range(value: object, low: float, high: float) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and low <= value <= high


_TEXT_LIMITS: Final = {
    "text": (MAX_TEXT, Rule.TEXT_EMPTY, Rule.TEXT_TOO_LONG),
    "quote": (MAX_QUOTE, Rule.QUOTE_EMPTY, Rule.QUOTE_TOO_LONG),
    "subject": (MAX_SUBJECT, Rule.SUBJECT_EMPTY, Rule.SUBJECT_TOO_LONG),
    "gist": (MAX_GIST, Rule.GIST_EMPTY, Rule.GIST_TOO_LONG),
}


def _check_text(out: list[Violation], name: str, value: object) -> None:
    limit, empty, too_long = _TEXT_LIMITS[name]
    if not isinstance(value, str) or not value.strip():
        out.append(Violation(name, empty))
    elif len(value) > limit:
        out.append(Violation(name, too_long))


def _valid_time(value: object) -> bool:
    if value is None:
        return True
    try:
        parse_time(value, "valid_at")
    except InvalidInput:
        return False
    return True


def _check_one(c: MemoryCandidate, src: SourceEvent, index: int, size: int) -> list[Violation]:
    out: list[Violation] = []

    _check_text(out, "text", c.text)
    _check_text(out, "quote", c.quote)
    if isinstance(c.quote, str) and c.quote.strip() and c.quote not in src.text:
        out.append(Violation("quote", Rule.QUOTE_NOT_IN_SOURCE))

    kind_known = c.kind in KINDS
    basis_known = c.basis in BASES
    if not kind_known:
        out.append(Violation("kind", Rule.KIND_UNKNOWN))
    if not basis_known:
        out.append(Violation("basis", Rule.BASIS_UNKNOWN))
    if not _in_range(c.confidence, 0.0, 1.0):
        out.append(Violation("confidence", Rule.CONFIDENCE_OUT_OF_RANGE))

    # The source event.
    if src.role not in ROLES:
        out.append(Violation("role", Rule.ROLE_UNKNOWN))
    if src.category not in CATEGORIES:
        out.append(Violation("category", Rule.CATEGORY_UNKNOWN))
    elif src.category in ARCHIVED_CATEGORIES:
        out.append(Violation("category", Rule.SOURCE_ARCHIVED))

    # Attribution: who said it decides what it may become.
    if c.basis == "user_statement" and src.role != "user":
        out.append(Violation("basis", Rule.USER_STATEMENT_REQUIRES_USER_EVENT))
    if c.basis == "assistant_expression" and src.role != "assistant":
        out.append(Violation("basis", Rule.ASSISTANT_EXPRESSION_REQUIRES_ASSISTANT_EVENT))
    if c.basis == "inference" and c.kind == "growth":
        out.append(Violation("kind", Rule.INFERENCE_CANNOT_BE_GROWTH))

    # Single-valued facts.
    if c.fact_key is not None:
        if c.basis == "inference":
            out.append(Violation("fact_key", Rule.INFERENCE_CANNOT_HAVE_FACT_KEY))
        elif basis_known and c.basis != "user_statement":
            out.append(Violation("fact_key", Rule.FACT_KEY_REQUIRES_USER_STATEMENT))
        if kind_known and c.kind not in _FACT_KINDS:
            out.append(Violation("fact_key", Rule.FACT_KEY_REQUIRES_FACT_OR_PREFERENCE))
        if not isinstance(c.fact_key, str) or not _FACT_KEY.fullmatch(c.fact_key):
            out.append(Violation("fact_key", Rule.FACT_KEY_FORMAT))
        elif len(c.fact_key) > MAX_FACT_KEY:
            out.append(Violation("fact_key", Rule.FACT_KEY_TOO_LONG))
        if c.subject is None:
            out.append(Violation("subject", Rule.FACT_KEY_REQUIRES_SUBJECT))
    if c.subject is not None:
        _check_text(out, "subject", c.subject)

    # Role emotion: only what the assistant expressed, only on emotion memories.
    present = [name for name in ("valence", "arousal") if getattr(c, name) is not None]
    if c.kind == "emotion" and basis_known and c.basis != "assistant_expression":
        out.append(Violation("basis", Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION))
    elif present and basis_known and c.basis != "assistant_expression":
        out.extend(Violation(name, Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION) for name in present)
    if present and kind_known and c.kind != "emotion":
        out.extend(Violation(name, Rule.EMOTION_VALUES_REQUIRE_EMOTION_KIND) for name in present)
    if c.kind == "emotion":
        missing = [name for name in ("valence", "arousal") if name not in present]
        out.extend(Violation(name, Rule.EMOTION_VALUES_REQUIRED) for name in missing)
    if c.valence is not None and not _in_range(c.valence, -1.0, 1.0):
        out.append(Violation("valence", Rule.VALENCE_OUT_OF_RANGE))
    if c.arousal is not None and not _in_range(c.arousal, 0.0, 1.0):
        out.append(Violation("arousal", Rule.AROUSAL_OUT_OF_RANGE))

    if not _valid_time(c.valid_at):
        out.append(Violation("valid_at", Rule.VALID_AT_INVALID))
    if c.gist is not None:
        _check_text(out, "gist", c.gist)

    for link in c.related:
        if isinstance(link, bool) or (isinstance(link, int) and link < 0):
            out.append(Violation("related", Rule.RELATED_INVALID))
        elif isinstance(link, int):
            if link >= size:
                out.append(Violation("related", Rule.RELATED_OUT_OF_RANGE))
            elif link == index:
                out.append(Violation("related", Rule.RELATED_SELF))
        elif not isinstance(link, str) or not link.strip():
            out.append(Violation("related", Rule.RELATED_INVALID))
    return out


def validate_batch(candidates: Sequence[MemoryCandidate], source: SourceEvent) -> list[list[Violation]]:
    """Validate every candidate derived from one source event; one list of violations per candidate.

    Integer ``related`` entries are indexes into ``candidates``. A link to a candidate that is
    itself rejected is not a violation here: the caller drops such links when it stores the
    accepted ones.
    """
    size = len(candidates)
    return [_check_one(c, source, i, size) for i, c in enumerate(candidates)]


def validate_memory(candidate: MemoryCandidate, source: SourceEvent) -> list[Violation]:
    """Validate one candidate as a batch of one (an integer ``related`` entry is always invalid)."""
    return _check_one(candidate, source, 0, 1)


def raise_for(violations: Sequence[Violation], *, prefix: str = "") -> None:
    """Raise :class:`InvalidInput` listing every violation (``prefix`` + field, rule), if any.

    ``prefix`` lets a caller name an item of a larger input, e.g. ``"memories[2]."``.
    """
    if not violations:
        return
    problems = [(prefix + v.field, str(v.rule)) for v in violations]
    field, rule = problems[0]
    raise InvalidInput(field, rule, problems=problems)


def ensure_valid(candidate: MemoryCandidate, source: SourceEvent, *, prefix: str = "") -> None:
    """Validate one candidate; raise :class:`InvalidInput` naming field + rule if it breaks any."""
    raise_for(validate_memory(candidate, source), prefix=prefix)


def resolve_valid_at(candidate: MemoryCandidate, occurred_at: datetime) -> datetime:
    """The UTC start of validity: the candidate's ``valid_at``, else the event's occurrence time.

    Call after validation; an invalid ``valid_at`` raises :class:`InvalidInput` (``valid_at``).
    """
    if candidate.valid_at is None:
        return parse_time(occurred_at, "occurred_at")
    return parse_time(candidate.valid_at, "valid_at")


FUTURE_TOLERANCE: Final = timedelta(days=1)
"""How far ahead of now an event's ``occurred_at`` may be before submit warns (clock skew, time zones)."""


def future_occurrence_warning(occurred_at: datetime, now: datetime) -> str | None:
    """A warning when an event is dated more than a day ahead of ``now`` (it is still stored).

    Recall and resume read the world as of now, so such an event and its memories stay out of sight
    until that time: usually a wrong date or time zone.
    """
    ahead = occurred_at - now
    if ahead <= FUTURE_TOLERANCE:
        return None
    days = ahead.total_seconds() / 86400
    return (
        f"occurred_at is {days:.1f} days in the future: the event was stored, but recall and resume "
        "will not show it or its memories until then (check the date and time zone)"
    )
