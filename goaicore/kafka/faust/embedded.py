"""A Faust transport for the embedded broker: goaicore's, with a short fetch wait.

Measured on the embedded broker (tansu 0.6.0): a fetch that finds no new
records waits its whole ``fetch_max_wait_ms`` even when records arrive
meanwhile (Apache Kafka answers as soon as data arrives). Faust fixes that wait
at 1.5 s, so every record reached a Faust agent up to 1.5 s late (about 0.7 s
on average). This transport lowers the wait; it is used only through the
embedded broker profile (its URL scheme), never against Apache Kafka.
"""

from __future__ import annotations

from typing import Any

from faust.transport.drivers import aiokafka as driver

from goaicore.kafka.faust.transport import SteadyConsumer, SteadyProducer
from goaicore.kafka.faust.transport import Transport as SteadyTransport

SCHEME = "goaicore-embedded"
FETCH_MAX_WAIT_MS = 20


class EmbeddedConsumerThread(driver.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # Read by AIOKafkaConsumer.start() when it builds its fetcher.
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class EmbeddedConsumer(SteadyConsumer):
    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return EmbeddedConsumerThread(self, loop=self.loop, beacon=self.beacon)


class Transport(SteadyTransport):
    Consumer = EmbeddedConsumer
    # aiokafka's idempotent producer fails at start on the embedded broker.
    Producer = SteadyProducer
