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
* ``credential_in_memory``: text, quote, gist, subject or value, contains a credential the
  configuration knows (an API key's value) or has the shape of an API key or bearer token.
* ``fact_value_not_in_quote``: value (or text), the value of a keyed fact does not occur in its quote.
* ``conditional_or_question_not_fact``: quote, a fact, preference or episode quoted from a sentence
  that is a question or a condition ("如果我住在北京的话", "你是不是搬家了？").
* ``third_party_subject_for_user``: subject, a user's keyed fact quoted from a sentence about a
  relative or another person ("我妈妈住在成都" is not the user's ``home.city``).
* ``copies_prompt_example``: text, gist or value, contains a placeholder of the extraction prompt's
  examples (``【城市B】``) or one of their memory texts.

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
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

from yiji.domain import words
from yiji.domain.limits import future_occurrence_warning
from yiji.domain.rule_plan import ALL_ON, RulePlan
from yiji.domain.sentences import about_someone_else, is_question_or_condition, statement_of
from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "ARCHIVED_CATEGORIES",
    "BASES",
    "CATEGORIES",
    "CJK_CHAR",
    "KINDS",
    "MAX_FACT_KEY",
    "MAX_GIST",
    "MAX_QUOTE",
    "MAX_SUBJECT",
    "MAX_TEXT",
    "PLACEHOLDER",
    "PROMPT_EXAMPLE_TEXTS",
    "ROLES",
    "RULE_WORDS",
    "MemoryCandidate",
    "Rule",
    "SourceEvent",
    "Violation",
    "ensure_valid",
    "future_occurrence_warning",
    "raise_for",
    "refused",
    "resolve_valid_at",
    "rule_words",
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
_STATED_KINDS: Final = frozenset({"fact", "preference", "episode"})
"""Kinds that claim something happened or holds: a question or a condition cannot make them."""


CJK_CHAR: Final = re.compile(r"[\u3400-\u9fff]")
"""One CJK ideograph (the unified block and extension A): how the rules tell Chinese text from Latin."""


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
    CREDENTIAL_IN_MEMORY = "credential_in_memory"
    FACT_VALUE_NOT_IN_QUOTE = "fact_value_not_in_quote"
    CONDITIONAL_OR_QUESTION_NOT_FACT = "conditional_or_question_not_fact"
    THIRD_PARTY_SUBJECT_FOR_USER = "third_party_subject_for_user"
    COPIES_PROMPT_EXAMPLE = "copies_prompt_example"
    DUPLICATE = "duplicate"
    """Set by the extraction flow (not by :func:`validate_batch`): the memory repeats another item
    of the batch or a memory the event already has."""
    ITEM_MALFORMED = "item_malformed"
    """Set by the extraction flow: an item of the answer that is not an object of well-typed fields
    (the other items of the same answer are still judged)."""
    NOT_ENTAILED = "not_entailed"
    """Set by the extraction flow when the optional entailment check says the quote alone does not
    state the memory."""
    EMOTION_NOT_EXPRESSED = "emotion_not_expressed"
    """Set by the extraction flow: an emotion whose quote names no feeling ("晚上好" is no emotion)."""
    GROWTH_NOT_STATED = "growth_not_stated"
    """Set by the extraction flow: growth whose quote says nothing of what the assistant will do
    differently ("以后我会先多听你说" does; praise does not)."""
    AGREEMENT_NOT_STATED = "agreement_not_stated"
    """Set by the extraction flow: an agreement whose quote states no commitment, request or rule
    ("不过你已经很努力了" is none)."""
    SMALL_TALK = "small_talk"
    """Set by the extraction flow: the quote is only a greeting, thanks or acknowledgement."""
    KIND_NOT_FROM_ASSISTANT = "kind_not_from_assistant"
    """Set by the extraction flow: from an assistant event, extraction keeps only the assistant's own
    emotion, agreements and growth; its questions, advice, praise and claims about the user are not
    memories."""


_ONE_OF: Final = "must be one of "

RULE_WORDS: Final[dict[Rule, str]] = {
    Rule.TEXT_EMPTY: "must not be empty or whitespace only",
    Rule.TEXT_TOO_LONG: "is too long",
    Rule.QUOTE_EMPTY: "must not be empty or whitespace only",
    Rule.QUOTE_TOO_LONG: "is too long",
    Rule.QUOTE_NOT_IN_SOURCE: "is not in the source event's text (copy part of it exactly)",
    Rule.KIND_UNKNOWN: _ONE_OF + ", ".join(KINDS),
    Rule.BASIS_UNKNOWN: _ONE_OF + ", ".join(BASES),
    Rule.CONFIDENCE_OUT_OF_RANGE: "must be a number from 0 to 1",
    Rule.ROLE_UNKNOWN: "the source event's role is not one of " + ", ".join(ROLES),
    Rule.CATEGORY_UNKNOWN: "the source event's category is not one of " + ", ".join(CATEGORIES),
    Rule.SOURCE_ARCHIVED: "the source event is reference or persona material, which yields no memories",
    Rule.USER_STATEMENT_REQUIRES_USER_EVENT: "user_statement needs a user event as its source",
    Rule.ASSISTANT_EXPRESSION_REQUIRES_ASSISTANT_EVENT: "assistant_expression needs an assistant event "
    "as its source",
    Rule.INFERENCE_CANNOT_HAVE_FACT_KEY: "is not allowed on an inference",
    Rule.INFERENCE_CANNOT_BE_GROWTH: "growth cannot be an inference",
    Rule.FACT_KEY_REQUIRES_USER_STATEMENT: "needs basis user_statement",
    Rule.FACT_KEY_REQUIRES_FACT_OR_PREFERENCE: "needs kind fact or preference",
    Rule.FACT_KEY_REQUIRES_SUBJECT: "is required with a fact_key",
    Rule.FACT_KEY_FORMAT: "must be lowercase snake_case words joined by dots, such as home.city",
    Rule.FACT_KEY_TOO_LONG: "is too long",
    Rule.SUBJECT_EMPTY: "must not be empty or whitespace only",
    Rule.SUBJECT_TOO_LONG: "is too long",
    Rule.EMOTION_REQUIRES_ASSISTANT_EXPRESSION: "an emotion and its values need basis assistant_expression",
    Rule.EMOTION_VALUES_REQUIRE_EMOTION_KIND: "is only for kind emotion",
    Rule.EMOTION_VALUES_REQUIRED: "is required on kind emotion",
    Rule.VALENCE_OUT_OF_RANGE: "must be a number from -1 to 1",
    Rule.AROUSAL_OUT_OF_RANGE: "must be a number from 0 to 1",
    Rule.VALID_AT_INVALID: "must be an ISO 8601 time with a timezone",
    Rule.GIST_EMPTY: "must not be empty or whitespace only",
    Rule.GIST_TOO_LONG: "is too long",
    Rule.RELATED_INVALID: "must hold indexes of this list or ids of stored memories",
    Rule.RELATED_OUT_OF_RANGE: "names an index outside this list",
    Rule.RELATED_SELF: "names the memory itself",
    Rule.CREDENTIAL_IN_MEMORY: "contains a credential (an API key or a token), which is never stored",
    Rule.FACT_VALUE_NOT_IN_QUOTE: "the value of the keyed fact does not occur in the quote",
    Rule.CONDITIONAL_OR_QUESTION_NOT_FACT: "is a question, a condition or a plan, not a stated fact",
    Rule.THIRD_PARTY_SUBJECT_FOR_USER: "the quote is about someone else, not the user",
    Rule.COPIES_PROMPT_EXAMPLE: "copies an example of the extraction prompt",
    Rule.DUPLICATE: "repeats another memory of the same event",
    Rule.ITEM_MALFORMED: "is not an object of well-typed fields",
    Rule.NOT_ENTAILED: "is not stated by the quote alone",
    Rule.EMOTION_NOT_EXPRESSED: "names no feeling",
    Rule.GROWTH_NOT_STATED: "does not say what the assistant will do differently",
    Rule.AGREEMENT_NOT_STATED: "states no commitment, request or rule",
    Rule.SMALL_TALK: "is only a greeting, thanks or an acknowledgement",
    Rule.KIND_NOT_FROM_ASSISTANT: "from an assistant event only emotion, agreement and growth are kept",
}
"""Every rule in the words a message shows after the field (``quote: is not in the source event's text``).
The rule id stays the machine's name for it: in stored extraction errors, archives and ``--json`` output."""


def rule_words(field: str, rule: Rule) -> str:
    """What ``rule`` says about ``field``, in words (a length names the field's limit)."""
    words = RULE_WORDS[rule]
    limit = _LIMITS.get(field)
    return f"{words}: at most {limit} characters" if rule.value.endswith("_too_long") and limit else words


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
    value: str | None = None
    """The value of a keyed fact as it appears in the quote ("上海"); checked, never stored."""

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
            value=getattr(item, "value", None),
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

    @property
    def words(self) -> str:
        """The rule in words (:data:`RULE_WORDS`), for a message."""
        return rule_words(self.field, self.rule)


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
_LIMITS: Final = {name: limit for name, (limit, _, _) in _TEXT_LIMITS.items()} | {
    "value": MAX_SUBJECT,
    "fact_key": MAX_FACT_KEY,
}
"""The longest text of each field a rule measures, in characters (what a length rule's words name)."""


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


_CREDENTIAL_SHAPES: Final = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._~+/\-]{16,}|\bAKIA[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abpr]-[A-Za-z0-9\-]{10,}"
)
MIN_SECRET: Final = 6
"""Known secret values shorter than this are not searched for (they would match ordinary text)."""

