"""Strategies: how to compact, as a plan of ranges to replace.

A strategy never builds the compacted history itself: it returns a ``Plan`` (ranges of
the history and what replaces each), and the compactor turns the plan into a
``CompactionRecord`` and the history into ``apply_compaction(history, record)``. So the
history a turn continues with and the history a replay rebuilds come from the same
function. Strategies cut only at exchange boundaries or around whole tool steps, and
always keep the latest exchange (the latest user message and what followed it).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from goaicore.conversation.compaction.exchanges import Span, tool_runs, units, user_positions
from goaicore.conversation.compaction.protocol import CompactionRequest
from goaicore.conversation.compaction.record import Replacement
from goaicore.conversation.compaction.tokens import TokenCounter
from goaicore.conversation.messages import Message
from goaicore.records.types import Usage

log = logging.getLogger("goaicore.conversation.compaction")


@dataclass(frozen=True, slots=True)
class Plan:
    """What a strategy would replace: sorted, non-overlapping ranges.

    ``usage`` is what planning cost in LLM tokens (summaries), ``warnings`` what the
    caller should know (an exchange over the whole budget, kept).
    """

    strategy: str
    replacements: tuple[Replacement, ...]
    warnings: tuple[str, ...] = ()
    usage: Usage | None = None


PlanResult = Plan | None


@runtime_checkable
class Strategy(Protocol):
    """Plans a compaction of a request's history, or returns ``None`` when it does not apply."""

    @property
    def name(self) -> str: ...

    def plan(
        self, request: CompactionRequest, counter: TokenCounter
    ) -> PlanResult | Awaitable[PlanResult]: ...


async def run_plan(
    strategy: Strategy, request: CompactionRequest, counter: TokenCounter
) -> PlanResult:
    """A strategy's plan, awaited when the strategy is async."""
    result = strategy.plan(request, counter)
    if inspect.isawaitable(result):
        return await result
    return result


def _drop_prefix(name: str, end: int, note: str | None, warnings: Sequence[str] = ()) -> Plan:
    return Plan(name, (Replacement(0, end - 1, note),), tuple(warnings))


class KeepLastExchanges:
    """Keep the last ``count`` exchanges; drop everything before them.

    ``note``, when given, takes the place of what was dropped (e.g. "Earlier messages
    were removed."), so the model knows the conversation is longer than it sees.
    """

    name = "keep-last-exchanges"

    def __init__(self, count: int, *, note: str | None = None) -> None:
        if count < 1:
            raise ValueError("KeepLastExchanges keeps at least one exchange")
        self.count = count
        self.note = note

    def plan(self, request: CompactionRequest, counter: TokenCounter) -> PlanResult:
        starts = user_positions(request.messages)
        if not starts:
            return None
        cut = starts[-min(self.count, len(starts))]
        return _drop_prefix(self.name, cut, self.note) if cut > 0 else None

    def __repr__(self) -> str:
        return f"KeepLastExchanges({self.count})"


class TokenBudget:
    """Drop the oldest whole exchanges until the request fits ``budget`` tokens.

    The budget covers the whole request as ``counter`` counts it (system prompt and tool
    schemas included). The latest exchange is always kept: when it alone is over the
    budget, everything older is dropped and a warning says so, rather than wiping the
    conversation.
    """

    name = "token-budget"

    def __init__(self, budget: int, *, note: str | None = None) -> None:
        if budget < 1:
            raise ValueError("the token budget must be positive")
        self.budget = budget
        self.note = note

    def plan(self, request: CompactionRequest, counter: TokenCounter) -> PlanResult:
        messages = request.messages
        total = counter.count_request(messages, system=request.system, tools=request.tools)
        if total <= self.budget:
            return None
        spans = units(messages)
        if not user_positions(messages) or len(spans) < 2:
            _warn_over_budget(total, self.budget, dropped=False)
            return None
        note_cost = counter.count_message(Message.context(self.note)) if self.note else 0
        kept = total + note_cost
        dropped = 0
        while dropped < len(spans) - 1 and kept > self.budget:
            span = spans[dropped]
            kept -= sum(counter.count_message(m) for m in messages[span.start : span.end])
            dropped += 1
        warnings = []
        if kept > self.budget:
            warnings.append(_warn_over_budget(kept, self.budget, dropped=True))
        return _drop_prefix(self.name, spans[dropped].start, self.note, warnings)

    def __repr__(self) -> str:
        return f"TokenBudget({self.budget})"


def _warn_over_budget(tokens: int, budget: int, *, dropped: bool) -> str:
    what = "after dropping every older exchange" if dropped else "with nothing older to drop"
    message = (
        f"the latest exchange alone counts {tokens} tokens, over the budget of {budget} "
        f"({what}); it is kept whole"
    )
    log.warning(message, extra={"goaicore_event": "compaction_over_budget", "tokens": tokens})
    return message


class ToolExchangeSummary:
    """Replace old tool-call/result runs with a one-line note of what was called and returned.

    A run is consecutive tool steps (an assistant message with tool calls and all its
    results). Runs in the last ``keep_last`` exchanges are kept as they are, so a tool
    chain in progress is never touched. The note is deterministic: ``[tools]
    name(arguments) -> result; ...``, each argument list and result cut to
    ``max_chars`` characters; an assistant's text beside its calls is kept in quotes.
    """

    name = "tool-exchange-summary"

    def __init__(self, *, keep_last: int = 1, max_chars: int = 120) -> None:
        if keep_last < 1:
            raise ValueError("ToolExchangeSummary keeps at least the latest exchange")
        if max_chars < 8:
            raise ValueError("max_chars must be at least 8")
        self.keep_last = keep_last
        self.max_chars = max_chars

    def plan(self, request: CompactionRequest, counter: TokenCounter) -> PlanResult:
        messages = request.messages
        starts = user_positions(messages)
        if len(starts) <= self.keep_last:
            return None
        old = Span(0, starts[-self.keep_last])
        replacements = tuple(
            Replacement(run.start, run.last, self.note(messages[run.start : run.end]))
            for run in tool_runs(messages, old)
        )
        return Plan(self.name, replacements) if replacements else None

    def note(self, run: Sequence[Message]) -> str:
        """The one-line note for a run of tool steps."""
        results = {m.tool_call_id: m for m in run if m.role == "tool"}
        parts: list[str] = []
        for m in run:
            if m.role != "assistant":
                continue
            if m.text.strip():
                parts.append(f'"{_clip(m.text, self.max_chars)}"')
            for call in m.tool_calls:
                result = results.get(call.id)
                returned = "(no result)" if result is None else (result.text or "(empty)")
                arrow = "-> error:" if result is not None and result.is_error else "->"
                parts.append(
                    f"{call.name}({_clip(call.arguments, self.max_chars)}) "
                    f"{arrow} {_clip(returned, self.max_chars)}"
                )
        return "[tools] " + "; ".join(parts)

    def __repr__(self) -> str:
        return f"ToolExchangeSummary(keep_last={self.keep_last})"


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Composite:
    """The first of its strategies that applies."""

    def __init__(self, *strategies: Strategy) -> None:
        if not strategies:
            raise ValueError("Composite needs at least one strategy")
        self.strategies = strategies

    @property
    def name(self) -> str:
        return "composite(" + ",".join(s.name for s in self.strategies) + ")"

    async def plan(self, request: CompactionRequest, counter: TokenCounter) -> PlanResult:
        for strategy in self.strategies:
            plan = await run_plan(strategy, request, counter)
            if plan is not None:
                return plan
        return None

    def __repr__(self) -> str:
        return f"Composite{self.strategies!r}"
