"""Read-your-writes: wait until the fold has applied what was in the log before a request.

A chat request carries no offsets, so when a store takes a request up it asks
for the end of the conversation's ``events`` partition (the topics are
co-partitioned: same partition number; over Kafka,
:class:`goaicore.kafka.high_watermarks.HighWatermarks`), then waits until its fold
has consumed that partition up to it, or the conversation's snapshot has applied
the offset before it. Everything
published before the request (an event, the previous turn) is then in the
history the turn sends. Where publishers write to ``intake`` the wait starts with
the intake: until this worker has sealed its partition up to its end into
``events``, whose end is asked after that.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from goaicore.records import ConversationSnapshot

if TYPE_CHECKING:
    from goaicore.store.port import Appended


class FoldProgress:
    """How far the fold agent has consumed each ``events`` partition (next offset)."""

    def __init__(self) -> None:
        self._next: dict[int, int] = defaultdict(int)
        self._changed = asyncio.Condition()

    def get(self, partition: int) -> int:
        return self._next[partition]

    async def advance(self, offsets: dict[int, int]) -> None:
        """Record that the fold applied every record below ``offsets[partition]``."""
        async with self._changed:
            for partition, offset in offsets.items():
                if offset > self._next[partition]:
                    self._next[partition] = offset
            self._changed.notify_all()

    async def wait_applied(
        self,
        partition: int,
        high_watermark: int,
        snapshot_of: Any,
        patience: float,
        committed: Callable[[], int | None] = lambda: None,
    ) -> bool:
        """Wait until the fold is at ``high_watermark``; False when ``patience`` ran out.

        ``snapshot_of()`` returns the conversation's current snapshot: when it has
        applied offset ``high_watermark - 1`` nothing of this conversation is missing
        even if the fold is behind on other conversations' records. ``committed()`` is
        the group's committed offset of the partition: everything below it was taken in
        before this worker got the partition, which then brings nothing new to count.
        """

        def caught_up() -> bool:
            if max(self._next[partition], committed() or 0) >= high_watermark:
                return True
            snapshot: ConversationSnapshot | None = snapshot_of()
            last = snapshot.last_position if snapshot is not None else None
            return (
                last is not None
                and last.partition == partition
                and last.offset >= high_watermark - 1
            )

        return await self.until(caught_up, patience)

    async def until(self, condition: Callable[[], bool], patience: float) -> bool:
        """Wait until ``condition()`` holds, looked at now and after each advance of the
        fold; False when ``patience`` ran out first."""
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(condition), patience)
        except TimeoutError:
            return False
        return True


def applied(snapshot: ConversationSnapshot | None, after: Appended, events_topic: str) -> bool:
    """The snapshot has applied the caller's own write ``after``: by its event id, or by
    its place in ``events_topic`` (an id leaves the recent-id window; a position does not,
    but a write to ``intake`` has its place in ``events`` only once a worker sealed it)."""
    if snapshot is None:
        return False
    if after.event_id in snapshot.recent_event_ids:
        return True
    last, position = snapshot.last_position, after.position
    return (
        position.topic == events_topic
        and last is not None
        and last.partition == position.partition
        and last.offset >= position.offset
    )