_PLAN: Final = words.pattern("plan")
"""Words of an intention or a future step ("下个月要搬到深圳"): not yet a fact."""
PLACEHOLDER: Final = re.compile(r"【([^】]{0,20})】")
"""A placeholder of the extraction prompt's examples ("【城市B】"); its group is what it brackets."""
PROMPT_EXAMPLE_TEXTS: Final = (
    "用户住在【城市B】",
    "用户每天【通勤方式】上班",
    "用户不吃【食物】",
    "用户的妈妈住在【城市D】",
    "助手为用户的【事情】感到高兴",
    "助手答应下次提醒用户【事项】",
    "用户昨天去【地方】做了一个【东西】",
    "用户最近在学【技能】",
    "助手每天【时间】提醒用户【事项】",
    "The user lives in 【City B】",
    "The user 【commutes】 to work every day",
    "The user went to 【place】 yesterday and made a 【thing】",
    "The user has been learning 【skill】 lately",
    "The user doesn't eat 【food】",
    "The user's mum lives in 【City D】",
    "The assistant reminds the user to 【task】 at 【time】 every day",
    "The assistant is happy about the user's 【news】",
    "The assistant will remind the user about 【task】 next time",
)
"""The memory texts of the extraction prompts' examples (Chinese and English); a memory that repeats one
is refused."""
_FRAME: Final = words.word_set("value_frame", "en")


