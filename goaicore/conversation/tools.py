"""Tools the model can call: ``@tool`` on a typed function, or an explicit JSON schema.

The parameters schema comes from the type hints, the description and the per-parameter
notes from the docstring (Google ``Args:`` or reST ``:param x:`` style). A call never
crashes the turn: arguments that are not JSON or do not match the schema, an exception
and a ``None`` result each become an error result that the model reads and can act on.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from goaicore.conversation.tool_schema import JSONSchema, check, coerce, schema_of
from goaicore.threads import ThreadPool, tools_pool

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?):\s*$")
_RST_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], |]+\s+)?(\w+):\s*(.*)$")
_RST_OTHER = re.compile(r"^\s*:(returns?|raises?|rtype|type)\b")
_ARG_ENTRY = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call produced, as text for the model."""

    text: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    """A callable the model may use, with its name, description and parameters schema."""

    name: str
    description: str
    parameters: JSONSchema
    fn: Callable[..., Any] = field(repr=False)
    hints: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME.pattern}")
        if self.parameters.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: the parameters schema must be an object")

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    async def invoke(self, arguments: str, pool: ThreadPool | None = None) -> ToolOutcome:
        """Run the tool on the model's JSON ``arguments``; failures become error outcomes.

        A synchronous function runs in a thread of ``pool`` (default: the tools' own,
        :data:`goaicore.threads.tools_pool`), so it neither blocks the loop nor waits
        behind other blocking work.
        """
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return _error(f"the arguments are not valid JSON ({exc}); send a JSON object")
        if not isinstance(args, dict):
            return _error("the arguments must be a JSON object")
        problem = check(self.parameters, args)
        if problem:
            return _error(f"the arguments do not match the schema: {problem}")
        try:
            kwargs = {k: coerce(self.hints.get(k, Any), v) for k, v in args.items()}
            if self.is_async:
                result = await self.fn(**kwargs)
            else:
                result = await (pool or tools_pool).run(self.fn, **kwargs)
        except Exception as exc:
            return _error(f"tool {self.name!r} failed: {type(exc).__name__}: {exc}")
        if result is None:
            return _error(f"tool {self.name!r} returned no result")
        return ToolOutcome(format_result(result))


def _error(text: str) -> ToolOutcome:
    return ToolOutcome(f"error: {text}", is_error=True)


def format_result(result: Any) -> str:
    """A tool's return value as text: strings as they are, anything else as JSON."""
    if isinstance(result, str):
        return result
    if hasattr(result, "model_dump"):
        result = result.model_dump(mode="json")
    elif dataclasses.is_dataclass(result) and not isinstance(result, type):
        result = dataclasses.asdict(result)
    return json.dumps(result, ensure_ascii=False, default=str)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: JSONSchema | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: JSONSchema | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function (sync or async) a tool: ``@tool`` or ``@tool(name=..., ...)``.

    With ``parameters`` the given JSON schema is used as is and the function receives
    the arguments as keyword arguments; otherwise the schema is built from the hints.
    """

    def make(func: Callable[..., Any]) -> Tool:
        summary, notes = parse_docstring(inspect.getdoc(func) or "")
        tool_name = name or func.__name__
        hints: dict[str, Any] = {}
        if parameters is not None:
            schema = dict(parameters)
        else:
            schema, hints = _schema_from_signature(func, notes)
        return Tool(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=schema,
            fn=func,
            hints=hints,
        )

    return make(fn) if fn is not None else make


def _schema_from_signature(
    func: Callable[..., Any], notes: Mapping[str, str]
) -> tuple[JSONSchema, dict[str, Any]]:
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except NameError as exc:  # a string annotation naming a type the module cannot see
        raise TypeError(f"tool {func.__name__}: cannot resolve its type hints ({exc})") from None
    properties: dict[str, JSONSchema] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"tool {func.__name__}: positional-only {param.name!r} unsupported")
        try:
            prop = schema_of(hints.get(param.name, Any))
        except TypeError as exc:
            raise TypeError(f"tool {func.__name__}, parameter {param.name!r}: {exc}") from None
        if param.name in notes and "description" not in prop:
            prop["description"] = notes[param.name]
        if param.default is param.empty:
            required.append(param.name)
        elif isinstance(param.default, enum.Enum):
            prop["default"] = param.default.value
        elif _jsonable(param.default):
            prop["default"] = param.default
        properties[param.name] = prop
    schema: JSONSchema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return schema, {k: v for k, v in hints.items() if k != "return"}


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (text before any section) and per-parameter notes of a docstring."""
    summary: list[str] = []
    notes: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent: int | None = None
    for line in doc.splitlines():
        heading = _SECTION.match(line)
        rst = _RST_PARAM.match(line)
        if heading:
            section, current, entry_indent = heading.group(1), None, None
        elif rst:
            section, current = "reST", rst.group(1)
            notes[current] = rst.group(2).strip()
        elif _RST_OTHER.match(line):
            section, current = "Returns", None
        elif section is None:
            summary.append(line)
        elif line.strip() and section in ("Args", "Arguments", "Parameters", "reST"):
            indent = len(line) - len(line.lstrip())
            if entry_indent is None and section != "reST":
                entry_indent = indent
            entry = _ARG_ENTRY.match(line)
            if entry and indent == entry_indent:
                current = entry.group(1).lstrip("*")
                notes[current] = entry.group(2).strip()
            elif current:
                notes[current] = f"{notes[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), notes
