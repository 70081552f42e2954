"""Streamed turns: progress as it happens, and the same history as the turn not streamed."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore import Chat, ChatResult, OfflineProvider, TextDelta, ToolCallFinished, ToolCallStarted
from goaicore.conversation.errors import ProviderError
from goaicore.conversation.messages import Message
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.anthropic import MessageAccumulator
from goaicore.conversation.providers.base import CANCELLED, Completion, CompletionRequest
from goaicore.conversation.providers.openai import ChunkAccumulator
from goaicore.conversation.snapshot_messages import to_event_body
from goaicore.conversation.turn import CANCELLED_TOOL_RESULT
from goaicore.conversation.validation import validate_history
from goaicore.records import new_event
from goaicore.records.avro.api import encode_event
from goaicore.testing import ScriptedResponse, anthropic_reply, openai_reply, responses_reply
from tests.core.conftest import Backend

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


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
    assert roles == ["user", "assistant", "tool", "assistant"]  # the last one says: cancelled
    tool = result.new_messages[2]
    assert tool.is_error
    assert tool.text == CANCELLED_TOOL_RESULT
    for provider in ("openai", "anthropic"):
        validate_history(result.messages, provider)


async def test_a_cancel_before_the_call_counts_no_tokens() -> None:
    cancel = asyncio.Event()
    cancel.set()
    result = await Chat(Dripping(["never "])).achat_with_state(None, user="hi", cancel=cancel)
    assert result.finish_reason == CANCELLED
    assert result.text == ""
    assert (result.usage.prompt_tokens, result.usage.llm_calls) == (0, 0)
    assert [m.role for m in result.new_messages] == ["user", "assistant"]
    assert result.new_messages[-1].provider == "offline"  # priced as the provider's


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


# ---- the real SDKs over HTTP: a streamed turn stores what the whole turn stores --------


def _openai_cases() -> list[ScriptedResponse]:
    return [
        openai_reply("Hello there, brave player!"),
        openai_reply("Thinking done.", extra={"reasoning_content": "first I looked, then I saw"}),
        openai_reply("", finish_reason="stop"),
        openai_reply("Naïve café — ünïcödé ✓ 🎮 and\nnew lines\t tabs"),
    ]


def _anthropic_cases() -> list[ScriptedResponse]:
    return [
        anthropic_reply("Hello there, brave player!"),
        anthropic_reply(
            blocks=[
                {"type": "thinking", "thinking": "let me see, then answer", "signature": "sig=="},
                {"type": "text", "text": "The answer is 42.", "citations": None},
            ]
        ),
        anthropic_reply("Naïve café — ünïcödé ✓ 🎮 and\nnew lines\t tabs"),
        anthropic_reply(
            blocks=[
                {
                    "type": "text",
                    "text": "Leeds won.",
                    "citations": [
                        {"type": "char_location", "cited_text": "Leeds 3", "document_index": 0},
                        {"type": "char_location", "cited_text": "Union 1", "document_index": 0},
                    ],
                }
            ]
        ),
    ]


def _responses_cases() -> list[ScriptedResponse]:
    return [
        responses_reply("Hello there, brave player!"),
        responses_reply("The answer is 42.", reasoning=("I thought about it.", "gAAAAB-sealed")),
        responses_reply(
            items=[
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {
                    "type": "message",
                    "id": "msg_1",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Found it.", "annotations": []}],
                },
            ]
        ),
        responses_reply("Naïve café — ünïcödé ✓ 🎮 and\nnew lines\t tabs"),
    ]


def _stored(result: ChatResult) -> list[bytes]:
    return [
        encode_event(new_event("c", to_event_body(m), event_id="e", occurred_at=EPOCH))
        for m in result.new_messages
    ]


@pytest.mark.parametrize("case", range(4))
async def test_a_streamed_text_turn_stores_what_the_whole_turn_stores(
    backend: Backend, case: int
) -> None:
    cases = {
        "openai": _openai_cases,
        "anthropic": _anthropic_cases,
        "openai-responses": _responses_cases,
    }[backend.name]()
    backend.add(cases[case], cases[case])
    chat = backend.chat()
    whole = await chat.achat_with_state(None, user="hi")
    streamed = [i async for i in chat.astream_with_state(None, user="hi")]
    result = streamed[-1]
    assert isinstance(result, ChatResult)
    assert backend.bodies[1]["stream"] is True
    assert result.state == whole.state
    assert _stored(result) == _stored(whole)
    assert result.usage == whole.usage
    assert "".join(i.text for i in streamed if isinstance(i, TextDelta)) == whole.text


async def test_a_streamed_turn_with_tool_calls_stores_what_the_whole_turn_stores(
    backend: Backend,
) -> None:
    def turn() -> list[ScriptedResponse]:
        return [
            backend.calls(
                ("call_1", "get_score", {"team": "Leeds United"}),
                ("call_2", "get_score", {"team": 'Ünïon Berlin, "the Irons"'}),
            ),
            backend.text("Leeds 3, Union 1."),
        ]

    scripted = turn()  # the same responses twice: their item ids too
    backend.add(*scripted, *scripted)
    chat = backend.chat()
    whole = await chat.achat_with_state(None, user="scores?", tools=[get_score])
    streamed = [i async for i in chat.astream_with_state(None, user="scores?", tools=[get_score])]
    result = streamed[-1]
    assert isinstance(result, ChatResult)
    assert result.state == whole.state
    assert _stored(result) == _stored(whole)
    started = [i for i in streamed if isinstance(i, ToolCallStarted)]
    finished = [i for i in streamed if isinstance(i, ToolCallFinished)]
    assert [s.call_id for s in started] == ["call_1", "call_2"]
    assert [f.text for f in finished] == ["Leeds United 3", 'Ünïon Berlin, "the Irons" 3']
    assert streamed.index(started[-1]) < streamed.index(finished[0])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(min_size=1, max_size=300), argument=st.text(max_size=80))
def test_any_text_and_arguments_store_the_same_streamed_or_whole(
    backend: Backend, text: str, argument: str
) -> None:
    def turn() -> list[ScriptedResponse]:
        return [backend.calls(("call_x", "get_score", {"team": argument})), backend.text(text)]

    scripted = turn()
    backend.add(*scripted, *scripted)
    chat = backend.chat()
    whole = chat.chat_with_state(None, user="go", tools=[get_score])
    *progress, result = list(chat.stream_with_state(None, user="go", tools=[get_score]))
    assert isinstance(result, ChatResult)
    assert result.state == whole.state
    assert _stored(result) == _stored(whole)
    assert "".join(i.text for i in progress if isinstance(i, TextDelta)) == whole.text


async def test_a_stream_that_breaks_off_is_a_provider_error(backend: Backend) -> None:
    backend.add(backend.text("one two three four five six seven eight", chunk_delay=0.05))
    stream = backend.chat().astream_with_state(None, user="hi")
    assert isinstance(await anext(stream), TextDelta)
    backend.server.stop()
    with pytest.raises(ProviderError):
        async for _ in stream:
            pass


def test_a_stream_without_its_finish_is_unreadable() -> None:
    unfinished = ChunkAccumulator()
    unfinished.feed({"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}}]}, print)
    with pytest.raises(ValueError, match="finish"):
        unfinished.response()
    cut = MessageAccumulator()
    cut.feed({"type": "message_start", "message": {"role": "assistant", "content": []}}, print)
    with pytest.raises(ValueError, match="stop"):
        cut.response()
