"""Configuration: a TOML file plus environment overrides, checked against the dataclasses below.

Lookup order (later wins): built-in defaults, the TOML file (``--config``, ``$YIJI_CONFIG`` or
``<user config dir>/yiji/config.toml`` when it exists), then environment variables:

``YIJI_DB``, ``YIJI_PERSONA``, ``YIJI_PROJECT``, ``YIJI_SYNCHRONOUS``, ``YIJI_TIMEZONE``,
``YIJI_DISPLAY_TIMEZONE``,
``YIJI_EXTRACTION_BASE_URL``, ``YIJI_EXTRACTION_MODEL``, ``YIJI_EXTRACTION_API_KEY_ENV``,
``YIJI_EMBEDDING_PROVIDER``, ``YIJI_EMBEDDING_BASE_URL``, ``YIJI_EMBEDDING_MODEL``,
``YIJI_EMBEDDING_API_KEY_ENV``, ``YIJI_HOOK_LOG``, ``YIJI_HOOK_TIME_LIMIT``.

Secrets never live in the configuration: a provider names the *environment variable* that holds its key
(``api_key_env``), and the key is read from the environment only when a request is made. Unknown keys in
the file are an error, so a key pasted into the file is refused rather than silently kept.

An error names where the value came from (the file's path, or the environment variable) and, for an
unknown key, the known key of that table it most likely meant (``_KEY_NOTES`` adds a sentence to some).
It never quotes a value or a line of the file: a TOML syntax error gives its line and column only.

Every command reads the configuration, including ``yiji host-ingest`` which a host runs at each compaction,
so checking it must not cost a pydantic import. Each section is one frozen dataclass whose annotations carry
the rules (:class:`Bound`, :class:`MinLen`, :class:`Rule`), and the providers read the sections themselves
(:class:`yiji.providers.extraction.OpenAIExtractor` takes an :class:`ExtractionConfig`). A configuration
whose values already have their final types and keep every rule is built directly. Anything else (an
unknown key, a value of another type that may need conversion, such as a number from an environment
variable, or a broken rule) is validated by pydantic over the same dataclasses (the rules describe
themselves to it), which converts what can be converted and words every error; so the outcome does not
depend on which path was taken.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Union

import platformdirs

from yiji.domain.fact_keys import DEFAULT_FACT_KEYS
from yiji.errors import InvalidInput

__all__ = [
    "Bound",
    "ChatModelConfig",
    "Config",
    "DisplayConfig",
    "EmbeddingConfig",
    "ExtractionConfig",
    "ForgettingConfig",
    "HookConfig",
    "MinLen",
    "ProbeConfig",
    "RecallConfig",
    "RedactionConfig",
    "Rule",
    "build_config",
    "default_config_path",
    "default_db_path",
    "load_config",
]

APP = "yiji"


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir(APP, appauthor=False)) / "yiji.db"


def default_config_path() -> Path:
    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "config.toml"


@dataclass(frozen=True)
class Bound:
    """Numeric bounds of a field (pydantic's ``gt``, ``ge``, ``le``)."""

    gt: float | None = None
    ge: float | None = None
    le: float | None = None

    def holds(self, value: float) -> bool:
        return (
            (self.gt is None or value > self.gt)
            and (self.ge is None or value >= self.ge)
            and (self.le is None or value <= self.le)
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field

        return handler(Annotated[source, Field(gt=self.gt, ge=self.ge, le=self.le)])


@dataclass(frozen=True)
class MinLen:
    """Minimum and maximum length of a string field."""

    min_length: int = 0
    max_length: int | None = None

    def holds(self, value: str) -> bool:
        return len(value) >= self.min_length and (self.max_length is None or len(value) <= self.max_length)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import Field

        return handler(Annotated[source, Field(min_length=self.min_length, max_length=self.max_length)])


@dataclass(frozen=True)
class Rule:
    """Any other rule: ``check`` returns the value or raises ``ValueError`` naming the rule."""

    check: Callable[[Any], Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic import AfterValidator

        return handler(Annotated[source, AfterValidator(self.check)])


_CHECKED: Final = {"extra": "forbid", "allow_inf_nan": False}
"""How pydantic checks every section (its ``__pydantic_config__``): an unknown key is an error, and NaN
and infinity are refused as what they are, before any bound compares them."""


def _known_zone(value: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("must be an IANA timezone name such as Asia/Shanghai") from None
    return value


def _fact_keys(value: tuple[str, ...]) -> tuple[str, ...]:
    import re

    if len(value) > 200 or any(not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*", k) for k in value):
        raise ValueError("must be at most 200 keys in lowercase snake_case with dots, such as home.city")
    return value


_RUN_ROLES = ("user", "assistant", "system", "tool")  # yiji.models.events.ROLES (a test checks)


def _run_roles(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value or len(set(value)) != len(value) or any(r not in _RUN_ROLES for r in value):
        raise ValueError("must name one or more of user, assistant, system, tool, each once")
    return value


@dataclass(frozen=True)
class ExtractionConfig:
    """OpenAI-compatible chat-completions endpoint used for automatic extraction (optional)."""

    __pydantic_config__ = _CHECKED

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: Annotated[float, Bound(gt=0, le=3600)] = 300.0
    """Bounds each whole request. 300 s fits a 1.5B model on a laptop CPU; a hosted API needs less."""
    max_tokens: Annotated[int, Bound(ge=16, le=32_768)] = 1024
    max_answer_bytes: Annotated[int, Bound(ge=1024, le=100_000_000)] = 1_000_000
    response_format: Literal["json_schema", "json_object_schema", "json_object"] = "json_schema"
    entailment_check: bool = False
    """A second short call per accepted item: does the quote alone state the memory?"""
    prompt: Literal["extraction-v5", "extraction-v4", "extraction-v3"] = "extraction-v5"
    """The prompt version sent (stored with every memory it derives); the latest unless pinned."""
    context_turns: Annotated[int, Bound(ge=0, le=20)] = 4
    user_name: Annotated[str, MinLen(1, 64)] = "用户"
    fact_keys: Annotated[tuple[str, ...], Rule(_fact_keys)] = DEFAULT_FACT_KEYS
    """The only fact keys extraction keeps (see :mod:`yiji.domain.fact_keys`); others are dropped."""
    review: Literal["none", "facts", "all"] = "none"
    """Which extracted memories wait for a person (``yiji review``) before they are remembered:
    ``none``; ``facts`` (single-valued keyed facts and agreements, the claims a wrong memory hurts most);
    ``all``. See :func:`yiji.domain.review.arrival_state`."""
    run_roles: Annotated[tuple[str, ...], Rule(_run_roles)] = ("user",)
    """The roles whose captured turns ``yiji extraction run`` sends; the session's other turns still reach
    the model as context (``context_turns``). A coding host's assistant turns are long tool-ish output."""
    auto: bool = False
    """After a hook or ``host-ingest`` captured something, start a detached, bounded extraction run."""
    auto_max_events: Annotated[int, Bound(ge=1, le=10_000)] = 20
    """At most this many events sent by one automatic run."""
    auto_time_limit_seconds: Annotated[float, Bound(gt=0, le=3600)] = 120.0
    """An automatic run ends by then, even in the middle of a call (that event waits for the next run)."""

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


@dataclass(frozen=True)
class EmbeddingConfig:
    """Which embedder builds the vectors for semantic recall; ``version`` is part of the fingerprint.

    ``provider``: ``auto`` (an OpenAI-compatible endpoint when ``base_url`` and ``model`` are set,
    otherwise the offline model when the ``embed`` extra is installed, otherwise none), ``local``
    (the offline multilingual model), ``openai`` (the endpoint) or ``off``.
    """

    __pydantic_config__ = _CHECKED

    provider: Literal["auto", "local", "openai", "off"] = "auto"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    version: Annotated[str, MinLen(1)] = "1"
    dimensions: Annotated[int, Bound(gt=0)] | None = None
    timeout_seconds: Annotated[float, Bound(gt=0, le=600)] = 60.0
    batch_size: Annotated[int, Bound(ge=1, le=2048)] = 64

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


@dataclass(frozen=True)
class ChatModelConfig:
    """One OpenAI-compatible chat model compared by ``yiji probe``."""

    __pydantic_config__ = _CHECKED

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout_seconds: Annotated[float, Bound(gt=0, le=3600)] = 300.0
    max_tokens: Annotated[int, Bound(ge=16, le=8192)] = 300
    temperature: float | None = 0.7

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.model)


@dataclass(frozen=True)
class ProbeConfig:
    """The two chat models of ``yiji probe`` and the session_resume budget each turn gets."""

    __pydantic_config__ = _CHECKED

    a: ChatModelConfig = field(default_factory=ChatModelConfig)
    b: ChatModelConfig = field(default_factory=ChatModelConfig)
    budget: Annotated[int, Bound(ge=100, le=100_000)] = 1500


@dataclass(frozen=True)
class RecallConfig:
    __pydantic_config__ = _CHECKED

    freshness_half_life_days: Annotated[float, Bound(gt=0)] = 180.0
    cosine_threshold: Annotated[float, Bound(ge=-1, le=1)] | None = None
    """``None``: the embedder's calibrated threshold (0.3 for API models)."""
    semantic_scan_limit: Annotated[int, Bound(ge=1)] = 50_000
    """The most recent vectors of a scope semantic mode compares with the query; a scope holding more gets
    a coverage warning (deep mode compares them all). The scope's packed int8 copy makes a whole scope of
    this size cost a few milliseconds (``yiji bench semantic``); it was 2,000 before that copy existed."""
    default_mode: Literal["fast", "semantic", "deep"] = "fast"
    """The mode of ``memory_recall`` (MCP) and ``yiji recall`` when the caller names none. ``fast`` never
    calls an embedding model; ``semantic`` (with the embed extra or an embedding endpoint) compares meaning
    over the whole scope too."""
    default_limit: Annotated[int, Bound(ge=1, le=200)] = 10


@dataclass(frozen=True)
class ForgettingConfig:
    __pydantic_config__ = _CHECKED

    gist_after_days: Annotated[float, Bound(gt=0)] = 180.0
    coarsen_after_days: Annotated[float, Bound(gt=0)] = 730.0
    emotion_half_life_hours: Annotated[float, Bound(gt=0)] = 6.0


@dataclass(frozen=True)
class DisplayConfig:
    """How times and words are shown to a person (plain CLI output and the review UI); ``--json`` and MCP
    keep UTC and their own field names."""

    __pydantic_config__ = _CHECKED

    timezone: Annotated[str, Rule(_known_zone)] | None = None
    """IANA name (e.g. ``Asia/Shanghai``); unset: the top-level ``timezone``, else the system's zone."""
    language: Literal["auto", "zh", "en"] = "auto"
    """The language of plain CLI output: ``auto`` reads the locale (``LC_ALL``, ``LC_MESSAGES``, ``LANG``;
    ``zh...`` is Chinese, anything else English). ``--json`` and MCP never change; ``yiji ui`` follows the
    browser's language."""


@dataclass(frozen=True)
class HookConfig:
    """``yiji hook``: how a host's working directory becomes a project, and what the hooks add.

    ``project_rule``: ``git-root`` (the enclosing git work tree, else the directory), ``cwd`` (the
    directory itself) or ``configured`` (the configured ``project``); see docs/host-capture.md.
    """

    __pydantic_config__ = _CHECKED

    project_rule: Literal["git-root", "cwd", "configured"] = "git-root"
    recall_on_prompt: bool = False
    resume_budget: Annotated[int, Bound(ge=200, le=100_000)] = 8000
    """Characters of the SessionStart pack as the host sends it on (JSON-escaped); never more than the
    host keeps (8,000: Claude Code cuts ``additionalContext`` there)."""
    pack: Literal["auto", "coding", "companion"] = "auto"
    """Who reads the SessionStart pack: ``coding`` (no persona, framing for a coding agent), ``companion``
    (the persona first), ``auto`` (each host's own: Claude Code and Codex are coding hosts)."""
    time_limit_seconds: Annotated[float, Bound(gt=0, le=600)] | None = None
    """One limit for every hook; unset: each hook's own (docs/host-capture.md)."""
    log: Path | None = None
    """Where a hook logs a failure; unset: ``hooks.log`` beside the database, else standard error."""


@dataclass(frozen=True)
class RedactionConfig:
    """Secrets replaced by ``[redacted:<rule>]`` before an event is stored (:mod:`yiji.domain.secrets`).

    ``enabled``: on unless turned off. ``rules``: a TOML file of further rules in the format of yiji's
    own (``domain/data/secrets.json``, as ``[[rules]]`` tables), applied after them; see docs/reliability.md.
    """

    __pydantic_config__ = _CHECKED

    enabled: bool = True
    rules: Path | None = None


@dataclass(frozen=True)
class Config:
    __pydantic_config__ = _CHECKED

    db: Path = field(default_factory=default_db_path)
    persona: str = "default"
    project: str = "default"
    synchronous: Literal["NORMAL", "FULL", "EXTRA"] = "FULL"
    timezone: Annotated[str, Rule(_known_zone)] | None = None
    """IANA name of the user's timezone (e.g. ``Asia/Shanghai``) used to read relative dates in
    events; the machine's local timezone when unset."""
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    forgetting: ForgettingConfig = field(default_factory=ForgettingConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    display: DisplayConfig = field(default_factory=DisplayConfig)
    hooks: HookConfig = field(default_factory=HookConfig)
    redaction: RedactionConfig = field(default_factory=RedactionConfig)

    @property
    def display_timezone(self) -> str | None:
        """The zone times are shown in: ``[display] timezone``, else ``timezone``; ``None``: the system's."""
        return self.display.timezone or self.timezone

    def __post_init__(self) -> None:
        if not isinstance(self.db, Path):  # a path given as a string in code
            object.__setattr__(self, "db", Path(self.db))

    def public_dict(self) -> dict[str, Any]:
        """The configuration as shown to a person: no secret can be in it, and none is resolved."""
        data = dataclasses.asdict(self)
        data["db"] = str(self.db)
        data["hooks"]["log"] = None if self.hooks.log is None else str(self.hooks.log)
        data["redaction"]["rules"] = None if self.redaction.rules is None else str(self.redaction.rules)
        for section in ("extraction", "embedding"):
            env = data[section].get("api_key_env")
            data[section]["api_key_set"] = bool(env and os.environ.get(env))
        return data


_KEY_NOTES: dict[str, str] = {
    "api_key_env": "API keys are not stored in the configuration file: keep the key in an environment "
    "variable and set api_key_env to that variable's name",
}
"""What an error about an unknown key adds when the key it most likely meant is one of these."""

_ENV: dict[str, tuple[str, ...]] = {
    "YIJI_DB": ("db",),
    "YIJI_PERSONA": ("persona",),
    "YIJI_PROJECT": ("project",),
    "YIJI_SYNCHRONOUS": ("synchronous",),
    "YIJI_TIMEZONE": ("timezone",),
    "YIJI_DISPLAY_TIMEZONE": ("display", "timezone"),
    "YIJI_DISPLAY_LANGUAGE": ("display", "language"),
    "YIJI_EXTRACTION_TIMEOUT_SECONDS": ("extraction", "timeout_seconds"),
    "YIJI_EXTRACTION_BASE_URL": ("extraction", "base_url"),
    "YIJI_EXTRACTION_MODEL": ("extraction", "model"),
    "YIJI_EXTRACTION_API_KEY_ENV": ("extraction", "api_key_env"),
    "YIJI_EMBEDDING_PROVIDER": ("embedding", "provider"),
    "YIJI_EMBEDDING_BASE_URL": ("embedding", "base_url"),
    "YIJI_EMBEDDING_MODEL": ("embedding", "model"),
    "YIJI_EMBEDDING_API_KEY_ENV": ("embedding", "api_key_env"),
    "YIJI_HOOK_LOG": ("hooks", "log"),
    "YIJI_HOOK_TIME_LIMIT": ("hooks", "time_limit_seconds"),
    "YIJI_HOOK_PACK": ("hooks", "pack"),
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
    read: Path | None = None
    if file_path.exists():
        data = _read_toml(file_path)
        read = file_path
    elif explicit:
        raise InvalidInput("config", f"the configuration file {_shown_path(file_path)} does not exist")
    origins: dict[tuple[str, ...], str] = {}
    for name, keys in _ENV.items():
        if environ.get(name):
            target = data
            for key in keys[:-1]:
                target = target.setdefault(key, {})
                if not isinstance(target, dict):  # the file's value for the table is wrong: it is reported
                    break
            else:
                target[keys[-1]] = environ[name]
                origins[keys] = f"from ${name}"
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
            origins[(key,)] = ""
    return build_config(data, file=read, origins=origins)


def _read_toml(path: Path) -> dict[str, Any]:
    """The file's tables; an error names the file and, for a syntax error, the line and column only
    (tomllib's own message may quote the file's text)."""
    import re
    import tomllib

    shown = _shown_path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput("config", f"the configuration file {shown} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+), column (\d+)\)$", str(exc))
        if at:
            where = f" at line {at[1]}, column {at[2]}"
        else:
            where = " at the end of the file" if str(exc).endswith("(at end of document)") else ""
        raise InvalidInput("config", f"the configuration file {shown} is not valid TOML{where}") from None
    except OSError:
        raise InvalidInput("config", f"the configuration file {shown} could not be read") from None


def _shown_path(path: Path) -> str:
    from yiji.display import visible

    return visible(str(path))


def build_config(
    data: dict[str, Any], *, file: Path | None = None, origins: dict[tuple[str, ...], str] | None = None
) -> Config:
    """A :class:`Config` from plain data; an error names the first field and its rule.

    ``file`` is the configuration file ``data`` was read from, and ``origins`` says where values set
    otherwise came from (``"from $YIJI_DB"``; ``""``: nowhere worth naming), by key path: an error about
    a value names its origin, else the file.
    """
    plain = _plain_section(Config, data)
    config = typing.cast(Config, plain) if plain is not _UNSURE else _validated(data, file, origins or {})
    _check_endpoints(config, file, origins or {})
    return config


def _check_endpoints(config: Config, file: Path | None, origins: dict[tuple[str, ...], str]) -> None:
    """An endpoint (``base_url``) without its ``model`` is refused naming ``model``: without one the
    endpoint is never called, and extraction (or embedding) would be off with nothing said."""
    sections = {"extraction": config.extraction.base_url}
    if config.embedding.provider in ("auto", "openai"):
        sections["embedding"] = config.embedding.base_url
    models = {"extraction": config.extraction.model, "embedding": config.embedding.model}
    for name, base_url in sections.items():
        if base_url and not models[name]:
            origin = origins.get((name, "base_url"))
            if origin is None and file is not None:
                origin = f"in {_shown_path(file)}"
            raise InvalidInput(
                f"{name}.model",
                f"is required when {name}.base_url is set (the model the endpoint serves; without it "
                f"{name} is off)" + (f" ({origin})" if origin else ""),
            )


# -- the direct path: values already of their final type, every rule kept -------------------------

_UNSURE: Any = object()
"""Returned when the direct path cannot vouch for a value; pydantic then decides."""


@cache
def _hints(section: type) -> dict[str, Any]:
    return typing.get_type_hints(section, include_extras=True)


def _plain_section(section: type, data: Any) -> Any:
    if type(data) is not dict:
        return _UNSURE
    hints = _hints(section)
    values: dict[str, Any] = {}
    for key, raw in data.items():
        if key not in hints:
            return _UNSURE
        value = _plain_value(hints[key], raw)
        if value is _UNSURE:
            return _UNSURE
        values[key] = value
    return section(**values)


def _plain_value(hint: Any, value: Any) -> Any:  # noqa: PLR0911 - one return per kind of type
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *rules = typing.get_args(hint)
        value = _plain_value(base, value)
        if value is _UNSURE:
            return _UNSURE
        for rule in rules:
            if isinstance(rule, Bound | MinLen):
                if not rule.holds(value):
                    return _UNSURE
            elif isinstance(rule, Rule):
                try:
                    value = rule.check(value)
                except ValueError:
                    return _UNSURE
            else:
                return _UNSURE
        return value
    if origin is Union or origin is types.UnionType:
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _plain_value(options[0], value) if len(options) == 1 else _UNSURE
    if origin is Literal:
        return value if type(value) is str and value in typing.get_args(hint) else _UNSURE
    if hint is str or hint is bool or hint is int:
        return value if type(value) is hint else _UNSURE
    if hint is float:
        return float(value) if type(value) in (int, float) and math.isfinite(value) else _UNSURE
    if hint is Path:
        if isinstance(value, Path):
            return value
        return Path(value) if type(value) is str and value and "\0" not in value else _UNSURE
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _plain_section(hint, value)
    return _UNSURE


# -- the validating path: pydantic over the same dataclasses ---------------------------------------


@cache
def _checker() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Config)


def _validated(data: dict[str, Any], file: Path | None, origins: dict[tuple[str, ...], str]) -> Config:
    from pydantic import ValidationError

    try:
        config: Config = _checker().validate_python(data)
    except ValidationError as exc:
        from yiji.display import shown_name

        problems = []
        for e in exc.errors(include_input=False, include_url=False):
            loc = tuple(str(p) for p in e["loc"])
            origin = next((origins[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in origins), None)
            if origin is None and file is not None:
                origin = f"in {_shown_path(file)}"
            if e["type"] == "unexpected_keyword_argument":
                rule = _unknown_key(loc, isinstance(_value_at(data, loc), dict), origin)
            else:
                rule = "must be a table" if e["type"] == "dataclass_type" else e["msg"]
                rule = rule.removeprefix("Value error, ") + (f" ({origin})" if origin else "")
            problems.append((".".join(shown_name(p) for p in loc) or "config", rule))
        raise InvalidInput(problems[0][0], problems[0][1], problems=problems) from None
    return config


def _unknown_key(loc: tuple[str, ...], table: bool, origin: str | None) -> str:
    """The rule an unknown key breaks: what it is, where it is, and the known key it most likely meant
    (the closest name of that table, as difflib ranks them), with that key's note if it has one."""
    import difflib

    section: Any = Config
    for key in loc[:-1]:
        section = _section_type(_hints(section)[key])
    rule = f"unknown {'table' if table else 'key'}" + (f" {origin}" if origin else "")
    close = difflib.get_close_matches(loc[-1], list(_hints(section)), n=1)
    if not close:
        return rule
    note = _KEY_NOTES.get(close[0])
    return f"{rule} (did you mean {close[0]}?{f' {note}' if note else ''})"


def _section_type(hint: Any) -> Any:
    """The dataclass a field's hint names, under ``Annotated`` or ``| None``."""
    if dataclasses.is_dataclass(hint):
        return hint
    return next((t for t in map(_section_type, typing.get_args(hint)) if t is not None), None)


def _value_at(data: Any, loc: tuple[str, ...]) -> Any:
    for key in loc:
        data = data.get(key) if isinstance(data, dict) else None
    return data
