"""``TriggeredCompactor``: a trigger and a strategy, plugged into ``Chat(compactor=...)``.

Before each LLM call the trigger decides whether to compact; when the provider says the
request does not fit, the trigger is skipped and the strategy runs regardless (then,
when it declines, the ``on_context_length`` strategy), because the call cannot succeed
as it is. Every compaction comes back as a ``CompactionOutcome``: the new history and
the record that rebuilds it with ``apply_compaction``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from goaicore.conversation.compaction.protocol import (
    CompactionReason,
    CompactionRequest,
    Compactor,
    RequestCompactor,
)
from goaicore.conversation.compaction.record import (
    CompactionOutcome,
    CompactionRecord,
    apply_compaction,
)
from goaicore.conversation.compaction.strategies import KeepLastExchanges, Strategy, run_plan
from goaicore.conversation.compaction.tokens import DEFAULT_COUNTER, TokenCounter
from goaicore.conversation.compaction.triggers import Always, Trigger, TriggerContext
from goaicore.conversation.messages import Message
from goaicore.conversation.validation import validate_history

log = logging.getLogger("goaicore.conversation.compaction")


class TriggeredCompactor:
    """Compacts with ``strategy`` when ``trigger`` fires (always, by default).

    ``counter`` measures tokens for the trigger, the strategy and the record (the fast
    heuristic by default; ``OpenAITokenCounter`` for exact OpenAI counts).
    ``on_context_length`` is tried when the provider rejected the request as too long
    and ``strategy`` found nothing to do; ``None`` lets the error through.
    """

    def __init__(
        self,
        strategy: Strategy,
        trigger: Trigger | None = None,
        *,
        counter: TokenCounter | None = None,
        on_context_length: Strategy | None = None,
    ) -> None:
        self.strategy = strategy
        self.trigger = trigger if trigger is not None else Always()
        self.counter = counter if counter is not None else DEFAULT_COUNTER
        self.on_context_length = (
            on_context_length if on_context_length is not None else KeepLastExchanges(1)
        )

    async def compact(
        self, messages: Sequence[Message], *, provider: str, reason: CompactionReason
    ) -> CompactionOutcome | None:
        """The ``Compactor`` protocol, for callers that only have a history."""
        return await self.compact_request(CompactionRequest(tuple(messages), provider, reason))

    async def compact_request(self, request: CompactionRequest) -> CompactionOutcome | None:
        """The compacted history and its record, or ``None`` when nothing changes."""
        context = TriggerContext(request, self.counter)
        if request.reason == "before_call" and not self.trigger.fires(context):
            return None
        plan = await run_plan(self.strategy, request, self.counter)
        if plan is None and request.reason == "context_length":
            plan = await run_plan(self.on_context_length, request, self.counter)
        if plan is None:
            return None
        messages = request.messages
        record = CompactionRecord(plan.strategy, plan.replacements, message_count=len(messages))
        compacted = apply_compaction(messages, record)
        validate_history(compacted, request.provider)
        tokens_after = self.counter.count_request(
            compacted, system=request.system, tools=request.tools
        )
        record = dataclasses.replace(
            record, tokens_before=context.estimated_tokens, tokens_after=tokens_after
        )
        log.info(
            "compacted %d messages with %s: %d -> %d tokens",
            record.removed_count,
            record.strategy,
            record.tokens_before,
            record.tokens_after,
            extra={"goaicore_event": "compaction", "reason": request.reason},
        )
        return CompactionOutcome(compacted, record, plan.warnings, plan.usage)

    def __repr__(self) -> str:
        return f"TriggeredCompactor({self.strategy!r}, {self.trigger!r})"


AnyCompactor = Compactor | RequestCompactor


def as_compactor(value: object) -> AnyCompactor | None:
    """What ``Chat(compactor=...)`` was given, as a compactor.

    A strategy alone (``TokenBudget(2000)``) becomes ``TriggeredCompactor(strategy)``: it
    is asked before every LLM call, and it decides itself whether anything is over its
    bounds (``TokenBudget`` only acts over its budget; ``KeepLastExchanges(n)`` whenever
    there are more than ``n`` exchanges). A ``TriggeredCompactor``, or anything with
    ``compact_request`` or ``compact``, is used as it is; ``None`` never compacts.
    Anything else is a ``TypeError`` that names what was given.
    """
    if value is None:
        return None
    if isinstance(value, type):
        raise TypeError(
            f"compactor got the class {value.__name__}; pass an instance, "
            f"e.g. {value.__name__}(...)"
        )
    if callable(getattr(value, "compact_request", None)) or callable(
        getattr(value, "compact", None)
    ):
        return value  # type: ignore[return-value]  # duck-typed: the turn asks it as it is
    if isinstance(value, Strategy):
        return TriggeredCompactor(value)
    raise TypeError(
        f"compactor got a value of type {type(value).__name__}; expected a strategy "
        "(e.g. TokenBudget(2000)), a TriggeredCompactor, or an object with compact() "
        "or compact_request()"
    )
