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

from goaicore.conversation.compaction.protocol import CompactionReason, CompactionRequest
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
