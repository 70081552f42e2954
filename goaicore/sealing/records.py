"""Seal whole events under their conversation's data key, and open them again.

A sealed event is its skeleton in the clear (:func:`~goaicore.sealing.content.blanked`:
ids, types, times, token counts and costs, so the audit trail stays readable) plus
the whole event as written, framed Avro encrypted (``sealed``). Opening decrypts and
decodes that inner event; when the conversation's data key is gone (erased), the
reader gets the skeleton with marks where the content was, and is told so.

Snapshots and replies are not sealed: they are derived, and leave Kafka within the
erasure window (compaction, retention; docs/operations.md, "Erasure").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from goaicore.records import ConversationEvent, Sealed
from goaicore.records.avro.api import decode_event, encode_event
from goaicore.sealing.aead import OVERHEAD
from goaicore.sealing.cipher import SealBroken, open_seal, seal
from goaicore.sealing.content import blanked, erased
from goaicore.sealing.keys import DataKey

SEAL_ROOM = OVERHEAD + 64
"""What a seal adds besides the skeleton: nonce and tag, the key id, the field's framing."""

KeyLookup = Callable[[str, str], DataKey | None]
"""The data key ``key_id`` of a conversation, or None when it is gone (erased)."""


@dataclass(frozen=True)
class Opened:
    """An event as a reader sees it: whole, or (``readable`` False) its skeleton alone."""

    record: ConversationEvent
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


def open_event(event: ConversationEvent, keys: KeyLookup) -> Opened:
    """``event`` as written; its skeleton with marks once its key is gone."""
    sealed = event.sealed
    if sealed is None:
        return Opened(event, True)
    key = keys(event.conversation_id, sealed.key_id)
    if key is None:
        return Opened(dataclasses.replace(erased(event), sealed=None), False)
    inner = decode_event(open_seal(sealed.data, key, event.conversation_id, event.event_id))
    if inner.conversation_id != event.conversation_id or inner.sealed is not None:
        raise SealBroken(
            f"the sealed record {event.event_id[:80]!r} of conversation "
            f"{event.conversation_id[:80]!r} holds another record"
        )
    return Opened(inner, True)
