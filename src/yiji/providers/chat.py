"""A plain OpenAI-compatible chat client, for comparing companion models (``yiji probe``).

Errors are mapped and sanitized once, in :mod:`yiji.providers._openai`; the whole request is bounded
by the configured timeout and the answer by a size cap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from yiji.errors import InvalidInput, ProviderPermanent
from yiji.providers._openai import endpoint_url, post_json, shaped

if TYPE_CHECKING:
    import httpx

    from yiji.config import ChatModelConfig

__all__ = ["ChatClient"]


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message


class _Envelope(BaseModel):
    choices: Annotated[list[_Choice], Field(min_length=1)]


class ChatClient:
    """``POST {base_url}/chat/completions`` and return the answer's text; configured by a ``[probe.a]``
    or ``[probe.b]`` section itself (:class:`yiji.config.ChatModelConfig`)."""

    def __init__(
        self,
        config: ChatModelConfig,
        http: httpx.Client,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not (config.base_url and config.model):
            raise InvalidInput("probe", "needs base_url and model")
        self.config = config
        self.base_url: str = config.base_url
        self.model: str = config.model
        self._http = http
        self._environ: Mapping[str, str] = os.environ if environ is None else environ

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": self.config.max_tokens,
        }
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        data = post_json(
            self._http,
            endpoint_url(self.base_url, "chat/completions"),
            body,
            what="chat",
            api_key_env=self.config.api_key_env,
            environ=self._environ,
            timeout=self.config.timeout_seconds,
            max_bytes=1_000_000,
        )
        envelope = shaped(_Envelope, data)
        if envelope is None or envelope.choices[0].message.content is None:
            raise ProviderPermanent("chat endpoint answered without a message")
        return envelope.choices[0].message.content.strip()
