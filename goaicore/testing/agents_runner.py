"""The OpenAI Agents SDK's ``Runner`` over a session, on the local Responses API server.

``check_agent_turns(session)`` holds a ``Session`` to what the SDK's runner needs of it
across turns, end to end: an ``Agent`` with one ``@function_tool``, on
``OpenAIResponsesModel`` with an ``AsyncOpenAI`` client pointed at a
:class:`~goaicore.testing.ResponsesServer` (no network, no key, tracing off), runs two
turns on the session::

    report = await check_agent_turns(SQLiteSession("e2e"), modes=("run", "run_streamed"))

- turn 1: the model calls ``get_score``, the tool runs, the model answers in text;
- turn 2: the model answers in text.

Each turn runs with ``Runner.run`` or ``Runner.run_streamed`` (``modes``, one per turn;
a streamed turn consumes ``stream_events()`` and must see its text arrive as several
``response.output_text.delta`` events). It checks what the model was sent (turn 2's
request carries turn 1's user message, function call, function call output and
assistant message, in order, then the new user message) and what the session holds
afterwards (those, then turn 2's assistant message), and raises
:class:`AgentTurnsFailure` saying what differed. The session must start empty.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import TResponseInputItem
from agents.memory import Session
from agents.models.openai_responses import OpenAIResponsesModel
from agents.result import RunResultBase
from agents.stream_events import RawResponsesStreamEvent
from openai import AsyncOpenAI
from openai.types.responses import ResponseTextDeltaEvent

from goaicore.testing.responses_server import ResponsesServer

RunMode = Literal["run", "run_streamed"]

QUESTION = "What is the score at Leeds?"
CALL_ID = "call_score_1"
TEAM = "Leeds"
SCORE = "Leeds 2-1"
ANSWER = "Leeds lead 2-1 at half time."
THANKS = "Thanks! Who scored?"
FOLLOW_UP = "Both goals came from the captain, one in each half."

Digest = tuple[Any, ...]
"""An item as the check compares it: its kind and what it says, not its ids."""

EXPECTED_TURN_1: list[Digest] = [
    ("message", "user", QUESTION),
    ("function_call", CALL_ID, "get_score", {"team": TEAM}),
    ("function_call_output", CALL_ID, SCORE),
    ("message", "assistant", ANSWER),
]
EXPECTED_ITEMS: list[Digest] = [
    *EXPECTED_TURN_1,
    ("message", "user", THANKS),
    ("message", "assistant", FOLLOW_UP),
]


class AgentTurnsFailure(AssertionError):
    """The runner, the model or the session did not do what the turns need."""


@dataclass
class AgentTurnsReport:
    """What happened: the requests the model got, the session's items, each turn's end."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    items: list[TResponseInputItem] = field(default_factory=list)
    final_outputs: list[str] = field(default_factory=list)
    deltas: list[list[str]] = field(default_factory=list)
    """Per turn, the text deltas a streamed turn saw (none for ``Runner.run``)."""
    tool_calls: list[str] = field(default_factory=list)
    """The teams ``get_score`` was called with."""
    usage: list[tuple[int, int, int]] = field(default_factory=list)
    """Per turn, the run's usage: model requests, input tokens, output tokens."""


async def check_agent_turns(
    session: Session, *, modes: Sequence[RunMode] = ("run", "run")
) -> AgentTurnsReport:
    """Run the two turns on ``session`` (empty), each with its mode; raise
    :class:`AgentTurnsFailure` on the first difference, else return what happened."""
    if len(modes) != 2 or any(mode not in ("run", "run_streamed") for mode in modes):
        raise ValueError(f"modes: one of 'run' or 'run_streamed' per turn, two turns: {modes}")
    set_tracing_disabled(True)
    report = AgentTurnsReport()
    before = await session.get_items()
    _expect(before == [], f"the session does not start empty: {before}")

    @function_tool
    def get_score(team: str) -> str:
        """The current score of a team's match."""
        report.tool_calls.append(team)
        return SCORE if team == TEAM else "no match"

    with ResponsesServer() as server:
        server.reply(tool_calls=[(CALL_ID, "get_score", {"team": TEAM})])
        server.reply(ANSWER)
        server.reply(FOLLOW_UP)
        client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        try:
            model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
            agent = Agent(
                name="scores", instructions="Answer briefly.", model=model, tools=[get_score]
            )
            for turn, (mode, text) in enumerate(zip(modes, (QUESTION, THANKS), strict=True)):
                output, deltas, usage = await _turn(agent, text, session, mode)
                report.final_outputs.append(output)
                report.deltas.append(deltas)
                report.usage.append(usage)
                if mode == "run_streamed":
                    _expect(
                        len(deltas) > 1 and "".join(deltas) == output,
                        f"turn {turn + 1} streamed its text as {deltas}, not in pieces "
                        f"making {output!r}",
                    )
        finally:
            await client.close()
        report.requests = [body for body in server.bodies if isinstance(body, dict)]
        _expect(
            server.unexpected == 0 and server.pending == 0,
            f"the model was called {len(server.requests)} times, not 3",
        )
    report.items = await session.get_items()
    _check(report, modes)
    return report


