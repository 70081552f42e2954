"""Avro encoding of goaicore's records: single-object encoding, schema evolution.

Imports only fastavro and the standard library (no Kafka), so any process that handles
payloads can use it.
"""

from goaicore.records.avro.api import (
    Payload,
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
from goaicore.records.avro.codec import Codec, Codecs
from goaicore.records.avro.errors import DECODE_REASONS, DecodeError, DecodeReason, EncodeError
from goaicore.records.avro.fingerprint import canonical_form, fingerprint
from goaicore.records.avro.framing import HEADER_SIZE, MAGIC
from goaicore.records.avro.registry import SchemaRegistry, WriterSchema
from goaicore.records.avro.schemas import SchemaLoadError, schemas_dir

__all__ = [
    "DECODE_REASONS",
    "HEADER_SIZE",
    "MAGIC",
    "Codec",
    "Codecs",
    "DecodeError",
    "DecodeReason",
    "EncodeError",
    "Payload",
    "SchemaLoadError",
    "SchemaRegistry",
    "WriterSchema",
    "canonical_form",
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
    "fingerprint",
    "payload_schema",
    "schemas_dir",
]
