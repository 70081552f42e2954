"""validate_history: every rule, with the offending position."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore import InvalidHistoryError, Message, ToolCall, validate_history
from goaicore.conversation.providers import OfflineProvider
from goaicore.conversation.providers.registry import assistant_message

from .strategies import valid_histories

CALLS = (ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}"))


def step(*results: str) -> list[Message]:
    return [Message.assistant("", CALLS), *(Message.tool_result(r, "ok") for r in results)]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "offline"])
@pytest.mark.parametrize(
    ("history", "position", "reason"),
    [
        ([Message.user("q"), *step("a")], 1, "'b' is never answered"),
        ([Message.user("q"), *step("a"), Message.user("more")], 3, "'b' of message 1"),
        ([Message.user("q"), *step("a", "b", "b")], 4, "answers no pending"),
        ([Message.user("q"), Message.tool_result("zz", "x")], 1, "answers no pending"),
        ([Message.user("q"), Message(role="tool", text="x")], 1, "without a tool_call_id"),
        (
            [
                Message.user("q"),
                Message.assistant("", [ToolCall("a", "f", ""), ToolCall("a", "f", "")]),
            ],
            1,
            "used twice",
        ),
        ([Message.user("q"), Message.assistant("", [ToolCall("", "f", "")])], 1, "without an id"),
        (
            [Message.user("q"), *step("a"), Message.context("e"), Message.tool_result("b", "")],
            3,
            "",
        ),
    ],
)
def test_violations_report_their_position(
    provider: str, history: list[Message], position: int, reason: str
) -> None:
    with pytest.raises(InvalidHistoryError) as info:
        validate_history(history, provider)
    assert info.value.position == position
    assert reason in info.value.reason
    assert f"at message {position}" in str(info.value)


def test_results_may_come_in_any_order_within_the_step() -> None:
    validate_history([Message.user("q"), *step("b", "a"), Message.assistant("done")], "openai")


@pytest.mark.parametrize(
    ("history", "position"),
    [
        ([Message.assistant("hi"), Message.user("q")], 0),
        ([Message.user("q"), Message.assistant("a"), Message.assistant("b")], 2),
        ([Message.user("")], 0),
        ([Message.user("q"), Message.assistant("a"), Message.context("")], 2),
    ],
)
def test_anthropic_role_order(history: list[Message], position: int) -> None:
    validate_history(history, "openai")  # chat completions accepts these
    with pytest.raises(InvalidHistoryError) as info:
        validate_history(history, "anthropic")
    assert info.value.position == position


def test_anthropic_context_first_is_a_user_turn_and_empty_replies_are_skipped() -> None:
    empty = assistant_message("anthropic", {"role": "assistant", "content": []})
    history = [Message.context("event"), Message.user("q"), empty, Message.assistant("a")]
    validate_history(history, "anthropic")


def test_accepts_a_provider_object_and_the_empty_history() -> None:
    validate_history([], OfflineProvider())
    with pytest.raises(InvalidHistoryError, match="offline"):
        validate_history([Message.user("q"), *step()], OfflineProvider())


@settings(max_examples=80, deadline=None)
@given(valid_histories(), st.sampled_from(["openai", "anthropic", "offline"]))
def test_generated_valid_histories_pass(history: list[Message], provider: str) -> None:
    validate_history(history, provider)


@settings(max_examples=80, deadline=None)
@given(valid_histories(), st.data())
def test_dropping_any_tool_result_is_caught(history: list[Message], data: st.DataObject) -> None:
    results = [i for i, m in enumerate(history) if m.role == "tool"]
    if not results:
        return
    drop = data.draw(st.sampled_from(results))
    broken = history[:drop] + history[drop + 1 :]
    with pytest.raises(InvalidHistoryError) as info:
        validate_history(broken, "openai")
    call_at = max(i for i in range(drop) if history[i].role == "assistant")
    # either the next non-tool message, or (at the end) the unanswered call, is blamed
    assert info.value.position >= call_at


@settings(max_examples=60, deadline=None)
@given(valid_histories(), st.data())
def test_an_orphan_result_anywhere_is_caught_at_its_position(
    history: list[Message], data: st.DataObject
) -> None:
    # between two messages that are not inside a tool step
    boundaries = [
        i for i in range(len(history) + 1) if i == len(history) or history[i].role != "tool"
    ]
    boundaries = [i for i in boundaries if i == 0 or not history[i - 1].tool_calls]
    at = data.draw(st.sampled_from(boundaries))
    broken = [*history[:at], Message.tool_result("orphan", "x"), *history[at:]]
    with pytest.raises(InvalidHistoryError) as info:
        validate_history(broken, "openai")
    assert info.value.position == at
