"""Encode and decode with the schemas of ``schemas/``: the functions most callers need.

The schemas are read and parsed once, on first use, and shared by every call.
"""

from __future__ import annotations

import functools

from goaicore.records.avro.codec import Codecs, writer_of
from goaicore.records.avro.errors import DecodeError
from goaicore.records.avro.registry import SchemaRegistry, WriterSchema
from goaicore.records.avro.snapshot_encoder import SnapshotEncoder
from goaicore.records.types import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    Record,
    ReplyChunk,
)

Payload = bytes | bytearray | memoryview | None


@functools.cache
def default_codecs() -> Codecs:
    """The codecs over the schema files, built once per process."""
    return Codecs.for_registry(SchemaRegistry.from_files())


def encode_event(event: ConversationEvent) -> bytes:
    """Single-object Avro bytes of an event; EncodeError when it does not fit the schema."""
    return default_codecs().event.encode(event)


def decode_event(data: Payload) -> ConversationEvent:
    """The event in a payload written with any released schema; DecodeError otherwise."""
    return default_codecs().event.decode(data)


def encode_chat_request(request: ChatRequest) -> bytes:
    """Single-object Avro bytes of a chat request."""
    return default_codecs().chat_request.encode(request)


def decode_chat_request(data: Payload) -> ChatRequest:
    """The chat request in a payload; DecodeError otherwise."""
    return default_codecs().chat_request.decode(data)


def encode_key(key: ConversationKey) -> bytes:
    """Single-object Avro bytes of a wrapped data key (the keys topic's values)."""
    return default_codecs().key.encode(key)


def decode_key(data: Payload) -> ConversationKey:
    """The wrapped data key in a payload; DecodeError otherwise."""
    return default_codecs().key.decode(data)


def encode_chat_reply(reply: ChatReply) -> bytes:
    """Single-object Avro bytes of a chat reply."""
    return default_codecs().chat_reply.encode(reply)


def decode_chat_reply(data: Payload) -> ChatReply:
    """The chat reply in a payload; DecodeError otherwise."""
    return default_codecs().chat_reply.decode(data)


def encode_reply_chunk(chunk: ReplyChunk) -> bytes:
    """Single-object Avro bytes of a reply chunk (the reply-stream topic's values)."""
    return default_codecs().reply_chunk.encode(chunk)


def decode_reply_chunk(data: Payload) -> ReplyChunk:
    """The reply chunk in a payload; DecodeError otherwise."""
    return default_codecs().reply_chunk.decode(data)


@functools.cache
def default_snapshot_encoder() -> SnapshotEncoder:
    """The snapshot encoder over the default codecs, one per process (its memory shared)."""
    return SnapshotEncoder(default_codecs().snapshot)


def encode_snapshot(snapshot: ConversationSnapshot) -> bytes:
    """Single-object Avro bytes of a conversation snapshot.

    Messages the process encoded before are not encoded again (see
    :mod:`goaicore.records.avro.snapshot_encoder`); the bytes are the codec's.
    """
    return default_snapshot_encoder().encode(snapshot)


def decode_snapshot(data: Payload) -> ConversationSnapshot:
    """The snapshot in a payload; DecodeError otherwise."""
    return default_codecs().snapshot.decode(data)


def encode(record: Record) -> bytes:
    """Single-object Avro bytes of any of our records."""
    if type(record) is ConversationSnapshot:
        return encode_snapshot(record)
    codecs = default_codecs()
    return codecs.by_type(record).encode(record)


def decode(data: Payload) -> Record:
    """Whichever record a payload holds, chosen by its writer schema's fingerprint."""
    codecs = default_codecs()
    writer = writer_of(codecs.registry, data)
    record: Record = codecs.by_name(writer.name).decode(data)
    return record


def payload_schema(data: Payload) -> WriterSchema:
    """The writer schema a payload names (its record name and released version)."""
    return writer_of(default_codecs().registry, data)


__all__ = [
    "DecodeError",
    "Payload",
    "decode",
    "decode_chat_reply",
    "decode_chat_request",
    "decode_event",
    "decode_key",
    "decode_reply_chunk",
    "decode_snapshot",
    "default_codecs",
    "encode",
    "encode_chat_reply",
    "encode_chat_request",
    "encode_event",
    "encode_key",
    "encode_reply_chunk",
    "encode_snapshot",
    "payload_schema",
]
