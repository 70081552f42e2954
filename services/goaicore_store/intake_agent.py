"""The intake: what publishers wrote in the clear, sealed into ``events`` by its owner.

A publisher (a game service, the CLI, history operations) holds no master key and
so cannot make or use a conversation's data key; with ``GOAICORE_INTAKE`` on it
writes to ``intake``, a topic that expires within the erasure window. The worker
that owns the conversation, the one writer of its key, seals each event and
appends it to ``events``, then acknowledges the intake records. A crash in
between appends an event twice: the fold takes an event id once.

A record that is not an event of its key's conversation becomes a dead letter
with the reason, as in the fold; an event already sealed goes on as it is, and so
does an erasure: it holds no content, and sealing it under the key it destroys
would leave the audit trail unable to say why the content went.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from goaicore.fold.admission import Unfoldable, admit
from goaicore.records import ConversationErased, ConversationEvent
from goaicore.records.avro.api import encode_event
from goaicore.sealing.records import seal_event

if TYPE_CHECKING:
    from goaicore_store.topology import StoreApp

log = logging.getLogger(__name__)

INTAKE_BATCH = 500


async def seal_batch(store: StoreApp, messages: Sequence[Any]) -> None:
    """Seal a fetch of ``intake`` records into ``events``; acked once all are on the log."""
    started = time.perf_counter()
    consumed: dict[int, int] = {}
    sent: list[Any] = []
    for message in messages:
        consumed[message.partition] = max(consumed.get(message.partition, 0), message.offset + 1)
        value = await sealed_value(store, message)
        if value is not None:
            headers = message.headers  # the publisher's trace context goes on
            if isinstance(headers, Mapping):
                headers = list(headers.items())
            sent.append(
                await store.events.send(key=message.key, value=value, headers=headers or None)
            )
    for delivery in sent:
        await delivery  # on the broker before the intake offsets are acknowledged
    await store.intake_progress.advance(consumed)  # read-your-writes waits on this
    store.metrics.intake_sealed.inc(len(sent))
    store.metrics.intake_batch_seconds.observe(time.perf_counter() - started)


async def sealed_value(store: StoreApp, message: Any) -> bytes | None:
    """What ``events`` gets for an intake record; None when it became a dead letter."""
    event = admit(message.key, message.value)
    if isinstance(event, Unfoldable):
        await store.dead_letter(message, event.reason, event.detail, force=False)
        return None
    if event.sealed is not None or not store.keys.sealing or _audit_only(event):
        return bytes(message.value)
    value = encode_event(seal_event(event, await store.keys.key_for(event.conversation_id)))
    limit = store.settings.max_record_bytes
    if len(value) > limit:
        await store.dead_letter(
            message,
            "too-large-sealed",
            f"the event is {len(value):,} bytes sealed; at most {limit:,} "
            "(publishers leave room for the seal: check their GOAICORE_MAX_RECORD_BYTES)",
            force=False,
        )
        return None
    return value


def _audit_only(event: ConversationEvent) -> bool:
    return isinstance(event.body, ConversationErased)
