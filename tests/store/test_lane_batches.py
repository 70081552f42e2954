"""A batch lane's records are tracked and acked as a batch, with Faust's bookkeeping.

The lanes (``goaicore.kafka.faust.lanes``) hand a fetch's records to their handler in
batches and ack each batch's offsets at once. These hold that bookkeeping to Faust's
own ``Consumer.ack`` of each record: the same offsets acked (each once, none below the
committed offset), the same count towards ``broker_commit_every``, and a consumer's
wait for acks waits for a tracked batch until it is acked.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.types import TP
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.kafka.faust.lanes import LaneBatch, ack_batch, track_batch


class Record:
    """What aiokafka hands over for a record (the fields a lane reads)."""

    def __init__(self, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset = "events", partition, offset
        self.key = self.value = b""
        self.headers: list[tuple[str, bytes]] = []
        self.timestamp, self.timestamp_type = 0, 0
        self.checksum = None
        self.serialized_key_size = self.serialized_value_size = 0


async def _consumer() -> Any:
    app = faust.App(f"lanes-{id(object())}", broker="kafka://localhost:1")
    app.topics.add(app.topic("events"))
    await app.topics._update_indices()  # type: ignore[attr-defined]
    return app.consumer


batches = st.lists(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 30)), min_size=1, max_size=8),
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(batches, st.dictionaries(st.integers(0, 1), st.integers(0, 20)))
async def test_a_batch_acks_what_faust_acks_of_each_record(
    fetched: list[list[tuple[int, int]]], committed: dict[int, int]
) -> None:
    each, batched = await _consumer(), await _consumer()
    for consumer in (each, batched):
        for partition, offset in committed.items():
            consumer._committed_offset[TP("events", partition)] = offset
    for records in fetched:
        batch = LaneBatch()
        by_partition: dict[int, list[Record]] = {}
        for partition, offset in records:
            by_partition.setdefault(partition, []).append(Record(partition, offset))
        for partition, rows in by_partition.items():
            tp = TP("events", partition)
            batch.add(tp, rows)
            for row in rows:
                message = each._to_message(tp, row)
                each.track_message(message)
                each.ack(message)
        track_batch(batched, batch)
        assert batch in batched._unacked_messages
        ack_batch(batched, batch)
        ack_batch(batched, batch)  # acked once, however often asked
        assert batch not in batched._unacked_messages
    assert batched._n_acked == each._n_acked
    assert {tp: sorted(o) for tp, o in batched._acked.items() if o} == {
        tp: sorted(o) for tp, o in each._acked.items() if o
    }
    assert {tp: i for tp, i in batched._acked_index.items() if i} == {
        tp: i for tp, i in each._acked_index.items() if i
    }


async def test_the_wait_for_acks_waits_for_a_tracked_batch() -> None:
    consumer = await _consumer()
    batch = LaneBatch()
    batch.add(TP("events", 0), [Record(0, 5)])
    track_batch(consumer, batch)
    assert consumer._unacked_messages  # what wait_empty waits on
    ack_batch(consumer, batch)
    assert not consumer._unacked_messages
