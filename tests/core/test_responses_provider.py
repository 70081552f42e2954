"""The Responses API provider, over the real openai SDK against the scripted server: what
only it does (the shared behaviour runs in every core test, with a ``openai-responses``
backend)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest

from goaicore import Chat
from goaicore.conversation.messages import JSONDict, Message
from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.providers.choice import Providers
from goaicore.conversation.providers.registry import wire_for
from goaicore.conversation.providers.responses import NAME, ResponsesProvider, render
from goaicore.conversation.state import encode_state
from goaicore.conversation.validation import validate_history
from goaicore.settings import Settings
from goaicore.testing import ResponsesServer, responses_reply


def get_score(team: str) -> str:
    """The score of a team."""
    return f"{team} 3"


@pytest.fixture
def server() -> Iterator[ResponsesServer]:
    with ResponsesServer() as scripted:
        yield scripted


def chat_on(server: ResponsesServer, **options: object) -> Chat:
    provider = ResponsesProvider(
        "gpt-test",
        api_key="test-key",
        base_url=server.base_url,
        **options,  # type: ignore[arg-type]
    )
    return Chat(provider)


def test_reasoning_goes_back_verbatim_before_its_function_call(server: ResponsesServer) -> None:
    include = {"include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"}}
    chat = chat_on(server, extra_body=include)
    calling = responses_reply(
        reasoning=("Look the score up.", "gAAAAB-first"),
        tool_calls=[("call_1", "get_score", {"team": "Leeds"})],
    )
    server.add(
        calling, responses_reply("Leeds have 3.", reasoning=("Now answer.", "gAAAAB-second"))
    )
    first = chat.chat_with_state(None, user="Leeds?", tools=[get_score])
    assert first.text == "Leeds have 3."
    sent = server.bodies[1]
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    kinds = [item.get("type", item.get("role")) for item in sent["input"]]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output"]
    reasoning = sent["input"][1]
    assert reasoning["encrypted_content"] == "gAAAAB-first"
    assert sent["input"][1:3] == calling.body["output"]  # as they came, in their order
    server.add(responses_reply("Still 3."))
    chat.chat_with_state(first.state, user="And now?", tools=[get_score])
    again = server.bodies[2]["input"]
    assert [i.get("type", i.get("role")) for i in again][4:6] == ["reasoning", "message"]
    assert again[4]["encrypted_content"] == "gAAAAB-second"


def test_an_item_type_this_library_does_not_know_is_kept_and_sent_back(
    server: ResponsesServer,
) -> None:
    unknown = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}}
    message = {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "The theatre opens at 7.", "annotations": []}],
    }
    server.add(responses_reply(items=[unknown, message]), responses_reply("Yes."))
    chat = chat_on(server)
    first = chat.chat_with_state(None, user="When does it open?")
    assert first.text == "The theatre opens at 7."
    chat.chat_with_state(first.state, user="Sure?")
    assert server.bodies[1]["input"][1:3] == [unknown, message]


def test_a_responses_history_converts_for_chat_completions_and_anthropic() -> None:
    raw = {
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_score",
                "arguments": '{"team":"York"}',
            },
        ]
    }
    history = [
        Message.user("York?"),
        wire_for(NAME).assistant(raw),
        Message.tool_result("call_1", "York 3", name="get_score"),
        wire_for(NAME).assistant(
            {"output": [{"type": "message", "content": [{"type": "output_text", "text": "3."}]}]}
        ),
    ]
    for provider in ("openai", "anthropic", NAME):
        validate_history(history, provider)
    openai = wire_for("openai").render(history)
    assert openai[1]["tool_calls"][0]["function"]["arguments"] == '{"team":"York"}'
    assert openai[3] == {"role": "assistant", "content": "3."}
    anthropic = wire_for("anthropic").render(history)
    assert anthropic[1]["content"][0]["type"] == "tool_use"  # the reasoning stays behind
    back = render([Message.assistant("Hi", ()), Message.tool_result("c", "r")])
    assert back == [
        {"role": "assistant", "content": "Hi"},
        {"type": "function_call_output", "call_id": "c", "output": "r"},
    ]


# Input items as an OpenAI Agents SDK session keeps them: their own keys, in their order.
USER_ITEM = {"content": "York?", "role": "user"}
DEVELOPER_ITEM = {
    "type": "message",
    "role": "developer",
    "content": [{"type": "input_text", "text": "Answer in one word."}],
}
CALL_OUTPUT = {"call_id": "call_1", "output": "York 3", "type": "function_call_output"}
CALLING = {
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_score",
            "arguments": '{"team":"York"}',
        },
    ]
}


def kept(message: Message, raw: JSONDict) -> Message:
    """``message`` with the input item it came as, in this provider's format."""
    return dataclasses.replace(message, provider=NAME, raw=raw)


