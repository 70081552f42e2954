"""Compaction inside ``Chat`` turns, against the real OpenAI and Anthropic SDKs over HTTP."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from goaicore import Chat, ChatError, ContextLengthError, Message, tool, validate_history
from goaicore.conversation.compaction import (
    SUMMARY_PREFIX,
    CompactionRecord,
    Composite,
    KeepLastExchanges,
    MessageCount,
    ReportedPromptTokens,
    Summarize,
    TokenBudget,
    ToolExchangeSummary,
    TriggeredCompactor,
    is_summary,
)
from goaicore.conversation.providers import OpenAIProvider
from goaicore.testing import OpenAIServer, openai_error, openai_reply
from tests.core.conftest import Backend

from .helpers import replay

SCORES = {"Leeds": 3, "York": 1}


@tool
def get_score(team: str) -> dict[str, Any]:
    """Current score of a team."""
    return {"team": team, "score": SCORES.get(team, 0)}


def grow(chat: Chat, backend: Backend, turns: int, state: bytes | None = None) -> bytes | None:
    """``turns`` plain question/answer turns."""
    for i in range(turns):
        backend.add(backend.text(f"answer {i}"))
        state = chat.chat_with_state(state, user=f"question {i}").state
    return state


def test_a_context_length_error_compacts_once_and_retries(backend: Backend) -> None:
    compactor = TriggeredCompactor(TokenBudget(10**6))  # never compacts on its own
    chat = backend.chat(compactor=compactor)
    state = grow(chat, backend, 3)
    before = chat.read_state(state).messages
    backend.add(backend.context_length_error(), backend.text("fits now"))
    result = chat.chat_with_state(state, user="question 3")
    assert result.text == "fits now"
    assert result.compactions == 1
    (record,) = result.compaction_records
    assert record.strategy == "keep-last-exchanges"  # the fallback on a context-length error
    assert record.message_count == len(before) + 1
    assert backend.texts_sent(-2)[-1] == "question 3"
    assert "question 0" in backend.texts_sent(-2)
    assert backend.texts_sent(-1) == ["question 3"]
    assert [m.text for m in chat.read_state(result.state).messages] == ["question 3", "fits now"]
    assert result.timeline == (Message.user("question 3"), record, result.new_messages[-1])
    assert replay(before, result.timeline) == result.messages


def test_a_second_context_length_error_is_a_chat_error(backend: Backend) -> None:
    chat = backend.chat(compactor=TriggeredCompactor(KeepLastExchanges(1), MessageCount(100)))
    state = grow(chat, backend, 2)
    sent = len(backend.bodies)
    backend.add(backend.context_length_error(), backend.context_length_error())
    with pytest.raises(ChatError) as info:
        chat.chat_with_state(state, user="too long")
    assert isinstance(info.value, ContextLengthError)
    assert len(backend.bodies) - sent == 2  # one call, one retry after compacting
    assert backend.texts_sent(-1) == ["too long"]
    assert backend.server.pending == 0


def test_turn_records_replay_to_the_stored_history(backend: Backend) -> None:
    """Tool notes on every call, over turns with tool chains; the log rebuilds each state."""
    compactor = TriggeredCompactor(
        Composite(ToolExchangeSummary(keep_last=1), KeepLastExchanges(3)), MessageCount(8)
    )
    chat = backend.chat(compactor=compactor)
    state: bytes | None = None
    seen: list[CompactionRecord] = []
    for turn in range(6):
        team = "Leeds" if turn % 2 else "York"
        backend.add(backend.calls((f"c{turn}", "get_score", {"team": team})))
        backend.add(backend.text(f"{team}: {SCORES[team]}"))
        before = chat.read_state(state).messages
        result = chat.chat_with_state(state, user=f"score of {team}?", tools=[get_score])
        assert replay(before, result.timeline) == result.messages
        assert [m for m in result.timeline if isinstance(m, Message)] == result.new_messages
        seen.extend(result.compaction_records)
        validate_history(result.messages, backend.name)
        state = result.state
    strategies = {r.strategy for r in seen}
    assert strategies == {"tool-exchange-summary", "keep-last-exchanges"}
    notes = [m.text for m in chat.read_state(state).messages if m.role == "system"]
    assert notes
    assert all(n.startswith("[tools] get_score(") for n in notes)


def test_reported_prompt_tokens_compact_inside_a_tool_chain(backend: Backend) -> None:
    chat = backend.chat(
        compactor=TriggeredCompactor(KeepLastExchanges(1), ReportedPromptTokens(1000))
    )
    state = grow(chat, backend, 2)  # small reports: no compaction
    assert len(chat.read_state(state).messages) == 4
    backend.add(backend.calls(("c1", "get_score", {"team": "Leeds"}), usage=(5000, 5)))
    backend.add(backend.text("Leeds: 3"))
    result = chat.chat_with_state(state, user="score of Leeds?", tools=[get_score])
    assert result.compactions == 1
    assert [type(item).__name__ for item in result.timeline] == [
        "Message",
        "Message",
        "Message",
        "CompactionRecord",
        "Message",
    ]
    assert "question 0" in backend.texts_sent(-2)
    assert "question 0" not in backend.texts_sent(-1)
    assert len(backend.tool_results(-1)) == 1  # the chain in progress was kept whole


def summarizer(server: OpenAIServer, **kwargs: Any) -> Summarize:
    cheap = OpenAIProvider(
        "gpt-cheap", api_key="test-key", base_url=server.base_url, timeout=5.0, max_retries=0
    )
    return Summarize(cheap, keep_last=1, **kwargs)


def test_llm_summaries_roll_through_a_cheaper_model(
    backend: Backend, summary_server: OpenAIServer
) -> None:
    compactor = TriggeredCompactor(summarizer(summary_server), MessageCount(3))
    chat = backend.chat(compactor=compactor)
    state = grow(chat, backend, 2)
    summary_server.add(openai_reply("The user asked two questions.", model="gpt-cheap"))
    backend.add(backend.text("answer 2"))
    first = chat.chat_with_state(state, user="question 2")
    request = summary_server.bodies[-1]
    assert request["model"] == "gpt-cheap"
    assert request["messages"][0]["role"] == "system"
    prompt = request["messages"][1]["content"]
    assert "User: question 0\nAssistant: answer 0\nUser: question 1\nAssistant: answer 1" in prompt
    assert "question 2" not in prompt  # the latest exchange stays as it is
    (record,) = first.compaction_records
    assert record.summary == SUMMARY_PREFIX + "The user asked two questions."
    texts = backend.texts_sent()
    assert texts[-2:] == [
        ("" if backend.name == "openai" else "[context] ") + record.summary,
        "question 2",
    ]
    # the next summary folds in the previous one: one summary in the history, ever
    summary_server.add(openai_reply("Three questions so far.", model="gpt-cheap"))
    backend.add(backend.text("answer 3"))
    second = chat.chat_with_state(first.state, user="question 3")
    prompt = summary_server.bodies[-1]["messages"][1]["content"]
    assert prompt.startswith("The summary so far:\nThe user asked two questions.")
    assert "User: question 2\nAssistant: answer 2" in prompt
    stored = chat.read_state(second.state).messages
    assert [is_summary(m) for m in stored] == [True, False, False]
    assert stored[0].text == SUMMARY_PREFIX + "Three questions so far."
    assert replay(chat.read_state(first.state).messages, second.timeline) == second.messages


def test_a_failed_summary_falls_through_to_the_next_strategy(
    backend: Backend, summary_server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    strategy = Composite(summarizer(summary_server), KeepLastExchanges(1))
    chat = backend.chat(compactor=TriggeredCompactor(strategy, MessageCount(4)))
    state = grow(chat, backend, 2)
    summary_server.add(openai_error(500, "summariser down"))
    backend.add(backend.text("answer 2"))
    with caplog.at_level(logging.WARNING, logger="goaicore.conversation.compaction"):
        result = chat.chat_with_state(state, user="question 2")
    assert result.text == "answer 2"
    assert [r.strategy for r in result.compaction_records] == ["keep-last-exchanges"]
    assert backend.texts_sent() == ["question 2"]
    assert any(r.__dict__.get("goaicore_event") == "summary_failed" for r in caplog.records)
    assert len(summary_server.bodies) == 1


def test_a_strategy_alone_compacts_only_when_over_its_own_budget(backend: Backend) -> None:
    roomy = backend.chat(compactor=TokenBudget(10**6))
    assert isinstance(roomy.compactor, TriggeredCompactor)
    state = grow(roomy, backend, 4)
    backend.add(backend.text("still all here"))
    assert roomy.chat_with_state(state, user="question 4").compactions == 0

    tight = backend.chat(compactor=TokenBudget(40))
    state = grow(tight, backend, 4)
    backend.add(backend.text("fits"))
    result = tight.chat_with_state(state, user="question 4")
    assert result.compactions == 1
    assert [r.strategy for r in result.compaction_records] == ["token-budget"]
    assert "question 0" not in backend.texts_sent(-1)
    assert backend.texts_sent(-1)[-1] == "question 4"


def test_a_compactor_of_another_kind_is_a_type_error_at_construction() -> None:
    from goaicore import OfflineProvider

    with pytest.raises(TypeError, match="got a value of type int; expected a strategy"):
        Chat(OfflineProvider(), compactor=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"the class TokenBudget; pass an instance"):
        Chat(OfflineProvider(), compactor=TokenBudget)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a value of type str"):
        Chat(OfflineProvider(), compactor="keep-last-exchanges")  # type: ignore[arg-type]


def test_anything_with_compact_is_used_as_it_is() -> None:
    from goaicore import OfflineProvider

    class Mine:
        def compact(self, messages: Any, *, provider: str, reason: str) -> None:
            return None

    mine = Mine()
    assert Chat(OfflineProvider(), compactor=mine).compactor is mine
    triggered = TriggeredCompactor(KeepLastExchanges(2), MessageCount(4))
    assert Chat(OfflineProvider(), compactor=triggered).compactor is triggered
    assert Chat(OfflineProvider(), compactor=None).compactor is None
