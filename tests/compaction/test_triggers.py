"""Triggers: each measure, the combinators, and the compactor skipping or forcing them."""

from __future__ import annotations

import asyncio

from goaicore import Message
from goaicore.conversation.compaction import (
    AllOf,
    AnyOf,
    CompactionRequest,
    EstimatedTokens,
    HeuristicCounter,
    KeepLastExchanges,
    MessageCount,
    ReportedPromptTokens,
    StateBytes,
    TokenBudget,
    TriggerContext,
    TriggeredCompactor,
)
from goaicore.conversation.state import encode_state

HISTORY = [
    Message.user("first question about the theatre"),
    Message.assistant("first answer"),
    Message.user("second question"),
    Message.assistant("second answer"),
    Message.user("third"),
]
COUNTER = HeuristicCounter()


def context(**kwargs: object) -> TriggerContext:
    request = CompactionRequest(tuple(HISTORY), "openai", **kwargs)  # type: ignore[arg-type]
    return TriggerContext(request, COUNTER)


def test_message_count() -> None:
    assert MessageCount(4).fires(context())
    assert not MessageCount(5).fires(context())


def test_estimated_tokens_count_the_whole_request() -> None:
    tokens = COUNTER.count_request(HISTORY, system=["a system prompt"])
    assert context(system=["a system prompt"]).estimated_tokens == tokens
    assert EstimatedTokens(tokens - 1).fires(context(system=["a system prompt"]))
    assert not EstimatedTokens(tokens).fires(context(system=["a system prompt"]))


def test_reported_prompt_tokens_add_what_came_since_the_report() -> None:
    since = COUNTER.count_message(HISTORY[3]) + COUNTER.count_message(HISTORY[4])
    ctx = context(reported_prompt_tokens=1000, reported_message_count=3)
    assert ctx.reported_tokens == 1000 + since
    assert ReportedPromptTokens(999 + since).fires(ctx)
    assert not ReportedPromptTokens(1000 + since).fires(ctx)
    # no report yet (the first call of a turn): the estimate stands in
    assert context().reported_tokens == context().estimated_tokens
    # a report about a longer history than this one cannot be used
    stale = context(reported_prompt_tokens=1000, reported_message_count=9)
    assert stale.reported_tokens == stale.estimated_tokens


def test_state_bytes_are_the_blob_chat_would_store() -> None:
    plain = len(encode_state(HISTORY, "openai", gzip_threshold=None))
    assert context().state_bytes(None) == plain
    assert StateBytes(plain - 1, gzip_threshold=None).fires(context())
    assert not StateBytes(plain, gzip_threshold=None).fires(context())


def test_any_of_and_all_of() -> None:
    yes, no = MessageCount(1), MessageCount(100)
    assert (yes | no).fires(context())
    assert not (yes & no).fires(context())
    assert AllOf(yes, MessageCount(2)).fires(context())
    assert not AnyOf(no, no).fires(context())
    assert isinstance(yes | no & yes, AnyOf)


def test_the_compactor_waits_for_its_trigger_but_not_on_a_context_length_error() -> None:
    compactor = TriggeredCompactor(KeepLastExchanges(1), MessageCount(10))
    quiet = CompactionRequest(tuple(HISTORY), "anthropic")
    assert asyncio.run(compactor.compact_request(quiet)) is None
    forced = CompactionRequest(tuple(HISTORY), "anthropic", "context_length")
    outcome = asyncio.run(compactor.compact_request(forced))
    assert outcome is not None
    assert outcome.messages == HISTORY[4:]


def test_on_a_context_length_error_a_declining_strategy_falls_back() -> None:
    generous = TriggeredCompactor(TokenBudget(10**6))
    forced = CompactionRequest(tuple(HISTORY), "openai", "context_length")
    outcome = asyncio.run(generous.compact_request(forced))
    assert outcome is not None
    assert outcome.record.strategy == "keep-last-exchanges"
    assert outcome.messages == HISTORY[4:]
    strict = TriggeredCompactor(TokenBudget(10**6), on_context_length=TokenBudget(10**6))
    assert asyncio.run(strict.compact_request(forced)) is None
    # the plain protocol works too
    assert asyncio.run(generous.compact(HISTORY, provider="openai", reason="before_call")) is None
