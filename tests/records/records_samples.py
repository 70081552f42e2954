"""Fixed sample records, one or more per record and body type.

The golden files under ``golden/`` hold these samples as encoded by each released
schema version, and the evolution tests expect each golden payload to decode to the
sample of the same name. So: never change or remove a sample; add new ones instead.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ChatRequest,
    CompactedRange,
    CompactionApplied,
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationForked,
    ConversationKey,
    ConversationReset,
    ConversationRewound,
    ConversationSnapshot,
    EventBody,
    FoldBounds,
    ForkOrigin,
    GameEvent,
    LogPosition,
    MetadataSet,
    Record,
    ReplyChunk,
    ReplyChunkKind,
    ReplyStatus,
    Sealed,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)

AT = datetime(2025, 3, 14, 15, 9, 26, 535000, tzinfo=UTC)
RAW_OPENAI = (
    '{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",'
    '"function":{"name":"lookup_venue","arguments":"{\\"city\\": \\"Harrogate\\"}"}}],'
    '"refusal":null,"x_unknown_field":{"kept":true}}'
)


def _event(n: int, body: EventBody, causation_id: str | None = None) -> ConversationEvent:
    return ConversationEvent(
        event_id=f"{n:032x}",
        conversation_id="player-42",
        occurred_at=AT,
        source="game:harrogate",
        causation_id=causation_id,
        body=body,
    )


EVENT_SAMPLES: dict[str, ConversationEvent] = {
    "user_message": _event(1, UserMessage(text="Where should I go tonight? 🎭")),
    "user_message_multimodal": _event(
        2,
        UserMessage(
            text="What is this building?",
            content_json='[{"type":"text","text":"What is this building?"},'
            '{"type":"image_url","image_url":{"url":"https://example.org/x.png"}}]',
            name="Ada",
        ),
    ),
    "assistant_tool_call": _event(
        3,
        AssistantTurn(
            text="",
            tool_calls=(
                ToolCall(id="call_1", name="lookup_venue", arguments='{"city": "Harrogate"}'),
            ),
            finish_reason="tool_calls",
            usage=Usage(prompt_tokens=812, completion_tokens=24, total_tokens=836, llm_calls=1),
            provider="openai",
            model="gpt-4o-mini",
            raw_json=RAW_OPENAI,
            cost_usd_nanos=136_200,
        ),
        causation_id="a" * 32,
    ),
    "assistant_text": _event(
        4,
        AssistantTurn(text="Try the Harrogate Theatre.", finish_reason="stop", provider="offline"),
        causation_id="a" * 32,
    ),
    "tool_result": _event(
        5,
        ToolResult(tool_call_id="call_1", name="lookup_venue", content='{"venue": "Theatre"}'),
        causation_id="a" * 32,
    ),
    "tool_error": _event(
        6,
        ToolResult(tool_call_id="call_2", name="book", content="sold out", is_error=True),
    ),
    "game_event": _event(
        7,
        GameEvent(
            kind="check-in",
            text="The player checked in at Harrogate Theatre.",
            attributes={"venue_id": "hgt-theatre", "points": "50"},
        ),
    ),
    "compaction": _event(
        8,
        CompactionApplied(
            strategy="summarize",
            first_index=0,
            last_index=11,
            removed_count=12,
            tokens_before=9000,
            tokens_after=1200,
            summary="The player explored Harrogate and likes theatre.",
            basis_event_id=f"{7:032x}",
        ),
    ),
    # Added with ConversationEvent v2: several ranges, each replaced by its own note.
    "compaction_ranges": _event(
        12,
        CompactionApplied(
            strategy="tool-exchange-summary",
            first_index=2,
            last_index=9,
            removed_count=5,
            tokens_before=640,
            tokens_after=410,
            basis_event_id=f"{11:032x}",
            replacements=(
                CompactedRange(
                    first_index=2, last_index=3, note='[tools] get_score({"team":"Leeds"}) -> 3'
                ),
                CompactedRange(first_index=7, last_index=9, note=None),
            ),
            basis_message_count=14,
        ),
    ),
    "turn_failed": _event(
        9, TurnFailed(request_id="b" * 32, kind="provider-error", message="HTTP 503")
    ),
    "reset": _event(10, ConversationReset(reason="malformed state: bad JSON")),
    "deleted": _event(11, ConversationDeleted(reason="user request")),
    "rewound": _event(
        12,
        ConversationRewound(
            until_offset=41,
            messages=(
                SnapshotMessage(role="user", text="Where now?", event_id=f"{1:032x}"),
                SnapshotMessage(
                    role="assistant",
                    tool_calls=(ToolCall(id="call_1", name="map", arguments="{}"),),
                    provider="openai",
                    raw_json=RAW_OPENAI,
                    event_id=f"{2:032x}",
                ),
                SnapshotMessage(
                    role="tool", text="north", tool_call_id="call_1", name="map", is_error=True
                ),
            ),
            summary="Earlier: the player arrived.",
            reason="undo",
            basis_event_id=f"{11:032x}",
        ),
    ),
    "rewound_to_start": _event(13, ConversationRewound(until_offset=-1)),
    "forked": _event(
        14,
        ConversationForked(
            source_conversation_id="player-42",
            source_partition=3,
            until_offset=1_234_000,
            messages=(SnapshotMessage(role="system", text="Quest begins", name="quest"),),
        ),
    ),
    "metadata": _event(
        15,
        MetadataSet(
            title="The Harrogate run",
            owner="player-42",
            tags=("beta", "quest"),
            attributes={"region": "eu", "old": None},
        ),
    ),
    "metadata_unchanged": _event(16, MetadataSet()),
    "erased": _event(17, ConversationErased(reason="player request")),
    "sealed": dataclasses.replace(  # event schema v4: the body's content sealed
        _event(18, UserMessage(text="")),
        sealed=Sealed(key_id="a" * 32, data=bytes(range(40))),
    ),
    # Added with ConversationEvent v5: a user message and a tool result keep the
    # provider's raw JSON (here Responses API input items) beside their neutral fields.
    "user_message_raw": _event(
        19,
        UserMessage(
            text="Which venue is open late?",
            raw_json='{"content": "Which venue is open late?", "role": "user"}',
            provider="openai-responses",
        ),
    ),
    "tool_result_raw": _event(
        20,
        ToolResult(
            tool_call_id="call_7",
            name="lookup_venue",
            content='{"venue": "Theatre"}',
            raw_json='{"call_id": "call_7", "output": "{\\"venue\\": \\"Theatre\\"}", '
            '"type": "function_call_output"}',
            provider="openai-responses",
        ),
        causation_id="a" * 32,
    ),
}

CHAT_REQUEST_SAMPLES: dict[str, ChatRequest] = {
    "minimal": ChatRequest(request_id="c" * 32, conversation_id="player-42", text="Hello"),
    "full": ChatRequest(
        request_id="d" * 32,
        conversation_id="player-42",
        text="Book me a seat",
        system="You are a tour guide for Harrogate.",
        tools=("lookup_venue", "book"),
        model="claude-sonnet-4",
        deadline=AT,
    ),
    "streamed": ChatRequest(  # request schema v2: the reply's text streamed as generated
        request_id="2" * 32,
        conversation_id="player-42",
        text="Tell me a story",
        stream=True,
    ),
    "cancel": ChatRequest(  # request schema v2: stop the running turn of request "2" * 32
        request_id="2" * 32,
        conversation_id="player-42",
        text="",
        cancel=True,
    ),
}

CHAT_REPLY_SAMPLES: dict[str, ChatReply] = {
    "ok": ChatReply(
        request_id="d" * 32,
        conversation_id="player-42",
        status=ReplyStatus.OK,
        text="Booked: row F, seat 12.",
        usage=Usage(prompt_tokens=1500, completion_tokens=40, total_tokens=1540, llm_calls=2),
        latency_ms=2310,
    ),
    "error": ChatReply(
        request_id="e" * 32,
        conversation_id="player-42",
        status=ReplyStatus.ERROR,
        error="provider unavailable",
        latency_ms=30_000,
    ),
    "timeout": ChatReply(
        request_id="f" * 32, conversation_id="player-7", status=ReplyStatus.TIMEOUT
    ),
    "rejected": ChatReply(
        request_id="0" * 32,
        conversation_id="player-7",
        status=ReplyStatus.REJECTED,
        error="unknown tool 'teleport'",
    ),
    "sealed": ChatReply(  # reply schema v2: the worker's stored copy, sealed
        request_id="1" * 32,
        conversation_id="player-7",
        status=ReplyStatus.OK,
        latency_ms=120,
        sealed=Sealed(key_id="b" * 32, data=bytes(range(50))),
    ),
    "cancelled": ChatReply(  # reply schema v3: cancelled by request, with the text so far
        request_id="2" * 32,
        conversation_id="player-42",
        status=ReplyStatus.CANCELLED,
        text="Once upon a time in",
        usage=Usage(prompt_tokens=900, completion_tokens=5, total_tokens=905, llm_calls=1),
        latency_ms=800,
    ),
}

SNAPSHOT_SAMPLES: dict[str, ConversationSnapshot] = {
    "empty": ConversationSnapshot(conversation_id="player-42"),
    "full": ConversationSnapshot(
        conversation_id="player-42",
        format_version=1,
        messages=(
            SnapshotMessage(role="system", text="The player's history so far: ..."),
            SnapshotMessage(role="user", text="Where should I go tonight?", event_id=f"{1:032x}"),
            SnapshotMessage(
                role="assistant",
                tool_calls=(ToolCall(id="call_1", name="lookup_venue", arguments="{}"),),
                raw_json=RAW_OPENAI,
                provider="openai",
                event_id=f"{3:032x}",
            ),
            SnapshotMessage(
                role="tool",
                text='{"venue": "Theatre"}',
                tool_call_id="call_1",
                name="lookup_venue",
                event_id=f"{5:032x}",
            ),
            SnapshotMessage(
                role="user", text="Thanks", name="Ada", content_json='[{"type":"text"}]'
            ),
        ),
        summary="The player explored Harrogate.",
        last_position=LogPosition(partition=3, offset=1_234_567),
        recent_event_ids=tuple(f"{n:032x}" for n in range(1, 12)),
        event_count=11,
        duplicate_count=2,
        events_by_type={"UserMessage": 2, "AssistantTurn": 2, "ToolResult": 2},
        message_count=17,
        prompt_tokens=15_000,
        completion_tokens=900,
        cost_usd_nanos=2_400_000,
        anomalies=("tool result call_9 has no matching call",),
        deleted=False,
        started_at=datetime(2025, 3, 1, tzinfo=UTC),
        updated_at=AT,
    ),
    "deleted": ConversationSnapshot(conversation_id="player-9", deleted=True, event_count=3),
    "bounded": ConversationSnapshot(  # fold version 2: bounded in encoded bytes
        conversation_id="player-77",
        format_version=2,
        messages=(SnapshotMessage(role="user", text="Still here?", event_id=f"{90:032x}"),),
        last_position=LogPosition(partition=1, offset=90),
        event_count=90,
        message_count=90,
        max_bytes=884_000,
        dropped_messages=88,
        dropped_before=LogPosition(partition=1, offset=89),
        truncated_messages=1,
    ),
    "with_metadata": ConversationSnapshot(  # schema v3: metadata and a fork origin
        conversation_id="player-78",
        format_version=2,
        messages=(SnapshotMessage(role="system", text="Quest begins", name="quest"),),
        last_position=LogPosition(partition=2, offset=7),
        event_count=2,
        max_bytes=884_000,
        title="The Harrogate run",
        owner="player-42",
        tags=("beta", "quest"),
        attributes={"region": "eu"},
        forked_from=ForkOrigin(conversation_id="player-42", partition=3, until_offset=1_234_000),
    ),
    "earlier_bounds": ConversationSnapshot(  # schema v4: the bounds of earlier stretches
        conversation_id="player-79",
        format_version=3,
        messages=(SnapshotMessage(role="user", text="Back again", event_id=f"{91:032x}"),),
        last_position=LogPosition(partition=4, offset=2_000),
        event_count=1_200,
        max_bytes=1_032_576,
        earlier_bounds=(
            FoldBounds(format_version=1, max_bytes=0, until=LogPosition(partition=4, offset=10)),
            FoldBounds(
                format_version=2, max_bytes=884_000, until=LogPosition(partition=4, offset=1_500)
            ),
        ),
        erased_before=LogPosition(partition=4, offset=1_990),
    ),
    "sealed": ConversationSnapshot(  # schema v4: all but its position sealed
        conversation_id="player-80",
        format_version=3,
        last_position=LogPosition(partition=0, offset=77),
        sealed=Sealed(key_id="c" * 32, data=bytes(range(60))),
    ),
}

KEY_SAMPLES: dict[str, ConversationKey] = {
    "wrapped": ConversationKey(
        conversation_id="player-42",
        key_id="d" * 32,
        master_key_id="k1",
        wrapped=bytes(range(60)),
        created_at=datetime(2026, 11, 24, 14, 0, tzinfo=UTC),
    ),
    "after_an_erasure": ConversationKey(
        conversation_id="player-42",
        key_id="e" * 32,
        master_key_id="k2",
        wrapped=bytes(range(60, 120)),
        created_at=datetime(2026, 11, 24, 15, 0, tzinfo=UTC),
        after_erasure_offset=1_234,
    ),
}


def _chunk(seq: int, kind: ReplyChunkKind, **fields: object) -> ReplyChunk:
    return ReplyChunk(
        request_id="2" * 32,
        conversation_id="player-42",
        run_id="3" * 32,
        seq=seq,
        kind=kind,
        occurred_at=AT,
        **fields,  # type: ignore[arg-type]
    )


REPLY_CHUNK_SAMPLES: dict[str, ReplyChunk] = {
    "start": _chunk(0, ReplyChunkKind.START),
    "delta": _chunk(1, ReplyChunkKind.DELTA, text="Once upon a time in Harrogate 🎭"),
    "tool_call": _chunk(
        2,
        ReplyChunkKind.TOOL_CALL,
        tool_call_id="call_1",
        tool_name="lookup_venue",
        arguments='{"city": "Harrogate"}',
    ),
    "tool_result": _chunk(
        3,
        ReplyChunkKind.TOOL_RESULT,
        text='{"venue": "Theatre"}',
        tool_call_id="call_1",
        tool_name="lookup_venue",
    ),
    "tool_error": _chunk(
        4,
        ReplyChunkKind.TOOL_RESULT,
        text="sold out",
        tool_call_id="call_2",
        tool_name="book",
        is_error=True,
    ),
    "end": _chunk(5, ReplyChunkKind.END),
    "unknown": _chunk(6, ReplyChunkKind.UNKNOWN),
}

SAMPLES_BY_SCHEMA: dict[str, dict[str, Record]] = {
    "ConversationEvent": dict(EVENT_SAMPLES),
    "ChatRequest": dict(CHAT_REQUEST_SAMPLES),
    "ChatReply": dict(CHAT_REPLY_SAMPLES),
    "ConversationSnapshot": dict(SNAPSHOT_SAMPLES),
    "ConversationKey": dict(KEY_SAMPLES),
    "ReplyChunk": dict(REPLY_CHUNK_SAMPLES),
}

ALL_SAMPLES: list[tuple[str, Record]] = [
    (f"{schema}/{name}", record)
    for schema, samples in SAMPLES_BY_SCHEMA.items()
    for name, record in samples.items()
]
