"""Sealed records: the whole record opens under its key; without it, the skeleton alone."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings

from goaicore.records import (
    ChatReply,
    ConversationEvent,
    ConversationSnapshot,
    LogPosition,
    ReplyStatus,
    Usage,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import encode
from goaicore.sealing.cipher import SealBroken
from goaicore.sealing.content import MARK, blanked
from goaicore.sealing.keys import DataKey
from goaicore.sealing.records import (
    open_event,
    open_reply,
    open_snapshot,
    seal_event,
    seal_reply,
    seal_snapshot,
)
from tests.records.records_strategies import chat_replies, events, snapshots

KEY = DataKey.generate()


def held(conversation_id: str, key_id: str) -> DataKey | None:
    return KEY if key_id == KEY.key_id else None


def gone(conversation_id: str, key_id: str) -> DataKey | None:
    return None


SEAL_AND_OPEN: list[Any] = [
    (seal_event, open_event),
    (seal_reply, open_reply),
    (seal_snapshot, open_snapshot),
]


@settings(max_examples=150, deadline=None)
@given(events | chat_replies | snapshots)
def test_any_record_sealed_opens_to_itself_and_encodes(record: Any) -> None:
    record = dataclasses.replace(record, sealed=None)
    seal, open_ = SEAL_AND_OPEN[
        [ConversationEvent, ChatReply, ConversationSnapshot].index(type(record))
    ]
    sealed = seal(record, KEY)
    encode(sealed)  # it is a valid record of its schema
    assert sealed.sealed.key_id == KEY.key_id
    opened = open_(sealed, held)
    assert opened.readable
    assert opened.record == record
    without = open_(sealed, gone)
    assert not without.readable
    assert without.record.sealed is None


def test_an_event_whose_key_is_gone_keeps_its_skeleton_and_shows_marks() -> None:
    event = new_event("player-7", UserMessage(text="I live at 4 Tower Lane", name="Alice"))
    sealed = seal_event(event, KEY)
    assert b"Tower" not in encode(sealed)
    assert sealed.body == blanked(event.body)
    shown = open_event(sealed, gone).record
    assert (shown.event_id, shown.occurred_at, shown.source) == (
        event.event_id,
        event.occurred_at,
        event.source,
    )
    assert shown.body == UserMessage(text=MARK, name=MARK)


def test_a_reply_keeps_its_status_usage_and_latency_in_the_clear() -> None:
    reply = ChatReply(
        request_id="r" * 32,
        conversation_id="player-7",
        status=ReplyStatus.OK,
        text="The tower is north of the bridge.",
        usage=Usage(prompt_tokens=10, completion_tokens=9, total_tokens=19),
        latency_ms=42,
    )
    shown = open_reply(seal_reply(reply, KEY), gone).record
    assert (shown.status, shown.usage, shown.latency_ms, shown.text) == (
        ReplyStatus.OK,
        reply.usage,
        42,
        MARK,
    )


def test_a_snapshot_keeps_only_its_conversation_version_and_position_in_the_clear() -> None:
    snapshot = ConversationSnapshot(
        conversation_id="player-7",
        format_version=3,
        last_position=LogPosition(partition=1, offset=9),
        event_count=10,
        title="Alice's quest",
    )
    sealed = seal_snapshot(snapshot, KEY)
    assert b"Alice" not in encode(sealed)
    shown = open_snapshot(sealed, gone).record
    assert shown == ConversationSnapshot(
        conversation_id="player-7", format_version=3, last_position=snapshot.last_position
    )


def test_a_seal_moved_to_another_record_does_not_open() -> None:
    first = seal_event(new_event("c", UserMessage(text="one")), KEY)
    second = seal_event(new_event("c", UserMessage(text="two")), KEY)
    with pytest.raises(SealBroken, match="does not open"):
        open_event(dataclasses.replace(second, sealed=first.sealed), held)
