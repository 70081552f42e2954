"""Rendering neutral histories to the OpenAI and Anthropic request shapes."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import given, settings

from goaicore import Message, ToolCall
from goaicore.conversation.providers.anthropic import CONTEXT_PREFIX
from goaicore.conversation.providers.anthropic import render as render_anthropic
from goaicore.conversation.providers.openai import render as render_openai
from goaicore.conversation.providers.registry import assistant_message

from .strategies import valid_histories

OPENAI_RAW: dict[str, Any] = {
    "role": "assistant",
    "content": "Hi",
    "refusal": None,
    "reasoning_content": "private",
}
ANTHROPIC_RAW: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "redacted_thinking", "data": "xyz"}, {"type": "text", "text": "Hi"}],
}


def test_openai_sends_own_raw_verbatim_and_context_as_system() -> None:
    history = [
        Message.user("hello"),
        assistant_message("openai", copy.deepcopy(OPENAI_RAW)),
        Message.context("Player checked in"),
    ]
    rendered = render_openai(history)
    assert rendered[1] == OPENAI_RAW
    assert rendered[2] == {"role": "system", "content": "Player checked in"}


def test_openai_renders_other_providers_messages_from_the_neutral_view() -> None:
    raw = copy.deepcopy(ANTHROPIC_RAW)
    raw["content"].append({"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}})
    history = [Message.user("q"), assistant_message("anthropic", raw)]
    history.append(Message.tool_result("t1", "42", name="f"))
    rendered = render_openai(history)
    assert rendered[1] == {
        "role": "assistant",
        "content": "Hi",
        "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    }
    assert rendered[2] == {"role": "tool", "tool_call_id": "t1", "content": "42"}


def test_anthropic_batches_one_steps_results_and_merges_context() -> None:
    calls = [ToolCall("a", "f", "{}"), ToolCall("b", "g", '{"x": 1}')]
    history = [
        Message.context("event before anything"),
        Message.user("go"),
        Message.assistant("", calls),
        Message.tool_result("a", "1", name="f"),
        Message.tool_result("b", "", name="g", is_error=False),
        Message.assistant("done"),
        Message.context("later event"),
        Message.user("next"),
    ]
    rendered = render_anthropic(history)
    assert [m["role"] for m in rendered] == ["user", "assistant", "user", "assistant", "user"]
    assert rendered[0]["content"] == [
        {"type": "text", "text": CONTEXT_PREFIX + "event before anything"},
        {"type": "text", "text": "go"},
    ]
    assert rendered[1]["content"][1] == {
        "type": "tool_use",
        "id": "b",
        "name": "g",
        "input": {"x": 1},
    }
    # one user message, results in call order; the empty result carries no content
    assert rendered[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "1"},
        {"type": "tool_result", "tool_use_id": "b"},
    ]
    assert rendered[4]["content"][0]["text"] == CONTEXT_PREFIX + "later event"


def test_anthropic_marks_error_results_and_skips_empty_replies() -> None:
    history = [
        Message.user("a"),
        assistant_message("anthropic", {"role": "assistant", "content": []}),
        Message.user("b"),
        Message.assistant("", [ToolCall("t", "f", "not json")]),
        Message.tool_result("t", "error: bad", name="f", is_error=True),
    ]
    rendered = render_anthropic(history)
    assert [m["role"] for m in rendered] == ["user", "assistant", "user"]
    assert rendered[0]["content"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert rendered[1]["content"][0]["input"] == {}
    assert rendered[2]["content"][0]["is_error"] is True


def test_multimodal_parts_are_converted_between_shapes() -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
    ]
    anthropic = render_anthropic([Message.user(parts)])[0]["content"]
    assert anthropic[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    assert anthropic[2] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.com/a.png"},
    }
    back = render_openai([Message.user(anthropic)])[0]["content"]
    assert back == parts


@settings(max_examples=60, deadline=None)
@given(valid_histories())
def test_anthropic_rendering_alternates_and_answers_tool_uses(history: list[Message]) -> None:
    rendered = render_anthropic(history)
    roles = [m["role"] for m in rendered]
    assert all(a != b for a, b in itertools.pairwise(roles))
    if rendered:
        assert roles[0] == "user"
    for i, m in enumerate(rendered):
        uses = [
            b["id"] for b in m["content"] if m["role"] == "assistant" and b["type"] == "tool_use"
        ]
        if uses:
            following = rendered[i + 1]["content"]
            results = [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
            assert results == uses
            kinds = [b["type"] for b in following]
            assert kinds[: len(uses)] == ["tool_result"] * len(uses)


@settings(max_examples=60, deadline=None)
@given(valid_histories())
def test_openai_rendering_puts_results_right_after_their_calls(history: list[Message]) -> None:
    rendered = render_openai(history)
    assert len(rendered) == len(history)
    for i, m in enumerate(rendered):
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            answers = [r["tool_call_id"] for r in rendered[i + 1 : i + 1 + len(ids)]]
            assert answers == ids
