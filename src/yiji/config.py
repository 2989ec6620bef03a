"""Configuration: a TOML file plus environment overrides, validated by pydantic.

Lookup order (later wins): built-in defaults, the TOML file (``--config``, ``$YIJI_CONFIG`` or
``<user config dir>/yiji/config.toml`` when it exists), then environment variables:

``YIJI_DB``, ``YIJI_PERSONA``, ``YIJI_PROJECT``, ``YIJI_SYNCHRONOUS``,
``YIJI_EXTRACTION_BASE_URL``, ``YIJI_EXTRACTION_MODEL``, ``YIJI_EXTRACTION_API_KEY_ENV``,
``YIJI_EMBEDDING_PROVIDER``, ``YIJI_EMBEDDING_BASE_URL``, ``YIJI_EMBEDDING_MODEL``,
``YIJI_EMBEDDING_API_KEY_ENV``.

Secrets never live in the configuration: a provider names the *environment variable* that holds its key
(``api_key_env``), and the key is read from the environment only when a request is made. Unknown keys in
the file are an error, so a key pasted into the file is refused rather than silently kept.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from yiji.errors import InvalidInput

__all__ = [
    "Config",
    "EmbeddingConfig",
    "ExtractionConfig",
    "ForgettingConfig",
    "RecallConfig",
    "default_config_path",
    "default_db_path",
    "load_config",
]

APP = "yiji"


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "yiji.db"


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "config.toml"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExtractionConfig(_Section):
    """OpenAI-compatible chat-completions endpoint used for automatic extraction (optional)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: float = Field(default=300.0, gt=0, le=3600)
    """Bounds each whole request. 300 s fits a 1.5B model on a laptop CPU; a hosted API needs less."""
    max_tokens: int = Field(default=1024, ge=16, le=32_768)
    max_answer_bytes: int = Field(default=1_000_000, ge=1024, le=100_000_000)
    response_format: Literal["json_schema", "json_object_schema", "json_object"] = "json_schema"
    entailment_check: bool = False
    """A second short call per accepted item: does the quote alone state the memory?"""
    context_turns: int = Field(default=4, ge=0, le=20)
    user_name: str = Field(default="用户", min_length=1, max_length=64)

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


class EmbeddingConfig(_Section):
    """Which embedder builds the vectors for semantic recall; ``version`` is part of the fingerprint.

    ``provider``: ``auto`` (an OpenAI-compatible endpoint when ``base_url`` and ``model`` are set,
    otherwise the offline model when the ``embed`` extra is installed, otherwise none), ``local``
    (the offline multilingual model), ``openai`` (the endpoint) or ``off``.
    """

    provider: Literal["auto", "local", "openai", "off"] = "auto"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    version: str = Field(default="1", min_length=1)
    dimensions: int | None = Field(default=None, gt=0)
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    batch_size: int = Field(default=64, ge=1, le=2048)

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


class ChatModelConfig(_Section):
    """One OpenAI-compatible chat model compared by ``yiji probe``."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: float = Field(default=300.0, gt=0, le=3600)
    max_tokens: int = Field(default=300, ge=16, le=8192)
    temperature: float | None = 0.7

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


class ProbeConfig(_Section):
    """The two chat models of ``yiji probe`` and the session_resume budget each turn gets."""

    a: ChatModelConfig = ChatModelConfig()
    b: ChatModelConfig = ChatModelConfig()
    budget: int = Field(default=1500, ge=100, le=100_000)


class RecallConfig(_Section):
    freshness_half_life_days: float = Field(default=180.0, gt=0)
    cosine_threshold: float | None = Field(default=None, ge=-1, le=1)
    """``None``: the embedder's calibrated threshold (0.3 for API models)."""
    semantic_scan_limit: int = Field(default=2000, ge=1)
    default_limit: int = Field(default=10, ge=1, le=200)


class ForgettingConfig(_Section):
    gist_after_days: float = Field(default=180.0, gt=0)
    coarsen_after_days: float = Field(default=730.0, gt=0)
    emotion_half_life_hours: float = Field(default=6.0, gt=0)


class Config(_Section):
    db: Path = Field(default_factory=default_db_path)
    persona: str = "default"
    project: str = "default"
    synchronous: Literal["NORMAL", "FULL", "EXTRA"] = "FULL"
    timezone: str | None = None
    """IANA name of the user's timezone (e.g. ``Asia/Shanghai``) used to read relative dates in
    events; the machine's local timezone when unset."""
    extraction: ExtractionConfig = ExtractionConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    recall: RecallConfig = RecallConfig()
    forgetting: ForgettingConfig = ForgettingConfig()
    probe: ProbeConfig = ProbeConfig()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("must be an IANA timezone name such as Asia/Shanghai") from None
        return value

    def public_dict(self) -> dict[str, Any]:
        """The configuration as shown to a person: no secret can be in it, and none is resolved."""
        data = self.model_dump(mode="json")
        for section in ("extraction", "embedding"):
            env = data[section].get("api_key_env")
            data[section]["api_key_set"] = bool(env and os.environ.get(env))
        return data


_ENV: dict[str, tuple[str, ...]] = {
    "YIJI_DB": ("db",),
    "YIJI_PERSONA": ("persona",),
    "YIJI_PROJECT": ("project",),
    "YIJI_SYNCHRONOUS": ("synchronous",),
    "YIJI_TIMEZONE": ("timezone",),
    "YIJI_EXTRACTION_TIMEOUT_SECONDS": ("extraction", "timeout_seconds"),
    "YIJI_EXTRACTION_BASE_URL": ("extraction", "base_url"),
    "YIJI_EXTRACTION_MODEL": ("extraction", "model"),
    "YIJI_EXTRACTION_API_KEY_ENV": ("extraction", "api_key_env"),
    "YIJI_EMBEDDING_PROVIDER": ("embedding", "provider"),
    "YIJI_EMBEDDING_BASE_URL": ("embedding", "base_url"),
    "YIJI_EMBEDDING_MODEL": ("embedding", "model"),
    "YIJI_EMBEDDING_API_KEY_ENV": ("embedding", "api_key_env"),
}


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
) -> Config:
    """Build the configuration from defaults, the TOML file, the environment and explicit overrides."""
    environ = dict(os.environ) if env is None else env
    data: dict[str, Any] = {}
    explicit = path is not None or "YIJI_CONFIG" in environ
    file_path = Path(path or environ.get("YIJI_CONFIG") or default_config_path()).expanduser()
    if file_path.exists():
        try:
            data = tomllib.loads(file_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            raise InvalidInput("config", "the configuration file is not valid TOML") from None
    elif explicit:
        raise InvalidInput("config", "the configuration file does not exist")
    for name, keys in _ENV.items():
        if environ.get(name):
            target = data
            for key in keys[:-1]:
                target = target.setdefault(key, {})
            target[keys[-1]] = environ[name]
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = [(".".join(str(p) for p in e["loc"]) or "config", e["msg"]) for e in exc.errors()]
        raise InvalidInput(problems[0][0], problems[0][1], problems=problems) from None
