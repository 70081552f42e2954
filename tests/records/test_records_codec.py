"""Round trips, the single-object layout, and typed errors for bad records and bad bytes."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fastavro import parse_schema

from goaicore.records import (
    EVENT_BODY_TYPES,
    AssistantTurn,
    ChatReply,
    ChatRequest,
    CompactionApplied,
    ConversationDeleted,
    ConversationEvent,
    ConversationKey,
    ConversationReset,
    GameEvent,
    ReplyChunk,
    ReplyChunkKind,
    ReplyStatus,
    ToolCall,
    ToolResult,
    UserMessage,
    new_chat_request,
    new_event,
    utc_millis,
)
from goaicore.records.avro import (
    HEADER_SIZE,
    MAGIC,
    DecodeError,
    EncodeError,
    decode,
    decode_chat_reply,
    decode_chat_request,
    decode_event,
    decode_key,
    decode_reply_chunk,
    decode_snapshot,
    default_codecs,
    encode,
    encode_chat_reply,
    encode_chat_request,
    encode_event,
    encode_key,
    encode_reply_chunk,
    encode_snapshot,
    payload_schema,
)
from goaicore.records.avro.check import compile_check
from goaicore.records.avro.schemas import load_released
from goaicore.records.types import Record
from tests.records.records_samples import (
    ALL_SAMPLES,
    CHAT_REPLY_SAMPLES,
    EVENT_SAMPLES,
    REPLY_CHUNK_SAMPLES,
    SNAPSHOT_SAMPLES,
)


@pytest.mark.parametrize(("label", "record"), ALL_SAMPLES, ids=[s[0] for s in ALL_SAMPLES])
def test_every_sample_round_trips_through_generic_and_typed_functions(
    label: str, record: Record
) -> None:
    data = encode(record)
    assert decode(data) == record
    # The typed functions agree with the generic ones, byte for byte (encoding is
    # deterministic: same record, same bytes).
    if isinstance(record, ConversationEvent):
        assert encode_event(record) == data
        assert decode_event(data) == record
    elif isinstance(record, ChatRequest):
        assert encode_chat_request(record) == data
        assert decode_chat_request(data) == record
    elif isinstance(record, ChatReply):
        assert encode_chat_reply(record) == data
        assert decode_chat_reply(data) == record
    elif isinstance(record, ConversationKey):
        assert encode_key(record) == data
        assert decode_key(data) == record
    elif isinstance(record, ReplyChunk):
        assert encode_reply_chunk(record) == data
        assert decode_reply_chunk(data) == record
    else:
        assert encode_snapshot(record) == data
        assert decode_snapshot(data) == record


def test_samples_cover_every_body_type_reply_status_and_chunk_kind() -> None:
    assert {type(e.body) for e in EVENT_SAMPLES.values()} == set(EVENT_BODY_TYPES)
    assert {r.status for r in CHAT_REPLY_SAMPLES.values()} == set(ReplyStatus)
    assert {c.kind for c in REPLY_CHUNK_SAMPLES.values()} == set(ReplyChunkKind)


def test_a_reply_chunk_has_the_defaults_of_its_schema() -> None:
    chunk = ReplyChunk(
        request_id="r",
        conversation_id="c",
        run_id="u",
        seq=0,
        kind=ReplyChunkKind.START,
        occurred_at=utc_millis(datetime.now(UTC)),
    )
    assert (chunk.text, chunk.tool_call_id, chunk.tool_name, chunk.arguments) == (
        "",
        None,
        None,
        None,
    )
    assert chunk.is_error is False
    assert decode_reply_chunk(encode_reply_chunk(chunk)) == chunk
    assert payload_schema(encode_reply_chunk(chunk)).name == "ReplyChunk"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"seq": 2**31}, "ReplyChunk.seq"),
        ({"seq": True}, "ReplyChunk.seq is <True>"),
        ({"kind": "partial"}, "ReplyChunk.kind is <partial>"),
        ({"text": None}, "ReplyChunk.text"),
        ({"is_error": 1}, "ReplyChunk.is_error is <1>"),
    ],
    ids=["seq-overflow", "seq-bool", "bad-kind", "text-none", "is-error-int"],
)
def test_a_reply_chunk_of_wrong_types_raises_encode_error_naming_the_field(
    change: dict[str, object], expected: str
) -> None:
    chunk = dataclasses.replace(REPLY_CHUNK_SAMPLES["delta"], **change)  # type: ignore[arg-type]
    with pytest.raises(EncodeError) as caught:
        encode_reply_chunk(chunk)
    assert expected in str(caught.value)
    naive = dataclasses.replace(REPLY_CHUNK_SAMPLES["delta"], occurred_at=datetime(2025, 1, 1))
    with pytest.raises(EncodeError, match="occurred_at must be a timezone-aware datetime"):
        encode_reply_chunk(naive)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "empty"),
        (b"", "empty"),
        (b'{"json": true}', "bad-magic"),
        (encode_reply_chunk(REPLY_CHUNK_SAMPLES["delta"])[:-1], "truncated"),
        (encode_reply_chunk(REPLY_CHUNK_SAMPLES["delta"]) + b"\x00", "invalid-body"),
        (MAGIC + bytes(8) + b"\x00", "unknown-fingerprint"),
        (encode_chat_reply(CHAT_REPLY_SAMPLES["ok"]), "wrong-schema"),
    ],
    ids=["none", "no-bytes", "json", "last-byte-missing", "trailing-byte", "unknown", "reply"],
)
def test_bad_reply_chunk_payloads_raise_decode_error_with_reason(
    data: bytes | None, reason: str
) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_reply_chunk(data)
    assert caught.value.reason == reason
    with pytest.raises(DecodeError) as other:
        decode_chat_reply(encode_reply_chunk(REPLY_CHUNK_SAMPLES["end"]))
    assert other.value.reason == "wrong-schema"
    assert other.value.schema == "ReplyChunk"


def test_payload_is_marker_then_fingerprint_then_body() -> None:
    record = EVENT_SAMPLES["user_message"]
    data = encode_event(record)
    writer = default_codecs().event.writer
    assert data[:2] == MAGIC == b"\xc3\x01"
    assert data[2:HEADER_SIZE] == writer.fingerprint
    assert payload_schema(data).name == "ConversationEvent"
    # the writer is the latest release of the schema
    assert payload_schema(data).version == load_released("ConversationEvent")[-1].version


def test_decoded_times_are_utc_and_aware() -> None:
    event = decode_event(encode_event(EVENT_SAMPLES["game_event"]))
    assert event.occurred_at.tzinfo is not None
    assert event.occurred_at.utcoffset() == timedelta(0)


def test_other_time_zones_and_pre_epoch_instants_survive() -> None:
    plus_two = timezone(timedelta(hours=2))
    at = datetime(1931, 7, 1, 12, 30, 0, 123000, tzinfo=plus_two)
    event = new_event("c", UserMessage(text="x"), occurred_at=at)
    decoded = decode_event(encode_event(event))
    assert decoded.occurred_at == at
    assert decoded == event


def test_sub_millisecond_precision_is_truncated_by_the_helpers() -> None:
    at = datetime(2025, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)
    assert utc_millis(at).microsecond == 999000
    event = new_event("c", UserMessage(text="x"), occurred_at=at)
    assert decode_event(encode_event(event)) == event


def test_new_event_and_new_chat_request_fill_ids_and_times() -> None:
    a = new_event("conv", GameEvent(kind="k", text="t"), source="game")
    b = new_event("conv", GameEvent(kind="k", text="t"), source="game")
    assert a.event_id != b.event_id
    assert len(a.event_id) == 32
    assert int(a.event_id, 16) >= 0
    assert a.occurred_at.tzinfo is not None
    assert abs(datetime.now(UTC) - a.occurred_at) < timedelta(seconds=5)
    again = new_event("conv", a.body, event_id=a.event_id, occurred_at=a.occurred_at)
    assert again.event_id == a.event_id
    request = new_chat_request("conv", "hi", tools=["a", "b"])
    assert len(request.request_id) == 32
    assert request.tools == ("a", "b")
    assert request.stream is False
    assert decode_chat_request(encode_chat_request(request)) == request
    streamed = new_chat_request("conv", "hi", stream=True)
    assert decode_chat_request(encode_chat_request(streamed)).stream is True
    assert request.cancel is False
    cancel = new_chat_request("conv", "", request_id=streamed.request_id, cancel=True)
    decoded = decode_chat_request(encode_chat_request(cancel))
    assert decoded.cancel is True
    assert decoded.request_id == streamed.request_id


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        new_event("c", UserMessage(text="x"), occurred_at=datetime(2025, 1, 1))
    naive = dataclasses.replace(EVENT_SAMPLES["user_message"], occurred_at=datetime(2025, 1, 1))
    with pytest.raises(EncodeError, match="occurred_at must be a timezone-aware datetime"):
        encode_event(naive)


def test_lists_and_tuples_make_equal_records() -> None:
    call = ToolCall(id="1", name="f", arguments="{}")
    from_list = AssistantTurn(tool_calls=[call])  # type: ignore[arg-type]
    assert from_list == AssistantTurn(tool_calls=(call,))
    assert isinstance(from_list.tool_calls, tuple)


# -- encode errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            dataclasses.replace(EVENT_SAMPLES["user_message"], conversation_id=42),  # type: ignore[arg-type]
            "ConversationEvent.conversation_id is <42>",
        ),
        (
            dataclasses.replace(
                EVENT_SAMPLES["user_message"],
                body=UserMessage(text=None),  # type: ignore[arg-type]
            ),
            "UserMessage.text) is None expected string",
        ),
        (
            dataclasses.replace(CHAT_REPLY_SAMPLES["ok"], latency_ms=True),
            "ChatReply.latency_ms is <True>",
        ),
        (
            dataclasses.replace(CHAT_REPLY_SAMPLES["ok"], latency_ms=2**63),
            "ChatReply.latency_ms",
        ),
        (
            dataclasses.replace(CHAT_REPLY_SAMPLES["ok"], status="maybe"),  # type: ignore[arg-type]
            "ChatReply.status is <maybe>",
        ),
        (
            dataclasses.replace(
                SNAPSHOT_SAMPLES["full"],
                events_by_type={"UserMessage": "2"},  # type: ignore[dict-item]
            ),
            "events_by_type",
        ),
        (
            dataclasses.replace(CHAT_REPLY_SAMPLES["ok"], latency_ms=1.5),  # type: ignore[arg-type]
            "ChatReply.latency_ms is <1.5>",
        ),
        (
            dataclasses.replace(
                EVENT_SAMPLES["compaction"],
                body=CompactionApplied(strategy="s", first_index=2**40, last_index=0),
            ),
            "CompactionApplied.first_index",
        ),
        (
            dataclasses.replace(
                EVENT_SAMPLES["tool_error"],
                body=ToolResult(tool_call_id="c", name="n", content="x", is_error=1),  # type: ignore[arg-type]
            ),
            "ToolResult.is_error is <1>",
        ),
    ],
    ids=[
        "id-int",
        "text-none",
        "bool-as-long",
        "long-overflow",
        "bad-enum",
        "map-value",
        "float-as-long",
        "int-overflow",
        "int-as-boolean",
    ],
)
def test_wrong_types_raise_encode_error_naming_the_field(record: Record, expected: str) -> None:
    with pytest.raises(EncodeError) as caught:
        encode(record)
    assert expected in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_unknown_body_and_foreign_objects_raise_encode_error() -> None:
    odd = dataclasses.replace(EVENT_SAMPLES["user_message"], body="hello")  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match=r"body is a str, expected one of UserMessage"):
        encode_event(odd)
    with pytest.raises(EncodeError, match="not ConversationEvent"):
        encode({"event_id": "x"})  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match="expected a ConversationEvent, got ChatReply"):
        encode_event(CHAT_REPLY_SAMPLES["ok"])  # type: ignore[arg-type]


def test_text_without_a_utf8_form_raises_encode_error() -> None:
    record = dataclasses.replace(
        EVENT_SAMPLES["user_message"], body=UserMessage(text="lone \ud800 surrogate")
    )
    with pytest.raises(EncodeError, match="cannot encode"):
        encode_event(record)


# -- decode errors ----------------------------------------------------------------------

GOOD = encode_event(EVENT_SAMPLES["assistant_tool_call"])


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "empty"),
        (b"", "empty"),
        (b"\xc3", "truncated"),
        (b'{"json": true}', "bad-magic"),
        (b"\x00\x00\x00\x00\x01payload", "bad-magic"),  # Confluent framing
        (GOOD[: HEADER_SIZE - 1], "truncated"),
        (GOOD[:HEADER_SIZE], "truncated"),
        (GOOD[: len(GOOD) // 2], "truncated"),
        (GOOD[:-1], "truncated"),
        (GOOD + b"\x00", "invalid-body"),
        (MAGIC + b"\x01\x02\x03\x04\x05\x06\x07\x08" + GOOD[HEADER_SIZE:], "unknown-fingerprint"),
        (GOOD[:HEADER_SIZE] + b"\x02\x00", "truncated"),
        # event_id "a", conversation_id "c", occurred_at 0, source "", no causation_id,
        # then body branch 40 of 8.
        (GOOD[:HEADER_SIZE] + b"\x02a\x02c\x00\x00\x00\x50\x00\x00", "invalid-body"),
        (encode_chat_reply(CHAT_REPLY_SAMPLES["ok"]), "wrong-schema"),
    ],
    ids=[
        "none",
        "no-bytes",
        "one-byte",
        "json",
        "confluent",
        "short-header",
        "header-only",
        "half",
        "last-byte-missing",
        "trailing-byte",
        "unknown-fingerprint",
        "id-then-end",
        "bad-union-branch",
        "reply-as-event",
    ],
)
def test_bad_payloads_raise_decode_error_with_reason(data: bytes | None, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_event(data)
    assert caught.value.reason == reason
    assert str(caught.value).startswith(f"{reason}: ")
    assert isinstance(caught.value, ValueError)


def test_decode_error_names_the_writer_when_the_header_is_readable() -> None:
    with pytest.raises(DecodeError) as caught:
        decode_event(encode_chat_reply(CHAT_REPLY_SAMPLES["ok"]))
    assert caught.value.schema == "ChatReply"
    assert caught.value.fingerprint == default_codecs().chat_reply.writer.fingerprint.hex()
    with pytest.raises(DecodeError) as unknown:
        decode(MAGIC + bytes(8) + b"\x00")
    assert unknown.value.reason == "unknown-fingerprint"
    assert unknown.value.fingerprint == "00" * 8


def test_invalid_utf8_in_a_string_is_invalid_body() -> None:
    good = encode_event(EVENT_SAMPLES["user_message"])
    # event_id is the first field: a length (0x40 = 32 chars) then its characters.
    assert good[HEADER_SIZE] == 0x40
    broken = good[: HEADER_SIZE + 1] + b"\xff" + good[HEADER_SIZE + 2 :]
    with pytest.raises(DecodeError) as caught:
        decode_event(broken)
    assert caught.value.reason == "invalid-body"


def test_every_kind_of_bytes_like_input_decodes() -> None:
    assert decode_event(bytearray(GOOD)) == EVENT_SAMPLES["assistant_tool_call"]
    assert decode_event(memoryview(GOOD)) == EVENT_SAMPLES["assistant_tool_call"]
    with pytest.raises(TypeError):
        decode_event("c301")  # type: ignore[arg-type]


def test_reset_and_deleted_bodies_with_equal_fields_stay_distinct() -> None:
    # Both bodies have only a reason: the union branch must be chosen by name, not shape.
    reset, deleted = EVENT_SAMPLES["reset"], EVENT_SAMPLES["deleted"]
    as_reset = dataclasses.replace(reset, body=ConversationReset(reason="same"))
    as_deleted = dataclasses.replace(deleted, body=ConversationDeleted(reason="same"))
    assert type(decode_event(encode_event(as_reset)).body) is ConversationReset
    assert type(decode_event(encode_event(as_deleted)).body) is ConversationDeleted


def test_the_compiled_check_handles_every_schema_construct() -> None:
    schema = parse_schema(
        {
            "type": "record",
            "name": "Node",
            "fields": [
                {"name": "id", "type": {"type": "fixed", "name": "Id", "size": 2}},
                {"name": "score", "type": "double"},
                {"name": "tags", "type": {"type": "map", "values": "string"}},
                {"name": "next", "type": ["null", "Node"]},
                {"name": "either", "type": ["int", "string"]},
            ],
        }
    )
    check = compile_check(schema)
    leaf = {"id": b"ab", "score": 1, "tags": {}, "next": None, "either": "x"}
    assert check({**leaf, "next": {**leaf, "either": 3}})
    assert not check({**leaf, "next": {**leaf, "either": 3.0}})
    assert not check({**leaf, "id": b"abc"})
    assert not check({**leaf, "score": True})
    assert not check({**leaf, "tags": {1: "x"}})
    assert not check({key: value for key, value in leaf.items() if key != "tags"})
