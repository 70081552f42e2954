"""Snapshots encoded in time proportional to what changed, not to the history's length.

A snapshot's Avro body is its leading fields, the ``messages`` array, then the rest;
fastavro writes a non-empty array as one block, its item count as a long, each item's
encoding, then a zero (an empty array is the zero alone). So the body is the
concatenation of parts that can be written apart. The encoder remembers, for each
conversation, the messages it last encoded and their bytes: the fold keeps the same
immutable message objects from one snapshot to the next (appending, inserting near the
end, dropping the oldest), so the run of messages shared with the previous encoding
is found by identity and copied as bytes, and only the new messages are written, by
the direct writer (``direct_writer``), as are the fields around the array. Property
tests hold the bytes equal to fastavro's for any snapshot and any sequence of
histories.

Where the compiled core is installed, its history cache (``Histories``) keeps the
encoded messages instead, and the core writes the whole snapshot, messages included,
with no Python call: the same run found by identity, the same bytes. The compiled fold
writes there the bytes of each message it adds, so a folded snapshot's new messages
are not even encoded again (see :mod:`goaicore.fold.native`).

A record the direct writer does not take goes to the codec, which writes it or names
the offending field; so errors are the codec's, word for word.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import islice
from typing import Any

from goaicore.records.avro.codec import Codec
from goaicore.records.avro.direct_writer import compile_writer, varint, write_direct
from goaicore.records.avro.framing import header
from goaicore.records.avro.generated import NotDirect
from goaicore.records.avro.native import native_histories
from goaicore.records.types import ConversationSnapshot, SnapshotMessage

# The encoded messages kept, by total size: enough for the histories of every
# conversation a worker touches between two of its batches.
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024

_ARRAY_END = b"\x00"


class SnapshotEncoder:
    """Single-object bytes of snapshots, equal to ``codec.encode``'s, reusing message bytes."""

    def __init__(
        self,
        codec: Codec[ConversationSnapshot],
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        native: bool = True,
    ):
        """``native``: write with the compiled core where it is installed (else, and when
        False, with the generated Python writer; the bytes are the same)."""
        self.codec = codec
        self.cache_bytes = cache_bytes
        schema = codec.writer.parsed
        (messages,) = (field for field in schema["fields"] if field["name"] == "messages")
        items = messages["type"]["items"]
        self._write_message = compile_writer(items, SnapshotMessage, within=schema, native=native)
        self.histories = (
            native_histories(items, schema, cache_bytes)
            if native and self._write_message is not None
            else None
        )
        """The compiled core's history cache, where it writes the messages (else None)."""
        overrides: dict[str, Any] = {
            "messages": self._write_messages if self.histories is None else self.histories
        }
        self._write = (
            compile_writer(schema, ConversationSnapshot, overrides=overrides, native=native)
            if self._write_message is not None
            else None
        )
        self._header = header(codec.writer.fingerprint)
        self._histories: OrderedDict[str, _Encoded] = OrderedDict()  # least recent first
        self._remembered = 0
        self._lock = threading.Lock()  # encode_snapshot may be called from any thread

    @property
    def incremental(self) -> bool:
        """Whether the schema is one the direct writer writes (else every encode is the
        codec's, whole)."""
        return self._write is not None

    def encode(self, snapshot: ConversationSnapshot) -> bytes:
        """The snapshot's bytes; ``EncodeError`` (from the codec) when it does not fit."""
        direct = write_direct(self._write, self._header, snapshot)
        return direct if direct is not None else self.codec.encode(snapshot)

    def _write_messages(self, snapshot: ConversationSnapshot, out: list[bytes]) -> None:
        """The ``messages`` array: one block of every item, then the end."""
        messages = snapshot.messages
        if type(messages) is not tuple:
            raise NotDirect("messages not a tuple")
        if messages:
            out.append(varint(len(messages)))
            out.append(self._items(snapshot.conversation_id, messages))
        out.append(_ARRAY_END)

    def _items(self, conversation_id: str, messages: tuple[SnapshotMessage, ...]) -> bytes:
        """The messages' item bytes, reusing the run shared with the conversation's last
        encoding; raises when a message is not one the direct writer takes."""
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
        write = self._write_message
        assert write is not None  # else there is no snapshot writer to call this
        for message in messages[shared:]:
            item: list[bytes] = []
            write(message, item)
            encoded = b"".join(item)
            parts.append(encoded)
            size += len(encoded)
            ends.append(size)
        body = b"".join(parts)
        self._remember(conversation_id, _Encoded(messages, [0, *ends], body))
        return body

    @property
    def remembered_bytes(self) -> int:
        """The size of the encoded histories kept (at most ``cache_bytes``)."""
        if self.histories is not None:
            remembered: int = self.histories.remembered_bytes
            return remembered
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
