"""The snapshot reader remembers where it read each partition to and the latest snapshot
of the conversations it was asked for: a conversation it remembers costs only the
records written since, one it does not the partition from its beginning; the watch
that waits for new records of a partition wakes its waiters when they come; and a
store's read that waits for its write holds up no other read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from itertools import count

import pytest

from goaicore.clients.aio import snapshots as snapshot_reads
from goaicore.clients.aio.snapshots import AsyncSnapshotReader
from goaicore.config import Settings
from goaicore.kafka.aio_connection import start_producer
from goaicore.kafka.partition_watch import AsyncPartitionWatch
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ConversationSnapshot, UserMessage
from goaicore.records.avro.api import encode_snapshot
from goaicore.store.kafka import KafkaConversationStore


def _in_partition(settings: Settings, partition: int) -> Iterator[str]:
    """Conversation ids whose snapshots go to ``partition``."""
    for n in count():
        conversation_id = f"conv-{n}"
        if partition_for(conversation_id, settings.partitions) == partition:
            yield conversation_id


class _Snapshots:
    """Writes snapshot records (the events they count tell them apart) to the topic."""

    def __init__(self, settings: Settings, producer: object) -> None:
        self.topic = settings.topic("snapshots")
        self.partitions = settings.partitions
        self.producer = producer

    async def write(self, conversation_id: str, events: int | None) -> int:
        """A snapshot that counts ``events`` (None: a tombstone); its offset."""
        value = (
            None
            if events is None
            else encode_snapshot(
                ConversationSnapshot(conversation_id=conversation_id, event_count=events)
            )
        )
        sent = await self.producer.send_and_wait(  # type: ignore[attr-defined]
            self.topic,
            value,
            key=conversation_id.encode(),
            partition=partition_for(conversation_id, self.partitions),
        )
        return int(sent.offset)


@pytest.fixture
async def written(topics: Settings) -> AsyncIterator[_Snapshots]:
    producer = await start_producer(topics)
    try:
        yield _Snapshots(topics, producer)
    finally:
        await producer.stop()


def _events(snapshot: ConversationSnapshot | None) -> int | None:
    return None if snapshot is None else snapshot.event_count


async def test_a_conversation_read_again_costs_only_the_records_written_since(
    topics: Settings, written: _Snapshots
) -> None:
    ids = _in_partition(topics, 0)
    conversation, others = next(ids), [next(ids) for _ in range(3)]
    for n in range(20):
        await written.write(others[n % 3], n)
    await written.write(conversation, 1)
    async with AsyncSnapshotReader(topics) as reader:
        assert _events(await reader.get(conversation)) == 1
        assert reader.records_read == 21  # unknown: its partition from the beginning
        assert _events(await reader.get(conversation)) == 1
        assert reader.records_read == 21  # nothing new: nothing read
        await written.write(others[0], 99)
        await written.write(conversation, 2)
        await written.write(others[1], 99)
        assert _events(await reader.get(conversation)) == 2
        assert reader.records_read == 24  # the three written since
        read = await reader.read(conversation)
        assert (_events(read.snapshot), read.partition, read.end) == (2, 0, 24)


async def test_a_tombstone_means_none_and_a_snapshot_after_it_counts(
    topics: Settings, written: _Snapshots
) -> None:
    conversation = next(_in_partition(topics, 1))
    await written.write(conversation, 3)
    async with AsyncSnapshotReader(topics) as reader:
        assert _events(await reader.get(conversation)) == 3
        await written.write(conversation, None)
        assert await reader.get(conversation) is None
        assert await reader.get("never-written") is None
        await written.write(conversation, 4)
        assert _events(await reader.get(conversation)) == 4
        assert reader.skipped == 0


async def test_two_conversations_of_a_partition_each_take_what_a_read_of_the_other_finds(
    topics: Settings, written: _Snapshots
) -> None:
    first, second = (lambda ids: (next(ids), next(ids)))(_in_partition(topics, 2))
    await written.write(first, 1)
    await written.write(second, 1)
    async with AsyncSnapshotReader(topics) as reader:
        assert _events(await reader.get(first)) == 1
        assert _events(await reader.get(second)) == 1
        assert reader.records_read == 4  # each asked for first: the partition, twice
        await written.write(second, 2)
        await written.write(first, 2)
        assert _events(await reader.get(first)) == 2
        assert reader.records_read == 6
        assert _events(await reader.get(second)) == 2  # the read of the first took it
        assert reader.records_read == 6
        assert [_events(await reader.get(c)) for c in (first, second)] == [2, 2]


async def test_a_conversation_asked_for_first_after_others_leaves_theirs_right(
    topics: Settings, written: _Snapshots
) -> None:
    remembered, later = (lambda ids: (next(ids), next(ids)))(_in_partition(topics, 0))
    await written.write(remembered, 1)
    async with AsyncSnapshotReader(topics) as reader:
        assert _events(await reader.get(remembered)) == 1
        await written.write(remembered, 2)
        await written.write(later, 1)
        assert _events(await reader.get(later)) == 1
        assert reader.records_read == 1 + 3  # the later one: the partition from its beginning
        assert _events(await reader.get(remembered)) == 2  # taken from that read
        assert reader.records_read == 4


async def test_a_conversation_evicted_is_read_from_the_beginning_again_and_is_right(
    topics: Settings, written: _Snapshots, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(snapshot_reads, "REMEMBERED", 2)
    ids = _in_partition(topics, 1)
    evicted, kept, newest = next(ids), next(ids), next(ids)
    for conversation in (evicted, kept, newest):
        await written.write(conversation, 1)
    async with AsyncSnapshotReader(topics) as reader:
        for conversation in (evicted, kept, newest):  # the first of three is let go
            assert _events(await reader.get(conversation)) == 1
        assert reader.records_read == 9
        assert reader.remembered(evicted) is None
        assert reader.remembered(kept) is not None
        await written.write(evicted, 2)
        assert _events(await reader.get(evicted)) == 2
        assert reader.records_read == 9 + 4  # from the beginning again
        assert reader.remembered(kept) is None  # least recently asked for: let go now
        assert _events(await reader.get(newest)) == 1
        assert reader.records_read == 13


async def test_what_a_reader_remembers_is_read_on_from_where_it_ended(
    topics: Settings, written: _Snapshots
) -> None:
    conversation = next(_in_partition(topics, 2))
    await written.write(conversation, 1)
    async with AsyncSnapshotReader(topics) as reader:
        assert reader.remembered(conversation) is None
        read = await reader.read(conversation)
        await written.write(conversation, 2)
        remembered = reader.remembered(conversation)
        assert remembered == read  # no read: as it was
        end = await written.write(conversation, 3) + 1
        assert _events((await reader.read(conversation, end_at=end - 1)).snapshot) == 2
        assert _events((await reader.read(conversation, end_at=end)).snapshot) == 3
        assert reader.records_read == 3


async def test_a_watch_wakes_each_waiter_when_records_come_to_its_partition(
    topics: Settings, written: _Snapshots
) -> None:
    first, second = next(_in_partition(topics, 0)), next(_in_partition(topics, 1))
    ends = [await written.write(first, 1) + 1, await written.write(second, 1) + 1]
    async with AsyncPartitionWatch(topics, "snapshots") as watch:
        assert await watch.wait_past(0, ends[0], 0.2) is None  # nothing came
        waiting = asyncio.ensure_future(watch.wait_past(0, ends[0], 30))
        await asyncio.sleep(0.2)  # the watch fetches partition 0 now
        joining = asyncio.ensure_future(watch.wait_past(1, ends[1], 30))
        behind = asyncio.ensure_future(watch.wait_past(0, ends[0] - 1, 30))
        assert await behind == ends[0]  # a record past its offset was there already
        assert not waiting.done()
        offsets = [await written.write(second, 2), await written.write(first, 2)]
        assert (await joining or 0) > offsets[0]
        assert (await waiting or 0) > offsets[1]
        # A wait that comes after the watch stopped starts it again.
        assert await watch.wait_past(1, offsets[0], 30) == offsets[0] + 1


async def test_a_read_waiting_for_its_write_holds_up_no_read_of_another_conversation(
    topics: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with KafkaConversationStore(topics) as store:  # and no worker: nothing is folded
        watch, wait_past = store.kafka._snapshot_writes, store.kafka._snapshot_writes.wait_past
        waits = asyncio.Event()

        async def waiting(partition: int, offset: int, timeout: float) -> int | None:  # noqa: ASYNC109
            waits.set()
            return await wait_past(partition, offset, timeout)

        monkeypatch.setattr(watch, "wait_past", waiting)
        written = await store.append("waits", UserMessage(text="never folded"))
        read = asyncio.ensure_future(store.read("waits", after=written, timeout=60))
        await waits.wait()  # it waits for the snapshot to apply the write now
        other = await store.read("reads", history=False)
        assert other.snapshot is None
        assert not read.done()
        read.cancel()
        with pytest.raises(asyncio.CancelledError):
            await read
