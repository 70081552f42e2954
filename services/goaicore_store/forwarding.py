"""Records read in another partition than their key's, sent on to the partition that owns them.

A record belongs to the partition murmur2 gives its key (Kafka's Java default, and
librdkafka's ``murmur2_random``). A producer with another partitioner (librdkafka's
default, ``consistent_random``, is CRC32-based) can put a conversation's record in a
partition another worker owns; folding or answering it there would make a second
writer of the conversation. The worker that reads it forwards it instead, with the
same key, value and headers and one header more saying where it was found
(:data:`FORWARDED_FROM`, ``<topic>/<partition>/<offset>``):

- an event (from ``events`` or ``intake``) to its key's partition of ``intake``, where
  the owner's intake agent appends it to ``events`` (sealed where workers seal, as it
  is where they do not);
- a chat request (a cancel too) to its key's partition of ``requests``, where the
  owner's chat agent answers it.

The original stays where it was, and every reader of the log skips it
(:mod:`goaicore.fold.admission`). A forward repeated after a crash changes nothing:
the fold takes an event id once, and a request id is answered once.

A record that cannot be forwarded is a dead letter with the reason: one over the
record limit (goaicore's producers send nothing larger), or one forwarded before that
is again in another partition than its key's (the workers disagree on the partition
count: forwarding it on could go round for ever).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from goaicore.kafka.faust.transport import steady_producer
from goaicore.logs import origin

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

FORWARDED_FROM = "goaicore.forwarded-from"
"""The header a forwarded record gains: ``<topic>/<partition>/<offset>`` of the original."""


def headers_of(message: Any) -> list[tuple[str, bytes]] | None:
    """A consumed record's headers (its publisher's trace context), to pass on."""
    headers = message.headers
    if isinstance(headers, Mapping):
        return list(headers.items())
    return list(headers) if headers else None


def forwarded_from(message: Any) -> str | None:
    """Where a forwarded record was first read (its :data:`FORWARDED_FROM` header)."""
    for name, value in headers_of(message) or ():
        if name == FORWARDED_FROM and isinstance(value, bytes):
            return value.decode(errors="replace")
    return None


async def forward(store: StoreApp, message: Any, name: str, owner: int) -> list[Awaitable[Any]]:
    """Send ``message`` on to partition ``owner`` of the topic named ``name`` (``intake``
    or ``requests``); the deliveries to await before its offset is acknowledged (none
    when it became a dead letter instead)."""
    key, value = message.key, message.value
    place = f"{message.topic}/{message.partition}/{message.offset}"
    earlier = forwarded_from(message)
    if earlier is not None:
        await store.dead_letter(
            message,
            "wrong-partition",
            f"forwarded from {earlier} to partition {message.partition}, and still not its "
            f"key's partition ({owner}): do all workers have the topics' partition count "
            "(GOAICORE_PARTITIONS)?",
            force=False,
        )
        return []
    size = len(key or b"") + len(value or b"")
    limit = store.settings.max_record_bytes
    if size > limit:
        await store.dead_letter(
            message,
            "too-large",
            f"{size:,} bytes of key and value, over the record limit of {limit:,} "
            f"(GOAICORE_MAX_RECORD_BYTES): not forwarded to its key's partition {owner}",
            force=False,
        )
        return []
    headers = [*(headers_of(message) or ()), (FORWARDED_FROM, place.encode())]
    topic = store.settings.topic(name)
    log.info(
        "%s is in another partition than its key's: forwarded to %s[%d]",
        place,
        topic,
        owner,
        extra=origin(message),
    )
    store.metrics.forwarded.labels(name).inc()
    producer = steady_producer(store.app)
    return await producer.send_in_batches(topic, owner, [(bytes(key), value, headers)])
