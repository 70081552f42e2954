"""Property tests: any valid record round-trips; any bytes decode or raise DecodeError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    ReplyChunk,
)
from goaicore.records.avro import (
    DECODE_REASONS,
    MAGIC,
    DecodeError,
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
)
from tests.records.records_samples import ALL_SAMPLES
from tests.records.records_strategies import (
    chat_replies,
    chat_requests,
    conversation_keys,
    events,
    records,
    reply_chunks,
    snapshots,
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(events)
def test_any_event_round_trips(event: ConversationEvent) -> None:
    assert decode_event(encode_event(event)) == event


@FAST
@given(chat_requests)
def test_any_chat_request_round_trips(request: ChatRequest) -> None:
    assert decode_chat_request(encode_chat_request(request)) == request


@FAST
@given(chat_replies)
def test_any_chat_reply_round_trips(reply: ChatReply) -> None:
    assert decode_chat_reply(encode_chat_reply(reply)) == reply


@FAST
@given(conversation_keys)
def test_any_conversation_key_round_trips(key: ConversationKey) -> None:
    assert decode_key(encode_key(key)) == key


@FAST
@given(reply_chunks)
def test_any_reply_chunk_round_trips(chunk: ReplyChunk) -> None:
    assert decode_reply_chunk(encode_reply_chunk(chunk)) == chunk


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots)
def test_any_snapshot_round_trips(snapshot: ConversationSnapshot) -> None:
    assert decode_snapshot(encode_snapshot(snapshot)) == snapshot


def _decodes_or_raises_decode_error(data: bytes) -> None:
    try:
        record = decode(data)
    except DecodeError as exc:
        error = exc
    else:
        # Whatever decodes is a valid record again: it re-encodes to a decodable payload.
        assert decode(encode(record)) == record
        return
    assert error.reason in DECODE_REASONS
    assert error.message


@FAST
@given(st.binary(max_size=64))
@example(b"")
@example(MAGIC)
def test_arbitrary_bytes_never_raise_anything_but_decode_error(data: bytes) -> None:
    _decodes_or_raises_decode_error(data)


_FINGERPRINTS = [w.fingerprint for w in default_codecs().registry.writers()]


@FAST
@given(st.sampled_from(_FINGERPRINTS), st.binary(max_size=200))
def test_garbage_behind_a_known_header_raises_only_decode_error(fp: bytes, body: bytes) -> None:
    _decodes_or_raises_decode_error(MAGIC + fp + body)


@FAST
@given(
    st.sampled_from([record for _, record in ALL_SAMPLES]),
    st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(min_value=0),
)
def test_corrupted_and_truncated_payloads_raise_only_decode_error(
    record: object, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(encode(record))  # type: ignore[arg-type]
    for position, value in flips:
        data[position % len(data)] = value
    _decodes_or_raises_decode_error(bytes(data))
    _decodes_or_raises_decode_error(bytes(data[: cut % len(data)]))


@FAST
@given(records)
def test_every_proper_prefix_of_a_payload_is_rejected(record: object) -> None:
    data = encode(record)  # type: ignore[arg-type]
    for end in range(len(data)):
        with pytest.raises(DecodeError) as caught:
            decode(data[:end])
        assert caught.value.reason in {"empty", "truncated"}, end
