"""The registry of event body types: what every part of the system knows of each, once.

The fold dispatches on it, sealing reads which fields are content, the CLI and the logs
describe an event with its one-line summary, the projection indexes its searchable
words, and the console renders each type with the template named after it. A new body
type is one dataclass in ``types.py``, one schema branch, one entry here, one fold rule
(the fold refuses to load without one) and one console template (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from goaicore.records.types import (
    AssistantTurn,
    CompactionApplied,
    ConversationDeleted,
    ConversationErased,
    ConversationForked,
    ConversationReset,
    ConversationRewound,
    EventBody,
    GameEvent,
    MetadataSet,
    ToolResult,
    TurnFailed,
    UserMessage,
)


class Kind(Enum):
    """How a content field is emptied and marked when it is sealed or erased."""

    TEXT = "text"  # str: "" when blank, MARK when erased
    OPTIONAL_TEXT = "optional text"  # str | None: None stays None
    EXTRA = "extra"  # an optional JSON extra (raw provider JSON, multimodal parts): None
    STRINGS = "strings"  # tuple[str, ...] (or None, kept None): ()
    MAP = "map"  # Mapping[str, ...]: {}
    CALLS = "calls"  # tuple[ToolCall, ...]: ids and names stay; arguments are content
    MESSAGES = "messages"  # tuple[SnapshotMessage, ...]: each message's own content
    RANGES = "ranges"  # tuple[CompactedRange, ...]: their notes are content
    BODY = "body"  # an event's body: its own content


WIDTH = 160


def clip(text: str, width: int = WIDTH) -> str:
    """``text`` on one line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass(frozen=True, slots=True)
class EventType:
    """One body type: its class, its content fields, and how it reads on one line."""

    body: type[EventBody]
    content: Mapping[str, Kind]
    """The fields a person, model or tool wrote: sealed, and emptied by an erasure."""
    summary: Callable[[Any], str]
    """The body on one line (``goaicore tail``, ``history``, logs)."""
    searchable: str | None = None
    """The field holding the words a reader searches for, if any."""
    adds_message: bool = False
    """Whether the fold adds it to the history as one message."""

    def __post_init__(self) -> None:
        # Read-only: sealing reads this very mapping; a change would silently unseal a field.
        object.__setattr__(self, "content", MappingProxyType(dict(self.content)))

    @property
    def name(self) -> str:
        return self.body.__name__


def _assistant(body: AssistantTurn) -> str:
    called = "".join(f" →{c.name}({clip(c.arguments, 60)})" for c in body.tool_calls)
    return f"assistant[{body.model or '?'}, {body.finish_reason or '?'}]: {clip(body.text)}{called}"


def _game(body: GameEvent) -> str:
    attrs = " ".join(f"{k}={v}" for k, v in sorted(body.attributes.items()))
    return f"game[{body.kind}]: {clip(body.text)}{'  ' + attrs if attrs else ''}"


def _forked(body: ConversationForked) -> str:
    source, part, until = body.source_conversation_id, body.source_partition, body.until_offset
    return f"forked from {clip(source, 80)} at {part}@{until}: {len(body.messages)} messages"


def describe_metadata(change: MetadataSet) -> str:
    """What a MetadataSet changes, e.g. ``title='Quest' tags=[a, b] -mood``."""
    parts = []
    if change.title is not None:
        parts.append(f"title={clip(change.title, 80)!r}" if change.title else "-title")
    if change.owner is not None:
        parts.append(f"owner={clip(change.owner, 80)!r}" if change.owner else "-owner")
    if change.tags is not None:
        parts.append(f"tags=[{', '.join(sorted(set(change.tags)))}]")
    for key, value in sorted(change.attributes.items()):
        parts.append(f"{key}={clip(value, 60)!r}" if value is not None else f"-{key}")
    return " ".join(parts) or "no change"


_HISTORY = {"messages": Kind.MESSAGES, "summary": Kind.OPTIONAL_TEXT}

# In the order of the schema's union; new body types are appended, never inserted.
EVENT_TYPES: tuple[EventType, ...] = (
    EventType(
        UserMessage,
        {
            "text": Kind.TEXT,
            "content_json": Kind.EXTRA,
            "name": Kind.OPTIONAL_TEXT,
            "raw_json": Kind.EXTRA,
        },
        lambda b: f"user: {clip(b.text)}",
        searchable="text",
        adds_message=True,
    ),
    EventType(
        AssistantTurn,
        {"text": Kind.TEXT, "tool_calls": Kind.CALLS, "raw_json": Kind.EXTRA},
        _assistant,
        searchable="text",
        adds_message=True,
    ),
    EventType(
        ToolResult,
        {"content": Kind.TEXT, "raw_json": Kind.EXTRA},
        lambda b: f"tool {b.name}{' ERROR' if b.is_error else ''}: {clip(b.content)}",
        searchable="content",
        adds_message=True,
    ),
    EventType(
        GameEvent,
        {"text": Kind.TEXT, "attributes": Kind.MAP},
        _game,
        searchable="text",
        adds_message=True,
    ),
    EventType(
        CompactionApplied,
        {"summary": Kind.OPTIONAL_TEXT, "replacements": Kind.RANGES},
        lambda b: f"compaction[{b.strategy}]: removed {b.removed_count} messages",
        searchable="summary",
    ),
    EventType(
        TurnFailed,
        {"message": Kind.TEXT},
        lambda b: f"turn failed[{b.kind}] request {b.request_id}: {clip(b.message)}",
        searchable="message",
    ),
    EventType(ConversationReset, {"reason": Kind.TEXT}, lambda b: f"reset: {b.reason}"),
    EventType(ConversationDeleted, {"reason": Kind.TEXT}, lambda b: f"deleted: {b.reason}"),
    EventType(
        ConversationRewound,
        _HISTORY,
        lambda b: (
            f"rewound[{b.reason or 'rewind'}] to offset {b.until_offset}: "
            f"{len(b.messages)} messages"
        ),
    ),
    EventType(ConversationForked, _HISTORY, _forked),
    EventType(
        MetadataSet,
        {
            "title": Kind.OPTIONAL_TEXT,
            "owner": Kind.OPTIONAL_TEXT,
            "tags": Kind.STRINGS,
            "attributes": Kind.MAP,
        },
        lambda b: f"metadata: {describe_metadata(b)}",
    ),
    # Its reason is the operator's, kept for the audit trail: not content.
    EventType(ConversationErased, {}, lambda b: f"erased: {b.reason}"),
)

EVENT_BODY_TYPES: tuple[type[EventBody], ...] = tuple(t.body for t in EVENT_TYPES)
BODY_TYPE_NAMES: tuple[str, ...] = tuple(t.name for t in EVENT_TYPES)
BY_BODY: Mapping[type[Any], EventType] = {t.body: t for t in EVENT_TYPES}


def summary(body: EventBody) -> str:
    """``body`` on one line."""
    entry = BY_BODY.get(type(body))
    return entry.summary(body) if entry is not None else type(body).__name__


def searchable_text(body: EventBody) -> str | None:
    """The words of ``body`` a reader searches for (None when it has none)."""
    entry = BY_BODY.get(type(body))
    if entry is None or entry.searchable is None:
        return None
    text: str | None = getattr(body, entry.searchable)
    return text
