"""What every MCP tool shares: the checked server, the arguments as given, the call into the service and
the compact reply.

:class:`YijiMCP` registers a plain function as a tool: its docstring (without indentation) is the tool's
description, its parameters (``Annotated[type, Field(description=...)]``) are the input schema, stated once;
a parameter without a description is refused at registration. Every call is checked strictly here before
the SDK's own validation runs, and errors are rewritten so that no input value is echoed.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.prompts import Prompt
from mcp.types import (
    CallToolResult,
    ContentBlock,
    Icon,
    ListResourcesRequest,
    ListResourceTemplatesRequest,
    ReadResourceRequest,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError

from yiji import __version__
from yiji.display import shown_name
from yiji.errors import YijiError
from yiji.mcp_stdio import stdio_transport
from yiji.models import parse
from yiji.models.common import rule_of, to_jsonable
from yiji.models.recall import compact
from yiji.service import IdleCheckpointer, MemoryService

__all__ = [
    "AppState",
    "Ctx",
    "Persona",
    "Project",
    "YijiMCP",
    "arguments",
    "call",
    "hints",
    "reply",
    "request",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass
class AppState:
    service: MemoryService
    idle: IdleCheckpointer


Ctx = Context[Any, AppState, Any]
"""What a tool names to receive the request's context (the SDK leaves it out of the schema)."""

Persona = Annotated[
    str | None,
    Field(description="Persona id; omitted: the configured default, echoed back in the result's scope."),
]
Project = Annotated[
    str | None,
    Field(
        description="Project id within the persona; omitted: the configured default, echoed back in scope."
    ),
]
"""The scope parameters most tools share, described once."""

_NAMES_SHOWN = 5  # unknown argument names quoted back in one error
_SDK_LOGGERS = ("mcp.server.lowlevel.server", "mcp.server.fastmcp.tools.tool_manager")
_log = logging.getLogger("yiji.mcp")


def hints(*, read_only: bool = False, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    """A tool's annotations; ``openWorldHint`` is always false (yiji talks to nothing but its database
    and the endpoints its operator configured)."""
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=destructive,
        idempotentHint=read_only or idempotent,
        openWorldHint=False,
    )


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(shown_name(str(p)) for p in e['loc'])}: {rule_of(e)}"
        for e in exc.errors(include_input=False, include_url=False)
    )


