"""Typed records <-> the dict form fastavro reads and writes.

The one place that knows both shapes. Writing produces plain dicts with every field
present, the event body in fastavro's tuple notation ``(full name, dict)`` (two body
records can have identical fields, so the branch must be named, not guessed), and
timestamps as integer milliseconds (naive datetimes are refused). Reading gets
timestamps back as UTC datetimes. Reading expects what ``schemaless_reader`` returns with
``return_record_name=True, return_record_name_override=True``; fields a newer reader
schema adds are ignored here until the records grow them.

No validation happens here: the codec validates the dict against the schema, which
names the offending field precisely.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from goaicore.records.types import (
    AssistantTurn,
    ChatReply,
    ChatRequest,
    CompactedRange,
    CompactionApplied,
    ConversationDeleted,
    ConversationEvent,
    ConversationReset,
    ConversationSnapshot,
    EventBody,
    GameEvent,
    LogPosition,
    ReplyStatus,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)

NAMESPACE = "goaicore"

AvroDict = dict[str, Any]


def full_name(name: str) -> str:
    """The Avro full name of a record of ours, e.g. ``goaicore.UserMessage``."""
    return f"{NAMESPACE}.{name}"


# -- shared parts -----------------------------------------------------------------------


def _tool_call_to(call: ToolCall) -> AvroDict:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _tool_call_from(d: Mapping[str, Any]) -> ToolCall:
    return ToolCall(id=d["id"], name=d["name"], arguments=d["arguments"])


def _usage_to(usage: Usage | None) -> AvroDict | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
        "llm_calls": usage.llm_calls,
    }


def _usage_from(d: Mapping[str, Any] | None) -> Usage | None:
    if d is None:
        return None
    return Usage(
        prompt_tokens=d["prompt_tokens"],
        completion_tokens=d["completion_tokens"],
        total_tokens=d["total_tokens"],
        llm_calls=d["llm_calls"],
    )


# -- event bodies -----------------------------------------------------------------------


def _user_message_to(b: UserMessage) -> AvroDict:
    return {"text": b.text, "content_json": b.content_json, "name": b.name}


def _user_message_from(d: Mapping[str, Any]) -> UserMessage:
    return UserMessage(text=d["text"], content_json=d["content_json"], name=d["name"])


def _assistant_turn_to(b: AssistantTurn) -> AvroDict:
    return {
        "text": b.text,
        "tool_calls": [_tool_call_to(c) for c in b.tool_calls],
        "finish_reason": b.finish_reason,
        "usage": _usage_to(b.usage),
        "provider": b.provider,
        "model": b.model,
        "raw_json": b.raw_json,
        "cost_usd_nanos": b.cost_usd_nanos,
    }


def _assistant_turn_from(d: Mapping[str, Any]) -> AssistantTurn:
    return AssistantTurn(
        text=d["text"],
        tool_calls=tuple(_tool_call_from(c) for c in d["tool_calls"]),
        finish_reason=d["finish_reason"],
        usage=_usage_from(d["usage"]),
        provider=d["provider"],
        model=d["model"],
        raw_json=d["raw_json"],
        cost_usd_nanos=d["cost_usd_nanos"],
    )


def _tool_result_to(b: ToolResult) -> AvroDict:
    return {
        "tool_call_id": b.tool_call_id,
        "name": b.name,
        "content": b.content,
        "is_error": b.is_error,
    }


def _tool_result_from(d: Mapping[str, Any]) -> ToolResult:
    return ToolResult(
        tool_call_id=d["tool_call_id"], name=d["name"], content=d["content"], is_error=d["is_error"]
    )


def _game_event_to(b: GameEvent) -> AvroDict:
    return {"kind": b.kind, "text": b.text, "attributes": b.attributes}


def _game_event_from(d: Mapping[str, Any]) -> GameEvent:
    return GameEvent(kind=d["kind"], text=d["text"], attributes=d["attributes"])


def _compaction_to(b: CompactionApplied) -> AvroDict:
    return {
        "strategy": b.strategy,
        "first_index": b.first_index,
        "last_index": b.last_index,
        "removed_count": b.removed_count,
        "tokens_before": b.tokens_before,
        "tokens_after": b.tokens_after,
        "summary": b.summary,
        "basis_event_id": b.basis_event_id,
        "replacements": [
            {"first_index": r.first_index, "last_index": r.last_index, "note": r.note}
            for r in b.replacements
        ],
        "basis_message_count": b.basis_message_count,
    }


def _compaction_from(d: Mapping[str, Any]) -> CompactionApplied:
    return CompactionApplied(
        strategy=d["strategy"],
        first_index=d["first_index"],
        last_index=d["last_index"],
        removed_count=d["removed_count"],
        tokens_before=d["tokens_before"],
        tokens_after=d["tokens_after"],
        summary=d["summary"],
        basis_event_id=d["basis_event_id"],
        replacements=tuple(
            CompactedRange(first_index=r["first_index"], last_index=r["last_index"], note=r["note"])
            for r in d["replacements"]
        ),
        basis_message_count=d["basis_message_count"],
    )


def _turn_failed_to(b: TurnFailed) -> AvroDict:
    return {"request_id": b.request_id, "kind": b.kind, "message": b.message}


def _turn_failed_from(d: Mapping[str, Any]) -> TurnFailed:
    return TurnFailed(request_id=d["request_id"], kind=d["kind"], message=d["message"])


def _reset_to(b: ConversationReset) -> AvroDict:
    return {"reason": b.reason}


def _reset_from(d: Mapping[str, Any]) -> ConversationReset:
    return ConversationReset(reason=d["reason"])


def _deleted_to(b: ConversationDeleted) -> AvroDict:
    return {"reason": b.reason}


def _deleted_from(d: Mapping[str, Any]) -> ConversationDeleted:
    return ConversationDeleted(reason=d["reason"])


_BODY_TO: dict[type[Any], tuple[str, Callable[[Any], AvroDict]]] = {
    UserMessage: (full_name("UserMessage"), _user_message_to),
    AssistantTurn: (full_name("AssistantTurn"), _assistant_turn_to),
    ToolResult: (full_name("ToolResult"), _tool_result_to),
    GameEvent: (full_name("GameEvent"), _game_event_to),
    CompactionApplied: (full_name("CompactionApplied"), _compaction_to),
    TurnFailed: (full_name("TurnFailed"), _turn_failed_to),
    ConversationReset: (full_name("ConversationReset"), _reset_to),
    ConversationDeleted: (full_name("ConversationDeleted"), _deleted_to),
}

_BODY_FROM: dict[str, Callable[[Mapping[str, Any]], EventBody]] = {
    full_name("UserMessage"): _user_message_from,
    full_name("AssistantTurn"): _assistant_turn_from,
    full_name("ToolResult"): _tool_result_from,
    full_name("GameEvent"): _game_event_from,
    full_name("CompactionApplied"): _compaction_from,
    full_name("TurnFailed"): _turn_failed_from,
    full_name("ConversationReset"): _reset_from,
    full_name("ConversationDeleted"): _deleted_from,
}


class ShapeError(TypeError):
    """A record that cannot be put in the schema's shape (an unknown body, a naive time)."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def _millis(value: datetime, field: str) -> int:
    """Milliseconds since the epoch; naive datetimes are refused rather than guessed."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ShapeError(f"{field} must be a timezone-aware datetime, got {value!r}")
    return (value - _EPOCH) // _MILLISECOND


def _opt_millis(value: datetime | None, field: str) -> int | None:
    return None if value is None else _millis(value, field)


# -- top-level records ------------------------------------------------------------------


def event_to_avro(event: ConversationEvent) -> AvroDict:
    """The fastavro form of an event (body in tuple notation)."""
    entry = _BODY_TO.get(type(event.body))
    if entry is None:
        known = ", ".join(t.__name__ for t in _BODY_TO)
        raise ShapeError(
            f"ConversationEvent.body is a {type(event.body).__name__}, expected one of {known}"
        )
    name, to_dict = entry
    return {
        "event_id": event.event_id,
        "conversation_id": event.conversation_id,
        "occurred_at": _millis(event.occurred_at, "ConversationEvent.occurred_at"),
        "source": event.source,
        "causation_id": event.causation_id,
        "body": (name, to_dict(event.body)),
    }


def event_from_avro(d: Mapping[str, Any]) -> ConversationEvent:
    """The typed event from fastavro's dict (the body as ``(full name, dict)``)."""
    name, body = d["body"]
    return ConversationEvent(
        event_id=d["event_id"],
        conversation_id=d["conversation_id"],
        occurred_at=d["occurred_at"],
        source=d["source"],
        causation_id=d["causation_id"],
        body=_BODY_FROM[name](body),
    )


