"""Read the record batches of a partition straight from a local Apache Kafka's log files.

What a client never sees: how the broker grouped records into batches (a batch is
appended whole or not at all). The layout is Kafka's record batch, magic 2.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from goaicore.kafka.apache import LocalKafka

_HEAD = struct.Struct(">qi")  # base offset, batch length (of what follows)
_RECORDS_COUNT_AT = 57  # bytes from the batch's start to its records count


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    records: int

    def holds(self, offset: int) -> bool:
        return self.base_offset <= offset <= self.last_offset


def stored_batches(kafka: LocalKafka, topic: str, partition: int) -> list[StoredBatch]:
    """Every record batch of ``topic``'s ``partition`` on the cluster's first node."""
    folder = kafka.nodes[0].folder / "data" / f"{topic}-{partition}"
    batches = []
    for segment in sorted(folder.glob("*.log")):
        batches += _batches(segment)
    return batches


def _batches(segment: Path) -> list[StoredBatch]:
    data = segment.read_bytes()
    out = []
    at = 0
    while at + _HEAD.size <= len(data):
        base, length = _HEAD.unpack_from(data, at)
        if length <= 0 or at + _HEAD.size + length > len(data):
            break  # the preallocated tail of an active segment
        (last_delta,) = struct.unpack_from(">i", data, at + 23)
        (count,) = struct.unpack_from(">i", data, at + _RECORDS_COUNT_AT)
        out.append(StoredBatch(base, base + last_delta, count))
        at += _HEAD.size + length
    return out