def _fold(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).lower()


_FRAME_CHARS: Final = words.word_set("value_frame", "zh")


def _content_tokens(text: str) -> set[str]:
    """Words (Latin) and single characters (CJK) of a memory text that could carry its value."""
    folded = unicodedata.normalize("NFKC", text).lower()
    tokens = {w for w in re.findall(r"[a-z0-9]{3,}", folded) if w not in _FRAME}
    tokens.update(ch for ch in CJK_CHAR.findall(folded) if ch not in _FRAME_CHARS)
    return tokens


def _value_in_quote(c: MemoryCandidate) -> bool:
    quote = _fold(c.quote)
    if isinstance(c.value, str) and c.value.strip():
        return _fold(c.value) in quote
    # Without an explicit value, only a text in the quote's script is compared: "The user lives in
    # Hangzhou." may stand for "我住在杭州", and a translation cannot be checked here.
    tokens = {t for t in _content_tokens(c.text) if CJK_CHAR.match(t) if CJK_CHAR.search(quote)} | {
        t for t in _content_tokens(c.text) if not CJK_CHAR.match(t) and re.search(r"[a-z]", quote)
    }
    return not tokens or any(t in quote for t in tokens)


def _check_grounding(out: list[Violation], c: MemoryCandidate, src: SourceEvent, plan: RulePlan) -> None:
    """Rules an exact quote cannot prove: what the quoted sentence says and who it is about."""
    if not isinstance(c.quote, str) or not c.quote.strip() or c.quote not in src.text:
        return
    keyed = c.fact_key is not None
    if (c.kind in _STATED_KINDS or keyed) and plan.on(Rule.CONDITIONAL_OR_QUESTION_NOT_FACT):
        planned = keyed and _PLAN.search(statement_of(c.quote, src.text))
        if is_question_or_condition(c.quote, src.text) or planned:
            out.append(Violation("quote", Rule.CONDITIONAL_OR_QUESTION_NOT_FACT))
    if keyed and isinstance(c.text, str):
        if not _value_in_quote(c) and plan.on(Rule.FACT_VALUE_NOT_IN_QUOTE):
            out.append(Violation("value" if c.value else "text", Rule.FACT_VALUE_NOT_IN_QUOTE))
        third_party = c.subject == "user" and about_someone_else(c.quote, src.text)
        if third_party and plan.on(Rule.THIRD_PARTY_SUBJECT_FOR_USER):
            out.append(Violation("subject", Rule.THIRD_PARTY_SUBJECT_FOR_USER))


