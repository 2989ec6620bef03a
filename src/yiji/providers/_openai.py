"""The wire shared by yiji's OpenAI-compatible clients: one JSON POST, with errors mapped once.

Invariants:

* ``httpx`` errors and HTTP statuses become :mod:`yiji.errors` here and nowhere else: timeouts,
  connection failures, 429 and 5xx are :class:`ProviderTransient`; other 4xx, an unusable URL and a
  body that is not JSON are :class:`ProviderPermanent`.
* Messages are sanitized: they name the endpoint's role ("extraction", "embedding") and at most an
  HTTP status or the *name* of the API-key variable, never a response body, a URL, a credential or
  any text that was sent.
* The API key is read from the environment at request time, by variable name, and sent only as a
  ``Bearer`` token.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from yiji.errors import ProviderPermanent, ProviderTransient

if TYPE_CHECKING:
    import httpx

__all__ = ["NOT_JSON", "endpoint_url", "loads_or_none", "post_json", "public_endpoint", "shaped"]

ModelT = TypeVar("ModelT", bound=BaseModel)

NOT_JSON: Any = object()
"""Returned by :func:`loads_or_none` for text that is not JSON (``None`` is valid JSON)."""


def endpoint_url(base_url: str, path: str) -> str:
    """``{base_url}/{path}`` with exactly one slash between them."""
    return f"{base_url.rstrip('/')}/{path.lstrip('/')}"


def public_endpoint(base_url: str) -> str:
    """The base URL without credentials, query or fragment: safe to store in a fingerprint."""
    import httpx

    try:
        url = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError):
        return "invalid-url"
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}".rstrip("/")


def post_json(
    http: httpx.Client,
    url: str,
    payload: Mapping[str, object],
    *,
    what: str,
    api_key_env: str | None,
    environ: Mapping[str, str],
    timeout: float,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON answer (any JSON value)."""
    import httpx  # imported here: commands that never call a provider do not load it

    headers = {"Accept": "application/json"}
    if api_key_env:
        key = environ.get(api_key_env)
        if not key:
            raise ProviderPermanent(f"{what} API key environment variable {api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"

    try:
        response = http.post(url, json=payload, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise ProviderTransient(f"{what} endpoint timed out after {timeout:g} s") from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ProviderPermanent(f"{what} endpoint URL is not usable") from exc
    except httpx.TransportError as exc:
        raise ProviderTransient(f"{what} endpoint could not be reached") from exc
    except httpx.HTTPError as exc:
        raise ProviderPermanent(f"{what} endpoint request failed") from exc

    status = response.status_code
    if status == 429 or status >= 500:
        raise ProviderTransient(f"{what} endpoint answered HTTP {status}")
    if not 200 <= status < 300:
        raise ProviderPermanent(f"{what} endpoint answered HTTP {status}")
    data = loads_or_none(response.content)
    if data is NOT_JSON:
        raise ProviderPermanent(f"{what} endpoint answered with a body that is not JSON")
    return data


# The two parsers below swallow their exceptions on purpose: a JSON decoder error carries the remote
# document and a pydantic error quotes the remote values, so they must not even travel as the
# ``__context__`` of the sanitized error raised afterwards.


def loads_or_none(text: str | bytes) -> Any:
    """The decoded JSON value, or :data:`NOT_JSON`."""
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return NOT_JSON


def shaped(model: type[ModelT], data: object) -> ModelT | None:
    """``data`` validated as ``model``, or ``None`` when it does not have that shape."""
    try:
        return model.model_validate(data)
    except ValidationError:
        return None
