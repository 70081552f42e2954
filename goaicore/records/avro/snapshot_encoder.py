"""Snapshots encoded in time proportional to what changed, not to the history's length.

A snapshot's Avro body is its leading fields, the ``messages`` array, then the rest;
fastavro writes a non-empty array as one block, its item count as a long, each item's
encoding, then a zero (an empty array is the zero alone). So the body is the
concatenation of parts that can be written apart. The encoder remembers, for each
conversation, the messages it last encoded and their bytes: the fold keeps the same
immutable message objects from one snapshot to the next (appending, inserting near the
end, dropping the oldest), so the run of messages shared with the previous encoding
is found by identity and copied as bytes, and only the new messages are converted,
checked and written. Property tests hold the bytes equal to fastavro's for any
snapshot and any sequence of histories.

A record that does not fit the schema goes to the codec's own path, which names the
offending field; so errors are the codec's, word for word.
"""

from __future__ import annotations

import io
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from itertools import islice
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
        self._histories: OrderedDict[str, _Encoded] = OrderedDict()  # least recent first
        self._remembered = 0
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
        items = self._items(snapshot.conversation_id, snapshot.messages)
        if items is None:
            return self.codec.encode(snapshot)
        out = io.BytesIO()
        out.write(self._header)
        try:
            schemaless_writer(out, self._head, datum)
            if snapshot.messages:
                out.write(_long(len(snapshot.messages)))
                out.write(items)
            out.write(_ARRAY_END)
            schemaless_writer(out, self._tail, datum)
        except (ValueError, TypeError, OverflowError):
            return self.codec.encode(snapshot)
        return out.getvalue()

    def _items(self, conversation_id: str, messages: tuple[SnapshotMessage, ...]) -> bytes | None:
        """The messages' item bytes, reusing the run shared with the conversation's last
        encoding; None when a message does not fit the schema."""
        with self._lock:
            previous = self._histories.get(conversation_id, _NOTHING)
        start, shared = previous.shared_run(messages)
        if shared == len(messages) == len(previous.messages):
            return previous.body
        offset = previous.ends[start]
        parts = [previous.body[offset : previous.ends[start + shared]]]
        ends = previous.ends[start + 1 : start + shared + 1]
        if offset:
            ends = [end - offset for end in ends]
        size = ends[-1] if ends else 0
        for message in messages[shared:]:
            encoded = self._message(message)
            if encoded is None:
                return None
            parts.append(encoded)
            size += len(encoded)
            ends.append(size)
        body = b"".join(parts)
        self._remember(conversation_id, _Encoded(messages, [0, *ends], body))
        return body

    def _message(self, message: SnapshotMessage) -> bytes | None:
        """A message's item bytes; None when it does not fit the schema."""
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
        return out.getvalue()

    @property
    def remembered_bytes(self) -> int:
        """The size of the encoded histories kept (at most ``cache_bytes``)."""
        return self._remembered

    def _remember(self, conversation_id: str, encoded: _Encoded) -> None:
        with self._lock:
            previous = self._histories.pop(conversation_id, None)
            if previous is not None:
                self._remembered -= len(previous.body)
            self._histories[conversation_id] = encoded
            self._remembered += len(encoded.body)
            while self._remembered > self.cache_bytes and self._histories:
                _, dropped = self._histories.popitem(last=False)
                self._remembered -= len(dropped.body)


@dataclass(frozen=True, slots=True)
class _Encoded:
    """A history as last encoded: its messages, each item's end offset, and the bytes."""

    messages: tuple[SnapshotMessage, ...]
    ends: list[int]  # ends[0] == 0; item i is body[ends[i]:ends[i + 1]]
    body: bytes

    def shared_run(self, messages: tuple[SnapshotMessage, ...]) -> tuple[int, int]:
        """Where ``messages`` starts in this history and how many of its first messages
        follow on from there: the same objects (they were dropped from the front and
        added or inserted after that run). ``(0, 0)`` when none are shared."""
        if not messages:
            return 0, 0
        first = messages[0]
        start = next((i for i, message in enumerate(self.messages) if message is first), None)
        if start is None:
            return 0, 0
        shared = 0
        for mine, theirs in zip(islice(self.messages, start, None), messages, strict=False):
            if mine is not theirs:
                break
            shared += 1
        return start, shared


_NOTHING = _Encoded((), [0], b"")
