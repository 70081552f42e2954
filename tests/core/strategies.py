"""Hypothesis strategies: histories that are valid for every provider."""

from __future__ import annotations

from hypothesis import strategies as st

from goaicore import Message, ToolCall

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12
).filter(lambda s: s.strip() != "")


@st.composite
def _turn(draw: st.DrawFn, turn: int) -> list[Message]:
    """Context messages, a user message, then tool steps, then a final answer."""
    messages: list[Message] = [Message.context(draw(_text)) for _ in range(draw(st.integers(0, 1)))]
    messages.append(Message.user(draw(_text)))
    for step in range(draw(st.integers(0, 2))):
        n = draw(st.integers(1, 3))
        calls = [ToolCall(f"c{turn}_{step}_{i}", f"tool{i}", "{}") for i in range(n)]
        messages.append(Message.assistant(draw(st.sampled_from(["", "thinking"])), calls))
        messages.extend(
            Message.tool_result(c.id, draw(st.sampled_from(["", "ok", "42"])), name=c.name)
            for c in calls
        )
    messages.append(Message.assistant(draw(_text)))
    return messages


@st.composite
def valid_histories(draw: st.DrawFn, max_turns: int = 4) -> list[Message]:
    history: list[Message] = []
    for turn in range(draw(st.integers(0, max_turns))):
        history.extend(draw(_turn(turn)))
    return history
