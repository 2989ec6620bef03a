"""Memory extraction over an OpenAI-compatible chat-completions endpoint.

The service depends on the :class:`Extractor` protocol; :class:`OpenAIExtractor` is the one
implementation: ``POST {base_url}/chat/completions`` with the versioned prompt shipped in
``yiji/providers/prompts/`` (with the fact-key vocabulary filled in) and one user message in which the
persona, the speakers, the event's local time (with its timezone) and the read-only context come first
and the event to extract comes last, split into numbered clauses. An item names the clause (or
adjacent clauses) it comes from and gets that exact span as its quote, so a small model never has to
copy text; an item that brings its own ``quote`` instead is accepted as before. The answer is
constrained by a JSON schema where the endpoint supports it
(``response_format`` ``json_schema``, falling back once to ``json_object`` with the schema, then to
plain ``json_object`` when the endpoint refuses it) and bounded by ``max_tokens``.

What this module owns, and what it does not:

* The *shape* of an answer. An answer that is not a chat-completions envelope whose content is a
  JSON object ``{"memories": [...]}`` fails the whole batch with :class:`ProviderPermanent`; an item
  of that list that is not an object of well-typed fields is kept as ``None`` in its place, for the
  flow to refuse (``item_malformed``) while the other items are judged, and so is the last item of a
  list cut off by ``max_tokens`` (:func:`_complete_items`). Only ``finish_reason: "length"`` says an
  answer was cut off: content that is not JSON under any other finish reason (an invalid ``\\u``
  escape, a stray quote) is a malformed answer and fails the batch, so the event stays pending and a
  retry asks again instead of losing the items after the fault. Whether an individual item
  may become a memory (verbatim quote, role and basis, fact keys, emotion, archived sources) is
  decided later, item by item, by :mod:`yiji.domain.validation`; :meth:`ExtractedMemory.to_candidate`
  builds its input.
* Error mapping (once, in :mod:`yiji.providers._openai`): timeouts, connection failures, 429 and
  5xx are :class:`ProviderTransient`; other 4xx, malformed JSON and a wrong shape are
  :class:`ProviderPermanent`. Messages never contain the response body, the API key or event text.
* The prompt is versioned (:data:`PROMPT_VERSION`); a changed prompt is a new file and a new
  version, so stored memories can name the prompt that produced them. From ``extraction-v5`` a version
  is a prompt per language of the event (:func:`event_language`): a small model writes its texts in
  the language of the prompt and its examples, so an English event gets an English prompt with English
  examples. ``extraction-v5`` sends a Chinese event the ``extraction-v4`` prompt unchanged.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any, Final, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

from yiji.domain.fact_keys import DEFAULT_FACT_KEYS, vocabulary
from yiji.domain.grounding import clause_quote, clauses
from yiji.domain.validation import CJK_CHAR, MemoryCandidate
from yiji.errors import InvalidInput, ProviderPermanent
from yiji.providers._openai import NOT_JSON, endpoint_url, loads_or_none, post_json, shaped, too_deep

if TYPE_CHECKING:
    import httpx

    from yiji.config import ExtractionConfig

__all__ = [
    "ANSWER_SCHEMA",
    "ENTAILMENT_PROMPT",
    "MAX_ITEMS",
    "PROMPT_VERSION",
    "ContextTurn",
    "EventForExtraction",
    "ExtractedMemory",
    "ExtractionBatch",
    "Extractor",
    "LANGUAGES",
    "OpenAIExtractor",
    "event_language",
    "load_prompt",
]

PROMPT_VERSION: Final = "extraction-v5"
MAX_ITEMS: Final = 100
"""An answer with more items than this is treated as a malformed answer, not truncated."""

_PROMPT_FILES: Final[dict[str, str | dict[str, str]]] = {
    "extraction-v1": "extraction_v1.txt",
    "extraction-v2": "extraction_v2.txt",
    "extraction-v3": "extraction_v3.txt",
    "extraction-v4": "extraction_v4.txt",
    "extraction-v5": {"zh": "extraction_v4.txt", "en": "extraction_v5_en.txt"},
}
"""Each version's file, or its file per language of the event (:func:`event_language`)."""
LANGUAGES: Final = ("zh", "en")
"""The languages a prompt version may have a file of its own for."""
DEFAULT_CONFIDENCE: Final = 0.7
"""The confidence of an item whose answer gives none (the ranking metadata of an ordinary memory)."""
PERSONA_CHARS: Final = 1500
"""The persona is sent as background, cut to this many characters."""
_FALLBACK: Final = {"json_schema": "json_object_schema", "json_object_schema": "json_object"}
_TEMPERATURE: Final = 0.0
"""Sent with every extraction request: the same request gets the same answer where the endpoint allows it."""

