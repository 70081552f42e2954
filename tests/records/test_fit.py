"""Fitting a worker's record under the limit: always fits, keeps ids, marks what it cut."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ConversationEvent,
    EventBody,
    ToolCall,
    ToolResult,
    UserMessage,
    new_event,
)
from goaicore.records.avro.api import encode_chat_reply, encode_event
from goaicore.records.avro.fit import LIMIT_NOTE, RecordTooLargeError, fit_event, fit_reply
from tests.records.records_strategies import chat_replies, events

FREE_TEXT = ("text", "content", "summary", "message", "reason", "raw_json", "content_json")


def _inflated(event: ConversationEvent, factor: int) -> ConversationEvent:
    """``event`` with the texts an LLM or a tool controls repeated ``factor`` times."""
    body = event.body
    changes: dict[str, object] = {
        name: getattr(body, name) * factor
        for name in FREE_TEXT
        if isinstance(getattr(body, name, None), str)
    }
    if isinstance(body, AssistantTurn):
        changes["tool_calls"] = tuple(
            dataclasses.replace(c, arguments=c.arguments * factor) for c in body.tool_calls
        )
    return dataclasses.replace(event, body=dataclasses.replace(body, **changes))  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(events, st.integers(1, 400), st.integers(0, 4000))
def test_a_fitted_event_fits_and_keeps_its_identity(
    event: ConversationEvent, factor: int, room: int
) -> None:
    """Any limit with room for the ids and a marker (300 bytes) over the bare event fits."""
    big = _inflated(event, factor)
    limit = len(encode_event(_inflated(event, 0))) + 300 + room
    fitted, cut = fit_event(big, limit)
    assert len(encode_event(fitted)) <= limit
    assert (fitted.event_id, fitted.conversation_id, type(fitted.body)) == (
        big.event_id,
        big.conversation_id,
        type(big.body),
    )
    if len(encode_event(big)) <= limit:
        assert (fitted, cut) == (big, [])
    else:
        assert cut
    if isinstance(fitted.body, AssistantTurn):
        for call in fitted.body.tool_calls:
            if call not in big.body.tool_calls:  # type: ignore[union-attr]
                assert "goaicore_truncated" in json.loads(call.arguments)


@settings(max_examples=200, deadline=None)
@given(chat_replies, st.integers(1, 300), st.integers(400, 4000))
def test_a_fitted_reply_fits(reply: ChatReply, factor: int, limit: int) -> None:
    big = dataclasses.replace(
        reply,
        text=reply.text * factor if reply.text else reply.text,
        error=reply.error * factor if reply.error else reply.error,
    )
    fitted, cut = fit_reply(big, limit)
    assert len(encode_chat_reply(fitted)) <= limit
    assert fitted.request_id == big.request_id
    for name in cut:
        assert LIMIT_NOTE in getattr(fitted, name)


def test_an_event_whose_ids_alone_are_over_the_limit_is_refused_clearly() -> None:
    event = ConversationEvent(
        event_id="e" * 5000,
        conversation_id="c",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        body=AssistantTurn(tool_calls=(ToolCall(id="x", name="t", arguments="{}"),)),
    )
    with pytest.raises(RecordTooLargeError, match="no text left to cut"):
        fit_event(event, 1000)


@pytest.mark.parametrize(
    "body",
    [
        AssistantTurn(text="ok", raw_json='{"content": "' + "x" * 5000 + '"}', provider="openai"),
        UserMessage(
            text="ok",
            raw_json='{"content": "' + "x" * 5000 + '", "role": "user"}',
            provider="openai-responses",
        ),
        ToolResult(
            tool_call_id="c1",
            name="t",
            content="ok",
            raw_json='{"call_id": "c1", "output": "' + "x" * 5000 + '"}',
            provider="openai-responses",
        ),
    ],
    ids=["assistant", "user", "tool"],
)
def test_raw_json_goes_first_and_the_text_stays_whole(body: EventBody) -> None:
    event = new_event("c", body)
    fitted, cut = fit_event(event, 1000)
    assert cut == ["raw_json"]
    assert fitted.body == dataclasses.replace(body, raw_json=None)  # type: ignore[arg-type]
