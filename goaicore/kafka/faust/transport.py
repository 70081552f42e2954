"""goaicore's Faust transport: aiokafka, with a fetch that cannot lose records.

faust-streaming (0.15) fetches with the consumer's live set of active
partitions and later filters what came back against that same set. The set
changes while the fetch runs (table recovery pauses its changelog partitions
when it is done), and two things then go wrong:

- aiokafka reads an empty partition set as "every assigned partition", so a
  fetch that started with only changelog partitions active returned the
  records of the stream partitions as well;
- Faust dropped every record of a partition no longer in the set, while
  aiokafka had already moved its position past them. A partition with no
  committed offset yet (a worker killed before its first commit) is never
  sought back, so those records were never processed.

Seen as a worker that took over partitions from a killed one and then folded
nothing more (about one takeover in twenty). Here each fetch works on a copy
of the active set taken when it starts, and the same copy filters what it
returns: every record handed over by aiokafka reaches a stream or is handled
by Faust's own seek-back when flow stopped meanwhile.

Its producer also never picks a partition without knowing the topic. A
table (and the router answering which worker owns a key) picks a record's
partition from the producer's metadata without waiting for it (aiokafka's
``_partition``), and that metadata can lose a topic: once aiokafka's client
tracks any topic (a send to one it did not know yet), every refresh asks for
the tracked topics alone and forgets the others; on a cluster, a refresh can
also come from a broker that has not applied a new topic yet. Every write to
a table then failed with a TypeError until the next periodic refresh, five
minutes later: seen as every chat request abandoned and every HTTP read of a
snapshot answered 500. Here every topic the producer sends to or picks a
partition of is tracked from then on (its aiokafka producer is a
``goaicore.kafka.aio_producer.TopicTrackingProducer``: the same narrowing left
batches queued for an untracked topic without a leader, every write waiting and
the worker folding nothing), and the producer remembers the partitions of every
topic any metadata update showed it (partitions are never removed): a key of a
topic missing from the current metadata goes where Kafka's default partitioner
puts it over those partitions.

Its consumer also runs the app's batch lanes (``goaicore.kafka.faust.lanes``), and
waits at most ``FETCH_MAX_WAIT_MS`` for a fetch to find records (Faust fixes 1.5 s).
aiokafka keeps one fetch in flight per broker and leaves out of it the partitions
whose fetched records are still being consumed; with a backlog, that fetch often
held only partitions with nothing new (the requests topic, the changelogs, events
partitions read to their end), and the broker held it for the whole wait while the
partitions with a backlog could not be fetched. Seen as a worker folding 20,000
events on Apache Kafka that stood idle for a second at a time, twice in three
seconds; a shorter wait costs only more empty fetches when there is nothing to read.

Used for every broker (``goaicore-kafka://``); the embedded broker's transport
(``goaicore.kafka.faust.embedded``) builds on it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import Any, ClassVar

from aiokafka.errors import UnknownTopicOrPartitionError  # type: ignore[import-untyped]
from faust.transport.consumer import CONSUMER_FETCHING
from faust.transport.drivers import aiokafka as driver
from faust.types import TP

from goaicore.kafka.aio_producer import TopicTrackingProducer
from goaicore.kafka.faust.lanes import LaneBatch, drain_lanes, lanes_of, run_lane
from goaicore.kafka.record_batches import Record, SentBatch, send_batches

SCHEME = "goaicore-kafka"
FETCH_MAX_WAIT_MS = 100  # the most a fetch waits for records (see the module docstring)
# How long a producer waits for a topic it created to appear in its metadata.
TOPIC_METADATA_TIMEOUT = 30.0


class SteadyConsumerThread(driver.AIOKafkaConsumerThread):
    """Faust's consumer thread, with a fetch wait of ``fetch_max_wait_ms``."""

    fetch_max_wait_ms: ClassVar[int] = FETCH_MAX_WAIT_MS

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # Faust passes 1.5 s; read by AIOKafkaConsumer.start() when it builds its fetcher.
        consumer._fetch_max_wait_ms = self.fetch_max_wait_ms
        return consumer


