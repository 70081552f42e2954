"""The units a strategy may cut at: exchanges and tool runs.

An exchange is a user message and everything after it up to the next user message (the
assistant's replies, its tool calls and their results, context that arrived since).
Whatever precedes the first user message is the preamble. Cutting only at the start of
an exchange keeps every tool call with its results and leaves a history that starts
with a user turn, which both providers accept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from goaicore.conversation.messages import Message


@dataclass(frozen=True, slots=True)
class Span:
    """Messages ``start`` to ``end`` (exclusive) of a history."""

    start: int
    end: int

    @property
    def last(self) -> int:
        return self.end - 1

    def __len__(self) -> int:
        return self.end - self.start


def user_positions(messages: Sequence[Message]) -> list[int]:
    """Where each exchange starts."""
    return [i for i, m in enumerate(messages) if m.role == "user"]


def units(messages: Sequence[Message]) -> list[Span]:
    """The preamble (when not empty) and then every exchange, in order, covering all."""
    starts = user_positions(messages)
    bounds = ([0] if not starts or starts[0] > 0 else []) + starts + [len(messages)]
    return [Span(a, b) for a, b in pairwise(bounds) if b > a]


def tool_steps(messages: Sequence[Message], span: Span) -> list[Span]:
    """The complete tool steps inside ``span``: a call message and exactly its results."""
    steps: list[Span] = []
    i = span.start
    while i < span.end:
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            ids = [c.id for c in m.tool_calls]
            end = i + 1 + len(ids)
            answered = [r.tool_call_id or "" for r in messages[i + 1 : end] if r.role == "tool"]
            if end <= span.end and sorted(answered) == sorted(ids):
                steps.append(Span(i, end))
                i = end
                continue
        i += 1
    return steps


def tool_runs(messages: Sequence[Message], span: Span) -> list[Span]:
    """Maximal runs of consecutive complete tool steps inside ``span``."""
    runs: list[Span] = []
    for step in tool_steps(messages, span):
        if runs and runs[-1].end == step.start:
            runs[-1] = Span(runs[-1].start, step.end)
        else:
            runs.append(step)
    return runs
