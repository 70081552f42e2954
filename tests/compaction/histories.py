"""Hypothesis strategies: conversations with tool chains, valid for both providers.

Wider than ``tests.core.strategies``: a context preamble, context between and inside
exchanges, two user messages in a row, tool steps with several calls and error results,
exchanges left without a final answer, texts of very different lengths, and optionally a
last exchange still inside its tool chain (as a history stands between two LLM calls of
one turn).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from goaicore import Message, ToolCall

_words = st.sampled_from(
    ["Leeds", "York", "score", "theatre", "ticket", "the", "player", "checked", "in", "42", "é"]
)


@st.composite
def texts(draw: st.DrawFn, max_words: int = 40) -> str:
    """Non-empty text of 1..max_words words (so token counts vary widely)."""
    return " ".join(draw(st.lists(_words, min_size=1, max_size=max_words)))


@st.composite
def tool_step(draw: st.DrawFn, tag: str) -> list[Message]:
    """An assistant message with 1-3 tool calls and all their results, in any order."""
    count = draw(st.integers(1, 3))
    calls = [
        ToolCall(f"call_{tag}_{i}", draw(st.sampled_from(["get_score", "find_venue"])), "")
        for i in range(count)
    ]
    calls = [
        ToolCall(c.id, c.name, json.dumps({"q": draw(texts(3))}, separators=(",", ":")))
        for c in calls
    ]
    text = draw(st.sampled_from(["", "", "Let me check."]))
    results = [
        Message.tool_result(
            c.id, draw(texts(12)), name=c.name, is_error=draw(st.booleans()) and i == 0
        )
        for i, c in enumerate(calls)
    ]
    order = draw(st.permutations(range(count)))
    return [Message.assistant(text, calls), *(results[i] for i in order)]


@st.composite
def exchange(draw: st.DrawFn, n: int, *, in_progress: bool = False) -> list[Message]:
    messages = [Message.user(draw(texts()))]
    if draw(st.integers(0, 5)) == 0:
        messages.append(Message.user(draw(texts(5))))  # a second user message
    for step in range(draw(st.integers(0, 3))):
        if draw(st.integers(0, 4)) == 0:
            messages.append(Message.context(draw(texts(6))))
        messages.extend(draw(tool_step(f"{n}_{step}")))
    if in_progress:
        return messages
    if draw(st.integers(0, 5)) > 0 or messages[-1].role == "user":
        messages.append(Message.assistant(draw(texts())))
    for _ in range(draw(st.integers(0, 2))):
        messages.append(Message.context(draw(texts(10))))  # game events since
    return messages


@st.composite
def conversations(draw: st.DrawFn, max_exchanges: int = 8) -> list[Message]:
    """A history of 0..max_exchanges exchanges after an optional context preamble."""
    history = [Message.context(draw(texts(8))) for _ in range(draw(st.integers(0, 2)))]
    count = draw(st.integers(0, max_exchanges))
    for n in range(count):
        last = n == count - 1
        history.extend(draw(exchange(n, in_progress=last and draw(st.booleans()))))
    return history
