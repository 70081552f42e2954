"""Token counting: the exact OpenAI counter against published API counts; additivity."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from goaicore import Message, ToolCall
from goaicore.conversation.compaction import HeuristicCounter, OpenAITokenCounter, TokenCounter
from goaicore.conversation.tools import Tool

from .histories import conversations

# The OpenAI cookbook's "How to count tokens with tiktoken" examples and the
# usage.prompt_tokens the API returned for them.
JARGON = [
    (
        "system",
        None,
        "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    ),
    ("system", "example_user", "New synergies will help drive top-line growth."),
    ("system", "example_assistant", "Things working well together will increase revenue."),
    (
        "system",
        "example_user",
        "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    ),
    (
        "system",
        "example_assistant",
        "Let's talk later when we're less busy about how to do better.",
    ),
    (
        "user",
        None,
        "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    ),
]
WEATHER_SYSTEM = "You are a helpful assistant that can answer to questions about the weather."
WEATHER_USER = "What's the weather like in San Francisco?"


def _weather(**_: Any) -> str:
    return "sunny"


WEATHER_TOOL = Tool(
    name="get_current_weather",
    description="Get the current weather in a given location",
    parameters={
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            },
            "unit": {
                "type": "string",
                "description": "The unit of temperature to return",
                "enum": ["celsius", "fahrenheit"],
            },
        },
        "required": ["location"],
    },
    fn=_weather,
)


@pytest.mark.parametrize(
    ("model", "encoding", "expected"),
    [
        ("gpt-4", "cl100k_base", 129),
        ("gpt-3.5-turbo", "cl100k_base", 129),
        ("gpt-4o", "o200k_base", 124),
        ("gpt-4o-mini", "o200k_base", 124),
    ],
)
def test_messages_count_as_the_api_billed_them(model: str, encoding: str, expected: int) -> None:
    counter = OpenAITokenCounter(model)
    assert counter.encoding_name == encoding
    total = 3 + sum(counter.count_chat_message(role, text, name) for role, name, text in JARGON)
    assert total == expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-4", 105), ("gpt-3.5-turbo", 105), ("gpt-4o", 101), ("gpt-4o-mini", 101)],
)
def test_system_prompt_tools_and_messages_count_as_billed(model: str, expected: int) -> None:
    counter = OpenAITokenCounter(model)
    request = counter.count_request(
        [Message.user(WEATHER_USER)], system=[WEATHER_SYSTEM], tools=[WEATHER_TOOL]
    )
    assert request == expected


def test_the_documented_overheads() -> None:
    counter = OpenAITokenCounter("gpt-4o")
    assert counter.count_text("hello world") == 2
    assert counter.count_request([]) == 3  # the reply priming
    assert counter.count_message(Message.user("hello world")) == 3 + 1 + 2  # framing, role, text
    call = ToolCall("c1", "get_score", '{"team":"Leeds"}')
    assert counter.count_message(Message.assistant("", [call])) == (
        3 + 1 + 3 + counter.count_text("get_score") + counter.count_text(call.arguments)
    )
    result = Message.tool_result("c1", "3", name="get_score")
    assert counter.count_message(result) == 3 + 1 + 1 + counter.count_text("get_score") + 1


def test_special_tokens_in_user_text_are_plain_text() -> None:
    counter = OpenAITokenCounter("gpt-4o")
    assert counter.count_text("<|endoftext|>") > 1


def test_an_unknown_model_uses_the_current_encoding() -> None:
    assert OpenAITokenCounter("my-finetune").encoding_name == "o200k_base"
    assert OpenAITokenCounter(encoding="cl100k_base").encoding_name == "cl100k_base"


def test_the_heuristic_is_close_to_exact_counts_on_prose() -> None:
    exact, quick = OpenAITokenCounter("gpt-4o"), HeuristicCounter()
    messages = [Message.user(text) for _, _, text in JARGON]
    e = exact.count_request(messages, system=[WEATHER_SYSTEM], tools=[WEATHER_TOOL])
    q = quick.count_request(messages, system=[WEATHER_SYSTEM], tools=[WEATHER_TOOL])
    assert 0.7 * e <= q <= 1.5 * e
    assert quick.count_text("abcd") == 1
    assert quick.count_text("abcde") == 2
    assert quick.count_text("") == 0


COUNTERS: list[TokenCounter] = [HeuristicCounter(), OpenAITokenCounter("gpt-4o")]


@pytest.mark.parametrize("counter", COUNTERS, ids=["heuristic", "openai"])
@settings(max_examples=40, deadline=None)
@given(history=conversations(max_exchanges=4))
def test_counters_are_additive_and_deterministic(
    counter: TokenCounter, history: list[Message]
) -> None:
    system, tools = ["Be brief."], [WEATHER_TOOL]
    whole = counter.count_request(history, system=system, tools=tools)
    parts = counter.count_request([], system=system, tools=tools) + sum(
        counter.count_message(m) for m in history
    )
    assert whole == parts
    assert counter.count_request(history, system=system, tools=tools) == whole
    assert all(counter.count_message(m) > 0 for m in history)