_NULLABLE_STRING: Final = {"type": "string"}
_NULLABLE_NUMBER: Final = {"type": "number"}
ANSWER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 12,
            "items": {
                "type": "object",
                "properties": {
                    "clause": {
                        "anyOf": [
                            {"type": "integer"},
                            {"type": "array", "items": {"type": "integer"}, "maxItems": 8},
                        ]
                    },
                    "kind": {
                        "type": "string",
                        "enum": [
                            "fact",
                            "preference",
                            "episode",
                            "observation",
                            "emotion",
                            "agreement",
                            "growth",
                        ],
                    },
                    "text": {"type": "string"},
                    "fact_key": _NULLABLE_STRING,
                    "value": _NULLABLE_STRING,
                    "valence": _NULLABLE_NUMBER,
                    "arousal": _NULLABLE_NUMBER,
                    "gist": _NULLABLE_STRING,
                },
                "required": ["clause", "kind", "text"],
            },
        }
    },
    "required": ["memories"],
}
"""The answer's JSON schema, sent as ``response_format`` where the endpoint accepts one."""
VERDICT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"entailed": {"type": "boolean"}},
    "required": ["entailed"],
}
ENTAILMENT_PROMPT: Final = (
    "You check memories for yiji. You get a QUOTE (words someone said) and a MEMORY (a claim). "
    "Answer whether the quote ALONE clearly states the memory: same person, not a question, not a "
    "hypothetical, not a negation of it, nothing added. "
    'Answer with one JSON object: {"entailed": true} or {"entailed": false}.'
)
_FENCE = re.compile(r"\A```[A-Za-z]*\s*(.*?)\s*```\Z", re.DOTALL)
_WHAT: Final = "extraction"


def event_language(text: str) -> str:
    """The language whose prompt an event gets: ``"en"`` for a text with Latin letters and no CJK
    character, ``"zh"`` for any other (a CJK character anywhere, or no letters at all)."""
    return "en" if re.search(r"[A-Za-z]", text) and not CJK_CHAR.search(text) else "zh"


def load_prompt(
    version: str = PROMPT_VERSION, fact_keys: tuple[str, ...] = DEFAULT_FACT_KEYS, language: str = "zh"
) -> str:
    """The system prompt of ``version`` for events in ``language`` (:data:`LANGUAGES`), read from the
    installed package, with the fact-key vocabulary in place of its ``{keys}`` line. A version with one
    file sends it for every language."""
    files = _PROMPT_FILES[version]
    name = files if isinstance(files, str) else files[language]
    prompt = (resources.files("yiji.providers") / "prompts" / name).read_text(encoding="utf-8")
    lines = [
        f"{k.key} ({k.kind}): {k.meaning}" if k.meaning else f"{k.key} ({k.kind})"
        for k in vocabulary(fact_keys).values()
    ]
    return prompt.replace("{keys}", "\n".join(lines) or "(none: never give a fact_key)")