class _ShownArguments(logging.Filter):
    """The SDK logs some names a client chose (an unknown tool's): they are logged escaped and cut."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(shown_name(a) if isinstance(a, str) else a for a in record.args)
        return True


def _untitled(schema: Any) -> None:
    """Drop pydantic's generated ``title`` keys from a JSON schema (each repeats its property's name,
    and a client pays for every byte of the tool list); a property named ``title`` stays."""
    if isinstance(schema, dict):
        if isinstance(schema.get("title"), str):
            del schema["title"]
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                for child in value.values():
                    _untitled(child)
            else:
                _untitled(value)
    elif isinstance(schema, list):
        for item in schema:
            _untitled(item)


class YijiMCP(FastMCP[AppState]):
    """FastMCP whose tools are described whole and whose arguments are checked strictly.

    Every tool call is checked here, once, for every tool and every parameter:

    * unknown argument names are refused (the SDK would drop them silently), quoted by a short prefix
      with control and bidirectional characters escaped (:func:`yiji.display.shown_name`);
    * an unknown tool is refused without quoting its name;
    * arguments are validated against the tool's parameter model in pydantic's *strict* JSON mode
      before the SDK's lenient validation runs: a boolean is only JSON ``true``/``false`` (never
      ``"yes"``, ``1`` or ``"on"``), an integer is never ``true`` or ``"3"``, a list is never a string
      holding JSON. Nothing is coerced.

    ``serverInfo.version`` is yiji's version.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("log_level", "WARNING")  # no line per request on stderr
        super().__init__(*args, **kwargs)
        self._mcp_server.version = __version__
        for request_type in (ListResourcesRequest, ReadResourceRequest, ListResourceTemplatesRequest):
            self._mcp_server.request_handlers.pop(request_type, None)  # no resources: none advertised
        for name in _SDK_LOGGERS:
            sdk_logger = logging.getLogger(name)
            if not any(isinstance(f, _ShownArguments) for f in sdk_logger.filters):
                sdk_logger.addFilter(_ShownArguments())

    def add_tool(  # noqa: PLR0913 - the SDK's signature
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        """Register ``fn`` as a tool: its docstring without indentation is its description (unless one
        is given), its annotated parameters its input schema without generated titles. A tool without
        annotations, or with a parameter that has no description, is a programming error, refused here."""
        if annotations is None:
            raise TypeError(f"tool {fn.__name__}: no annotations")
        super().add_tool(
            fn,
            name=name,
            title=title,
            description=description or inspect.cleandoc(fn.__doc__ or ""),
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )
        tool = self._tool_manager.get_tool(name or fn.__name__)
        assert tool is not None
        _untitled(tool.parameters)
        for parameter, schema in tool.parameters.get("properties", {}).items():
            if "description" not in schema:
                raise TypeError(f"tool {tool.name}: parameter {parameter} has no description")
            schema["description"] = schema.pop("description")  # after the type, as clients always saw it

    def add_prompt(self, prompt: Prompt) -> None:
        """Register a prompt whose description is its docstring without indentation; an argument
        without a description is refused, as for :meth:`add_tool`."""
        for argument in prompt.arguments or []:
            if not argument.description:
                raise TypeError(f"prompt {prompt.name}: argument {argument.name} has no description")
        prompt.description = inspect.cleandoc(prompt.description or "")
        super().add_prompt(prompt)

    async def call_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> Sequence[ContentBlock] | dict[str, Any]:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            raise ToolError("invalid_input: name: no tool has this name (tools/list names them)")
        unknown = sorted(set(arguments) - set(tool.parameters.get("properties", {})))
        if unknown:
            more = f" (and {len(unknown) - _NAMES_SHOWN} more)" if len(unknown) > _NAMES_SHOWN else ""
            shown = ", ".join(shown_name(n) for n in unknown[:_NAMES_SHOWN])
            raise ToolError(f"invalid_input: {shown}: unknown field{more}")
        try:
            tool.fn_metadata.arg_model.model_validate_json(json.dumps(arguments), strict=True)
        except ValidationError as exc:
            raise ToolError(f"invalid_input: {_problems(exc)}") from None
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, YijiError):
                raise ToolError(f"{cause.code}: {cause.message}") from None
            if isinstance(cause, ValidationError):
                raise ToolError(f"invalid_input: {_problems(cause)}") from None
            if cause is None:
                raise
            # The type names the reason; its message may quote stored or remote text, so it stays out.
            _log.error("tool %s failed: unexpected %s", name, type(cause).__name__)
            raise ToolError("internal_error: the tool failed; see the server log") from None

    async def run_checked_stdio(self) -> None:
        """Serve over stdio through :mod:`yiji.mcp_stdio`, which checks every line first."""
        async with stdio_transport() as (read_stream, write_stream):
            await self._mcp_server.run(
                read_stream, write_stream, self._mcp_server.create_initialization_options()
            )


def arguments(given: Mapping[str, Any], *leave: str) -> dict[str, Any]:
    """A tool's arguments as the client gave them, from the tool's ``locals()`` on entry (exactly its
    parameters), so that a body hands them on without naming each again.

    The context and the names in ``leave`` are dropped; omitted ones (None) are left out, so that a
    request model or a service method takes its own default; nested models become the data that was
    given (unset fields left unset)."""
    return {
        name: [v.model_dump(exclude_unset=True) if isinstance(v, BaseModel) else v for v in value]
        if isinstance(value, list)
        else value
        for name, value in given.items()
        if value is not None and name not in leave and not isinstance(value, Context)
    }


def request(target: type[M], given: Mapping[str, Any], *leave: str) -> M:
    """The tool's arguments (see :func:`arguments`) validated into ``target``."""
    return parse(target, arguments(given, *leave))


async def call(ctx: Ctx, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(service, *args, **kwargs)`` in a worker thread, keeping the idle checkpointer informed."""
    state = ctx.request_context.lifespan_context
    state.idle.touch()
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, state.service, *args, **kwargs))
    finally:
        state.idle.touch()


def reply(value: Any) -> CallToolResult:
    """One text block of compact JSON (no indentation, nulls left out)."""
    data = compact(to_jsonable(value))
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)])
