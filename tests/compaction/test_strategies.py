"""Every strategy, on examples and on generated conversations with tool chains."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore import Message, ToolCall, validate_history
from goaicore.conversation.compaction import (
    Composite,
    HeuristicCounter,
    KeepLastExchanges,
    Strategy,
    Summarize,
    TokenBudget,
    ToolExchangeSummary,
    apply_compaction,
    is_summary,
)
from goaicore.conversation.providers import OfflineProvider

from .helpers import compact, last_exchange, through_the_log
from .histories import conversations

COUNTER = HeuristicCounter()


def chat_history() -> list[Message]:
    """Three exchanges; the second calls a tool twice in two steps."""
    return [
        Message.context("Player checked in at Harrogate Theatre"),
        Message.user("Hello"),
        Message.assistant("Hi! Welcome to Harrogate."),
        Message.user("What is the Leeds score?"),
        Message.assistant("", [ToolCall("c1", "get_score", '{"team":"Leeds"}')]),
        Message.tool_result("c1", '{"score":3}', name="get_score"),
        Message.assistant("Checking York too.", [ToolCall("c2", "get_score", '{"team":"York"}')]),
        Message.tool_result("c2", "no such team", name="get_score", is_error=True),
        Message.assistant("Leeds have 3."),
        Message.context("Player bought a ticket"),
        Message.user("And now?"),
        Message.assistant("Enjoy the show."),
    ]


def test_keep_last_exchanges_drops_whole_exchanges_and_the_preamble() -> None:
    history = chat_history()
    outcome = compact(KeepLastExchanges(2), history)
    assert outcome is not None
    assert outcome.messages == history[3:]
    record = outcome.record
    assert (record.strategy, record.first_index, record.last_index) == ("keep-last-exchanges", 0, 2)
    assert record.removed_count == 3
    assert record.summary is None
    assert record.message_count == len(history)
    assert record.tokens_before == COUNTER.count_request(history)
    assert record.tokens_after == COUNTER.count_request(history[3:])
    assert compact(KeepLastExchanges(3), history[1:]) is None  # nothing older to drop


def test_keep_last_exchanges_can_leave_a_note_in_place() -> None:
    outcome = compact(KeepLastExchanges(1, note="Earlier messages were removed."), chat_history())
    assert outcome is not None
    assert outcome.messages[0] == Message.context("Earlier messages were removed.")
    assert outcome.messages[1:] == chat_history()[10:]


def test_token_budget_drops_the_oldest_exchanges_until_it_fits() -> None:
    history = chat_history()
    total = COUNTER.count_request(history)
    without_first_two = COUNTER.count_request(history[3:])
    outcome = compact(TokenBudget(without_first_two), history)
    assert outcome is not None
    assert outcome.messages == history[3:]
    assert outcome.record.tokens_before == total
    assert outcome.record.tokens_after == without_first_two
    assert outcome.warnings == ()
    assert compact(TokenBudget(total), history) is None  # already fits


def test_token_budget_counts_the_system_prompt_and_tools() -> None:
    from goaicore import tool

    @tool
    def get_score(team: str) -> int:
        """Current score of a team."""
        return 3

    history = chat_history()
    extras = {"system": ["You are a guide."], "tools": [get_score]}
    budget = COUNTER.count_request(history[3:], **extras)  # type: ignore[arg-type]
    assert budget > COUNTER.count_request(history)  # the messages alone would fit
    assert compact(TokenBudget(budget), history) is None
    outcome = compact(TokenBudget(budget), history, **extras)  # type: ignore[arg-type]
    assert outcome is not None
    assert outcome.messages == history[3:]
    assert outcome.record.tokens_after == budget


def test_an_exchange_over_the_whole_budget_is_kept_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    history = chat_history()
    with caplog.at_level(logging.WARNING, logger="goaicore.conversation.compaction"):
        outcome = compact(TokenBudget(5), history)
    assert outcome is not None
    assert outcome.messages == history[10:]  # the latest exchange, whole
    assert outcome.record.tokens_after > 5
    assert len(outcome.warnings) == 1
    assert "over the budget of 5" in outcome.warnings[0]
    assert any(r.__dict__.get("goaicore_event") == "compaction_over_budget" for r in caplog.records)
    # with nothing older to drop, nothing changes (never an empty history) and it says so
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="goaicore.conversation.compaction"):
        assert compact(TokenBudget(5), history[10:]) is None
    assert any("it is kept whole" in r.getMessage() for r in caplog.records)


def test_tool_exchange_summary_replaces_each_old_run_by_one_note() -> None:
    history = chat_history()
    outcome = compact(ToolExchangeSummary(), history)
    assert outcome is not None
    note = (
        '[tools] get_score({"team":"Leeds"}) -> {"score":3}; "Checking York too."; '
        'get_score({"team":"York"}) -> error: no such team'
    )
    assert outcome.messages == [*history[:4], Message.context(note), *history[8:]]
    assert [(r.first_index, r.last_index, r.note) for r in outcome.record.replacements] == [
        (4, 7, note)
    ]
    # the same history always gives the same note; a second pass finds nothing to do
    again = compact(ToolExchangeSummary(), history)
    assert again is not None
    assert again.record == outcome.record
    assert compact(ToolExchangeSummary(), outcome.messages) is None


def test_tool_exchange_summary_leaves_the_latest_exchanges_alone() -> None:
    history = chat_history()[:10]  # the tool chain is in the latest exchange
    assert compact(ToolExchangeSummary(), history) is None
    assert compact(ToolExchangeSummary(keep_last=2), chat_history()) is None


def test_tool_exchange_summary_clips_long_arguments_and_results() -> None:
    long = "x" * 500
    history = [
        Message.user("go"),
        Message.assistant("", [ToolCall("c1", "look", long)]),
        Message.tool_result("c1", long + "\nmore"),
        Message.assistant("done"),
        Message.user("next"),
    ]
    outcome = compact(ToolExchangeSummary(max_chars=20), history)
    assert outcome is not None
    note = outcome.messages[1].text
    assert note == "[tools] look(" + "x" * 19 + "…) -> " + "x" * 19 + "…"
    assert "\n" not in note


def test_composite_uses_the_first_strategy_that_applies() -> None:
    history = chat_history()[1:]  # no preamble: KeepLastExchanges(5) has nothing to drop
    composite = Composite(KeepLastExchanges(5), ToolExchangeSummary(), KeepLastExchanges(1))
    outcome = compact(composite, history)
    assert outcome is not None
    assert outcome.record.strategy == "tool-exchange-summary"
    assert compact(Composite(KeepLastExchanges(5)), history) is None
    assert composite.name == (
        "composite(keep-last-exchanges,tool-exchange-summary,keep-last-exchanges)"
    )


def test_offline_summaries_roll_into_one() -> None:
    history = chat_history()
    outcome = compact(Summarize(OfflineProvider(), keep_last=1), history)
    assert outcome is not None
    summary = outcome.messages[0]
    assert is_summary(summary)
    assert outcome.messages[1:] == history[10:]
    assert "User: What is the Leeds score?" in summary.text  # the offline model echoes
    assert outcome.usage is not None
    assert outcome.usage.llm_calls == 1
    longer = [*outcome.messages, Message.user("Later"), Message.assistant("Sure.")]
    rolled = compact(Summarize(OfflineProvider(), keep_last=1), longer)
    assert rolled is not None
    assert [is_summary(m) for m in rolled.messages] == [True, False, False]
    assert "The summary so far:" in rolled.messages[0].text
    # only the old summary before the kept exchanges: nothing new to fold in
    assert compact(Summarize(OfflineProvider(), keep_last=2), longer) is None


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: KeepLastExchanges(0), "at least one exchange"),
        (lambda: TokenBudget(0), "must be positive"),
        (lambda: ToolExchangeSummary(keep_last=0), "keeps at least the latest"),
        (lambda: Summarize(OfflineProvider(), keep_last=0), "keeps at least the latest"),
        (lambda: Composite(), "at least one strategy"),
    ],
)
def test_parameters_that_could_wipe_a_conversation_are_refused(
    make: Callable[[], object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        make()


# -- properties over generated conversations ---------------------------------------------

STRATEGIES: dict[str, st.SearchStrategy[Strategy]] = {
    "keep-last": st.builds(KeepLastExchanges, st.integers(1, 5)),
    "keep-last-note": st.builds(
        lambda n: KeepLastExchanges(n, note="Earlier messages removed."), st.integers(1, 5)
    ),
    "token-budget": st.builds(TokenBudget, st.integers(1, 1500)),
    "tool-summary": st.builds(
        lambda k, c: ToolExchangeSummary(keep_last=k, max_chars=c),
        st.integers(1, 4),
        st.integers(8, 200),
    ),
    "summarize": st.builds(
        lambda k: Summarize(OfflineProvider(), keep_last=k, max_chars_per_message=40),
        st.integers(1, 4),
    ),
    "composite": st.builds(
        lambda k, b: Composite(ToolExchangeSummary(keep_last=k), TokenBudget(b)),
        st.integers(1, 3),
        st.integers(1, 800),
    ),
}


@pytest.mark.parametrize("kind", sorted(STRATEGIES))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_strategy_keeps_the_history_valid_and_replayable(
    kind: str, data: st.DataObject
) -> None:
    history = data.draw(conversations())
    strategy = data.draw(STRATEGIES[kind])
    provider = data.draw(st.sampled_from(["openai", "anthropic"]))
    validate_history(history, "openai")
    validate_history(history, "anthropic")
    outcome = compact(strategy, history, provider=provider)
    if outcome is None:
        return
    compacted, record = outcome.messages, outcome.record
    # valid to send to both providers: no tool call without its results, role order kept
    validate_history(compacted, "openai")
    validate_history(compacted, "anthropic")
    # the latest user message and everything after it are kept as they were
    assert last_exchange(history)
    assert compacted[-len(last_exchange(history)) :] == last_exchange(history)
    # the record, read back from the log, rebuilds exactly this history
    assert apply_compaction(history, record) == compacted
    assert apply_compaction(history, through_the_log(record)) == compacted
    notes = sum(r.note is not None for r in record.replacements)
    assert len(compacted) == len(history) - record.removed_count + notes
    assert record.tokens_before == COUNTER.count_request(history)
    assert record.tokens_after == COUNTER.count_request(compacted)
    if isinstance(strategy, TokenBudget):
        fits = record.tokens_after <= strategy.budget
        assert fits or compacted == last_exchange(history)
        assert fits != bool(outcome.warnings)
    if isinstance(strategy, KeepLastExchanges):
        users = sum(m.role == "user" for m in compacted)
        assert users == min(strategy.count, sum(m.role == "user" for m in history))
