"""Hypothesis strategies for arbitrary valid records (any text, extreme integers)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import strategies as st

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
    utc_millis,
)

INT = st.integers(min_value=-(2**31), max_value=2**31 - 1)
LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)
text = st.text(max_size=40)
opt_text = st.none() | text
ids = st.text(alphabet="0123456789abcdef", min_size=1, max_size=32)
# Any instant Python can represent, at the millisecond precision of the wire.
instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
).map(utc_millis)
opt_instants = st.none() | instants
seals = st.none() | st.builds(Sealed, key_id=ids, data=st.binary(max_size=64))
tool_calls = st.lists(st.builds(ToolCall, id=ids, name=text, arguments=text), max_size=3)
usages = st.builds(
    Usage, prompt_tokens=LONG, completion_tokens=LONG, total_tokens=LONG, llm_calls=INT
)

messages = st.builds(
    SnapshotMessage,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    text=text,
    tool_calls=tool_calls,
    tool_call_id=st.none() | ids,
    name=opt_text,
    content_json=opt_text,
    raw_json=opt_text,
    provider=opt_text,
    is_error=st.booleans(),
    event_id=st.none() | ids,
)

bodies: st.SearchStrategy[EventBody] = st.one_of(
    st.builds(
        UserMessage,
        text=text,
        content_json=opt_text,
        name=opt_text,
        raw_json=opt_text,
        provider=opt_text,
    ),
    st.builds(
        AssistantTurn,
        text=text,
        tool_calls=tool_calls,
        finish_reason=opt_text,
        usage=st.none() | usages,
        provider=text,
        model=text,
        raw_json=opt_text,
        cost_usd_nanos=st.none() | LONG,
    ),
    st.builds(
        ToolResult,
        tool_call_id=ids,
        name=text,
        content=text,
        is_error=st.booleans(),
        raw_json=opt_text,
        provider=opt_text,
    ),
    st.builds(GameEvent, kind=text, text=text, attributes=st.dictionaries(text, text, max_size=4)),
    st.builds(
        CompactionApplied,
        strategy=text,
        first_index=INT,
        last_index=INT,
        removed_count=INT,
        tokens_before=LONG,
        tokens_after=LONG,
        summary=opt_text,
        basis_event_id=st.none() | ids,
        replacements=st.lists(
            st.builds(CompactedRange, first_index=INT, last_index=INT, note=opt_text), max_size=3
        ),
        basis_message_count=st.none() | INT,
    ),
    st.builds(TurnFailed, request_id=ids, kind=text, message=text),
    st.builds(ConversationReset, reason=text),
    st.builds(ConversationDeleted, reason=text),
    st.builds(
        ConversationRewound,
        until_offset=LONG,
        messages=st.lists(messages, max_size=3),
        summary=opt_text,
        reason=text,
        basis_event_id=st.none() | ids,
    ),
    st.builds(
        ConversationForked,
        source_conversation_id=text,
        source_partition=INT,
        until_offset=LONG,
        messages=st.lists(messages, max_size=3),
        summary=opt_text,
    ),
    st.builds(
        MetadataSet,
        title=opt_text,
        owner=opt_text,
        tags=st.none() | st.lists(text, max_size=3),
        attributes=st.dictionaries(text, opt_text, max_size=3),
    ),
    st.builds(ConversationErased, reason=text),
)

events = st.builds(
    ConversationEvent,
    event_id=ids,
    conversation_id=text,
    occurred_at=instants,
    source=text,
    causation_id=st.none() | ids,
    body=bodies,
    sealed=seals,
)

chat_requests = st.builds(
    ChatRequest,
    request_id=ids,
    conversation_id=text,
    text=text,
    system=opt_text,
    tools=st.lists(text, max_size=4),
    model=opt_text,
    deadline=opt_instants,
    stream=st.booleans(),
    cancel=st.booleans(),
)

chat_replies = st.builds(
    ChatReply,
    request_id=ids,
    conversation_id=text,
    status=st.sampled_from(ReplyStatus),
    text=opt_text,
    error=opt_text,
    usage=st.none() | usages,
    latency_ms=LONG,
    sealed=seals,
)

snapshots = st.builds(
    ConversationSnapshot,
    conversation_id=text,
    format_version=INT,
    messages=st.lists(messages, max_size=5),
    summary=opt_text,
    last_position=st.none() | st.builds(LogPosition, partition=INT, offset=LONG),
    recent_event_ids=st.lists(ids, max_size=5),
    event_count=LONG,
    duplicate_count=LONG,
    events_by_type=st.dictionaries(text, LONG, max_size=4),
    message_count=LONG,
    prompt_tokens=LONG,
    completion_tokens=LONG,
    cost_usd_nanos=LONG,
    anomalies=st.lists(text, max_size=3),
    deleted=st.booleans(),
    started_at=opt_instants,
    updated_at=opt_instants,
    max_bytes=LONG,
    dropped_messages=LONG,
    dropped_before=st.none() | st.builds(LogPosition, partition=INT, offset=LONG),
    truncated_messages=LONG,
    title=opt_text,
    owner=opt_text,
    tags=st.lists(text, max_size=3),
    attributes=st.dictionaries(text, text, max_size=3),
    forked_from=st.none()
    | st.builds(ForkOrigin, conversation_id=text, partition=INT, until_offset=LONG),
    earlier_bounds=st.lists(
        st.builds(
            FoldBounds,
            format_version=INT,
            max_bytes=LONG,
            until=st.builds(LogPosition, partition=INT, offset=LONG),
        ),
        max_size=3,
    ),
    erased_before=st.none() | st.builds(LogPosition, partition=INT, offset=LONG),
    sealed=seals,
)

conversation_keys = st.builds(
    ConversationKey,
    conversation_id=text,
    key_id=ids,
    master_key_id=text,
    wrapped=st.binary(max_size=80),
    created_at=instants,
    after_erasure_offset=st.none() | LONG,
)

reply_chunks = st.builds(
    ReplyChunk,
    request_id=ids,
    conversation_id=text,
    run_id=ids,
    seq=INT,
    kind=st.sampled_from(ReplyChunkKind),
    text=text,
    tool_call_id=st.none() | ids,
    tool_name=opt_text,
    arguments=opt_text,
    is_error=st.booleans(),
    occurred_at=instants,
)

records = st.one_of(events, chat_requests, chat_replies, snapshots, conversation_keys, reply_chunks)