async def _turn(
    agent: Agent[Any], text: str, session: Session, mode: RunMode
) -> tuple[str, list[str], tuple[int, int, int]]:
    deltas: list[str] = []
    if mode == "run":
        result: RunResultBase = await Runner.run(agent, text, session=session)
    else:
        streamed = Runner.run_streamed(agent, text, session=session)
        async for event in streamed.stream_events():
            if isinstance(event, RawResponsesStreamEvent) and isinstance(
                event.data, ResponseTextDeltaEvent
            ):
                deltas.append(event.data.delta)
        result = streamed
    usage = result.context_wrapper.usage
    return (
        str(result.final_output),
        deltas,
        (usage.requests, usage.input_tokens, usage.output_tokens),
    )


def _check(report: AgentTurnsReport, modes: Sequence[RunMode]) -> None:
    _expect(
        report.final_outputs == [ANSWER, FOLLOW_UP],
        f"the turns ended with {report.final_outputs}, not {[ANSWER, FOLLOW_UP]}",
    )
    _expect(report.tool_calls == [TEAM], f"get_score ran for {report.tool_calls}, not [{TEAM}]")
    # the server's usage is 10 tokens in and 5 out a request; turn 1 made two requests
    expected_usage = [(2, 20, 10), (1, 10, 5)]
    _expect(
        report.usage == expected_usage, f"the runs counted {report.usage}, not {expected_usage}"
    )
    requests = report.requests
    for number, (body, turn) in enumerate(zip(requests, (0, 0, 1), strict=True)):
        _expect(
            (body.get("stream") is True) == (modes[turn] == "run_streamed"),
            f"request {number + 1} (turn {turn + 1}, {modes[turn]}) had "
            f"stream={body.get('stream')}",
        )
    sent = [[digest(item) for item in body.get("input") or []] for body in requests]
    expected_sent = [
        EXPECTED_TURN_1[:1],
        EXPECTED_TURN_1[:3],
        [*EXPECTED_TURN_1, ("message", "user", THANKS)],
    ]
    for number, (got, want) in enumerate(zip(sent, expected_sent, strict=True)):
        _expect(got == want, f"request {number + 1}'s input was {got}, not {want}")
    tools = [tool.get("name") for tool in requests[0].get("tools") or []]
    _expect(tools == ["get_score"], f"the model was offered the tools {tools}, not get_score")
    stored = [digest(item) for item in report.items]
    _expect(stored == EXPECTED_ITEMS, f"the session holds {stored}, not {EXPECTED_ITEMS}")
    # what the session gave back for turn 2 is what the model was sent, item for item
    history = requests[2].get("input") or []
    _expect(
        history[:4] == report.items[:4],
        f"turn 2 sent {history[:4]}, but the session holds {report.items[:4]}",
    )


def digest(item: Any) -> Digest:
    """An input item as ``(kind, ...what it says)``: a message's role and text, a
    function call's call id, name and parsed arguments, an output's call id and output."""
    if not isinstance(item, dict):
        return ("not a dict", repr(item))
    kind = item.get("type", "message")
    if kind == "message":
        return ("message", item.get("role"), _text(item.get("content")))
    if kind == "function_call":
        arguments = item.get("arguments")
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            parsed = arguments
        return ("function_call", item.get("call_id"), item.get("name"), parsed)
    if kind == "function_call_output":
        return ("function_call_output", item.get("call_id"), item.get("output"))
    return (kind,)


def _text(content: Any) -> Any:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AgentTurnsFailure(message)
