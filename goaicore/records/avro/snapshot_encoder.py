"""Snapshots encoded in time proportional to what changed, not to the history's length.

A snapshot's Avro body is its leading fields, the ``messages`` array, then the rest;
fastavro writes a non-empty array as one block, its item count as a long, each item's
encoding, then a zero (an empty array is the zero alone). So the body is the
concatenation of parts that can be written apart, and a history message that did not
change since the last encode has the same bytes: each is converted, checked and written
once while it stays in memory, remembered by identity (the fold keeps the same
immutable message objects from one snapshot to the next). Property tests hold the
bytes equal to fastavro's for any snapshot.

A record that does not fit the schema goes to the codec's own path, which names the
offending field; so errors are the codec's, word for word.
"""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from fastavro import parse_schema, schemaless_writer

from goaicore.records import convert
from goaicore.records.avro.check import compile_check
from goaicore.records.avro.codec import Codec
from goaicore.records.avro.framing import header
from goaicore.records.types import ConversationSnapshot, SnapshotMessage

# The encoded messages kept, by total size: enough for the histories of every
# conversation a worker touches between two of its batches.
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024

_MESSAGES = "messages"
_ARRAY_END = b"\x00"


def _long(value: int) -> bytes:
    """Avro's zigzag varint of a long."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _part(name: str, fields: list[Any], named: dict[str, Any]) -> Any:
    """A record schema of some of the snapshot's fields, with the named types known so far."""
    return parse_schema({"type": "record", "name": name, "fields": fields}, named_schemas=named)


class SnapshotEncoder:
    """Single-object bytes of snapshots, equal to ``codec.encode``'s, reusing message bytes."""

    def __init__(self, codec: Codec[ConversationSnapshot], cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.codec = codec
        self.cache_bytes = cache_bytes
        # The schema as written, in order, so that each named type is defined in the
        # first part that uses it and referred to by name in later ones.
        fields = json.loads(codec.writer.canonical)["fields"]
        split = [f["name"] for f in fields].index(_MESSAGES)
        named: dict[str, Any] = {}
        self._head = _part("goaicore.SnapshotHead", fields[:split], named)
        self._item = parse_schema(fields[split]["type"]["items"], named_schemas=named)
        self._tail = _part("goaicore.SnapshotTail", fields[split + 1 :], named)
        self._check_head = compile_check(self._head)
        self._check_tail = compile_check(self._tail)
        self._check_item = compile_check(self._item)
        self._message_to_avro = convert.record_writer(SnapshotMessage)
        self._header = header(codec.writer.fingerprint)
        self._encoded: OrderedDict[int, tuple[SnapshotMessage, bytes]] = OrderedDict()
        self._encoded_size = 0
        self._lock = threading.Lock()  # encode_snapshot may be called from any thread

    def encode(self, snapshot: ConversationSnapshot) -> bytes:
        """The snapshot's bytes; ``EncodeError`` (from the codec) when it does not fit."""
        if type(snapshot) is not ConversationSnapshot:
            return self.codec.encode(snapshot)  # the codec names what is wrong
        try:
            datum = convert.snapshot_to_avro(replace(snapshot, messages=()))
        except (TypeError, AttributeError, ValueError):
            return self.codec.encode(snapshot)
        if not (self._check_head(datum) and self._check_tail(datum)):
            return self.codec.encode(snapshot)
        items = []
        for message in snapshot.messages:
            encoded = self._message(message)
            if encoded is None:
                return self.codec.encode(snapshot)
            items.append(encoded)
        out = io.BytesIO()
        out.write(self._header)
        try:
            schemaless_writer(out, self._head, datum)
            if items:
                out.write(_long(len(items)))
                out.write(b"".join(items))
            out.write(_ARRAY_END)
            schemaless_writer(out, self._tail, datum)
        except (ValueError, TypeError, OverflowError):
            return self.codec.encode(snapshot)
        return out.getvalue()

    def _message(self, message: SnapshotMessage) -> bytes | None:
        """A message's item bytes, remembered; None when it does not fit the schema."""
        with self._lock:
            hit = self._encoded.get(id(message))
            if hit is not None and hit[0] is message:
                self._encoded.move_to_end(id(message))
                return hit[1]
        if type(message) is not SnapshotMessage:
            return None
        try:
            datum = self._message_to_avro(message)
        except (TypeError, AttributeError, ValueError):
            return None
        if not self._check_item(datum):
            return None
        out = io.BytesIO()
        try:
            schemaless_writer(out, self._item, datum)
        except (ValueError, TypeError, OverflowError):
            return None
        encoded = out.getvalue()
        self._remember(message, encoded)
        return encoded

    @property
    def remembered_bytes(self) -> int:
        """The size of the message encodings kept (at most ``cache_bytes``)."""
        return self._encoded_size

    def _remember(self, message: SnapshotMessage, encoded: bytes) -> None:
        # The message is kept beside its bytes, so its id cannot be reused while cached.
        with self._lock:
            previous = self._encoded.pop(id(message), None)
            if previous is not None:
                self._encoded_size -= len(previous[1])
            self._encoded[id(message)] = (message, encoded)
            self._encoded_size += len(encoded)
            while self._encoded_size > self.cache_bytes and self._encoded:
                _, (_, dropped) = self._encoded.popitem(last=False)
                self._encoded_size -= len(dropped)
