"""The fold: ``events`` folded into the snapshots table, a fetch at a time.

Every record either changes its conversation's snapshot or becomes a dead letter
with the reason (undecodable, under another conversation's key, a conversation
id too long for a snapshot, or a fold that raised): no record's content stops
the agent, and nothing is skipped without a trace. A record in another partition
than its key's is neither: it is its key's partition's to fold, and is forwarded
there (:mod:`goaicore_store.forwarding`), never folded where it landed.

A snapshot record carries the trace context of the last event folded into it, so a
snapshot leads back to the request that last changed it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goaicore.fold.records import Applied, LogRecord, Rejected, fold_records
from goaicore.records import ConversationErased, ConversationSnapshot, LogPosition
from goaicore.tracing import trace_headers
from goaicore_store.forwarding import forward

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

# The events of each fetch are folded as one batch (a batch lane: no timer, so an
# idle worker folds an event as soon as it is fetched). Each touched conversation's
# snapshot is read at once and staged (``store.snapshot_writes``): a backlog's
# snapshots are written once per GOAICORE_SNAPSHOT_FLUSH_MS, each conversation's
# latest, in record batches (a snapshot write costs more than folding an event), and
# a worker that has caught up writes them at once. Offsets are acknowledged only once
# the snapshots they produced are on the broker.
FOLD_BATCH = 2000


async def apply_batch(store: StoreApp, messages: Sequence[Any]) -> asyncio.Future[None] | None:
    """Fold records of ``events`` into the table; a record that cannot be folded becomes a
    dead letter with the reason, and the batch goes on without it.

    Returns what the batch's acknowledgement waits for: its snapshots (and every one
    staged before) on the broker; None if nothing is left to write.
    """
    consumed: dict[int, int] = {}
    records: list[LogRecord] = []
    partitions = store.settings.partitions
    for message in messages:
        consumed[message.partition] = max(consumed.get(message.partition, 0), message.offset + 1)
        position = LogPosition(partition=message.partition, offset=message.offset)
        records.append(LogRecord(message.key, message.value, position, message, partitions))
    started = time.perf_counter()
    touched: dict[bytes, ConversationSnapshot] = {}
    traced: dict[bytes, list[tuple[str, bytes]]] = {}  # each snapshot's last event's trace
    erasures: list[tuple[str, int]] = []
    forwarded: list[Any] = []
    folded = 0
    table = store.table
    peek = table.peek
    reads = 0

    def current(key: bytes) -> ConversationSnapshot | None:
        nonlocal reads
        reads += 1
        snapshot: ConversationSnapshot | None = peek(key)
        return snapshot

    for outcome in fold_records(records, store.fold_policy, current, keys=store.keys.lookup):
        if isinstance(outcome, Rejected):
            origin = outcome.record.origin
            if outcome.owner is not None:  # its key's partition folds it
                forwarded += await forward(store, origin, "intake", outcome.owner)
            else:
                await store.dead_letter(origin, outcome.reason, outcome.detail, force=False)
            continue
        folded += 1
        if outcome.changed:
            key = outcome.event.conversation_id.encode()
            touched[key] = outcome.snapshot
            traced[key] = trace_headers(outcome.record.origin.headers)
        if erasure_applied(outcome):
            erasures.append((outcome.event.conversation_id, outcome.record.position.offset))
    table.count_reads(reads)
    writes = store.snapshot_writes
    written = writes.stage(touched, traced)  # read at once; on the broker once this is done
    if erasures:  # the erased snapshots are on the broker before the keys are destroyed
        await writes.drain()
        for conversation_id, offset in erasures:
            await erase_content(store, conversation_id, offset)
    elif writes.due():
        await writes.write()
    for delivery in forwarded:  # on the broker before the offsets are acknowledged
        await delivery
    await store.progress.advance(consumed)  # read-your-writes waits on this (the table)
    store.metrics.events_folded.inc(folded)
    store.metrics.fold_batch_seconds.observe(time.perf_counter() - started)
    return written


def erasure_applied(outcome: Applied) -> bool:
    """An erasure the fold applied now, or one read again that an applied erasure (it, or
    a later one) covers; not one the fold refused (it is then only a note)."""
    if not isinstance(outcome.event.body, ConversationErased):
        return False
    erased = outcome.snapshot.erased_before
    position = outcome.record.position
    if outcome.changed:
        return erased == position
    return erased is not None and erased.offset >= position.offset


async def erase_content(store: StoreApp, conversation_id: str, erasure_offset: int) -> None:
    """What an erasure destroys besides the snapshot's content: the conversation's data
    key (every sealed copy of its content becomes unreadable) and its stored replies.

    Done for an erasure read again too (a crash may have come between the snapshot and
    the tombstones); the key remembers the erasure it followed, so a key made since
    survives. The offsets of the batch are acknowledged only after both tombstones.
    """
    if await store.keys.forget(conversation_id, erasure_offset):
        log.info("erased %r: its data key is destroyed", conversation_id[:200])
    await store.replies_table.remove(conversation_id.encode())
