"""Read a partition from an offset to its end, where "end" comes from fetches.

The end of a partition is taken from the high watermark that fetch responses
carry, with the broker's end-offset answer used only as a lower bound: some
brokers (the embedded one) answer end offsets too low when the last batch
holds several records, and a reader that trusted them would stop early.
Reading stops at the high watermark as it stood when the read began, so a
partition that keeps growing cannot keep the reader going forever.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from goaicore.config import Settings
from goaicore.errors import BrokerError, client_errors
from goaicore.kafka.profile import client_profile


class LogReadTimeout(BrokerError, TimeoutError):
    """The broker did not answer fetches for a partition in time."""


def read_to_end(
    consumer: Any,
    partition: Any,
    start: int | None = None,
    settings: Settings | None = None,
    idle_timeout: float = 10.0,
) -> Iterator[Any]:
    """Yield the records of one assigned partition from ``start`` to its current end."""
    with client_errors():
        consumer.assign([partition])
        if start is None:
            consumer.seek_to_beginning(partition)
            start = consumer.position(partition)
        else:
            consumer.seek(partition, start)
        trust_end_offsets = settings is None or client_profile(settings).trust_end_offsets
        hint = int(consumer.end_offsets([partition])[partition] or 0)
        target: int | None = hint if trust_end_offsets and hint <= start else None
        position = start
        last_progress = time.monotonic()
        while target is None or position < target:
            batch = consumer.poll(timeout_ms=200, max_records=2000).get(partition, [])
            for record in batch:
                position = record.offset + 1
                if target is not None and record.offset >= target:
                    return
                yield record
            highwater = consumer.highwater(partition)
            if highwater is not None and target is None:
                target = max(int(highwater), hint if trust_end_offsets else 0)
            if batch:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > idle_timeout:
                raise LogReadTimeout(
                    f"no fetch answer for {partition.topic}[{partition.partition}] "
                    f"at offset {position} in {idle_timeout:.0f} s"
                )