def chat_request_to_avro(request: ChatRequest) -> AvroDict:
    """The fastavro form of a chat request."""
    return {
        "request_id": request.request_id,
        "conversation_id": request.conversation_id,
        "text": request.text,
        "system": request.system,
        "tools": list(request.tools),
        "model": request.model,
        "deadline": _opt_millis(request.deadline, "ChatRequest.deadline"),
    }


def chat_request_from_avro(d: Mapping[str, Any]) -> ChatRequest:
    """The typed chat request from fastavro's dict."""
    return ChatRequest(
        request_id=d["request_id"],
        conversation_id=d["conversation_id"],
        text=d["text"],
        system=d["system"],
        tools=tuple(d["tools"]),
        model=d["model"],
        deadline=d["deadline"],
    )


def chat_reply_to_avro(reply: ChatReply) -> AvroDict:
    """The fastavro form of a chat reply (the status as its enum symbol)."""
    status = reply.status
    return {
        "request_id": reply.request_id,
        "conversation_id": reply.conversation_id,
        # A plain str is passed through so that validation reports a bad symbol.
        "status": status.value if isinstance(status, ReplyStatus) else status,
        "text": reply.text,
        "error": reply.error,
        "usage": _usage_to(reply.usage),
        "latency_ms": reply.latency_ms,
    }


