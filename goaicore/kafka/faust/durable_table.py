"""A Faust table whose writes are sent as record batches and can be awaited until their
changelog records are on the broker.

Faust sends a table's changelog one record at a time: each assignment queues a
record in its producer buffer, a task hands it to aiokafka, and aiokafka appends
it to a batch. Per record that was most of what a store worker folding many
conversations did: with 10,000 conversations of 10 events, about one snapshot per
event, the worker folded 2,900 events/s (Apache Kafka, 2 cores). Here the records
of one write go to their partitions in as few record batches as the producer's
batch size allows, and the write returns what to await.

It also makes a write durable on demand: a process killed a moment after a
buffered write may lose it after it has had effects outside (a reply published
from it, say). :meth:`DurableTable.put` returns once the broker has acknowledged
the record that restores the key after a crash.

Only these methods may write such a table: a record sent through Faust's buffer
could reach the changelog after a later one sent here.

A write may also be staged (:meth:`DurableTable.stage`): it is read at once, from an
overlay in front of the store, and reaches the store only when :meth:`send` queues
its record, so a table on disk never runs ahead of its changelog while writes wait
to be coalesced (:mod:`goaicore.kafka.faust.write_cache` decides when).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import faust
from faust.serializers import codecs

from goaicore.kafka.faust.transport import steady_producer
from goaicore.kafka.partitioner import partition_for_key
from goaicore.kafka.record_batches import Record

Sent = list[list[Awaitable[Any]]]
"""The delivery futures of a write, per partition and in order: see :meth:`DurableTable.send`."""


_ABSENT = object()


class DurableTable(faust.Table[Any, Any]):
    """A ``faust.Table`` keyed by bytes (as on the wire), written by :meth:`send`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.staged: dict[bytes, Any] = {}
        """Values staged and not yet sent (None: a deletion), read before the store."""
        self.staged_headers: dict[bytes, Sequence[tuple[str, bytes]]] = {}
        """The headers a staged value's record is sent with (a snapshot's trace)."""

    def __getitem__(self, key: bytes) -> Any:
        """The key's staged value, else its stored one (``get`` goes through here)."""
        value = self.staged.get(key, _ABSENT) if self.staged else _ABSENT
        if value is _ABSENT:
            return super().__getitem__(key)
        self.on_key_get(key)  # counted as Faust counts a read of the store
        if value is None:
            return self.__missing__(key)
        return value

    def peek(self, key: bytes) -> Any:
        """The key's value as ``get`` reads it (staged first; None when there is none),
        without the sensors' call of each read: a reader of many keys counts its reads
        with :meth:`count_reads`."""
        staged = self.staged
        if staged:
            value = staged.get(key, _ABSENT)
            if value is not _ABSENT:
                return value
        return self.data.get(key)

    def count_reads(self, count: int) -> None:
        """Tell the sensors of ``count`` reads made with :meth:`peek`: at once to those
        that take a count (``on_table_gets``), one call each to the others."""
        if not count:
            return
        for sensor in self.app.sensors:
            counted = getattr(sensor, "on_table_gets", None)
            if counted is not None:
                counted(self, count)
            else:
                for _ in range(count):
                    sensor.on_table_get(self, None)

    def __contains__(self, key: object) -> bool:
        if self.staged and key in self.staged:
            return self.staged[key] is not None
        return super().__contains__(key)

    def stage(
        self,
        values: Mapping[bytes, Any],
        headers: Mapping[bytes, Sequence[tuple[str, bytes]]] | None = None,
    ) -> None:
        """Make ``values`` (None: delete the key) what the table reads, before they are
        sent: :meth:`send` them later (the store changes only then), each with the
        ``headers`` staged with it."""
        self.staged.update(values)
        for key in values:
            carried = headers.get(key) if headers else None
            if carried:
                self.staged_headers[key] = carried
            else:
                self.staged_headers.pop(key, None)

    async def put(self, key: bytes, value: Any) -> None:
        """``table[key] = value``, returning when its changelog record is on the broker."""
        await self.delivered(await self.send({key: value}))

    async def remove(self, key: bytes) -> None:
        """``del table[key]`` (if present), returning when its tombstone is on the broker."""
        if key in self:
            await self.delivered(await self.send({key: None}))

    async def send(
        self,
        values: Mapping[bytes, Any],
        headers: Mapping[bytes, Sequence[tuple[str, bytes]]] | None = None,
    ) -> Sent:
        """Send the changelog records of ``values`` (None: delete the key), each
        partition's in as few record batches as the batch size allows, then set them in
        the table. ``headers`` gives a key's record its headers (a snapshot's trace).

        The table changes only once every record is queued in the producer (which sends
        what it holds before it stops): an interrupted write never leaves the table,
        which a RocksDB store keeps across restarts, ahead of its changelog. Pass what
        this returns to :meth:`delivered` to wait until the broker has them.
        """
        partitions = self.partitions
        assert partitions, "a durable table is built with its partition count"
        by_partition: dict[int, list[Record]] = {}
        for key, value in values.items():
            partition = partition_for_key(key, partitions)
            carried = headers.get(key) if headers is not None else self.staged_headers.get(key)
            by_partition.setdefault(partition, []).append(self.record(key, value, carried))
        producer = steady_producer(self.app)
        topic = self.changelog_topic.get_topic_name()
        # Concurrently: where a batch holds one record (the embedded profile), each
        # partition waits for its previous batch to leave, and the partitions share them.
        # Every partition's records are queued even when another's fail.
        queued = await asyncio.gather(
            *(producer.send_in_batches(topic, p, rows) for p, rows in by_partition.items()),
            return_exceptions=True,
        )
        sent: Sent = []
        for outcome in queued:
            if isinstance(outcome, BaseException):
                raise outcome
            sent.append(outcome)
        staged = self.staged
        for key, value in values.items():
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
            if staged and staged.get(key, _ABSENT) is value:
                del staged[key]  # the store holds it now (unless staged again since)
                self.staged_headers.pop(key, None)
        return sent

    def record(
        self, key: bytes, value: Any, headers: Sequence[tuple[str, bytes]] | None = None
    ) -> Record:
        """The changelog record of ``key`` set to ``value`` (None: its tombstone)."""
        encoded = None if value is None else codecs.dumps(self.value_serializer, value)
        return (key, encoded, headers)

    async def delivered(self, sent: Sent) -> None:
        """Wait until the broker has every record of a write (see :meth:`send`)."""
        for deliveries in sent:
            metadata = None
            for delivery in deliveries:
                metadata = await delivery
            if metadata is not None:
                # As Faust's own callback does for its changelog records: a table on disk
                # remembers how far its changelog is in it, and recovers from there after
                # a restart. A batch's metadata holds its first offset: recovery may read
                # the rest of that batch again, which changes nothing.
                self.data.set_persisted_offset(metadata.topic_partition, metadata.offset)