class SteadyConsumer(driver.Consumer):
    """A Faust consumer whose fetches use a fixed copy of the active partitions, and
    which hands the records of batch-lane topics to their lanes a fetch at a time."""

    consumer_thread: ClassVar[type[SteadyConsumerThread]] = SteadyConsumerThread

    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return self.consumer_thread(self, loop=self.loop, beacon=self.beacon)

    async def _drain_messages(self, fetcher: Any) -> None:
        """Faust's fetch loop (0.15), with lane topics batched instead of streamed: each
        fetch's records of other topics go to their streams one at a time as Faust's
        ``getmany`` hands them over, then each lane's records to its handler."""
        lanes = lanes_of(self.app)
        if not lanes:
            return await super()._drain_messages(fetcher)
        try:
            while not (self._stopped.is_set() or fetcher._stopped.is_set()):
                self.diag.set_flag(CONSUMER_FETCHING)
                await self.sleep(0)
                records, active = await self._wait_next_records(1.0)
                # Read once the fetch is back, as Faust's getmany reads it: a rebalance
                # during the wait (recovery starting, say) must not void what it fetched.
                generation = self.app.consumer_generation_id
                if records is not None and not self.should_stop:
                    if not self.flow_active:
                        await self._seek_back()
                    else:
                        streamed = {tp: rs for tp, rs in records.items() if tp.topic not in lanes}
                        if streamed:
                            await self._stream(streamed, active, generation)
                        for topic, lane in lanes.items():
                            laned = [(tp, rs) for tp, rs in records.items() if tp.topic == topic]
                            if laned:
                                await self._run_lane(lane, laned, active, generation)
                self.diag.unset_flag(CONSUMER_FETCHING)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                return
            raise
        finally:
            self.diag.unset_flag(CONSUMER_FETCHING)

    async def _seek_back(self) -> None:
        """Faust's ``getmany`` when flow stopped meanwhile: back to the committed offsets."""
        self.log.dev("getmany called while flow not active. Seek back to committed offsets.")
        try:
            await self.perform_seek()
        except Exception as ex:
            self.log.warning(f"exception performing seek when flow not active {ex}")

    def _readable(self, tp: TP, active: frozenset[TP] | None, generation: int) -> bool | None:
        """Whether ``tp``'s fetched records are to be read (Faust's ``getmany`` checks);
        None when the fetch is to be given up (flow stopped, a new generation)."""
        if not self.flow_active or self.app.consumer_generation_id != generation:
            return None
        if active is None or tp in active or tp in self._buffered_partitions:
            self.app.monitor.track_tp_end_offset(tp, self.highwater(tp))
            return True
        return False

    async def _stream(
        self, records: dict[TP, list[Any]], active: frozenset[TP] | None, generation: int
    ) -> None:
        """Faust's ``getmany`` and fetch loop for streamed topics: each record made a
        Faust message and handed to the streams, round robin over the partitions."""
        callback = self.callback
        get_read_offset = self._read_offset.__getitem__
        set_read_offset = self._read_offset.__setitem__
        acks_enabled_for = self.app.topics.acks_enabled_for
        since_yield = 0
        for tp, record in self.scheduler.iterate(records):
            readable = self._readable(tp, active, generation)
            if readable is None:
                return
            if not readable:
                continue
            message = self._to_message(tp, record)
            since_yield += 1
            if since_yield > 100:  # let the loop breathe, as Faust does
                await asyncio.sleep(0)
                since_yield = 0
            offset = message.offset
            read = get_read_offset(tp)
            if read is not None and offset < read:
                continue  # Faust drops a record it has read before
            if read and offset - read > 1 and acks_enabled_for(message.topic):
                await self._add_gap(tp, read + 1, offset)
            await self._commit_if_due()
            await self.wait_first(callback(message), self.suspend_flow.wait())
            set_read_offset(tp, offset)

    async def _run_lane(
        self,
        lane: Any,
        laned: list[tuple[TP, list[Any]]],
        active: frozenset[TP] | None,
        generation: int,
    ) -> None:
        """A fetch's records of a lane's topic, partition by partition, to its handler in
        batches of at most ``lane.max_batch``, with Faust's read-offset bookkeeping."""
        get_read_offset = self._read_offset.__getitem__
        set_read_offset = self._read_offset.__setitem__
        acks = self.app.topics.acks_enabled_for(laned[0][0].topic)
        batch = LaneBatch()
        fetched_to: dict[TP, int] = {}  # the next offset read, of each partition
        for tp, records in laned:
            readable = self._readable(tp, active, generation)
            if readable is None:
                return
            if not readable:
                continue
            read = get_read_offset(tp)
            if read is not None and records and records[0].offset < read:
                records = [r for r in records if r.offset >= read]  # read before: dropped
            if not records:
                continue
            if acks:
                previous = read
                for record in records:
                    if previous and record.offset - previous > 1:
                        await self._add_gap(tp, previous + 1, record.offset)
                    previous = record.offset
            await self._commit_if_due()
            set_read_offset(tp, records[-1].offset)
            fetched_to[tp] = records[-1].offset + 1
            while records:
                room = lane.max_batch - len(batch)
                batch.add(tp, records[:room])
                records = records[room:]
                if len(batch) >= lane.max_batch:
                    await run_lane(self, lane, batch, generation)
                    batch = LaneBatch()
        if fetched_to:
            await run_lane(self, lane, batch, generation, fetched_to)

    async def _commit_if_due(self) -> None:
        """Commit once ``broker_commit_every`` records were acked, as Faust's loop does."""
        if self._commit_every is not None and self._n_acked >= self._commit_every:
            self._n_acked = 0
            await self.commit()

    async def wait_empty(self) -> None:
        """Faust's wait for every tracked record to be acked, once the lanes that defer
        their acks have written and delivered what their records wait on (on revocation
        and at shutdown: else the wait would outlast a rebalance, or a stop would commit
        without them)."""
        await drain_lanes(self.app)
        await super().wait_empty()

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:  # noqa: ASYNC109 (Faust's signature)
        if not self.flow_active:
            await self.wait(self.can_resume_flow)  # type: ignore[arg-type]
        try:
            self.not_waiting_next_records.set()
            active: frozenset[Any] | None = (
                None if self.app.client_only else frozenset(self._get_active_partitions())
            )
            if active is None or active:
                records = await self._getmany(
                    active_partitions=active,  # type: ignore[arg-type]
                    timeout=timeout,
                )
                return records, active
            # Nothing active: fetching now would ask aiokafka for every partition.
            await self.sleep(1)
            return {}, active
        finally:
            self.not_waiting_next_records.set()


