"""An aiokafka producer whose metadata never loses a topic it has a batch queued for.

aiokafka's client refreshes the metadata of the topics it tracks (every topic while it
tracks none) and replaces its view with the answer. Its producer tracks a topic only
when a send finds the topic missing from that view, so a topic first sent to while the
view held every topic (after a full fetch) stays untracked. Once any other topic is
tracked, the next refresh leaves the untracked one out, and a batch queued for it waits
for a leader that no refresh brings back: silently, until the request timeout (20
minutes in Faust). Seen as a store worker on a three-node cluster that stopped folding
and answering, its fold lanes, its chat turns and its commit all waiting on the
producer. This producer tracks every topic before it queues a batch for it, so every
refresh asks for it.
"""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]


class TopicTrackingProducer(AIOKafkaProducer):  # type: ignore[misc]
    """``AIOKafkaProducer`` that tracks each topic it sends to in its client's metadata."""

    async def send(self, topic: str, *args: Any, **kwargs: Any) -> Any:
        self.client.add_topic(topic)
        return await super().send(topic, *args, **kwargs)

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> Any:
        self.client.add_topic(topic)
        return await super().send_batch(batch, topic, partition=partition)
