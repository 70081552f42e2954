"""The fold agent: ``events`` folded into the snapshots table, one bad record at a time.

Every record either changes its conversation's snapshot or becomes a dead letter
with the reason (undecodable, under another conversation's key, a conversation
id too long for a snapshot, or a fold that raised): no record's content stops
the agent, and nothing is skipped without a trace.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goaicore.avro.api import decode_event
from goaicore.avro.errors import DecodeError
from goaicore.fold import fold
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition

if TYPE_CHECKING:
    from services.store.app import StoreApp

log = logging.getLogger(__name__)

# Events are folded in small batches and each touched conversation's snapshot is
# written once per batch: encoding a snapshot costs more than folding an event.
# Offsets are acknowledged only after the batch's table writes. The window trades
# throughput for latency: read-your-writes waits for it (measured on the embedded
# broker: 20 ms 1,291 events/s, 50 ms 1,741, 100 ms 2,745).
FOLD_BATCH = 2000
MAX_CONVERSATION_ID_BYTES = 4096
FOLD_WITHIN = 0.05


async def apply_batch(store: StoreApp, messages: list[Any]) -> None:
    """Fold records of ``events`` into the table; a record that cannot be folded becomes a
    dead letter with the reason, and the batch goes on without it."""
    touched: dict[bytes, ConversationSnapshot] = {}
    consumed: dict[int, int] = {}
    for message in messages:
        consumed[message.partition] = max(consumed.get(message.partition, 0), message.offset + 1)
        event = _foldable(message)
        if isinstance(event, Unfoldable):
            await store.dead_letter(message, event.reason, event.detail, force=False)
            continue
        key = message.key
        current = touched[key] if key in touched else store.table.get(key)
        position = LogPosition(partition=message.partition, offset=message.offset)
        try:
            updated = fold(current, event, position, store.fold_policy)
        except Exception as err:  # a bug in the fold must cost one record, not the worker
            log.exception(
                "fold failed on %s[%d]@%d", message.topic, message.partition, message.offset
            )
            detail = f"{type(err).__name__}: {err}"
            await store.dead_letter(message, "fold-failed", detail, force=False)
            continue
        if updated is not current:
            touched[key] = updated
    for key, snapshot in touched.items():
        store.table[key] = snapshot
    await store.progress.advance(consumed)  # read-your-writes waits on this


@dataclass(frozen=True)
class Unfoldable:
    """Why a record of ``events`` cannot be folded: a dead letter's reason and detail."""

    reason: str
    detail: str


def _foldable(message: Any) -> ConversationEvent | Unfoldable:
    """The event a record of ``events`` holds, or why it cannot be folded."""
    try:
        event = decode_event(message.value)
    except DecodeError as err:
        return Unfoldable(err.reason, err.message)
    key = message.key
    if key is None or key != event.conversation_id.encode():
        shown = key if key is None or len(key) <= 200 else key[:200] + b"..."
        return Unfoldable(
            "key-mismatch",
            f"record key {shown!r} is not the event's conversation id "
            f"{event.conversation_id[:200]!r}",
        )
    if len(key) > MAX_CONVERSATION_ID_BYTES:
        return Unfoldable(
            "conversation-id-too-long",
            f"a conversation id of {len(key)} bytes (at most {MAX_CONVERSATION_ID_BYTES}): "
            "its snapshot could not be written",
        )
    return event


async def fold_events(store: StoreApp, stream: Any) -> None:
    """The Faust agent body: fold ``events`` in batches."""
    async for batch in stream.take_events(FOLD_BATCH, within=FOLD_WITHIN):
        await apply_batch(store, [event.message for event in batch])
