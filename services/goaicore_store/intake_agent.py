"""The intake: what publishers wrote in the clear, sealed into ``events`` by its owner.

A publisher (a game service, the CLI, history operations) holds no master key and
so cannot make or use a conversation's data key; with ``GOAICORE_INTAKE`` on it
writes to ``intake``, a topic that expires within the erasure window. The worker
that owns the conversation, the one writer of its key, seals each event and
appends it to ``events``, then acknowledges the intake records. A crash in
between appends an event twice: the fold takes an event id once.

Where workers do not seal, the agent runs all the same and appends each event as
it is: ``intake`` is then where events read in another partition than their key's
are forwarded to (:mod:`goaicore_store.forwarding`), and so the way they reach
``events`` in the partition that owns them.

A record that sits in another partition than its key's (its key would then have
two writers) is forwarded to its key's partition of ``intake``. A record that is
not an event of its key's conversation, or that is over the record limit (it could
not be appended), becomes a dead letter with the reason, as in the fold. An event
already sealed goes on as it is, and so does an erasure: it holds no content, and
sealing it under the key it destroys would leave the audit trail unable to say why
the content went. What is sealed after an erasure is sealed under a key made after
it (``ConversationKeys``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goaicore.fold.admission import Unfoldable, admit, another_partition
from goaicore.kafka.faust.transport import steady_producer
from goaicore.records import ConversationErased, ConversationEvent
from goaicore.records.avro.api import encode_event
from goaicore.records.avro.errors import EncodeError
from goaicore.sealing.records import seal_event
from goaicore_store.forwarding import forward, headers_of

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

INTAKE_BATCH = 500


Record = tuple[bytes, bytes, list[tuple[str, bytes]] | None]


async def seal_batch(store: StoreApp, messages: Sequence[Any]) -> None:
    """Seal a fetch of ``intake`` records into ``events`` (each partition's in as few
    record batches as fit); acknowledged once all are on the log."""
    started = time.perf_counter()
    producer = steady_producer(store.app)
    topic = store.events.get_topic_name()
    consumed: dict[int, int] = {}
    waiting: dict[int, list[Record]] = {}  # by partition, in order
    deliveries: list[Any] = []
    appended = 0
    partitions = store.settings.partitions
    for message in messages:
        partition = message.partition
        consumed[partition] = max(consumed.get(partition, 0), message.offset + 1)
        owner = another_partition(message.key, partition, partitions)
        if owner is not None:  # its key's partition appends it
            deliveries += await forward(store, message, "intake", owner)
            continue
        taken = await _taken(store, message)
        if taken is None:
            continue
        event, value = taken
        record = (bytes(message.key), value, headers_of(message))
        appended += 1
        if isinstance(event.body, ConversationErased) and store.keys.sealing:
            # Where it lands counts before anything after it of the conversation is sealed.
            deliveries += await producer.send_in_batches(
                topic, partition, waiting.pop(partition, [])
            )
            for delivery in deliveries:
                await delivery
            deliveries.clear()
            [alone] = await producer.send_in_batches(topic, partition, [record])
            store.keys.erasure_appended(event.conversation_id, (await alone).offset)
            continue
        waiting.setdefault(partition, []).append(record)
    for partition, records in waiting.items():
        deliveries += await producer.send_in_batches(topic, partition, records)
    for delivery in deliveries:
        await delivery  # on the broker before the intake offsets are acknowledged
    await store.intake_progress.advance(consumed)  # read-your-writes waits on this
    store.metrics.intake_sealed.inc(appended)
    store.metrics.intake_batch_seconds.observe(time.perf_counter() - started)


async def _taken(store: StoreApp, message: Any) -> tuple[ConversationEvent, bytes] | None:
    """The event an intake record holds and what ``events`` gets for it; None when it
    became a dead letter."""
    event = admit(message.key, message.value)
    if isinstance(event, Unfoldable):
        await store.dead_letter(message, event.reason, event.detail, force=False)
        return None
    limit = store.settings.max_record_bytes
    if event.sealed is not None or not store.keys.sealing or _audit_only(event):
        value = bytes(message.value)
        if len(value) > limit:  # a producer that is not goaicore's may send one
            await store.dead_letter(
                message,
                "too-large",
                f"the event is {len(value):,} bytes; at most {limit:,} "
                "(GOAICORE_MAX_RECORD_BYTES): not appended to events",
                force=False,
            )
            return None
        return event, value
    key = await store.keys.key_for(event.conversation_id)
    try:
        value = encode_event(seal_event(event, key))
    except (EncodeError, ValueError) as err:
        await store.dead_letter(message, "seal-failed", f"{type(err).__name__}: {err}", False)
        return None
    if len(value) > limit:
        await store.dead_letter(
            message,
            "too-large-sealed",
            f"the event is {len(value):,} bytes sealed; at most {limit:,} "
            "(publishers leave room for the seal: check their GOAICORE_MAX_RECORD_BYTES)",
            force=False,
        )
        return None
    return event, value


def _audit_only(event: ConversationEvent) -> bool:
    return isinstance(event.body, ConversationErased)