def history_with_input_items() -> list[Message]:
    return [
        kept(Message.user("Answer in one word."), DEVELOPER_ITEM),
        kept(Message.user("York?"), USER_ITEM),
        wire_for(NAME).assistant(CALLING),
        kept(Message.tool_result("call_1", "York 3", name="get_score"), CALL_OUTPUT),
    ]


def test_user_and_tool_messages_go_as_their_input_items_verbatim_in_order() -> None:
    history = history_with_input_items()
    validate_history(history, NAME)
    expected = [DEVELOPER_ITEM, USER_ITEM, *CALLING["output"], CALL_OUTPUT]
    rendered = render(history)
    assert rendered == expected
    # the same keys in the same order
    assert [json.dumps(item) for item in rendered] == [json.dumps(item) for item in expected]
    # Another provider's raw JSON on a user or tool message is not this one's: neutral.
    foreign = [
        dataclasses.replace(Message.user("hi"), provider="openai", raw={"role": "user"}),
    ]
    assert render(foreign) == [{"role": "user", "content": "hi"}]


def test_a_stored_input_item_reaches_the_api_as_it_was_stored(server: ResponsesServer) -> None:
    state = encode_state(history_with_input_items(), NAME)
    server.add(responses_reply("York."))
    result = chat_on(server).chat_with_state(state, user="And Leeds?")
    assert result.text == "York."
    sent = server.bodies[0]["input"]
    assert [json.dumps(item) for item in sent[:5]] == [
        json.dumps(item) for item in [DEVELOPER_ITEM, USER_ITEM, *CALLING["output"], CALL_OUTPUT]
    ]
    assert sent[5] == {"role": "user", "content": "And Leeds?"}


def test_other_providers_render_user_and_tool_messages_from_their_neutral_fields() -> None:
    history = history_with_input_items()
    neutral = [m.neutral() for m in history]
    assert all(m.raw is None for m in neutral)
    assert [m.role for m in neutral] == [m.role for m in history]
    for provider in ("openai", "anthropic"):
        validate_history(history, provider)
        wire = wire_for(provider)
        assert wire.render(history) == wire.render(neutral)
    openai = wire_for("openai").render(history)
    assert openai[0] == {"role": "user", "content": "Answer in one word."}
    assert openai[3] == {"role": "tool", "tool_call_id": "call_1", "content": "York 3"}
    anthropic = wire_for("anthropic").render(history)
    assert anthropic[-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "York 3"}
    ]


def test_settings_choose_the_responses_api_and_price_it_as_openai() -> None:
    settings = Settings(env={"OPENAI_API_KEY": "k", "GOAICORE_OPENAI_API": "responses"})
    providers = Providers(settings)
    assert providers.backend == NAME
    assert isinstance(providers.get(), ResponsesProvider)
    assert Providers(Settings(env={"OPENAI_API_KEY": "k"})).backend == "openai"
    prices = PriceTable()
    assert prices.cost_nanos(NAME, "gpt-4o-mini", 1000, 1000) == prices.cost_nanos(
        "openai", "gpt-4o-mini", 1000, 1000
    )