def _check_leaks(out: list[Violation], c: MemoryCandidate, secrets: Sequence[str]) -> None:
    fields = {"text": c.text, "quote": c.quote, "gist": c.gist, "subject": c.subject, "value": c.value}
    known = [s for s in secrets if len(s) >= MIN_SECRET]
    for name, value in fields.items():
        if not isinstance(value, str):
            continue
        if any(secret in value for secret in known) or _CREDENTIAL_SHAPES.search(value):
            out.append(Violation(name, Rule.CREDENTIAL_IN_MEMORY))
    examples = {_fold(t) for t in PROMPT_EXAMPLE_TEXTS}
    for name in ("text", "gist", "value", "quote"):
        value = fields[name]
        if isinstance(value, str) and (PLACEHOLDER.search(value) or _fold(value) in examples):
            out.append(Violation(name, Rule.COPIES_PROMPT_EXAMPLE))


def _check_one(
    c: MemoryCandidate,
    src: SourceEvent,
    index: int,
    size: int,
    secrets: Sequence[str] = (),
    plan: RulePlan = ALL_ON,
) -> list[Violation]:
    out: list[Violation] = []
    _check_leaks(out, c, secrets)

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
    if isinstance(c.value, str) and len(c.value) > MAX_SUBJECT:
        out.append(Violation("value", Rule.TEXT_TOO_LONG))
    _check_grounding(out, c, src, plan)
    return out


def validate_batch(
    candidates: Sequence[MemoryCandidate],
    source: SourceEvent,
    *,
    secrets: Sequence[str] = (),
    plan: RulePlan = ALL_ON,
) -> list[list[Violation]]:
    """Validate every candidate derived from one source event; one list of violations per candidate.

    Integer ``related`` entries are indexes into ``candidates``. A link to a candidate that is
    itself rejected is not a violation here: the caller drops such links when it stores the
    accepted ones. ``plan`` may switch off the word rules among these (:mod:`yiji.domain.rule_plan`).
    """
    size = len(candidates)
    return [_check_one(c, source, i, size, secrets, plan) for i, c in enumerate(candidates)]


def validate_memory(
    candidate: MemoryCandidate, source: SourceEvent, *, secrets: Sequence[str] = ()
) -> list[Violation]:
    """Validate one candidate as a batch of one (an integer ``related`` entry is always invalid).

    ``secrets`` are credential values the configuration knows; a memory containing one is refused.
    """
    return _check_one(candidate, source, 0, 1, secrets)


def raise_for(violations: Sequence[Violation], *, prefix: str = "") -> None:
    """Raise :class:`InvalidInput` listing every violation (``prefix`` + field, rule), if any.

    ``prefix`` lets a caller name an item of a larger input, e.g. ``"memories[2]."``.
    """
    if violations:
        raise refused([(prefix + v.field, v) for v in violations])


def refused(violations: Sequence[tuple[str, Violation]]) -> InvalidInput:
    """The error for ``(where, violation)`` pairs: each rule in words in the message (``memories.0.quote:
    is not in the source event's text``), its rule id kept as the problem's ``code`` for machines."""
    problems = [(where, v.words) for where, v in violations]
    codes: list[str | None] = [str(v.rule) for _, v in violations]
    return InvalidInput(problems[0][0], problems[0][1], problems=problems, codes=codes)


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
