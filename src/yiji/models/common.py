"""Shared pieces of the boundary models: identifier rules, scope, and pydantic-error mapping.

Every model at the boundary forbids unknown fields. :func:`parse` turns pydantic's errors into one
:class:`yiji.errors.InvalidInput` naming each field and rule, never the offending value.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import PurePath
from typing import Annotated, Any, Self, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from yiji.domain.limits import ID_PATTERN, SCOPE_PATTERN, pattern_rule
from yiji.domain.records import UtcTime
from yiji.errors import InvalidInput
from yiji.timeutil import parse_time

__all__ = [
    "ID_PATTERN",
    "MAX_OFFSET",
    "SCOPE_PATTERN",
    "AwareTime",
    "EventId",
    "InputModel",
    "Offset",
    "OutputModel",
    "Page",
    "Scope",
    "ScopeId",
    "SessionId",
    "UtcTime",
    "not_blank",
    "parse",
    "rule_of",
    "to_jsonable",
]

MAX_OFFSET = 1_000_000_000_000
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]
"""How many matches a page skips."""
"""Largest accepted listing offset: far beyond any archive, and safe for SQLite's 64-bit OFFSET."""

EventId = Annotated[str, Field(pattern=ID_PATTERN, description="1-128 chars: letters, digits, . _ : -")]
ScopeId = Annotated[str, Field(pattern=SCOPE_PATTERN, description="1-64 chars: letters, digits, . _ -")]
SessionId = Annotated[str, Field(pattern=ID_PATTERN, description="1-128 chars: letters, digits, . _ : -")]


def _aware(value: Any) -> datetime:
    try:
        return parse_time(value, "time")
    except InvalidInput as exc:
        raise ValueError(exc.rule) from None


AwareTime = Annotated[datetime, BeforeValidator(_aware)]
"""An input time: ISO 8601 with a timezone, normalized to UTC."""


def not_blank(value: str) -> str:
    """A validator for text fields: reject empty or whitespace-only text."""
    if not value.strip():
        raise ValueError("must not be empty or whitespace only")
    return value


class InputModel(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, frozen=True, defer_build=True)


class OutputModel(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    @classmethod
    def trusted(cls, **values: Any) -> Self:
        """An instance from values the service already holds in the right types, without validation.

        For hot paths (one event stored per call, thousands per batch): about four times cheaper than
        ``model_construct``. Every field must be given; a missing or unknown one is a ``TypeError``.
        """
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = frozenset(cls.__pydantic_fields__)
        if values.keys() != names:
            raise TypeError(f"{cls.__name__}.trusted needs exactly its fields")
        model = _new(cls)
        _set(model, "__dict__", values)
        _set(model, "__pydantic_fields_set__", set(values))
        _set(model, "__pydantic_extra__", None)
        _set(model, "__pydantic_private__", None)
        return model


_FIELD_NAMES: dict[type[OutputModel], frozenset[str]] = {}
_new = object.__new__
_set = object.__setattr__


class Scope(OutputModel):
    """The persona and project an operation ran in (echoed in every result)."""

    persona: str
    project: str


class Page(OutputModel):
    """What every page of a listing says first: its scope, ``total`` matches in all, where it starts, how
    long it may be, and ``next_offset`` (null on the last page); a subclass adds the page's items."""

    scope: Scope
    total: int
    offset: int
    limit: int
    next_offset: int | None


def to_jsonable(value: Any) -> Any:
    """Plain JSON data from results that mix pydantic models, plain records (those with ``as_dict``, such
    as :class:`yiji.domain.records.MemoryRecord`, give their own JSON form: the one a model holding
    them gives), dicts, lists and paths."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        return as_dict()
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


M = TypeVar("M", bound=BaseModel)


def rule_of(error: ErrorDetails) -> str:
    """The rule one pydantic error states, in yiji's words: an unknown field is "unknown field", a missing
    one "is required", an empty text or list "must not be empty", a choice "must be one of a, b, c" (the
    allowed values, never the one given), a pattern is described
    (:func:`yiji.domain.limits.pattern_rule`), never shown as a regular expression."""
    if error["type"] == "extra_forbidden":
        return "unknown field"
    if error["type"] == "missing":
        return "is required"
    if error["type"] == "string_pattern_mismatch":
        return pattern_rule(error.get("ctx", {}).get("pattern"))
    if error["type"] in ("string_too_short", "too_short") and error.get("ctx", {}).get("min_length") == 1:
        return "must not be empty"
    if error["type"] in ("literal_error", "enum"):  # "'a', 'b' or 'c'": the allowed values, never the input
        allowed = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        if allowed:
            return f"must be one of {', '.join(allowed)}"
    return error["msg"].removeprefix("Value error, ")


def parse(model: type[M], data: Any, prefix: str = "") -> M:
    """Validate ``data`` into ``model``; on failure raise InvalidInput naming fields and rules only."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            (prefix + (".".join(str(p) for p in error["loc"]) or "input"), rule_of(error))
            for error in exc.errors(include_input=False, include_url=False)
        ]
        raise InvalidInput(problems[0][0], problems[0][1], problems=problems) from None
