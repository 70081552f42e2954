"""The record limit goaicore's writers keep, and the batches its topics accept.

``GOAICORE_MAX_RECORD_BYTES`` bounds the encoded value of any record goaicore
writes; clients refuse a larger one before sending it. Around the value a
record carries its key, headers and the batch framing, so goaicore's producers
may send requests of up to the limit plus :data:`RECORD_HEADROOM`
(:func:`max_batch_bytes`). A record that passes the client's check therefore
always fits the producer and the topic; one that does not is refused with a
clear error, never sent.

The topics accept more than that (:func:`topic_max_message_bytes`): the broker's
``max.message.bytes`` bounds a whole record batch, and producers that are not
goaicore's fill batches up to their own defaults. librdkafka (the client under
Confluent's C#, Go, Node and C++ clients, and confluent-kafka in Python) batches up
to ``batch.size`` = ``message.max.bytes`` = 1,000,000 bytes by default, and the
Java client sends requests of up to ``max.request.size`` = 1,048,576. A topic that
accepted only the record limit's 965,536 bytes (at the default limit) would refuse
whole batches from a producer left at those defaults, records well under the limit
among them. So a topic accepts the larger of the record limit and 1 MiB, plus the
headroom. goaicore's own limit still holds where it reads: the store worker sets
aside a record over it as ``too-large``, whether it would have to write it again
(appending an intake record to ``events``, forwarding a record to its key's
partition) or fold it (a record of ``events``: from fold version 4, no reader folds
one, see :mod:`goaicore.fold.admission`).
"""

from __future__ import annotations

from goaicore.settings import Settings

# Room for the key (a conversation id), headers (dead-letter reasons, trace
# context) and the record batch's own framing around one value at the limit.
RECORD_HEADROOM = 64 * 1024

CLIENT_DEFAULT_BATCH_BYTES = 1024 * 1024
"""The largest batch a Kafka producer left at its defaults sends: the Java client's
``max.request.size`` (1,048,576), above librdkafka's ``batch.size`` and
``message.max.bytes`` (1,000,000 each)."""


def max_batch_bytes(settings: Settings) -> int:
    """goaicore's producers' max request size: the record limit plus headroom."""
    return settings.max_record_bytes + RECORD_HEADROOM


def topic_max_message_bytes(settings: Settings) -> int:
    """The ``max.message.bytes`` every topic is created with: the batches of goaicore's
    producers and those of any client left at its defaults both fit."""
    return max(settings.max_record_bytes, CLIENT_DEFAULT_BATCH_BYTES) + RECORD_HEADROOM
