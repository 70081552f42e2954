"""Shared helpers: run a compactor synchronously, replay records, pick out exchanges."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from goaicore import Message, decode_event, encode_event, new_event
from goaicore.conversation.compaction import (
    CompactionOutcome,
    CompactionRecord,
    CompactionRequest,
    Strategy,
    TokenCounter,
    TriggeredCompactor,
    apply_compaction,
    from_compaction_applied,
    to_compaction_applied,
)
from goaicore.conversation.tools import Tool
from goaicore.records import CompactionApplied


def compact(
    strategy: Strategy,
    messages: Sequence[Message],
    *,
    provider: str = "openai",
    counter: TokenCounter | None = None,
    system: Sequence[str] = (),
    tools: Sequence[Tool] = (),
) -> CompactionOutcome | None:
    """One compaction with ``strategy``, always triggered."""
    compactor = TriggeredCompactor(strategy, counter=counter)
    request = CompactionRequest(tuple(messages), provider, system=system, tools=tools)
    return asyncio.run(compactor.compact_request(request))


def through_the_log(record: CompactionRecord) -> CompactionRecord:
    """The record as the fold reads it back: event body -> Avro bytes -> event -> record."""
    event = new_event("conv-1", to_compaction_applied(record, basis_event_id="e" * 32))
    body = decode_event(encode_event(event)).body
    assert isinstance(body, CompactionApplied)
    return from_compaction_applied(body)


def replay(
    history: Sequence[Message], timeline: Sequence[Message | CompactionRecord]
) -> list[Message]:
    """What a fold rebuilds from a turn's timeline, each record read back from the log."""
    messages = list(history)
    for item in timeline:
        if isinstance(item, CompactionRecord):
            messages = apply_compaction(messages, through_the_log(item))
        else:
            messages.append(item)
    return messages


def last_exchange(messages: Sequence[Message]) -> list[Message]:
    """From the latest user message on (empty when there is none)."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    return list(messages[users[-1] :]) if users else []
