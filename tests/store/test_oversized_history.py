"""A record of ``events`` over the record limit, in a conversation's history: the store's
read lists exactly the events its snapshot's fold took, stretch by stretch (fold version
3 took one of any size; version 4 sets it aside), whatever its own limit."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime

from goaicore.fold.policy import policy_for_record_limit
from goaicore.fold.records import Applied, LogRecord, fold_records
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition, UserMessage
from goaicore.records.avro.api import encode_event
from goaicore.store.memory import InMemoryConversationStore

LIMIT = 65_536


def _record(offset: int, text: str) -> LogRecord:
    event = ConversationEvent(
        event_id=f"e{offset}",
        conversation_id="c",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        source="another producer",
        body=UserMessage(text=text),
    )
    return LogRecord(b"c", encode_event(event), LogPosition(partition=0, offset=offset))


def test_the_read_lists_what_each_stretch_folded_an_oversized_event_under() -> None:
    current = policy_for_record_limit(LIMIT)
    version_3 = dataclasses.replace(current, version=3)
    log = [_record(0, "small"), _record(1, "x" * 70_000), _record(2, "after the upgrade")]
    big_again = _record(3, "y" * 70_000)
    assert len(log[1].value or b"") > LIMIT
    # Folded by a worker of version 3 up to offset 1, then by one of version 4.
    snapshot: ConversationSnapshot | None = None
    stretches = [version_3, version_3, current, current]
    for record, policy in zip([*log, big_again], stretches, strict=True):
        folded: dict[bytes, ConversationSnapshot | None] = {b"c": snapshot}
        outcomes = list(fold_records([record], policy, folded.get))
        applied = [o.snapshot for o in outcomes if isinstance(o, Applied)]
        snapshot = applied[-1] if applied else snapshot
    assert snapshot is not None
    assert snapshot.event_count == 3  # the first oversized event folded, the second not
    assert snapshot.last_position == LogPosition(partition=0, offset=2)
    assert [bounds.format_version for bounds in snapshot.earlier_bounds] == [3]

    async def read() -> tuple[list[str], int]:
        # A store whose own limit would take either: the snapshot's stretches decide.
        async with InMemoryConversationStore(record_limit=4 * LIMIT) as store:
            store.memory.log[0].extend([*log, big_again])
            store.memory.stored["c"] = snapshot
            read = await store.read("c")
            return [logged.event.event_id for logged in read.events], read.skipped

    assert asyncio.run(read()) == (["e0", "e1", "e2"], 1)
