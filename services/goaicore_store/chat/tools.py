"""Load the chat worker's tools from an import path (``GOAICORE_TOOLS``).

``package.module:attribute`` names a list, tuple or dict of tools (``@tool``
objects or plain typed functions, which become tools). Loading fails at start
with a clear error rather than at the first request.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from goaicore.conversation.tools import Tool, ToolOutcome, tool
from goaicore.errors import ConfigError
from goaicore.threads import ThreadPool
from goaicore.tracing import tracer

TRACER = tracer(__name__)


DEFAULT_TOOLS = "goaicore_store.chat.game_tools:registry"
"""What a worker offers when GOAICORE_TOOLS names nothing (``Settings.tools`` is None):
the game demo's tools. The worker names them; the library never names a service."""


class ToolsConfigError(ConfigError):
    """The configured tools registry cannot be loaded."""


def load_tools(import_path: str) -> dict[str, Tool]:
    """The tools at ``package.module:attribute``, by name."""
    module_name, _, attribute = import_path.partition(":")
    if not module_name or not attribute:
        raise ToolsConfigError(f"GOAICORE_TOOLS={import_path!r}: expected package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ToolsConfigError(f"GOAICORE_TOOLS={import_path!r}: cannot import: {err}") from err
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise ToolsConfigError(
            f"GOAICORE_TOOLS={import_path!r}: {module_name} has no {attribute!r}"
        ) from None
    return as_registry(value, import_path)


def as_registry(value: Any, where: str = "tools") -> dict[str, Tool]:
    """Tools (or typed functions) from a list, tuple or dict, keyed by tool name."""
    items = list(value.values()) if isinstance(value, Mapping) else value
    if not isinstance(items, list | tuple):
        raise ToolsConfigError(f"{where}: expected a list, tuple or dict of tools")
    registry: dict[str, Tool] = {}
    for item in items:
        made = item if isinstance(item, Tool) else _as_tool(item, where)
        if made.name in registry:
            raise ToolsConfigError(f"{where}: two tools are named {made.name!r}")
        registry[made.name] = made
    return registry


def _as_tool(item: Callable[..., Any] | Any, where: str) -> Tool:
    if not callable(item):
        raise ToolsConfigError(f"{where}: {item!r} is neither a tool nor a function")
    try:
        return tool(item)
    except (TypeError, ValueError) as err:
        raise ToolsConfigError(f"{where}: {err}") from err


class TracedTool(Tool):
    """A tool whose every call is a ``tool.call`` span in the turn's trace."""

    async def invoke(self, arguments: str, pool: ThreadPool | None = None) -> ToolOutcome:
        with TRACER.start_as_current_span(
            "tool.call", attributes={"goaicore.tool": self.name}
        ) as span:
            outcome = await super().invoke(arguments, pool)
            span.set_attribute("goaicore.tool.error", outcome.is_error)
            return outcome


def traced(registry: Mapping[str, Tool]) -> dict[str, Tool]:
    """The same tools, each traced."""
    return {
        name: TracedTool(t.name, t.description, t.parameters, t.fn, t.hints)
        for name, t in registry.items()
    }
