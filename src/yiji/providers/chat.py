"""A plain OpenAI-compatible chat client, for comparing companion models (``yiji probe``).

Errors are mapped and sanitized once, in :mod:`yiji.providers._openai`; the whole request is bounded
by the configured timeout and the answer by a size cap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, Field

from yiji.errors import ProviderPermanent
from yiji.providers._openai import endpoint_url, post_json, shaped

__all__ = ["ChatClient"]


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message


class _Envelope(BaseModel):
    choices: Annotated[list[_Choice], Field(min_length=1)]


class ChatClient:
    """``POST {base_url}/chat/completions`` and return the answer's text."""

    def __init__(
        self,
        http: httpx.Client,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout: float = 300.0,
        max_tokens: int = 300,
        temperature: float | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._http = http
        self.base_url = base_url
        self.model = model
        self._api_key_env = api_key_env
        self._timeout = timeout
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._environ: Mapping[str, str] = os.environ if environ is None else environ

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": self._max_tokens,
        }
        if self._temperature is not None:
            body["temperature"] = self._temperature
        data = post_json(
            self._http,
            endpoint_url(self.base_url, "chat/completions"),
            body,
            what="chat",
            api_key_env=self._api_key_env,
            environ=self._environ,
            timeout=self._timeout,
            max_bytes=1_000_000,
        )
        envelope = shaped(_Envelope, data)
        if envelope is None or envelope.choices[0].message.content is None:
            raise ProviderPermanent("chat endpoint answered without a message")
        return envelope.choices[0].message.content.strip()