@dataclass(frozen=True, slots=True)
class ContextTurn:
    """An earlier turn sent for understanding only; memories are never quoted from it."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class EventForExtraction:
    """The one source event to extract from (ids and scope stay local; only these are sent).

    ``occurred_at`` is shown in ``timezone`` (an IANA name; UTC when absent) so the model reads
    "昨天" as the speaker's yesterday. ``persona`` is the assistant's character text (background,
    never extracted) and ``speakers`` names the user and the assistant.
    """

    role: str
    category: str
    text: str
    occurred_at: datetime
    context: tuple[ContextTurn, ...] = ()
    timezone: str | None = None
    persona: str | None = None
    speakers: tuple[tuple[str, str], ...] = ()

    def local_time(self) -> datetime:
        """``occurred_at`` in the event's timezone (the machine's local one when unnamed)."""
        if not self.timezone:
            return self.occurred_at.astimezone()
        try:
            return self.occurred_at.astimezone(ZoneInfo(self.timezone))
        except (ZoneInfoNotFoundError, ValueError):
            return self.occurred_at.astimezone(UTC)


class ExtractedMemory(BaseModel):
    """One item of an extraction answer: well-typed, but not yet validated as a memory."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True, defer_build=True)

    text: str
    kind: str
    quote: str = ""
    """Empty when the item names its ``clause`` instead; :meth:`OpenAIExtractor.extract` fills it."""
    clause: list[int] = Field(default_factory=list)
    basis: str = ""
    """Empty (or anything but ``inference``) means "follows from the event's role"."""
    confidence: float = DEFAULT_CONFIDENCE
    subject: str | None = None
    fact_key: str | None = None
    valid_at: str | None = None
    valence: float | None = None
    arousal: float | None = None
    gist: str | None = None
    related: list[int] = Field(default_factory=list)
    value: str | None = None

    @field_validator("subject", "fact_key", "valid_at", "gist", "value", mode="before")
    @classmethod
    def _blank_is_absent(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("kind", "basis", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("related", "clause", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            return [value]
        if isinstance(value, str) and value.strip().isdigit():  # "clause": "2"
            return [int(value)]
        return [] if value is None else value

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence_given(cls, value: object) -> object:
        return DEFAULT_CONFIDENCE if value is None else value

    def to_candidate(self) -> MemoryCandidate:
        """The input of :func:`yiji.domain.validation.validate_batch` for this item."""
        return MemoryCandidate.of(self)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    memories: Annotated[list[Any], Field(max_length=MAX_ITEMS)]
    """Each item is typed on its own (:class:`ExtractedMemory`): one malformed item does not cost the
    others."""


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    entailed: bool


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None
    """``length`` when the answer was cut off by ``max_tokens``; anything else means it ended."""


class _Envelope(BaseModel):
    choices: Annotated[list[_Choice], Field(min_length=1)]


_MALFORMED: Final = MemoryCandidate(text="", quote="", kind="", basis="", confidence=0.0)
"""The place of a malformed item among the candidates: refused, and keeping the others' indexes."""


@dataclass(frozen=True, slots=True)
class ExtractionBatch:
    """A well-shaped extraction answer and what produced it. ``None`` stands for an item that was not
    an object of well-typed fields (a bare string, a number where text belongs)."""

    memories: tuple[ExtractedMemory | None, ...]
    prompt_version: str
    model: str

    def candidates(self) -> list[MemoryCandidate]:
        """Every item as a validation candidate, in answer order (``related`` indexes use it); a
        malformed item holds its place with an empty candidate (see :attr:`malformed`)."""
        return [_MALFORMED if item is None else item.to_candidate() for item in self.memories]

    @property
    def malformed(self) -> tuple[int, ...]:
        """The answer-order indexes of the malformed items."""
        return tuple(i for i, item in enumerate(self.memories) if item is None)


def render_event(event: EventForExtraction) -> str:
    """The user message: background, the read-only context, then the event in numbered clauses."""
    local = event.local_time()
    lines = ["BACKGROUND (read-only)"]
    if event.persona:
        persona = " ".join(event.persona[:PERSONA_CHARS].split())
        lines.append(f"persona (the assistant's character, never a memory): {persona}")
    if event.speakers:
        lines.append("speakers: " + ", ".join(f"{role} = {name}" for role, name in event.speakers))
    zone = event.timezone or local.tzname() or "local"
    lines.append(f"local time: {local.strftime('%Y-%m-%d %H:%M (%A)')}, {zone}, UTC{local.strftime('%z')}")
    lines += ["", "CONTEXT (earlier turns, READ-ONLY: never extract them)"]
    lines += [f"{turn.role}: {' '.join(turn.text.split())}" for turn in event.context] or ["(none)"]
    lines += ["", f"EVENT (role: {event.role}, category: {event.category})"]
    lines += [f"[{n}] {clause.shown}" for n, clause in enumerate(clauses(event.text), start=1)]
    return "\n".join(lines)


def _quoted(item: ExtractedMemory, text: str) -> ExtractedMemory:
    """``item`` with the span of its clauses as its quote, when it names clauses and brings no quote."""
    if item.quote or not item.clause:
        return item
    return item.model_copy(update={"quote": clause_quote(text, item.clause) or ""})


_CUT_LIST: Final = re.compile(r'\s*\{\s*"memories"\s*:\s*\[')
_JSON: Final = json.JSONDecoder()


def _complete_items(text: str, *, cut_off: bool) -> dict[str, list[Any]] | None:
    """The items of a ``{"memories": [...`` answer that is not JSON as a whole, or ``None``.

    When the list itself is whole and only text after it is not JSON, all of its items. When the list
    breaks before its end, its complete items followed by ``None`` for the item that was cut (refused
    as malformed), but only for an answer ``cut_off`` by ``max_tokens`` with at least one complete
    item: a small model that repeats itself until then would otherwise fail every retry. An answer
    that broke for another reason is malformed, and ``None`` here (the items after the fault would be
    lost without a word), as is a cut-off answer with nothing complete in it."""
    opened = _CUT_LIST.match(text)
    if opened is None or too_deep(text):
        return None
    items: list[Any] = []
    at = opened.end()
    while len(items) < MAX_ITEMS - 1:
        start = _skip_space(text, at)
        try:
            item, at = _JSON.raw_decode(text, start)
        except (ValueError, RecursionError):
            break
        if loads_or_none(text[start:at]) is NOT_JSON:  # the rules of every answer (a lone surrogate)
            return None
        items.append(item)
        at = _skip_space(text, at)
        if text[at : at + 1] != ",":
            break
        at += 1
    if text[at : at + 1] == "]":  # the list is whole: only what follows it is not JSON
        return {"memories": items}
    return {"memories": [*items, None]} if cut_off and items else None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


class Extractor(Protocol):
    """What the service needs from an extraction provider."""

    def extract(self, event: EventForExtraction) -> ExtractionBatch:
        """Propose memories for one event. Raises ProviderTransient or ProviderPermanent."""
        ...

    def entails(self, quote: str, text: str) -> bool:
        """Whether ``quote`` alone states ``text`` (a second, short call). Raises ProviderError."""
        ...


class OpenAIExtractor:
    """:class:`Extractor` over an OpenAI-compatible ``/chat/completions`` endpoint, configured by the
    ``[extraction]`` section itself (:class:`yiji.config.ExtractionConfig`: ``base_url``, ``model``,
    ``api_key_env``, ``timeout_seconds``, ``max_tokens``, ``max_answer_bytes``, ``response_format``,
    ``fact_keys``, ``prompt``). ``response_format`` ``json_schema`` falls back to ``json_object`` when the
    endpoint refuses it."""

    def __init__(
        self,
        config: ExtractionConfig,
        http: httpx.Client,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not (config.base_url and config.model):
            raise InvalidInput("extraction", "needs base_url and model")
        self.config = config
        self.base_url: str = config.base_url
        self.model: str = config.model
        self._http = http
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._prompts = {lang: load_prompt(config.prompt, config.fact_keys, lang) for lang in LANGUAGES}
        self._format: str = config.response_format

    @property
    def prompt_version(self) -> str:
        return self.config.prompt

    def _request(self, event: EventForExtraction) -> dict[str, Any]:
        prompt = self._prompts[event_language(event.text)]
        return self._body(prompt, render_event(event), ANSWER_SCHEMA, "memories")

    def _body(self, system: str, user: str, schema: dict[str, Any], name: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": self.config.max_tokens,
        }
        mode = self._format
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": False, "schema": schema},
            }
        elif mode == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": schema}
        else:
            body["response_format"] = {"type": "json_object"}
        body["temperature"] = _TEMPERATURE
        return body

    def _call(self, build: Callable[[], dict[str, Any]]) -> Any:
        """POST to chat/completions; on a refused ``response_format`` step down once and retry."""
        while True:
            try:
                return post_json(
                    self._http,
                    endpoint_url(self.base_url, "chat/completions"),
                    build(),
                    what=_WHAT,
                    api_key_env=self.config.api_key_env,
                    environ=self._environ,
                    timeout=self.config.timeout_seconds,
                    max_bytes=self.config.max_answer_bytes,
                )
            except ProviderPermanent as exc:
                refused = exc.status in (400, 422)
                following = _FALLBACK.get(self._format)
                if not refused or following is None:
                    raise
                self._format = following

    def _content(self, data: Any, *, cut_list: bool = False) -> Any:
        """The JSON of the answer's content; with ``cut_list``, a memories list that is not JSON as a
        whole gives its complete items (:func:`_complete_items`)."""
        envelope = shaped(_Envelope, data)
        if envelope is None:
            raise ProviderPermanent("extraction endpoint answered without a chat-completions choice")
        choice = envelope.choices[0]
        content = choice.message.content
        if content is None:
            raise ProviderPermanent("extraction endpoint answered with empty content")
        text = content.strip()
        fenced = _FENCE.match(text)
        if fenced:
            text = fenced.group(1)
        parsed = loads_or_none(text)
        if parsed is not NOT_JSON:
            return parsed
        cut_off = choice.finish_reason == "length"
        salvaged = _complete_items(text, cut_off=cut_off) if cut_list else None
        if salvaged is not None:
            return salvaged
        if cut_off:
            raise ProviderPermanent(
                "extraction answer was cut off by max_tokens before its first complete item "
                "(raise [extraction] max_tokens)"
            )
        raise ProviderPermanent("extraction answer content is not JSON")

    def extract(self, event: EventForExtraction) -> ExtractionBatch:
        parsed = self._content(self._call(lambda: self._request(event)), cut_list=True)
        answer = shaped(_Answer, parsed)
        if answer is None:
            raise ProviderPermanent("extraction answer does not have the expected memories shape")
        items = (shaped(ExtractedMemory, raw) for raw in answer.memories)
        return ExtractionBatch(
            memories=tuple(None if item is None else _quoted(item, event.text) for item in items),
            prompt_version=self.config.prompt,
            model=self.model,
        )

    def entails(self, quote: str, text: str) -> bool:
        user = json.dumps({"quote": quote, "memory": text}, ensure_ascii=False)
        parsed = self._content(
            self._call(lambda: self._body(ENTAILMENT_PROMPT, user, VERDICT_SCHEMA, "verdict"))
        )
        verdict = shaped(_Verdict, parsed)
        if verdict is None:
            raise ProviderPermanent("entailment answer does not have the expected shape")
        return verdict.entailed
