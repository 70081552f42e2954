"""Chat turns against the real OpenAI and Anthropic SDKs over HTTP (both providers)."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import socket
import time
from collections.abc import Sequence
from typing import Any

import pytest

from goaicore import (
    Chat,
    ContentFilteredError,
    ContextLengthError,
    InvalidHistoryError,
    Message,
    ProviderError,
    ReplyTruncatedError,
    ToolLoopLimitError,
    UnknownFinishReasonError,
    tool,
    validate_history,
)
from goaicore.conversation.compaction.protocol import CompactionReason
from goaicore.conversation.providers.base import CompletionRequest, Transport

from .conftest import Backend

SCORES = {"Leeds": 3, "York": 1}
calls_made: list[str] = []


@tool
def get_score(team: str) -> dict[str, Any]:
    """Current score of a team."""
    calls_made.append(team)
    return {"team": team, "score": SCORES.get(team, 0)}


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    calls_made.clear()


def stored(chat: Chat, state: bytes) -> list[Message]:
    decoded = chat.read_state(state)
    assert decoded.reset_reason is None
    return decoded.messages


def test_ten_turns_with_tool_calls(backend: Backend) -> None:
    chat = backend.chat()
    state: bytes | None = None
    for turn in range(10):
        if turn % 2 == 0:
            backend.add(backend.calls((f"call_{turn}", "get_score", {"team": "Leeds"})))
        backend.add(backend.text(f"answer {turn}"))
        before = len(backend.bodies)
        result = chat.chat_with_state(state, user=f"question {turn}", tools=[get_score])
        assert result.text == f"answer {turn}"
        assert result.usage.llm_calls == (2 if turn % 2 == 0 else 1)
        assert result.usage.prompt_tokens == 10 * result.usage.llm_calls
        assert result.usage.total_tokens == 15 * result.usage.llm_calls
        assert len(backend.bodies) - before == result.usage.llm_calls
        # everything said so far is sent, in order
        texts = backend.texts_sent()
        users = [t for t in texts if t.startswith("question")]
        assert users == [f"question {i}" for i in range(turn + 1)]
        assert [t for t in texts if t.startswith("answer")] == [f"answer {i}" for i in range(turn)]
        state = result.state
    assert calls_made == ["Leeds"] * 5
    messages = stored(chat, result.state)
    assert [m.role for m in messages].count("tool") == 5
    assert len(messages) == 30
    assert all(m.provider == backend.name for m in messages if m.role == "assistant")
    validate_history(messages, backend.name)
    assert backend.server.unexpected == 0


def test_system_prompts_go_first_on_every_call_and_are_never_stored(backend: Backend) -> None:
    chat = backend.chat()
    backend.add(backend.calls(("c1", "get_score", {"team": "York"})), backend.text("York: 1"))
    result = chat.chat_with_state(
        None, system=["You are a game assistant", "Be brief"], user="score?", tools=[get_score]
    )
    assert backend.sent_system(0) == ["You are a game assistant", "Be brief"]
    assert backend.sent_system(1) == ["You are a game assistant", "Be brief"]
    assert all(m.role != "system" for m in stored(chat, result.state))
    backend.add(backend.text("ok"))
    chat.chat_with_state(result.state, system="New prompt", user="again")
    assert backend.sent_system() == ["New prompt"]


def test_context_is_stored_in_order_even_on_an_empty_state(backend: Backend) -> None:
    chat = backend.chat()
    state = chat.append_to_state(None, "Player checked in at Harrogate Theatre")
    backend.add(backend.text("Welcome to Harrogate"))
    result = chat.chat_with_state(state, system="sys", user="where am I?")
    state = chat.append_to_state(result.state, ["Player bought a ticket", "Show starts at 8"])
    backend.add(backend.text("Enjoy"))
    result = chat.chat_with_state(state, system="sys", user="what now?")
    texts = backend.texts_sent()
    if backend.name != "anthropic":  # the leading system prompt is a message there
        assert texts.pop(0) == "sys"
    expected = [
        "Player checked in at Harrogate Theatre",
        "where am I?",
        "Welcome to Harrogate",
        "Player bought a ticket",
        "Show starts at 8",
        "what now?",
    ]
    assert [t.removeprefix("[context] ") for t in texts] == expected
    if backend.name != "anthropic":
        assert backend.sent_messages()[1] == {
            "role": "system",
            "content": "Player checked in at Harrogate Theatre",
        }
    else:
        assert [m["role"] for m in backend.sent_messages()] == ["user", "assistant", "user"]
    roles = [m.role for m in stored(chat, result.state)]
    assert roles == ["system", "user", "assistant", "system", "system", "user", "assistant"]


async def test_async_tools_run_concurrently_and_results_keep_call_order(backend: Backend) -> None:
    events: list[str] = []

    @tool
    async def slow(team: str) -> str:
        """Slow lookup."""
        events.append("slow start")
        await asyncio.sleep(0.3)
        events.append("slow end")
        return f"slow {team}"

    @tool
    async def fast(team: str) -> str:
        """Fast lookup."""
        events.append("fast start")
        await asyncio.sleep(0.01)
        events.append("fast end")
        return f"fast {team}"

    backend.add(
        backend.calls(("c_slow", "slow", {"team": "A"}), ("c_fast", "fast", {"team": "B"})),
        backend.text("done"),
    )
    chat = backend.chat()
    started = time.perf_counter()
    result = await chat.achat_with_state(None, user="go", tools=[slow, fast])
    assert time.perf_counter() - started < 0.6
    assert events.index("fast end") < events.index("slow end")
    assert events[:2] == ["slow start", "fast start"]
    results = backend.tool_results()
    assert [(r["id"], r["content"]) for r in results] == [
        ("c_slow", "slow A"),
        ("c_fast", "fast B"),
    ]
    assert [m.tool_call_id for m in result.new_messages if m.role == "tool"] == ["c_slow", "c_fast"]
    if backend.name == "anthropic":  # one user message holds the whole step
        assert len([m for m in backend.sent_messages() if m["role"] == "user"]) == 2


@tool
def explode(team: str) -> str:
    """Always fails."""
    raise RuntimeError(f"no data for {team}")


@tool
def nothing(team: str) -> None:
    """Returns None."""


@tool
def empty(team: str) -> str:
    """Returns an empty result."""
    return ""


def test_tool_failures_are_results_the_model_sees(backend: Backend) -> None:
    backend.add(
        backend.calls(
            ("c1", "no_such_tool", {"x": 1}),
            ("c2", "get_score", {"team": 5}),
            ("c3", "explode", {"team": "Leeds"}),
            ("c4", "nothing", {"team": "Leeds"}),
            ("c5", "empty", {"team": "Leeds"}),
            ("c6", "get_score", {"team": "York"}),
        ),
        backend.text("sorted"),
    )
    chat = backend.chat()
    result = chat.chat_with_state(None, user="go", tools=[get_score, explode, nothing, empty])
    assert result.text == "sorted"
    results = {r["id"]: r for r in backend.tool_results()}
    assert list(results) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert results["c1"]["content"].startswith("error: unknown tool 'no_such_tool' (tools: empty,")
    assert "$.team: expected string, got integer" in results["c2"]["content"]
    assert results["c3"]["content"] == (
        "error: tool 'explode' failed: RuntimeError: no data for Leeds"
    )
    assert results["c4"]["content"] == "error: tool 'nothing' returned no result"
    assert results["c5"]["content"] == ""
    assert json.loads(results["c6"]["content"]) == {"team": "York", "score": 1}
    if backend.name == "anthropic":
        flags = [results[c]["is_error"] for c in results]
        assert flags == [True, True, True, True, False, False]
    tool_messages = [m for m in stored(chat, result.state) if m.role == "tool"]
    assert [m.is_error for m in tool_messages] == [True, True, True, True, False, False]


def test_an_empty_tool_result_survives_the_state_and_the_next_turn(backend: Backend) -> None:
    backend.add(backend.calls(("c1", "empty", {"team": "X"})), backend.text("nothing there"))
    chat = backend.chat()
    first = chat.chat_with_state(None, user="look", tools=[empty])
    backend.add(backend.text("ok"))
    chat.chat_with_state(first.state, user="and?")
    [result] = backend.tool_results()
    assert result["content"] == ""
    if backend.name == "anthropic":
        tool_result = backend.sent_messages()[2]["content"][0]
        assert tool_result == {"type": "tool_result", "tool_use_id": "c1"}
    elif backend.name == "openai-responses":
        output = {"type": "function_call_output", "call_id": "c1", "output": ""}
        assert backend.sent_messages()[2] == output
    else:
        assert backend.sent_messages()[2] == {"role": "tool", "tool_call_id": "c1", "content": ""}


def test_the_limit_counts_llm_calls_and_leaves_no_half_turn(backend: Backend) -> None:
    chat = backend.chat(max_tool_iterations=3)
    backend.add(backend.text("hello"))
    first = chat.chat_with_state(None, user="hi")
    for i in range(3):
        backend.add(backend.calls((f"c{i}", "get_score", {"team": "Leeds"})))
    before = len(backend.bodies)
    with pytest.raises(ToolLoopLimitError) as info:
        chat.chat_with_state(first.state, user="loop forever", tools=[get_score])
    assert info.value.limit == 3
    assert info.value.usage is not None
    assert info.value.usage.llm_calls == 3
    assert len(backend.bodies) - before == 3
    assert calls_made == ["Leeds", "Leeds"]  # the third call's tools never ran
    backend.add(backend.text("fine"))
    again = chat.chat_with_state(first.state, user="normal")
    assert again.text == "fine"
    assert "loop forever" not in backend.texts_sent()
    assert [m.role for m in stored(chat, again.state)] == ["user", "assistant"] * 2


@pytest.mark.parametrize(
    ("finish", "error"),
    [
        ("length", ReplyTruncatedError),
        ("content_filter", ContentFilteredError),
        ("mystery_reason", UnknownFinishReasonError),
    ],
)
def test_finish_reasons_raise_and_keep_the_previous_state(
    backend: Backend, finish: str, error: type[Exception]
) -> None:
    chat = backend.chat()
    backend.add(backend.text("hello"))
    first = chat.chat_with_state(None, user="hi")
    backend.add(
        backend.calls(("c1", "get_score", {"team": "York"})), backend.text("cut", finish=finish)
    )
    with pytest.raises(error) as info:
        chat.chat_with_state(first.state, user="tell me everything", tools=[get_score])
    assert getattr(info.value, "finish_reason", None) is not None
    backend.add(backend.text("short answer"))
    again = chat.chat_with_state(first.state, user="briefly")
    assert again.text == "short answer"
    assert "tell me everything" not in backend.texts_sent()
    assert len(stored(chat, again.state)) == 4


def test_tool_calls_with_a_stop_finish_are_answered(backend: Backend) -> None:
    backend.add(
        backend.calls(("c1", "get_score", {"team": "Leeds"}), finish="stop"),
        backend.text("Leeds have 3"),
    )
    chat = backend.chat()
    result = chat.chat_with_state(None, user="score", tools=[get_score])
    assert result.text == "Leeds have 3"
    assert calls_made == ["Leeds"]
    messages = stored(chat, result.state)
    validate_history(messages, backend.name)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]


def test_sdk_retries_429_and_5xx(backend: Backend) -> None:
    backend.add(backend.error(429, "slow down"), backend.error(503, "busy"), backend.text("ok"))
    assert backend.chat().chat(user="hi") == "ok"
    assert len(backend.bodies) == 3


def test_a_persistent_server_error_is_a_provider_error(backend: Backend) -> None:
    backend.add(*[backend.error(500, "down")] * 3)
    with pytest.raises(ProviderError) as info:
        backend.chat().chat(user="hi")
    assert info.value.status_code == 500
    assert info.value.provider == backend.name
    assert len(backend.bodies) == 3  # the first try and max_retries=2


def test_a_timeout_is_a_provider_error(backend: Backend) -> None:
    backend.add(backend.text("late", delay=2.0))
    chat = backend.chat({"timeout": 0.2, "max_retries": 0})
    started = time.perf_counter()
    with pytest.raises(ProviderError, match=r"(?i)time"):
        chat.chat(user="hi")
    assert time.perf_counter() - started < 1.5


def test_an_unreachable_server_is_a_provider_error_naming_what_the_client_saw(
    backend: Backend,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chat = backend.chat({"base_url": f"http://127.0.0.1:{port}", "max_retries": 0})
    with pytest.raises(ProviderError) as info:
        chat.chat(user="hi")
    assert info.value.provider == backend.name
    # the SDK's words, then the refused connection underneath them
    assert re.search(r" \(\w+Error\)$", str(info.value)), str(info.value)
    assert "127.0.0.1" not in str(info.value)  # the kind of error only: no address


@pytest.mark.parametrize(
    ("transport", "case", "over_aiohttp"),
    [
        ("httpx", "plain", False),
        ("aiohttp", "plain", True),
        ("aiohttp", "proxy variables", True),  # they are honoured: 127.0.0.1 bypasses
        ("aiohttp", "credentials in the url", False),  # aiohttp refuses them
    ],
)
def test_the_transport_asked_for_carries_the_call_and_closes_cleanly(
    backend: Backend,
    transport: Transport,
    case: str,
    over_aiohttp: bool,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    base_url = backend.server.base_url
    if case == "proxy variables":
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    if case == "credentials in the url":
        base_url = base_url.replace("http://", "http://user:pass@")
    backend.add(backend.text("over the wire"))

    async def call() -> tuple[str | None, str]:
        provider = backend.provider(base_url=base_url, transport=transport)
        try:
            client = await provider._sdk.clients.get()
            completion = await provider.complete(CompletionRequest((), [Message.user("hi")]))
            return completion.message.text, type(client._client._transport).__name__
        finally:
            await provider.aclose()

    # A loop closed without finalising its async generators, as the store worker's is:
    # the client is closed by aclose() alone, and nothing is found open afterwards.
    loop = asyncio.new_event_loop()
    try:
        text, transport_class = loop.run_until_complete(call())
    finally:
        loop.close()
    assert text == "over the wire"
    assert ("Aiohttp" in transport_class) == over_aiohttp, transport_class
    gc.collect()
    assert not [r for r in caplog.records if "Unclosed" in r.getMessage()]


def test_context_length_is_its_own_error(backend: Backend) -> None:
    backend.add(backend.context_length_error())
    with pytest.raises(ContextLengthError) as info:
        backend.chat().chat(user="a very long prompt")
    assert info.value.status_code == 400


class DropOldTurns:
    """Keeps the history from the latest user message on (a safe boundary)."""

    def __init__(self, *, only_on: CompactionReason | None = None) -> None:
        self.only_on = only_on
        self.reasons: list[CompactionReason] = []

    def compact(
        self, messages: Sequence[Message], *, provider: str, reason: CompactionReason
    ) -> list[Message] | None:
        self.reasons.append(reason)
        if self.only_on is not None and reason != self.only_on:
            return None
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        return list(messages[last_user:]) if last_user else None


def test_a_context_length_error_compacts_and_retries_once(backend: Backend) -> None:
    compactor = DropOldTurns(only_on="context_length")
    chat = backend.chat(compactor=compactor)
    backend.add(backend.text("first"))
    first = chat.chat_with_state(None, user="one")
    backend.add(backend.context_length_error(), backend.text("second"))
    result = chat.chat_with_state(first.state, user="two")
    assert result.text == "second"
    assert result.compactions == 1
    assert backend.texts_sent(-2) == ["one", "first", "two"]
    assert backend.texts_sent(-1) == ["two"]
    assert [m.text for m in stored(chat, result.state)] == ["two", "second"]
    # without anything to drop, the error reaches the caller
    backend.add(backend.context_length_error())
    with pytest.raises(ContextLengthError):
        chat.chat(user="three")


async def test_a_cancelled_call_changes_nothing(backend: Backend) -> None:
    chat = backend.chat()
    backend.add(backend.text("hello"))
    first = await chat.achat_with_state(None, user="hi")
    backend.add(backend.text("too late", delay=3.0))
    task = asyncio.create_task(chat.achat_with_state(first.state, user="slow question"))
    assert await asyncio.to_thread(backend.server.wait_for_requests, 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    backend.add(backend.text("quick answer"))
    result = await chat.achat_with_state(first.state, user="quick question")
    assert backend.texts_sent() == ["hi", "hello", "quick question"]
    assert [m.text for m in stored(chat, result.state)][-2:] == ["quick question", "quick answer"]


async def test_cancelling_a_turn_cancels_its_running_tools(backend: Backend) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def wait_forever(team: str) -> str:
        """Never returns."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return team

    backend.add(backend.calls(("c1", "wait_forever", {"team": "A"})))
    task = asyncio.create_task(backend.chat().achat(user="go", tools=[wait_forever]))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


