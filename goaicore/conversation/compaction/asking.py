"""Asking a compactor for a shorter history: the one place that knows both compactor
protocols and both shapes of an answer, for a turn before its LLM calls and for a
session compacting between runs."""

from __future__ import annotations

import inspect
import logging

from goaicore.conversation.compaction.protocol import (
    CompactionRequest,
    Compactor,
    RequestCompactor,
)
from goaicore.conversation.compaction.record import CompactionOutcome, CompactionRecord, diff_record
from goaicore.conversation.messages import Message

log = logging.getLogger("goaicore.conversation")


async def compacted(
    compactor: Compactor | RequestCompactor, request: CompactionRequest
) -> tuple[list[Message], CompactionRecord | None] | None:
    """The history ``compactor`` makes of ``request``'s and the record that replays it
    (None: an answer without one, which an event log cannot replay), or None when it
    keeps the history as it is."""
    messages = list(request.messages)
    if isinstance(compactor, RequestCompactor):
        result = compactor.compact_request(request)
    else:
        result = compactor.compact(messages, provider=request.provider, reason=request.reason)
    if inspect.isawaitable(result):
        result = await result
    if result is None:
        return None
    if isinstance(result, CompactionOutcome):
        return list(result.messages), result.record
    shorter = list(result)
    record = diff_record(messages, shorter)
    if record is None and shorter != messages:
        log.warning(
            "a compaction without a record cannot be replayed from an event log",
            extra={"goaicore_event": "compaction_without_record"},
        )
    return shorter, record
