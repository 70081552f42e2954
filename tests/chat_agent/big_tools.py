"""A tool registry for the record-limit tests: a tool whose result is as large as asked."""

from __future__ import annotations

from goaicore.conversation.tools import Tool, tool


@tool
def big_result(size: int) -> str:
    """A text of ``size`` bytes, to see what the worker does with a result over the limit.

    Args:
        size: Bytes of text to return.
    """
    return "r" * size


registry: list[Tool] = [big_result]
