"""Typed records of the wire contract (``schemas/``) and helpers that make new ones.

Pure data: no I/O, no Kafka, no Avro here. ``goaicore.records.avro`` encodes and decodes them.
"""

from goaicore.records.new import new_chat_request, new_event, new_id, utc_millis, utc_now
from goaicore.records.types import (
    EVENT_BODY_TYPES,
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
    Record,
    ReplyStatus,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)

__all__ = [
    "EVENT_BODY_TYPES",
    "AssistantTurn",
    "ChatReply",
    "ChatRequest",
    "CompactedRange",
    "CompactionApplied",
    "ConversationDeleted",
    "ConversationEvent",
    "ConversationReset",
    "ConversationSnapshot",
    "EventBody",
    "GameEvent",
    "LogPosition",
    "Record",
    "ReplyStatus",
    "SnapshotMessage",
    "ToolCall",
    "ToolResult",
    "TurnFailed",
    "Usage",
    "UserMessage",
    "new_chat_request",
    "new_event",
    "new_id",
    "utc_millis",
    "utc_now",
]
