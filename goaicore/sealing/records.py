"""Seal whole records under their conversation's data key, and open them again.

A sealed record is its skeleton in the clear (:func:`~goaicore.sealing.content.blanked`:
ids, types, times, token counts and costs, so the audit trail stays readable) plus
the whole record as written, framed Avro encrypted (``sealed``). Opening decrypts and
decodes that inner record; when the conversation's data key is gone (erased), the
reader gets the skeleton with marks where the content was, and is told so.

A snapshot keeps even less in the clear (its conversation, fold version and
position): the event log is the audit trail, and the snapshot is derived from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from goaicore.records import ChatReply, ConversationEvent, ConversationSnapshot, Sealed
from goaicore.records.avro.api import (
    decode_chat_reply,
    decode_event,
    decode_snapshot,
    encode_chat_reply,
    encode_event,
    encode_snapshot,
)
from goaicore.sealing.aead import OVERHEAD
from goaicore.sealing.cipher import SealBroken, open_seal, seal
from goaicore.sealing.content import blanked, erased
from goaicore.sealing.keys import DataKey

SEAL_ROOM = OVERHEAD + 64
"""What a seal adds besides the skeleton: nonce and tag, the key id, the field's framing."""

KeyLookup = Callable[[str, str], DataKey | None]
"""The data key ``key_id`` of a conversation, or None when it is gone (erased)."""

R = TypeVar("R", ConversationEvent, ConversationSnapshot, ChatReply)

_SNAPSHOT_ID = "snapshot"


@dataclass(frozen=True)
class Opened(Generic[R]):
    """A record as a reader sees it: whole, or (``readable`` False) its skeleton alone."""

    record: R
    readable: bool


def seal_event(event: ConversationEvent, key: DataKey) -> ConversationEvent:
    """``event``'s skeleton, with the whole event sealed under ``key``."""
    data = seal(encode_event(event), key, event.conversation_id, event.event_id)
    return dataclasses.replace(blanked(event), sealed=Sealed(key_id=key.key_id, data=data))


def sealed_room(event: ConversationEvent) -> int:
    """At least the bytes sealing adds to ``event``'s encoding (its skeleton beside it):
    fitting an event into ``limit - sealed_room(event)`` fits its sealed form into
    ``limit``. Cutting its content changes nothing here (a skeleton holds none)."""
    return len(encode_event(blanked(event))) + SEAL_ROOM


def seal_reply(reply: ChatReply, key: DataKey) -> ChatReply:
    """``reply``'s skeleton (status, usage, latency), with the whole reply sealed."""
    data = seal(encode_chat_reply(reply), key, reply.conversation_id, reply.request_id)
    return dataclasses.replace(blanked(reply), sealed=Sealed(key_id=key.key_id, data=data))


def seal_snapshot(snapshot: ConversationSnapshot, key: DataKey) -> ConversationSnapshot:
    """Only ``snapshot``'s conversation, fold version and position, with the rest sealed."""
    data = seal(encode_snapshot(snapshot), key, snapshot.conversation_id, _SNAPSHOT_ID)
    return ConversationSnapshot(
        conversation_id=snapshot.conversation_id,
        format_version=snapshot.format_version,
        last_position=snapshot.last_position,
        sealed=Sealed(key_id=key.key_id, data=data),
    )


def open_event(event: ConversationEvent, keys: KeyLookup) -> Opened[ConversationEvent]:
    """``event`` as written; its skeleton with marks once its key is gone."""
    return _open(event, keys, event.event_id, decode_event)


def open_reply(reply: ChatReply, keys: KeyLookup) -> Opened[ChatReply]:
    """``reply`` as written; its skeleton with marks once its key is gone."""
    return _open(reply, keys, reply.request_id, decode_chat_reply)


def open_snapshot(snapshot: ConversationSnapshot, keys: KeyLookup) -> Opened[ConversationSnapshot]:
    """``snapshot`` as written; once its key is gone, only what was in the clear."""
    return _open(snapshot, keys, _SNAPSHOT_ID, decode_snapshot)


def _open(record: R, keys: KeyLookup, record_id: str, decode: Callable[[bytes], R]) -> Opened[R]:
    sealed = record.sealed
    if sealed is None:
        return Opened(record, True)
    key = keys(record.conversation_id, sealed.key_id)
    if key is None:
        shown = record if isinstance(record, ConversationSnapshot) else erased(record)
        return Opened(dataclasses.replace(shown, sealed=None), False)
    inner = decode(open_seal(sealed.data, key, record.conversation_id, record_id))
    if inner.conversation_id != record.conversation_id or inner.sealed is not None:
        raise SealBroken(
            f"the sealed record {record_id[:80]!r} of conversation "
            f"{record.conversation_id[:80]!r} holds another record"
        )
    return Opened(inner, True)
