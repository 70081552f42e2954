"""Sample conversations for the projection tests: every body type, known times."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from goaicore.records import (
    AssistantTurn,
    ConversationEvent,
    EventBody,
    GameEvent,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
    new_event,
)

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def game_session(conversation_id: str, start: datetime = START) -> list[ConversationEvent]:
    """Seven events a minute apart: a check-in, a question, a tool call and its answer."""
    bodies: list[EventBody] = [
        GameEvent(
            kind="check-in",
            text="Player checked in at Harrogate Theatre",
            attributes={"venue": "Harrogate Theatre"},
        ),
        UserMessage(text="Which theatres are near the station?"),
        AssistantTurn(
            tool_calls=(ToolCall(id="c1", name="venues", arguments='{"near": "station"}'),),
            finish_reason="tool_calls",
            usage=Usage(prompt_tokens=120, completion_tokens=12, total_tokens=132),
            provider="openai",
            model="gpt-test",
            cost_usd_nanos=1_500,
        ),
        ToolResult(tool_call_id="c1", name="venues", content="Royal Hall; Harrogate Theatre"),
        AssistantTurn(
            text="The Royal Hall and Harrogate Theatre are both a short walk away.",
            finish_reason="stop",
            usage=Usage(prompt_tokens=150, completion_tokens=20, total_tokens=170, llm_calls=1),
            provider="openai",
            model="gpt-test",
            cost_usd_nanos=2_000,
        ),
        TurnFailed(request_id="r9", kind="timeout", message="the provider did not answer"),
        AssistantTurn(text="Still here.", provider="offline", model="goaicore-offline"),
    ]
    return [
        new_event(conversation_id, body, source="game", occurred_at=start + timedelta(minutes=n))
        for n, body in enumerate(bodies)
    ]
