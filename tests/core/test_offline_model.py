"""OfflineProvider: deterministic, labelled, no network, and able to call tools."""

from __future__ import annotations

import socket
from typing import Any, Literal

import pytest

from goaicore import Chat, Message, tool
from goaicore.conversation.providers import OFFLINE_MODEL, OFFLINE_PREFIX, OfflineProvider
from goaicore.conversation.state import message_to_json


@tool
def get_score(team: str) -> dict[str, Any]:
    """Current score of a team."""
    return {"team": team, "score": 3}


@tool
def book_seats(venue: str, seats: int, side: Literal["stalls", "circle"], vip: bool) -> str:
    """Book seats."""
    return f"{seats} {side} seats at {venue}, vip={vip}"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the offline model opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.mark.usefixtures("no_network")
def test_echoes_and_is_labelled() -> None:
    chat = Chat(OfflineProvider())
    result = chat.chat_with_state(None, system="sys", user="hello there")
    assert result.text == f"{OFFLINE_PREFIX}You said: hello there"
    assert result.model == OFFLINE_MODEL == "goaicore-offline"
    assert result.messages[-1].provider == "offline"
    assert result.usage.llm_calls == 1
    assert result.usage.completion_tokens > 0


@pytest.mark.usefixtures("no_network")
def test_calls_a_named_tool_then_answers_with_its_result() -> None:
    chat = Chat(OfflineProvider())
    result = chat.chat_with_state(
        None, user="What is the get_score for team Leeds?", tools=[get_score]
    )
    assistant, tool_result, _answer = result.new_messages[1:]
    assert [(c.name, c.arguments) for c in assistant.tool_calls] == [
        ("get_score", '{"team":"Leeds"}')
    ]
    assert tool_result.text == '{"team": "Leeds", "score": 3}'
    assert result.text == f'{OFFLINE_PREFIX}get_score returned {{"team": "Leeds", "score": 3}}'
    assert result.usage.llm_calls == 2


@pytest.mark.usefixtures("no_network")
def test_fills_every_required_parameter_from_the_message() -> None:
    chat = Chat(OfflineProvider())
    result = chat.chat_with_state(
        None, user="please book seats for 4 in the circle, venue Harrogate", tools=[book_seats]
    )
    call = result.new_messages[1].tool_calls[0]
    assert call.arguments == '{"venue":"Harrogate","seats":4,"side":"circle","vip":true}'
    assert (
        result.text == f"{OFFLINE_PREFIX}book_seats returned 4 circle seats at Harrogate, vip=True"
    )


@pytest.mark.usefixtures("no_network")
def test_several_named_tools_are_called_in_one_step() -> None:
    chat = Chat(OfflineProvider())
    result = chat.chat_with_state(
        None, user="get score for team York then book seats", tools=[get_score, book_seats]
    )
    assert [c.name for c in result.new_messages[1].tool_calls] == ["get_score", "book_seats"]
    assert result.text.startswith(OFFLINE_PREFIX + "get_score returned")
    assert "book_seats returned" in result.text


async def test_is_deterministic() -> None:
    async def run() -> list[dict[str, Any]]:
        chat = Chat(OfflineProvider())
        state = chat.append_to_state(None, "Player checked in")
        for text in ["hi", "get_score team Leeds", "bye"]:
            state = (await chat.achat_with_state(state, user=text, tools=[get_score])).state
        return [message_to_json(m) for m in chat.read_state(state).messages]

    assert await run() == await run()


def test_does_not_call_a_tool_that_is_not_offered_or_named() -> None:
    chat = Chat(OfflineProvider())
    assert chat.chat(user="get_score please") == f"{OFFLINE_PREFIX}You said: get_score please"
    result = chat.run_turn([], user="hello", tools=[get_score])
    assert [m.role for m in result.new_messages] == ["user", "assistant"]


def test_answers_after_tool_results_in_a_given_history() -> None:
    chat = Chat(OfflineProvider())
    history = [Message.user("x")]
    result = chat.run_turn(history, user=[Message.user([{"type": "text", "text": "parts"}])])
    assert result.text == f"{OFFLINE_PREFIX}You said: parts"
