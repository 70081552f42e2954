"""The neutral view over raw provider JSON, and the stored form of messages."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from goaicore import Message, ToolCall
from goaicore.conversation.providers.registry import assistant_message
from goaicore.conversation.state import message_from_json, message_to_json

OPENAI_RAW: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "refusal": None,
    "annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}],
    "reasoning_content": "think first",
    "tool_calls": [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_score", "arguments": '{"team": "Leeds"}'},
        }
    ],
}

ANTHROPIC_RAW: dict[str, Any] = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "sig=="},
        {"type": "text", "text": "Let me ", "citations": None},
        {"type": "text", "text": "check.", "future_field": 1},
        {"type": "tool_use", "id": "toolu_1", "name": "get_score", "input": {"team": "York"}},
        {"type": "some_future_block", "data": [1, 2]},
    ],
}


def test_openai_neutral_view_keeps_raw_untouched() -> None:
    raw = copy.deepcopy(OPENAI_RAW)
    m = assistant_message("openai", raw)
    assert m.role == "assistant"
    assert m.text == ""
    assert m.tool_calls == (ToolCall("call_a", "get_score", '{"team": "Leeds"}'),)
    assert m.raw is raw
    assert raw == OPENAI_RAW


def test_anthropic_neutral_view_joins_text_and_reads_tool_use() -> None:
    m = assistant_message("anthropic", copy.deepcopy(ANTHROPIC_RAW))
    assert m.text == "Let me check."
    assert m.tool_calls == (ToolCall("toolu_1", "get_score", '{"team":"York"}'),)
    assert m.raw == ANTHROPIC_RAW


def test_openai_array_content_gives_text_of_the_text_parts() -> None:
    raw = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "a "},
            {"type": "image_url", "image_url": {"url": "https://img"}},
            {"type": "text", "text": "b"},
        ],
    }
    assert assistant_message("openai", raw).text == "a b"


@pytest.mark.parametrize(
    "message",
    [
        assistant_message("openai", copy.deepcopy(OPENAI_RAW)),
        assistant_message("anthropic", copy.deepcopy(ANTHROPIC_RAW)),
        Message.user("hello"),
        Message.user([{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {}}]),
        Message.context("Player checked in at Harrogate Theatre"),
        Message.assistant("hi", [ToolCall("c1", "f", "{}")]),
        Message.tool_result("c1", "", name="f"),
        Message.tool_result("c1", "error: no", name="f", is_error=True),
    ],
)
def test_stored_form_round_trips(message: Message) -> None:
    back = message_from_json(message_to_json(message))
    assert back == message
    assert back.raw == message.raw


USER_ITEM = {"role": "user", "content": [{"type": "input_text", "text": "hi"}], "type": "message"}
CALL_OUTPUT = {"type": "function_call_output", "output": "42", "call_id": "c1"}


@pytest.mark.parametrize(
    "message",
    [
        dataclasses.replace(Message.user("hi"), provider="openai-responses", raw=USER_ITEM),
        dataclasses.replace(
            Message.tool_result("c1", "42", name="f"), provider="openai-responses", raw=CALL_OUTPUT
        ),
        dataclasses.replace(
            Message.user([{"type": "text", "text": "hi"}]), provider="openai-responses", raw={}
        ),
    ],
    ids=["user", "tool", "user-parts"],
)
def test_a_user_or_tool_message_keeps_its_raw_json_beside_its_neutral_fields(
    message: Message,
) -> None:
    stored = message_to_json(message)
    assert stored["raw_input"] is message.raw
    assert stored["provider"] == "openai-responses"
    back = message_from_json(json.loads(json.dumps(stored)))
    assert back == message
    assert json.dumps(back.raw) == json.dumps(message.raw)  # the same keys in the same order
    # A reader that does not know raw_input reads the neutral message.
    older = {k: v for k, v in stored.items() if k not in ("raw_input", "provider")}
    assert message_from_json(older) == message.neutral()


@pytest.mark.parametrize(
    "data",
    [
        "not an object",
        {"role": "wizard", "text": "x"},
        {"role": "assistant", "provider": "openai", "raw": "nope"},
        {"role": "user", "raw": {"content": "x"}, "provider": "openai"},
        {"role": "user", "text": "x", "raw_input": "not an object", "provider": "openai"},
        {"role": "user", "text": "x", "raw_input": {"content": "x"}, "provider": 5},
        {"role": "assistant", "text": "x", "raw_input": {"content": "x"}},
        {"role": "assistant", "provider": "openai", "raw": {"content": 5}},
        {"role": "assistant", "provider": "anthropic", "raw": {"content": [{"type": "text"}]}},
        {"role": "assistant", "provider": "openai", "raw": {"tool_calls": [{"id": "x"}]}},
        {"role": "system", "content": [{"type": "text", "text": "x"}]},
        {"role": "user", "content": ["not a part"]},
        {"role": "tool", "text": 3},
        {"role": "assistant", "tool_calls": [{"id": "a", "name": "b"}]},
    ],
)
def test_unreadable_stored_messages_raise_value_error(data: Any) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        message_from_json(data)


def test_neutral_drops_provider_private_fields() -> None:
    m = assistant_message("openai", copy.deepcopy(OPENAI_RAW)).neutral()
    assert m.raw is None
    assert m.provider is None
    assert m.tool_calls[0].name == "get_score"
    assert "reasoning_content" not in str(message_to_json(m))


def test_neutral_drops_a_user_or_tool_messages_raw_json_and_keeps_the_rest() -> None:
    user = dataclasses.replace(
        Message.user([{"type": "text", "text": "hi"}]), provider="openai-responses", raw=USER_ITEM
    )
    result = dataclasses.replace(
        Message.tool_result("c1", "42", name="f", is_error=True),
        provider="openai-responses",
        raw=CALL_OUTPUT,
    )
    for message in (user, result):
        neutral = message.neutral()
        assert (neutral.raw, neutral.provider) == (None, None)
        assert neutral == dataclasses.replace(message, provider=None)
    assert user.neutral().content == [{"type": "text", "text": "hi"}]
    assert result.neutral().tool_call_id == "c1"
