"""Which records of ``events`` the fold takes in: one rule for every reader of the log.

The store worker, the projector and the history reader (replay, verify) must
agree on it, or a replay folds a record the worker set aside and the two
snapshots differ. A record is folded when it decodes, its key is its event's
conversation id, and that id fits in a snapshot; anything else is a dead letter.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from goaicore.records import ConversationEvent
from goaicore.records.avro.api import decode_event
from goaicore.records.avro.errors import DecodeError

if TYPE_CHECKING:
    from goaicore.sealing.records import KeyLookup

MAX_CONVERSATION_ID_BYTES = 4096
"""Longest conversation id folded: its snapshot must fit a record beside the history."""


@dataclass(frozen=True)
class Unfoldable:
    """Why a record of ``events`` is not folded: a dead letter's reason and detail."""

    reason: str
    detail: str


class Admitted(NamedTuple):
    """An event admitted, and whether it was sealed and is here opened (in the clear).

    A named tuple: one is made per event read, and a frozen dataclass cost a third of a
    microsecond more to build."""

    event: ConversationEvent
    opened: bool = False


def admit(
    key: bytes | None, value: bytes | None, keys: KeyLookup | None = None
) -> ConversationEvent | Unfoldable:
    """The event a record of ``events`` holds, or why the fold does not take it.

    A sealed event is opened with ``keys``; once its key is gone (or with no keys at
    all) it is folded as its skeleton, content marked erased (what the conversation's
    erasure folds to anyway), and keeps its seal: ``event.sealed`` set means unread.
    """
    admitted = admit_record(key, value, keys)
    return admitted if isinstance(admitted, Unfoldable) else admitted.event


def admit_record(
    key: bytes | None, value: bytes | None, keys: KeyLookup | None = None
) -> Admitted | Unfoldable:
    """:func:`admit`, also saying whether the event was opened from a seal."""
    try:
        event = decode_event(value)
    except DecodeError as err:
        return Unfoldable(err.reason, err.message)
    opened = False
    if event.sealed is not None:
        inner = _opened(event, keys)
        if isinstance(inner, Unfoldable):
            return inner
        event, opened = inner, inner.sealed is None
    if key is None or key != event.conversation_id.encode():
        shown = key if key is None or len(key) <= 200 else key[:200] + b"..."
        return Unfoldable(
            "key-mismatch",
            f"record key {shown!r} is not the event's conversation id "
            f"{event.conversation_id[:200]!r}",
        )
    if len(key) > MAX_CONVERSATION_ID_BYTES:
        return Unfoldable(
            "conversation-id-too-long",
            f"a conversation id of {len(key)} bytes (at most {MAX_CONVERSATION_ID_BYTES}): "
            "its snapshot could not be written",
        )
    return Admitted(event, opened)


def _opened(event: ConversationEvent, keys: KeyLookup | None) -> ConversationEvent | Unfoldable:
    if keys is None:  # no master keys here: nothing sealed can be opened
        from goaicore.sealing.content import erased

        return erased(event)
    from goaicore.sealing.cipher import SealBroken
    from goaicore.sealing.records import open_event

    try:
        opened = open_event(event, keys)
        if not opened.readable:
            return dataclasses.replace(opened.record, sealed=event.sealed)
        return opened.record
    except SealBroken as err:
        return Unfoldable("seal-broken", str(err))
    except DecodeError as err:
        return Unfoldable(err.reason, f"inside the seal: {err.message}")