def chat_reply_from_avro(d: Mapping[str, Any]) -> ChatReply:
    """The typed chat reply from fastavro's dict."""
    return ChatReply(
        request_id=d["request_id"],
        conversation_id=d["conversation_id"],
        status=ReplyStatus(d["status"]),
        text=d["text"],
        error=d["error"],
        usage=_usage_from(d["usage"]),
        latency_ms=d["latency_ms"],
    )


def _message_to(m: SnapshotMessage) -> AvroDict:
    return {
        "role": m.role,
        "text": m.text,
        "tool_calls": [_tool_call_to(c) for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
        "content_json": m.content_json,
        "raw_json": m.raw_json,
        "provider": m.provider,
        "is_error": m.is_error,
        "event_id": m.event_id,
    }


def _message_from(d: Mapping[str, Any]) -> SnapshotMessage:
    return SnapshotMessage(
        role=d["role"],
        text=d["text"],
        tool_calls=tuple(_tool_call_from(c) for c in d["tool_calls"]),
        tool_call_id=d["tool_call_id"],
        name=d["name"],
        content_json=d["content_json"],
        raw_json=d["raw_json"],
        provider=d["provider"],
        is_error=d["is_error"],
        event_id=d["event_id"],
    )


def snapshot_to_avro(snapshot: ConversationSnapshot) -> AvroDict:
    """The fastavro form of a snapshot."""
    return {
        "conversation_id": snapshot.conversation_id,
        "format_version": snapshot.format_version,
        "messages": [_message_to(m) for m in snapshot.messages],
        "summary": snapshot.summary,
        "last_position": _position_to(snapshot.last_position),
        "recent_event_ids": list(snapshot.recent_event_ids),
        "event_count": snapshot.event_count,
        "duplicate_count": snapshot.duplicate_count,
        "events_by_type": snapshot.events_by_type,
        "message_count": snapshot.message_count,
        "prompt_tokens": snapshot.prompt_tokens,
        "completion_tokens": snapshot.completion_tokens,
        "cost_usd_nanos": snapshot.cost_usd_nanos,
        "anomalies": list(snapshot.anomalies),
        "deleted": snapshot.deleted,
        "started_at": _opt_millis(snapshot.started_at, "ConversationSnapshot.started_at"),
        "updated_at": _opt_millis(snapshot.updated_at, "ConversationSnapshot.updated_at"),
        "max_bytes": snapshot.max_bytes,
        "dropped_messages": snapshot.dropped_messages,
        "dropped_before": _position_to(snapshot.dropped_before),
        "truncated_messages": snapshot.truncated_messages,
    }


def snapshot_from_avro(d: Mapping[str, Any]) -> ConversationSnapshot:
    """The typed snapshot from fastavro's dict."""
    return ConversationSnapshot(
        conversation_id=d["conversation_id"],
        format_version=d["format_version"],
        messages=tuple(_message_from(m) for m in d["messages"]),
        summary=d["summary"],
        last_position=_position_from(d["last_position"]),
        recent_event_ids=tuple(d["recent_event_ids"]),
        event_count=d["event_count"],
        duplicate_count=d["duplicate_count"],
        events_by_type=d["events_by_type"],
        message_count=d["message_count"],
        prompt_tokens=d["prompt_tokens"],
        completion_tokens=d["completion_tokens"],
        cost_usd_nanos=d["cost_usd_nanos"],
        anomalies=tuple(d["anomalies"]),
        deleted=d["deleted"],
        started_at=d["started_at"],
        updated_at=d["updated_at"],
        max_bytes=d["max_bytes"],
        dropped_messages=d["dropped_messages"],
        dropped_before=_position_from(d["dropped_before"]),
        truncated_messages=d["truncated_messages"],
    )


def _position_to(position: LogPosition | None) -> AvroDict | None:
    return (
        None if position is None else {"partition": position.partition, "offset": position.offset}
    )


def _position_from(d: Mapping[str, Any] | None) -> LogPosition | None:
    return None if d is None else LogPosition(partition=d["partition"], offset=d["offset"])
