"""The conversation store inside the store worker: the port its HTTP views use.

A :class:`~goaicore.store.application.StoreApplication` over :class:`WorkerBackend`:
the store over Kafka, except for what the worker does itself. A snapshot of a
conversation it owns comes from its own table (a wait for it to change wakes with each
batch the fold applies); an event goes straight to ``events``
on its producer, sealed here where content is sealed (the views forward such a write
to the conversation's owner, the key's one writer); a chat request is answered by its
own chat agent, whose reply wakes the waiting caller. The rest (another worker's
conversations, the history operations' appends, which go through the intake where
content is sealed) is the Kafka backend's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable, Sequence

from goaicore.kafka.faust.transport import steady_producer
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.record_batches import positions
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationSnapshot,
    TopicPosition,
)
from goaicore.records.avro.api import encode_chat_request, encode_event
from goaicore.sealing.records import seal_event
from goaicore.store.application import StoreApplication
from goaicore.store.kafka import KafkaBackend
from goaicore.store.reply_streams import StreamedReply, request_at
from goaicore.tracing import record_headers
from goaicore_store.topology import StoreApp

REPLY_GRACE = 1.0
"""Seconds a caller waits for a reply past its request's deadline: the turn's own
timeout reply is worth more than a timeout here."""

OWNER_CHECK_SECONDS = 1.0
"""How often a wait on this worker's table looks whether the worker still owns the
conversation: nothing wakes it when a rebalance takes the partition away (its fold
stops advancing it), and then the wait goes on over Kafka."""


class WorkerBackend(KafkaBackend):
    """The store worker's view of its store (see the module docstring)."""

    def __init__(self, store: StoreApp, source: str) -> None:
        super().__init__(store.settings, source)
        self.store = store
        self.intake = self.intake or store.keys.sealing  # room for the seal this worker adds

    def owns(self, conversation_id: str) -> bool:
        """This worker holds the conversation's partition (its table is current for it)."""
        events = self.store.events.get_topic_name()
        partition = partition_for(conversation_id, self.store.settings.partitions)
        return any(
            tp.topic == events and tp.partition == partition
            for tp in self.store.app.assignor.assigned_actives()
        )

    async def snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        if self.owns(conversation_id):
            return self._table_snapshot(conversation_id)
        return await super().snapshot(conversation_id)

    async def snapshot_when(
        self,
        conversation_id: str,
        ready: Callable[[ConversationSnapshot | None], bool],
        timeout: float,  # noqa: ASYNC109 - how long the fold may be waited for
    ) -> ConversationSnapshot | None:
        """From the table while this worker owns the conversation, looked at again each
        time the fold applies a batch; else (or once it no longer owns it) over Kafka."""
        deadline = time.monotonic() + timeout
        while self.owns(conversation_id):
            remaining = deadline - time.monotonic()
            await self.store.progress.until(
                lambda: ready(self._table_snapshot(conversation_id)),
                min(max(remaining, 0.0), OWNER_CHECK_SECONDS),
            )
            snapshot = self._table_snapshot(conversation_id)
            if ready(snapshot) or time.monotonic() >= deadline:
                return snapshot
        return await super().snapshot_when(
            conversation_id, ready, max(deadline - time.monotonic(), 0.0)
        )

    def _table_snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        snapshot: ConversationSnapshot | None = self.store.table.get(conversation_id.encode())
        return snapshot

    async def publish(
        self, event: ConversationEvent, related: tuple[str, ...] = (), operation: bool = False
    ) -> TopicPosition:
        """An event straight to ``events`` on the worker's producer, sealed here where
        content is sealed (the caller forwarded it to the conversation's owner first);
        history operations go as any publisher's do (through the intake when sealed)."""
        if operation:
            return await super().publish(event, related, operation)
        [position] = await self.publish_all([event])
        return position

    async def publish_all(self, events: Sequence[ConversationEvent]) -> list[TopicPosition]:
        """Events of one conversation straight to ``events`` on the worker's producer,
        together, each sealed here where content is sealed (the caller forwarded them to
        the conversation's owner first). The embedded broker's profile gives the worker's
        producer batches of one record: there a group lands in order, a record at a time,
        not as one batch."""
        keys = self.store.keys
        written = list(events)
        if keys.sealing:
            data_key = await keys.key_for(written[0].conversation_id)
            written = [seal_event(event, data_key) for event in written]
        topic = self.store.events.get_topic_name()
        producer = steady_producer(self.store.app)
        key = written[0].conversation_id.encode()
        headers = record_headers()
        records = [(key, encode_event(event), headers) for event in written]
        partition = producer.key_partition(topic, key).partition
        return await positions(
            await producer.send_batches(topic, partition, records, one_at_a_time=True)
        )

    async def ask(self, request: ChatRequest, timeout: float) -> ChatReply:  # noqa: ASYNC109
        """Publish the request and wait for the reply this worker's chat agent publishes
        (the caller forwarded it to the conversation's owner first)."""
        async with contextlib.aclosing(self.ask_stream(request, timeout)) as items:
            async for item in items:
                if isinstance(item, ChatReply):
                    return item
        raise AssertionError("a followed request ends with its reply")

    async def ask_stream(
        self,
        request: ChatRequest,
        timeout: float,  # noqa: ASYNC109 - the wait for the reply
        join: bool = False,
    ) -> AsyncGenerator[StreamedReply, None]:
        """Publish the request and follow its turn in this worker's chat agent: what it
        reports as it runs (a streamed request), then its reply. A request whose turn
        runs here already is joined, not sent again."""
        streams = self.store.chat.streams
        conversation_id, request_id = request.conversation_id, request.request_id
        following = streams.follow(conversation_id, request_id)
        try:
            if streams.running(conversation_id, request_id):
                following.joined = True
            else:
                sent = await self.store.requests.send(
                    key=conversation_id.encode(),
                    value=encode_chat_request(request),
                    headers=record_headers(),  # the HTTP request's trace, for the turn
                    force=True,
                )
                landed = await sent
                following.sent_at = request_at(landed.partition, landed.offset)
        except BaseException:
            following.close()
            raise
        async for item in following.items(timeout, REPLY_GRACE):
            yield item

    def turn_end(self, conversation_id: str, request_id: str) -> TopicPosition | None:
        """What this worker's chat agent told its followers (the replies it follows)."""
        return self.store.chat.streams.turn_ends.take(conversation_id, request_id)

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        """Stop the turn here when this worker owns the conversation (now, or when it
        starts); else the owner's chat agent gets the cancel through ``requests``."""
        if self.owns(conversation_id):
            self.store.chat.streams.cancel(conversation_id, request_id)
            return
        await super().cancel(conversation_id, request_id)


def worker_store(store: StoreApp) -> StoreApplication:
    """The worker's store: what its HTTP views append as ``http``."""
    return StoreApplication(
        WorkerBackend(store, source="http"),
        source="http",
        read_wait=store.settings.read_wait,
        history_threads=store.settings.history_threads,
    )
