"""Provider-faithful storage: raw JSON kept, sent back verbatim, converted on request."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from goaicore import Chat, Message, tool
from goaicore.conversation.providers import AnthropicProvider, OpenAIProvider
from goaicore.testing import AnthropicServer, OpenAIServer


@tool
def lookup(name: str) -> str:
    """Look a name up."""
    return f"{name}: found"


def openai_chat(server: OpenAIServer, **kwargs: Any) -> Chat:
    return Chat(OpenAIProvider("gpt-test", api_key="k", base_url=server.base_url), **kwargs)


def anthropic_chat(server: AnthropicServer, **kwargs: Any) -> Chat:
    provider = AnthropicProvider("claude-test", api_key="k", base_url=server.base_url)
    return Chat(provider, **kwargs)


def test_openai_private_fields_survive_the_state_and_go_back(openai_server: OpenAIServer) -> None:
    extra = {
        "refusal": None,
        "reasoning_content": "I should call lookup",
        "annotations": [{"type": "url_citation", "url_citation": {"url": "https://a"}}],
        "provider_specific": {"nested": [1, {"x": None}]},
    }
    openai_server.reply(tool_calls=[("call_9", "lookup", {"name": "Ada"})], extra=extra)
    openai_server.reply("Ada is found", extra={"reasoning_content": "done"})
    chat = openai_chat(openai_server)
    first = chat.chat_with_state(None, user="find Ada", tools=[lookup])
    openai_server.reply("bye")
    chat.chat_with_state(first.state, user="thanks")
    sent = openai_server.bodies[-1]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_9",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"name": "Ada"}'},
            }
        ],
        **extra,
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "Ada: found"}
    assert sent[3]["reasoning_content"] == "done"
    assert sent[3]["annotations"] == []


def test_openai_array_content_is_stored_and_sent_back_verbatim(
    openai_server: OpenAIServer,
) -> None:
    parts = [
        {"type": "text", "text": "Here: "},
        {"type": "output_audio", "id": "audio_1"},
        {"type": "text", "text": "done"},
    ]
    openai_server.reply(content=parts)
    chat = openai_chat(openai_server)
    first = chat.chat_with_state(None, user="hi")
    assert first.text == "Here: done"
    openai_server.reply("ok")
    chat.chat_with_state(first.state, user="again")
    assert openai_server.bodies[-1]["messages"][1]["content"] == parts


def test_anthropic_blocks_survive_the_state_and_go_back(anthropic_server: AnthropicServer) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "The user wants Ada.", "signature": "EqQBCgIYAh=="},
        {"type": "redacted_thinking", "data": "EmwKAhgB"},
        {"type": "text", "text": "Looking up.", "citations": None, "new_field": {"k": 1}},
        {"type": "tool_use", "id": "toolu_7", "name": "lookup", "input": {"name": "Ada"}},
        {"type": "server_tool_use_future", "id": "x", "payload": [1, 2]},
    ]
    anthropic_server.reply(blocks=copy.deepcopy(blocks), stop_reason="tool_use")
    anthropic_server.reply("Ada is found")
    chat = anthropic_chat(anthropic_server)
    first = chat.chat_with_state(None, user="find Ada", tools=[lookup])
    assert first.new_messages[1].text == "Looking up."
    anthropic_server.reply("bye")
    chat.chat_with_state(first.state, user="thanks")
    for body in anthropic_server.bodies[1:]:
        assert body["messages"][1] == {"role": "assistant", "content": blocks}
        assert body["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_7", "content": "Ada: found"}
        ]


def test_an_empty_anthropic_reply_is_kept_but_not_sent_back(
    anthropic_server: AnthropicServer,
) -> None:
    anthropic_server.reply(blocks=[])
    chat = anthropic_chat(anthropic_server)
    first = chat.chat_with_state(None, user="say nothing")
    assert first.text == ""
    anthropic_server.reply("now something")
    second = chat.chat_with_state(first.state, user="say something")
    assert anthropic_server.bodies[-1]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "say nothing"},
                {"type": "text", "text": "say something"},
            ],
        }
    ]
    assert [m.role for m in chat.read_state(second.state).messages] == ["user", "assistant"] * 2


def test_multimodal_user_content_is_stored_and_rendered_per_provider(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "What is on this ticket?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    openai_server.reply("A theatre ticket")
    chat = openai_chat(openai_server, on_provider_mismatch="convert")
    first = chat.chat_with_state(None, user=[Message.user(parts)])
    openai_server.reply("yes")
    chat.chat_with_state(first.state, user="sure?")
    assert openai_server.bodies[-1]["messages"][0] == {"role": "user", "content": parts}

    anthropic_server.reply("Converted")
    other = anthropic_chat(anthropic_server, on_provider_mismatch="convert")
    other.chat_with_state(first.state, user="and now?")
    sent = anthropic_server.bodies[-1]["messages"]
    assert sent[0]["content"][1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }


def test_provider_mismatch_resets_by_default_and_converts_on_request(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    openai_server.reply(
        tool_calls=[("call_1", "lookup", {"name": "Ada"})], extra={"reasoning_content": "secret"}
    )
    openai_server.reply("Ada is found", extra={"refusal": None})
    state = openai_chat(openai_server).chat_with_state(None, user="find Ada", tools=[lookup]).state

    anthropic_server.reply("fresh")
    reset = anthropic_chat(anthropic_server).chat_with_state(state, user="hello")
    assert reset.state_reset == "provider_mismatch"
    assert anthropic_server.bodies[-1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ]

    anthropic_server.reply("converted")
    converted = anthropic_chat(anthropic_server, on_provider_mismatch="convert").chat_with_state(
        state, user="hello"
    )
    assert converted.state_reset is None
    assert anthropic_server.bodies[-1]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "find Ada"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"name": "Ada"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "Ada: found"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Ada is found"}]},
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
    ]
    assert "secret" not in str(anthropic_server.bodies[-1])
    stored = anthropic_chat(anthropic_server).read_state(converted.state)
    assert stored.reset_reason is None
    assert stored.messages[-1].provider == "anthropic"


def test_usage_includes_cached_prompt_tokens(anthropic_server: AnthropicServer) -> None:
    from goaicore.testing import ScriptedResponse, anthropic_reply

    response = anthropic_reply("cached")
    body = dict(response.body)
    body["usage"] = {
        "input_tokens": 5,
        "output_tokens": 7,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
    }
    anthropic_server.add(ScriptedResponse(200, body))
    result = anthropic_chat(anthropic_server).chat_with_state(None, user="hi")
    assert result.usage.prompt_tokens == 1105
    assert result.usage.completion_tokens == 7
    assert result.usage.total_tokens == 1112
    assert result.model == "claude-test"


def test_request_options_reach_the_wire(
    openai_server: OpenAIServer, anthropic_server: AnthropicServer
) -> None:
    openai_server.reply("ok")
    provider = OpenAIProvider(
        "gpt-x",
        api_key="k",
        base_url=openai_server.base_url,
        temperature=0.2,
        max_tokens=50,
        extra_body={"reasoning_effort": "low"},
    )
    Chat(provider).chat(user="hi", tools=[lookup])
    body = openai_server.bodies[-1]
    assert body["model"] == "gpt-x"
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 50
    assert body["reasoning_effort"] == "low"
    assert body["tools"][0]["function"]["name"] == "lookup"
    assert openai_server.requests[-1].headers["authorization"] == "Bearer k"

    anthropic_server.reply("ok")
    Chat(
        AnthropicProvider(
            "claude-x", api_key="ak", base_url=anthropic_server.base_url, max_tokens=99
        )
    ).chat(system="be kind", user="hi", tools=[lookup])
    body = anthropic_server.bodies[-1]
    assert body["max_tokens"] == 99
    assert body["system"] == [{"type": "text", "text": "be kind"}]
    assert body["tools"][0]["input_schema"]["required"] == ["name"]
    headers = anthropic_server.requests[-1].headers
    assert headers.get("x-api-key") == "ak" or headers.get("authorization") == "Bearer ak"


def test_each_event_loop_gets_its_own_client_closed_with_the_loop(
    openai_server: OpenAIServer,
) -> None:
    provider = OpenAIProvider("gpt-test", api_key="k", base_url=openai_server.base_url)
    chat = Chat(provider)
    clients: list[Any] = []

    async def turn(text: str) -> str:
        clients.append(await provider._sdk.clients.get())
        return await chat.achat(user=text)

    openai_server.reply("one").reply("two").reply("three")
    assert asyncio.run(turn("a")) == "one"
    assert asyncio.run(turn("b")) == "two"  # a new loop: no stale pooled connection
    assert clients[0] is not clients[1]
    assert clients[0].is_closed()
    assert chat.chat(user="c") == "three"  # the sync API's own loop


async def test_async_twins(openai_server: OpenAIServer) -> None:
    chat = openai_chat(openai_server)
    state = await chat.aappend_to_state(None, "Player joined")
    openai_server.reply("welcome")
    turn = await chat.arun_turn(chat.read_state(state).messages, user="hi", system="s")
    assert turn.text == "welcome"
    assert [m.role for m in turn.messages] == ["system", "user", "assistant"]
    assert [m.role for m in turn.new_messages] == ["user", "assistant"]
    assert turn.finish_reason == "stop"
    openai_server.reply("plain")
    assert await chat.achat(user="x") == "plain"
