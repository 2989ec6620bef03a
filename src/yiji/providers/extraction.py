"""Memory extraction over an OpenAI-compatible chat-completions endpoint.

The service depends on the :class:`Extractor` protocol; :class:`OpenAIExtractor` is the one
implementation: ``POST {base_url}/chat/completions`` with
``response_format={"type": "json_object"}``, the versioned prompt shipped in
``yiji/providers/prompts/`` and the event as a JSON user message.

What this module owns, and what it does not:

* The *shape* of an answer. An answer that is not a chat-completions envelope whose content is a
  JSON object ``{"memories": [...]}`` with well-typed items fails the whole batch with
  :class:`ProviderPermanent`. Whether an individual item may become a memory (verbatim quote,
  role and basis, fact keys, emotion, archived sources) is decided later, item by item, by
  :mod:`yiji.domain.validation`; :meth:`ExtractedMemory.to_candidate` builds its input.
* Error mapping (once, in :mod:`yiji.providers._openai`): timeouts, connection failures, 429 and
  5xx are :class:`ProviderTransient`; other 4xx, malformed JSON and a wrong shape are
  :class:`ProviderPermanent`. Messages never contain the response body, the API key or event text.
* The prompt is versioned (:data:`PROMPT_VERSION`); a changed prompt is a new file and a new
  version, so stored memories can name the prompt that produced them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import TYPE_CHECKING, Annotated, Any, Final, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from yiji.domain.validation import MemoryCandidate
from yiji.errors import ProviderPermanent
from yiji.providers._openai import NOT_JSON, endpoint_url, loads_or_none, post_json, shaped
from yiji.timeutil import to_db

if TYPE_CHECKING:
    import httpx

__all__ = [
    "MAX_ITEMS",
    "PROMPT_VERSION",
    "ContextTurn",
    "EventForExtraction",
    "ExtractedMemory",
    "ExtractionBatch",
    "ExtractionConfig",
    "Extractor",
    "OpenAIExtractor",
    "load_prompt",
]

PROMPT_VERSION: Final = "extraction-v1"
MAX_ITEMS: Final = 100
"""An answer with more items than this is treated as a malformed answer, not truncated."""

_PROMPT_FILES: Final = {"extraction-v1": "extraction_v1.txt"}
_FENCE = re.compile(r"\A```[A-Za-z]*\s*(.*?)\s*```\Z", re.DOTALL)
_WHAT: Final = "extraction"


def load_prompt(version: str = PROMPT_VERSION) -> str:
    """The system prompt of ``version``, read from the installed package."""
    name = _PROMPT_FILES[version]
    prompt = resources.files("yiji.providers") / "prompts" / name
    return prompt.read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class ContextTurn:
    """An earlier turn sent for understanding only; memories are never quoted from it."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class EventForExtraction:
    """The one source event to extract from (ids and scope stay local; only these are sent)."""

    role: str
    category: str
    text: str
    occurred_at: datetime
    context: tuple[ContextTurn, ...] = ()


class ExtractedMemory(BaseModel):
    """One item of an extraction answer: well-typed, but not yet validated as a memory."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    text: str
    quote: str
    kind: str
    basis: str
    confidence: float
    subject: str | None = None
    fact_key: str | None = None
    valid_at: str | None = None
    valence: float | None = None
    arousal: float | None = None
    gist: str | None = None
    related: list[int] = Field(default_factory=list)

    @field_validator("subject", "fact_key", "valid_at", "gist", mode="before")
    @classmethod
    def _blank_is_absent(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("kind", "basis", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("related", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        return [] if value is None else value

    def to_candidate(self) -> MemoryCandidate:
        """The input of :func:`yiji.domain.validation.validate_batch` for this item."""
        return MemoryCandidate.of(self)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    memories: Annotated[list[ExtractedMemory], Field(max_length=MAX_ITEMS)]


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message


class _Envelope(BaseModel):
    choices: Annotated[list[_Choice], Field(min_length=1)]


@dataclass(frozen=True, slots=True)
class ExtractionBatch:
    """A well-shaped extraction answer and what produced it."""

    memories: tuple[ExtractedMemory, ...]
    prompt_version: str
    model: str

    def candidates(self) -> list[MemoryCandidate]:
        """Every item as a validation candidate, in answer order (``related`` indexes use it)."""
        return [item.to_candidate() for item in self.memories]


class Extractor(Protocol):
    """What the service needs from an extraction provider."""

    def extract(self, event: EventForExtraction) -> ExtractionBatch:
        """Propose memories for one event. Raises ProviderTransient or ProviderPermanent."""
        ...


class ExtractionConfig(BaseModel):
    """Where and how to extract. The API key itself is never part of configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: Annotated[str, Field(min_length=1)]
    """OpenAI-compatible base URL, e.g. ``https://api.example.com/v1``."""
    model: Annotated[str, Field(min_length=1)]
    api_key_env: str | None = None
    """Name of the environment variable holding the key; ``None`` sends no Authorization header."""
    timeout: Annotated[float, Field(gt=0)] = 60.0
    temperature: float | None = 0.0
    """Sent when not ``None``; some reasoning models reject the parameter."""


class OpenAIExtractor:
    """:class:`Extractor` over an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        config: ExtractionConfig,
        http: httpx.Client,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self._http = http
        self._environ: Mapping[str, str] = os.environ if environ is None else environ
        self._prompt = load_prompt(PROMPT_VERSION)

    @property
    def prompt_version(self) -> str:
        return PROMPT_VERSION

    def _request(self, event: EventForExtraction) -> dict[str, Any]:
        source = {
            "event": {
                "role": event.role,
                "category": event.category,
                "occurred_at": to_db(event.occurred_at),
                "text": event.text,
            },
            "context": [{"role": turn.role, "text": turn.text} for turn in event.context],
        }
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": self._prompt},
                {"role": "user", "content": json.dumps(source, ensure_ascii=False)},
            ],
            "response_format": {"type": "json_object"},
        }
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        return body

    def extract(self, event: EventForExtraction) -> ExtractionBatch:
        data = post_json(
            self._http,
            endpoint_url(self.config.base_url, "chat/completions"),
            self._request(event),
            what=_WHAT,
            api_key_env=self.config.api_key_env,
            environ=self._environ,
            timeout=self.config.timeout,
        )
        envelope = shaped(_Envelope, data)
        if envelope is None:
            raise ProviderPermanent("extraction endpoint answered without a chat-completions choice")
        content = envelope.choices[0].message.content
        if content is None:
            raise ProviderPermanent("extraction endpoint answered with empty content")
        text = content.strip()
        fenced = _FENCE.match(text)
        if fenced:
            text = fenced.group(1)
        parsed = loads_or_none(text)
        if parsed is NOT_JSON:
            raise ProviderPermanent("extraction answer content is not JSON")
        answer = shaped(_Answer, parsed)
        if answer is None:
            raise ProviderPermanent("extraction answer does not have the expected memories shape")
        return ExtractionBatch(
            memories=tuple(answer.memories),
            prompt_version=PROMPT_VERSION,
            model=self.config.model,
        )