class SteadyProducer(driver.Producer):
    """A Faust producer that never forgets the partitions of a topic it has seen, over an
    aiokafka producer that never loses the metadata of a topic it has a batch queued for
    (:class:`~goaicore.kafka.aio_producer.TopicTrackingProducer`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._partitions_seen: dict[str, list[int]] = {}
        self._missing_warned: set[str] = set()

    @property
    def _producer_type(self) -> type[TopicTrackingProducer]:
        return TopicTrackingProducer

    def _remember(self, cluster: Any) -> None:
        """A metadata listener: every topic of every update, never forgotten."""
        for topic in cluster.topics(exclude_internal_topics=False):
            partitions = cluster.partitions_for_topic(topic)
            if partitions:
                self._partitions_seen[topic] = sorted(partitions)

    async def on_start(self) -> None:
        await super().on_start()
        client = self._ensure_producer().client
        client.cluster.add_listener(self._remember)
        # The client tracks no topic yet, so this asks for every topic there is.
        await client.force_metadata_update()

    async def create_topic(self, topic: str, *args: Any, **kwargs: Any) -> None:
        await super().create_topic(topic, *args, **kwargs)
        if not self.app.conf.topic_allow_declare:
            return
        client = self._ensure_producer().client
        deadline = time.monotonic() + TOPIC_METADATA_TIMEOUT
        while topic not in self._partitions_seen:
            if time.monotonic() > deadline:
                self.log.warning("topic %r is still not in the producer's metadata", topic)
                return
            await asyncio.sleep(0.1)
            await client.force_metadata_update()

    async def send_in_batches(
        self,
        topic: str,
        partition: int,
        records: Sequence[Record],
    ) -> list[Awaitable[Any]]:
        """Send ``(key, value, headers)`` records (a value of None: a tombstone) to one
        partition, in order, in as few record batches as the batch size allows; each
        batch's delivery future, in order."""
        return [sent.delivery for sent in await self.send_batches(topic, partition, records)]

    async def send_batches(
        self,
        topic: str,
        partition: int,
        records: Sequence[Record],
        one_at_a_time: bool = False,
    ) -> list[SentBatch]:
        """:func:`~goaicore.kafka.record_batches.send_batches` on this producer."""
        producer = self._ensure_producer()
        return await send_batches(producer, topic, partition, records, one_at_a_time)

    def key_partition(self, topic: str, key: bytes) -> TP:
        producer = self._ensure_producer()
        client = producer.client
        client.add_topic(topic)  # tracked, so no refresh leaves it out (as a send would)
        if client.cluster.partitions_for_topic(topic):
            return super().key_partition(topic, key)
        seen = self._partitions_seen.get(topic)
        if seen is None:
            raise UnknownTopicOrPartitionError(f"no partitions known for topic {topic!r}")
        if topic not in self._missing_warned:
            self._missing_warned.add(topic)
            self.log.warning("topic %r left the metadata; using its partitions seen before", topic)
        # Kafka's default partitioner over every partition, as aiokafka's would.
        return TP(topic, producer._partitioner(key, seen, seen))


def steady_producer(app: Any) -> SteadyProducer:
    """The app's producer, which must be goaicore's (it sends record batches whole)."""
    producer = app.producer
    if not isinstance(producer, SteadyProducer):
        raise TypeError(f"the worker needs goaicore's Faust producer, not {producer!r}")
    return producer


class IdempotentProducer(SteadyProducer):
    """acks=all and idempotence (see ``goaicore.kafka.profile``); Faust enables them
    only inside transactions, which goaicore does not use."""

    def _settings_extra(self) -> Any:
        return {**super()._settings_extra(), "acks": "all", "enable_idempotence": True}


class Transport(driver.Transport):
    Consumer = SteadyConsumer
    Producer: ClassVar[type[driver.Producer]] = IdempotentProducer
