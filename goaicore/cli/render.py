"""One-line descriptions of records, for ``tail`` and ``history``."""

from __future__ import annotations

from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ChatRequest,
    CompactionApplied,
    ConversationDeleted,
    ConversationEvent,
    ConversationReset,
    ConversationSnapshot,
    GameEvent,
    ToolResult,
    TurnFailed,
    UserMessage,
)
from goaicore.records.types import EventBody, Record

WIDTH = 160


def clip(text: str, width: int = WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def describe_body(body: EventBody) -> str:
    match body:
        case UserMessage(text=text):
            return f"user: {clip(text)}"
        case AssistantTurn(text=text, tool_calls=calls, finish_reason=reason, model=model):
            called = "".join(f" →{c.name}({clip(c.arguments, 60)})" for c in calls)
            return f"assistant[{model or '?'}, {reason or '?'}]: {clip(text)}{called}"
        case ToolResult(name=name, content=content, is_error=is_error):
            return f"tool {name}{' ERROR' if is_error else ''}: {clip(content)}"
        case GameEvent(kind=kind, text=text, attributes=attributes):
            attrs = " ".join(f"{k}={v}" for k, v in sorted(attributes.items()))
            return f"game[{kind}]: {clip(text)}{'  ' + attrs if attrs else ''}"
        case CompactionApplied(strategy=strategy, removed_count=removed):
            return f"compaction[{strategy}]: removed {removed} messages"
        case TurnFailed(request_id=request_id, kind=kind, message=message):
            return f"turn failed[{kind}] request {request_id}: {clip(message)}"
        case ConversationReset(reason=reason):
            return f"reset: {reason}"
        case ConversationDeleted(reason=reason):
            return f"deleted: {reason}"
    return type(body).__name__


def describe_event(event: ConversationEvent) -> str:
    when = event.occurred_at.isoformat(timespec="seconds")
    return f"{when} {event.conversation_id} {describe_body(event.body)}"


def describe(record: Record) -> str:
    """Any of our records on one line."""
    match record:
        case ConversationEvent():
            return describe_event(record)
        case ChatRequest(request_id=rid, conversation_id=conv, text=text):
            return f"request {rid} {conv}: {clip(text)}"
        case ChatReply(request_id=rid, conversation_id=conv, status=status, text=text, error=err):
            return f"reply {rid} {conv} {status.value}: {clip(text or err or '')}"
        case ConversationSnapshot(conversation_id=conv, messages=messages):
            return f"snapshot {conv}: {len(messages)} messages"
    return type(record).__name__
