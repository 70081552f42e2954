"""A conversation's timeline: its events in log order, the replies to its requests, and
for each compaction the messages it replaced.

The replaced messages are not in the compaction's record (it names their indexes);
they are read off the snapshot just before it, folded from the stored events with
the worker's own fold in one pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from goaicore.fold.policy import FoldPolicy, PolicyTimeline
from goaicore.fold.records import Applied, LogRecord, fold_records
from goaicore.projection.queries import StoredEvent
from goaicore.projection.rows import ReplyRow
from goaicore.records import CompactionApplied, ConversationSnapshot, LogPosition, SnapshotMessage


@dataclass(frozen=True)
class Entry:
    """One line of the timeline: an event of the log, or a reply to one of its requests."""

    kind: str  # "event" or "reply"
    partition: int
    offset: int
    occurred_at: datetime | None
    body_type: str  # the event's body type, or the reply's status
    source: str
    request_id: str | None
    event_id: str | None
    body: dict[str, Any]
    replaced: tuple[SnapshotMessage, ...] = field(default=())
    """For a compaction: the messages it replaced, as the history held them."""


def timeline(
    events: Sequence[StoredEvent],
    replies: Sequence[ReplyRow],
    policy: FoldPolicy | PolicyTimeline,
) -> list[Entry]:
    """Events in log order; each reply right after the last event of its request (a
    reply whose request left no event comes at the end, in the replies' order)."""
    replaced = _replaced_by_compactions(events, policy)
    by_request: dict[str, list[ReplyRow]] = {}
    for reply in replies:
        by_request.setdefault(reply.request_id, []).append(reply)
    last_of_request = {e.causation_id: i for i, e in enumerate(events) if e.causation_id}
    placed: list[Entry] = []
    for index, event in enumerate(events):
        placed.append(
            Entry(
                "event",
                event.partition,
                event.offset,
                event.occurred_at,
                event.body_type,
                event.source,
                event.causation_id,
                event.event_id,
                event.body,
                replaced.get((event.partition, event.offset), ()),
            )
        )
        if event.causation_id and last_of_request[event.causation_id] == index:
            placed.extend(_reply_entry(r) for r in by_request.pop(event.causation_id, ()))
    placed.extend(_reply_entry(r) for rs in by_request.values() for r in rs)
    return placed


def _reply_entry(reply: ReplyRow) -> Entry:
    body: dict[str, Any] = {
        "status": reply.status,
        "text": reply.text,
        "error": reply.error,
        "latency_ms": reply.latency_ms,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "llm_calls": reply.llm_calls,
    }
    return Entry(
        "reply",
        reply.topic_partition,
        reply.log_offset,
        reply.published_at,
        reply.status,
        "replies",
        reply.request_id,
        None,
        body,
    )


def _replaced_by_compactions(
    events: Sequence[StoredEvent], policy: FoldPolicy | PolicyTimeline
) -> dict[tuple[int, int], tuple[SnapshotMessage, ...]]:
    if not any(e.body_type == "CompactionApplied" for e in events):
        return {}
    found: dict[tuple[int, int], tuple[SnapshotMessage, ...]] = {}
    before: ConversationSnapshot | None = None
    for outcome in fold_records(_records(events), policy):
        if not isinstance(outcome, Applied):
            continue
        body = outcome.event.body
        if isinstance(body, CompactionApplied) and before is not None:
            position = outcome.record.position
            found[(position.partition, position.offset)] = replaced_messages(before, body)
        before = outcome.snapshot
    return found


def replaced_messages(
    before: ConversationSnapshot, body: CompactionApplied
) -> tuple[SnapshotMessage, ...]:
    """The messages of ``before`` that ``body``'s ranges cover, in history order."""
    ranges = [(r.first_index, r.last_index) for r in body.replacements] or [
        (body.first_index, body.last_index)
    ]
    indexes = sorted({i for first, last in ranges for i in range(first, last + 1)})
    return tuple(before.messages[i] for i in indexes if 0 <= i < len(before.messages))


def _records(events: Sequence[StoredEvent]) -> list[LogRecord]:
    return [
        LogRecord(
            e.conversation_id.encode(), e.avro, LogPosition(partition=e.partition, offset=e.offset)
        )
        for e in events
    ]
