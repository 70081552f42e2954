"""Sealed records: the whole record opens under its key; without it, the skeleton alone."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from goaicore.records import (
    ConversationEvent,
    ToolResult,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import encode
from goaicore.sealing.cipher import SealBroken
from goaicore.sealing.content import MARK, blanked
from goaicore.sealing.keys import DataKey
from goaicore.sealing.records import open_event, seal_event
from tests.records.records_strategies import events

KEY = DataKey.generate()


def held(conversation_id: str, key_id: str) -> DataKey | None:
    return KEY if key_id == KEY.key_id else None


def gone(conversation_id: str, key_id: str) -> DataKey | None:
    return None


@settings(max_examples=150, deadline=None)
@given(events)
def test_any_event_sealed_opens_to_itself_and_encodes(event: ConversationEvent) -> None:
    event = dataclasses.replace(event, sealed=None)
    sealed = seal_event(event, KEY)
    encode(sealed)  # it is a valid record of its schema
    assert sealed.sealed is not None
    assert sealed.sealed.key_id == KEY.key_id
    opened = open_event(sealed, held)
    assert opened.readable
    assert opened.record == event
    without = open_event(sealed, gone)
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


def test_a_seal_moved_to_another_record_does_not_open() -> None:
    first = seal_event(new_event("c", UserMessage(text="one")), KEY)
    second = seal_event(new_event("c", UserMessage(text="two")), KEY)
    with pytest.raises(SealBroken, match="does not open"):
        open_event(dataclasses.replace(second, sealed=first.sealed), held)


@pytest.mark.parametrize(
    "body",
    [
        UserMessage(
            text="I live at 4 Tower Lane",
            raw_json='{"content": "I live at 4 Tower Lane", "role": "user"}',
            provider="openai-responses",
        ),
        ToolResult(
            tool_call_id="c1",
            name="address",
            content="4 Tower Lane",
            raw_json='{"call_id": "c1", "output": "4 Tower Lane", "type": "function_call_output"}',
            provider="openai-responses",
        ),
    ],
    ids=["user", "tool"],
)
def test_a_message_with_raw_json_opens_whole_and_its_skeleton_keeps_no_raw_json(
    body: UserMessage | ToolResult,
) -> None:
    event = new_event("player-7", body)
    sealed = seal_event(event, KEY)
    assert b"Tower" not in encode(sealed)
    assert _raw(sealed) == (None, "openai-responses")  # whose format it is: not content
    opened = open_event(sealed, held).record
    assert opened == event
    assert _raw(opened) == (body.raw_json, "openai-responses")
    assert _raw(open_event(sealed, gone).record) == (None, "openai-responses")


def _raw(event: ConversationEvent) -> tuple[str | None, str | None]:
    """The raw JSON of a user message's or tool result's event, and whose format it is."""
    assert isinstance(event.body, UserMessage | ToolResult)
    return event.body.raw_json, event.body.provider
