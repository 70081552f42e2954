"""Streamed turns: progress as it happens, and the same history as the turn not streamed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from goaicore import Chat, ChatResult, OfflineProvider, TextDelta, ToolCallFinished, ToolCallStarted
from goaicore.conversation.messages import Message
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.base import CANCELLED, Completion, CompletionRequest
from goaicore.conversation.turn import CANCELLED_TOOL_RESULT
from goaicore.conversation.validation import validate_history


def get_score(team: str) -> str:
    """The score of a team."""
    return f"{team} 3"


async def collect(chat: Chat, user: str, **kwargs: object) -> list[object]:
    return [item async for item in chat.astream_with_state(None, user=user, **kwargs)]  # type: ignore[arg-type]


async def test_the_offline_model_streams_its_words_then_the_result() -> None:
    chat = Chat(OfflineProvider())
    items = await collect(chat, "hello there")
    *deltas, result = items
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert len(deltas) > 1
    assert isinstance(result, ChatResult)
    assert "".join(d.text for d in deltas) == result.text  # type: ignore[attr-defined]
    whole = await chat.achat_with_state(None, user="hello there")
    assert result.state == whole.state


async def test_tool_calls_are_reported_as_they_start_and_finish() -> None:
    chat = Chat(OfflineProvider())
    items = await collect(chat, "what is the get_score of Leeds", tools=[get_score])
    kinds = [type(i).__name__ for i in items]
    assert kinds[:2] == ["ToolCallStarted", "ToolCallFinished"]
    started, finished = items[0], items[1]
    assert isinstance(started, ToolCallStarted)
    assert started.name == "get_score"
    assert isinstance(finished, ToolCallFinished)
    assert finished.call_id == started.call_id
    assert finished.text == "Leeds 3"
    assert isinstance(items[-1], ChatResult)
    whole = await chat.achat_with_state(
        None, user="what is the get_score of Leeds", tools=[get_score]
    )
    assert items[-1].state == whole.state


def test_the_sync_twin_yields_the_same_items() -> None:
    chat = Chat(OfflineProvider())
    items = list(chat.stream_with_state(None, user="hello there"))
    assert isinstance(items[-1], ChatResult)
    assert "".join(i.text for i in items[:-1] if isinstance(i, TextDelta)) == items[-1].text


class Dripping(OfflineProvider):
    """Streams a few words, then hangs until cancelled."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words = words
        self.reached = asyncio.Event()

    async def stream(self, request: CompletionRequest, on_text: TextSink) -> Completion:
        for word in self.words:
            on_text(word)
        self.reached.set()
        await asyncio.sleep(3600)
        raise AssertionError("not cancelled")


async def test_a_cancel_keeps_the_text_so_far_as_a_valid_turn_with_its_tokens() -> None:
    provider = Dripping(["Once ", "upon ", "a "])
    chat = Chat(provider)
    cancel = asyncio.Event()
    items = []
    async for item in chat.astream_with_state(None, user="tell me a story", cancel=cancel):
        items.append(item)
        if isinstance(item, TextDelta) and item.text == "a ":
            cancel.set()
    result = items[-1]
    assert isinstance(result, ChatResult)
    assert result.finish_reason == CANCELLED
    assert result.text == "Once upon a "
    assert [m.role for m in result.new_messages] == ["user", "assistant"]
    assert result.usage.prompt_tokens > 0
    assert result.usage.completion_tokens > 0
    validate_history(result.messages, "openai")
    validate_history(result.messages, "anthropic")
    following = await Chat(OfflineProvider()).achat_with_state(result.state, user="go on")
    assert following.text.endswith("go on")


async def test_a_cancel_while_tools_run_answers_each_call_with_an_error() -> None:
    started = asyncio.Event()

    async def slow_lookup(team: str) -> str:
        """Look a team up slowly."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    chat = Chat(OfflineProvider())
    cancel = asyncio.Event()

    async def cancel_once_started() -> None:
        await started.wait()
        cancel.set()

    canceller = asyncio.create_task(cancel_once_started())
    result = await chat.achat_with_state(
        None, user="slow_lookup Leeds", tools=[slow_lookup], cancel=cancel
    )
    await canceller
    assert result.finish_reason == CANCELLED
    roles = [m.role for m in result.new_messages]
    assert roles == ["user", "assistant", "tool"]
    tool = result.new_messages[-1]
    assert tool.is_error
    assert tool.text == CANCELLED_TOOL_RESULT
    for provider in ("openai", "anthropic"):
        validate_history(result.messages, provider)


async def test_leaving_the_stream_early_abandons_the_turn() -> None:
    provider = Dripping(["one "])
    chat = Chat(provider)
    stream = chat.astream_with_state(None, user="hi")
    first = await anext(stream)
    assert first == TextDelta("one ")
    await stream.aclose()  # type: ignore[attr-defined]
    assert provider.reached.is_set()


async def test_an_error_comes_after_the_progress_before_it() -> None:
    class Failing(OfflineProvider):
        async def stream(self, request: CompletionRequest, on_text: TextSink) -> Completion:
            on_text("partial ")
            raise ValueError("boom")

    stream = Chat(Failing()).astream_with_state(None, user="hi")
    assert await anext(stream) == TextDelta("partial ")
    with pytest.raises(ValueError, match="boom"):
        await anext(stream)


def test_a_provider_without_streaming_gives_its_whole_text_as_one_delta() -> None:
    class Whole:
        name = "openai"
        model = "whole"

        async def complete(self, request: CompletionRequest) -> Completion:
            return await OfflineProvider().complete(request)

    items = list(Chat(Whole()).stream_with_state(None, user="hi"))
    assert isinstance(items[0], TextDelta)
    assert isinstance(items[1], ChatResult)
    assert items[0].text == items[1].text
    assert isinstance(items[1].messages[0], Message)