def test_a_long_tool_chain_survives_a_compaction_limit(backend: Backend) -> None:
    """Six tool steps in one turn, with a compactor that keeps only the latest turn."""
    compactor = DropOldTurns()
    chat = backend.chat(compactor=compactor)
    backend.add(backend.text("earlier"))
    state = chat.chat_with_state(None, user="earlier question").state
    for step in range(6):
        backend.add(backend.calls((f"c{step}", "get_score", {"team": "Leeds"})))
    backend.add(backend.text("all done"))
    result = chat.chat_with_state(state, user="chain", tools=[get_score])
    assert result.text == "all done"
    assert len(calls_made) == 6
    # each call carried the whole current turn so far, never a call without its result
    for i, _body in enumerate(backend.bodies[1:]):
        assert len(backend.tool_results(i + 1)) == i
    messages = stored(chat, result.state)
    assert messages[0].text == "chain"
    assert len(messages) == 1 + 6 * 2 + 1
    assert result.compactions == 1  # only the first call had an older turn to drop


class KeepLastMessages:
    """A naive compactor that cuts at any message."""

    def __init__(self, keep: int) -> None:
        self.keep = keep

    async def compact(
        self, messages: Sequence[Message], *, provider: str, reason: CompactionReason
    ) -> list[Message] | None:
        return list(messages[-self.keep :]) if len(messages) > self.keep else None


