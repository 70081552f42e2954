"""The Agents SDK's Runner over a session, end to end on the local Responses API server.

Today the session is the SDK's SQLiteSession in memory; a goaicore session is one more
row of SESSIONS.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from agents import SQLiteSession
from agents.items import TResponseInputItem
from agents.memory import Session

from goaicore.testing.agents_runner import (
    ANSWER,
    FOLLOW_UP,
    AgentTurnsFailure,
    RunMode,
    check_agent_turns,
    digest,
)

SESSIONS: list[object] = [
    pytest.param(lambda: SQLiteSession("e2e"), id="sqlite-memory"),
]
MODES = [
    pytest.param(("run", "run"), id="run"),
    pytest.param(("run_streamed", "run_streamed"), id="run_streamed"),
    pytest.param(("run_streamed", "run"), id="streamed-then-run"),
    pytest.param(("run", "run_streamed"), id="run-then-streamed"),
]


@pytest.mark.parametrize("make_session", SESSIONS)
@pytest.mark.parametrize("modes", MODES)
async def test_two_turns_with_a_tool_over_the_session(
    make_session: Callable[[], Session], modes: tuple[RunMode, RunMode]
) -> None:
    report = await check_agent_turns(make_session(), modes=modes)

    assert report.final_outputs == [ANSWER, FOLLOW_UP]
    assert len(report.requests) == 3
    for deltas, mode in zip(report.deltas, modes, strict=True):
        assert (len(deltas) > 1) == (mode == "run_streamed")
    turn_2_input = report.requests[2]["input"]
    assert [item.get("type", "message") for item in turn_2_input] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    assert [item.get("role") for item in turn_2_input] == ["user", None, None, "assistant", "user"]
    assert turn_2_input[:4] == report.items[:4]
    assert len(report.items) == 6


async def test_a_session_that_forgets_is_named() -> None:
    class Forgetful(SQLiteSession):
        async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
            return []

    with pytest.raises(AgentTurnsFailure, match="request 3's input was"):
        await check_agent_turns(Forgetful("forgetful"))


def test_digest_reads_what_an_item_says() -> None:
    assert digest({"role": "user", "content": "hi"}) == ("message", "user", "hi")
    assert digest(
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}
    ) == ("message", "assistant", "a")
    assert digest(
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"x": 1}'}
    ) == ("function_call", "c", "f", {"x": 1})
    assert digest({"type": "function_call_output", "call_id": "c", "output": "o"}) == (
        "function_call_output",
        "c",
        "o",
    )
