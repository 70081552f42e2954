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
table (and the router answering which worker owns a key) picks a changelog
record's partition from the producer's metadata without waiting for it
(aiokafka's ``_partition``), and that metadata can lack a topic the app
created: once aiokafka's client tracks any topic (a send to one it did not
know yet), every refresh asks for the tracked topics alone and forgets the
others; on a cluster a refresh can also come from a broker that has not
applied a new topic yet. Every write to the table then failed with a
TypeError until the next periodic refresh, five minutes later: seen as every
chat request abandoned, and every HTTP read answered 500. Here each topic the
producer creates is tracked, and a key of a topic missing from the metadata
goes where Kafka's default partitioner puts it over the partitions last
known for it (partitions are never removed), while a refresh is asked for.

Used for every broker (``goaicore-kafka://``); the embedded broker's transport
(``goaicore.broker.faust_embedded``) builds on it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from aiokafka.errors import UnknownTopicOrPartitionError  # type: ignore[import-untyped]
from faust.transport.drivers import TRANSPORTS
from faust.transport.drivers import aiokafka as driver
from faust.types import TP

SCHEME = "goaicore-kafka"
# How long a producer waits for a topic it created to appear in its metadata.
TOPIC_METADATA_TIMEOUT = 30.0


class SteadyConsumer(driver.Consumer):
    """A Faust consumer whose fetches use a fixed copy of the active partitions."""

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


class IdempotentProducer(driver.Producer):
    """acks=all and idempotence (see ``goaicore.kafka.profile``); Faust enables them
    only inside transactions, which goaicore does not use."""

    def _settings_extra(self) -> Any:
        return {**super()._settings_extra(), "acks": "all", "enable_idempotence": True}


class SteadyProducer(IdempotentProducer):
    """A Faust producer that keeps knowing the partitions of every topic it created."""

    _partitions_known: dict[str, list[int]] | None = None

    def _known(self) -> dict[str, list[int]]:
        if self._partitions_known is None:
            self._partitions_known = {}
        return self._partitions_known

    async def create_topic(self, topic: str, partitions: int, *args: Any, **kwargs: Any) -> None:
        await super().create_topic(topic, partitions, *args, **kwargs)
        if not self.app.conf.topic_allow_declare:
            return
        client = self._ensure_producer().client
        client.add_topic(topic)  # every later refresh asks for it
        deadline = time.monotonic() + TOPIC_METADATA_TIMEOUT
        while (known := client.cluster.partitions_for_topic(topic)) is None:
            if time.monotonic() > deadline:
                self.log.warning("topic %r is still not in the producer's metadata", topic)
                self._known().setdefault(topic, list(range(partitions)))
                return
            await asyncio.sleep(0.1)
            await client.force_metadata_update()
        self._known()[topic] = sorted(known)

    def key_partition(self, topic: str, key: bytes) -> TP:
        producer = self._ensure_producer()
        client = producer.client
        current = client.cluster.partitions_for_topic(topic)
        if current:
            self._known()[topic] = sorted(current)
            return super().key_partition(topic, key)
        remembered = self._known().get(topic)
        client.add_topic(topic)  # tracked from now on; refreshed in the background
        if remembered is None:
            raise UnknownTopicOrPartitionError(f"no partitions known yet for topic {topic!r}")
        self.log.warning(
            "topic %r is missing from the metadata; using its last known partitions", topic
        )
        return TP(topic, producer._partitioner(key, remembered, remembered))


class Transport(driver.Transport):
    Consumer = SteadyConsumer
    Producer: ClassVar[type[driver.Producer]] = SteadyProducer


def register() -> None:
    """Make ``goaicore-kafka://`` (and ``goaicore-embedded://``) broker URLs resolvable."""
    TRANSPORTS[SCHEME] = f"{__name__}:Transport"
    from goaicore.kafka.faust import embedded as faust_embedded

    TRANSPORTS[faust_embedded.SCHEME] = f"{faust_embedded.__name__}:Transport"
