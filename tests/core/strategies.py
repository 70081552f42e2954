"""Hypothesis strategies: histories that are valid for every provider."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from goaicore import Message, ToolCall

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12
).filter(lambda s: s.strip() != "")


RESPONSES = "openai-responses"


def _kept_raw(draw: st.DrawFn, message: Message, raw: dict[str, Any]) -> Message:
    """``message``, sometimes with the Responses input item it came as (its neutral
    fields stay what every other provider reads)."""
    if not draw(st.booleans()):
        return message
    return dataclasses.replace(message, provider=RESPONSES, raw=raw)


@st.composite
def _turn(draw: st.DrawFn, turn: int) -> list[Message]:
    """Context messages, a user message, then tool steps, then a final answer."""
    messages: list[Message] = [Message.context(draw(_text)) for _ in range(draw(st.integers(0, 1)))]
    text = draw(_text)
    messages.append(_kept_raw(draw, Message.user(text), {"content": text, "role": "user"}))
    for step in range(draw(st.integers(0, 2))):
        n = draw(st.integers(1, 3))
        calls = [ToolCall(f"c{turn}_{step}_{i}", f"tool{i}", "{}") for i in range(n)]
        messages.append(Message.assistant(draw(st.sampled_from(["", "thinking"])), calls))
        for c in calls:
            output = draw(st.sampled_from(["", "ok", "42"]))
            item = {"call_id": c.id, "output": output, "type": "function_call_output"}
            messages.append(_kept_raw(draw, Message.tool_result(c.id, output, name=c.name), item))
    messages.append(Message.assistant(draw(_text)))
    return messages


@st.composite
def valid_histories(draw: st.DrawFn, max_turns: int = 4) -> list[Message]:
    history: list[Message] = []
    for turn in range(draw(st.integers(0, max_turns))):
        history.extend(draw(_turn(turn)))
    return history