def test_a_compactor_that_splits_a_step_fails_before_any_request(backend: Backend) -> None:
    chat = backend.chat(compactor=KeepLastMessages(2))
    backend.add(
        backend.calls(("c1", "get_score", {"team": "Leeds"}), ("c2", "get_score", {"team": "York"}))
    )
    with pytest.raises(InvalidHistoryError) as info:
        chat.chat(user="go", tools=[get_score])
    assert info.value.position == 0
    assert "answers no pending tool call" in info.value.reason
    assert len(backend.bodies) == 1  # the broken history was never sent


def test_an_invalid_given_history_is_caught_before_the_call(backend: Backend) -> None:
    history = [Message.user("q"), Message.assistant("", [])]
    history.append(Message.tool_result("ghost", "x"))
    with pytest.raises(InvalidHistoryError) as info:
        backend.chat().run_turn(history, user="next")
    assert info.value.position == 2
    assert backend.bodies == []


def test_a_bad_state_starts_fresh_and_still_answers(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.add(backend.text("hello again"))
    result = backend.chat().chat_with_state(b"\x00garbage", user="hi")
    assert result.state_reset == "not_json"
    assert result.text == "hello again"
    assert backend.texts_sent() == ["hi"]
    assert any(r.__dict__.get("reason") == "not_json" for r in caplog.records)


def test_stateless_chat(backend: Backend) -> None:
    backend.add(backend.text("stateless"))
    assert backend.chat().chat(system="sys", user=["part one", "part two"]) == "stateless"
    assert backend.texts_sent()[-2:] == ["part one", "part two"]
    assert backend.sent_system() == ["sys"]


def test_bad_arguments_are_clear_errors(backend: Backend) -> None:
    chat = backend.chat()
    with pytest.raises(ValueError, match="user message is empty"):
        chat.chat(user="  ")
    with pytest.raises(ValueError, match="two tools are named"):
        chat.chat(user="x", tools=[get_score, get_score])
    with pytest.raises(ValueError, match="max_tool_iterations"):
        backend.chat(max_tool_iterations=0)
    with pytest.raises(ValueError, match="on_provider_mismatch"):
        backend.chat(on_provider_mismatch="ignore")
    assert backend.bodies == []
