"""Hypothesis strategies for well-formed conversation logs, as a chat worker writes them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from goaicore.fold import DEFAULT_POLICY, FoldPolicy, fold
from goaicore.fold.policy import PolicyTimeline
from goaicore.records import (
    AssistantTurn,
    ConversationEvent,
    ConversationReset,
    ConversationSnapshot,
    EventBody,
    GameEvent,
    LogPosition,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
words = st.text(alphabet="abcdefghij ", min_size=1, max_size=12)


@st.composite
def user_message(draw: st.DrawFn) -> UserMessage:
    """A user message, sometimes kept with its provider's raw JSON (a Responses input item)."""
    text = draw(words)
    if not draw(st.booleans()):
        return UserMessage(text=text)
    raw = json.dumps({"content": text, "role": "user"})
    return UserMessage(text=text, raw_json=raw, provider="openai-responses")


@st.composite
def tool_result(draw: st.DrawFn, call: ToolCall) -> ToolResult:
    """The result of ``call``, sometimes kept with its provider's raw JSON."""
    content = draw(words)
    if not draw(st.booleans()):
        return ToolResult(tool_call_id=call.id, name=call.name, content=content)
    raw = json.dumps({"call_id": call.id, "output": content, "type": "function_call_output"})
    return ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=content,
        raw_json=raw,
        provider="openai-responses",
    )


@st.composite
def step(draw: st.DrawFn, n: int) -> list[EventBody]:
    """One thing that happens in a conversation, as the bodies it appends."""
    kind = draw(st.sampled_from(["user", "game", "turn", "tools", "failed", "reset"]))
    if kind == "user":
        return [draw(user_message())]
    if kind == "game":
        return [GameEvent(kind="game", text=draw(words), attributes={"n": str(n)})]
    if kind == "failed":
        return [TurnFailed(request_id=f"r{n}", kind="error", message="boom")]
    if kind == "reset":
        return [ConversationReset(reason="player asked")]
    usage = Usage(prompt_tokens=draw(st.integers(0, 500)), completion_tokens=3, total_tokens=0)
    if kind == "turn":
        return [draw(user_message()), AssistantTurn(text=draw(words), usage=usage)]
    calls = [
        ToolCall(id=f"call-{n}-{i}", name="lookup", arguments="{}")
        for i in range(draw(st.integers(1, 3)))
    ]
    bodies: list[EventBody] = [
        draw(user_message()),
        AssistantTurn(text="", tool_calls=tuple(calls), usage=usage, provider="openai"),
    ]
    for call in calls:
        if draw(st.booleans()):  # another producer's event lands inside the tool chain
            bodies.append(GameEvent(kind="game", text=draw(words)))
        bodies.append(draw(tool_result(call)))
    bodies.append(AssistantTurn(text=draw(words), usage=usage, provider="openai"))
    return bodies


@st.composite
def conversation_log(
    draw: st.DrawFn, conversation_id: str = "c", max_steps: int = 12
) -> list[tuple[ConversationEvent, LogPosition]]:
    """A conversation's events with increasing (gapped) offsets in partition 0."""
    bodies: list[EventBody] = []
    for n in range(draw(st.integers(0, max_steps))):
        bodies.extend(draw(step(n)))
    log: list[tuple[ConversationEvent, LogPosition]] = []
    offset = draw(st.integers(0, 5))
    for i, body in enumerate(bodies):
        event = ConversationEvent(
            event_id=f"{conversation_id}-{i}",
            conversation_id=conversation_id,
            occurred_at=START + timedelta(seconds=i),
            source="test",
            body=body,
        )
        log.append((event, LogPosition(partition=0, offset=offset)))
        offset += draw(st.integers(1, 3))
    return log


def fold_all(
    events: Sequence[tuple[ConversationEvent, LogPosition]],
    snapshot: ConversationSnapshot | None = None,
    policy: FoldPolicy | PolicyTimeline = DEFAULT_POLICY,
) -> ConversationSnapshot | None:
    """The fold of decoded events in order: the pure fold alone, without the record loop's
    decoding and key checks (those have their own tests); a timeline gives each event
    its stretch's policy."""
    for event, position in events:
        bounds = policy.at(position) if isinstance(policy, PolicyTimeline) else policy
        snapshot = fold(snapshot, event, position, bounds)
    return snapshot
