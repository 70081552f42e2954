"""What a turn reports while it runs: the reply's text as it is generated, and its tool calls.

A caller that streams a reply (a chat UI, the store worker's ``reply-stream``) passes an
``on_progress`` callback to a turn and gets these items in the order they happened;
the turn's result, and so the history stored, is the same with or without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

ProgressKind = Literal["delta", "tool_call", "tool_result"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Text the model generated, in order; the deltas of one LLM call join into its text."""

    text: str
    kind: ClassVar[ProgressKind] = "delta"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model asked for a tool (its call complete); the tool runs next."""

    call_id: str
    name: str
    arguments: str
    kind: ClassVar[ProgressKind] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool returned: the text the model sees next (cut down where it is too long)."""

    call_id: str
    name: str
    text: str
    is_error: bool = False
    kind: ClassVar[ProgressKind] = "tool_result"


TurnProgress = TextDelta | ToolCallStarted | ToolCallFinished
OnProgress = Callable[[TurnProgress], None]
"""Called with each progress item as it happens; it must not block (queue it)."""

TextSink = Callable[[str], None]
"""Where a streaming provider puts each piece of text as it arrives."""
