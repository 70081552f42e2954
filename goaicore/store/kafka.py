"""The conversation store over Kafka: what a game service, the command line and the
console use to reach a deployment's store workers.

The backend appends with the publisher (to ``events``, or to ``intake`` where the
workers seal), asks with the request/reply client (the worker that owns the
conversation runs the turn), reads the conversation's partition of ``events``, the
snapshots topic and the keys topic; everything else is
:class:`~goaicore.store.application.StoreApplication`'s. Every client opens on first
use and closes with the store.

A snapshot read reads only what the snapshots topic gained since this store last read
the conversation (:class:`~goaicore.clients.aio.snapshots.AsyncSnapshotReader`); a wait
for the snapshot to apply a write waits, on a connection of its own, for a fetch of new
records of the snapshot's partition
(:class:`~goaicore.kafka.partition_watch.AsyncPartitionWatch`), then reads again. Reads
that share a reader take turns, each for as long as its read takes; a wait holds no
reader, so reads of other conversations go on meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from goaicore.clients.aio.chat_client import AsyncChatClient
from goaicore.clients.aio.keys import AsyncTopicKeys
from goaicore.clients.aio.publisher import AsyncEventPublisher
from goaicore.clients.aio.snapshots import AsyncSnapshotReader, SnapshotRead
from goaicore.fold.records import LogRecord
from goaicore.kafka.partition_watch import AsyncPartitionWatch
from goaicore.lifecycle import AsyncRunning
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationKey,
    ConversationSnapshot,
    TopicPosition,
)
from goaicore.replay.log_reader import AsyncHistoryReader
from goaicore.sealing.keyring import doomed_by
from goaicore.sealing.records import KeyLookup
from goaicore.settings import Settings
from goaicore.store.application import POLL_SECONDS, StoreApplication
from goaicore.store.errors import OperationRefused
from goaicore.store.history import SOURCE
from goaicore.store.reply_streams import StreamedReply

C = TypeVar("C", bound=AsyncRunning)


class KafkaBackend:
    """A deployment's topics, through goaicore's asyncio clients (see the module docstring)."""

    def __init__(self, settings: Settings, source: str) -> None:
        self.settings = settings
        self.events_topic = settings.topic("events")
        self.record_limit = settings.max_record_bytes
        self.intake = settings.intake
        self._publisher = AsyncEventPublisher(settings, source=source)
        intake = settings if settings.intake else settings.with_overrides(intake_override=True)
        self._sealed = AsyncEventPublisher(intake, source=SOURCE)  # for sealed conversations
        self._chat = AsyncChatClient(settings, source=source)
        self._reader = AsyncHistoryReader(settings)
        self._snapshots = AsyncSnapshotReader(settings)
        self._snapshot_writes = AsyncPartitionWatch(settings, "snapshots")
        self._keys = AsyncTopicKeys(settings)
        self._open: list[AsyncRunning] = []
        self._opening = asyncio.Lock()
        # A reader assigns, seeks and fetches one partition at a time: calls that share
        # it take turns (two reads at once would steal each other's records).
        self._reading = {id(c): asyncio.Lock() for c in (self._reader, self._snapshots, self._keys)}

    @property
    def keys(self) -> KeyLookup | None:
        return self._keys.ring

    async def records(
        self, conversation_id: str, until_offset: int | None = None, related: tuple[str, ...] = ()
    ) -> list[LogRecord]:
        reader = await self._opened(self._reader)
        async with self._reading[id(reader)]:
            records = [r async for r in reader.records(conversation_id, until_offset)]
        if self._keys.ring is not None and records:  # a fold opens seals from the ring alone
            keys = await self._opened(self._keys)
            async with self._reading[id(keys)]:
                await keys.refresh(conversation_id, *related)
        return records

    async def snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        return (await self._snapshot_read(conversation_id)).snapshot

    async def snapshot_when(
        self,
        conversation_id: str,
        ready: Callable[[ConversationSnapshot | None], bool],
        timeout: float,  # noqa: ASYNC109 - how long the workers may be waited for
    ) -> ConversationSnapshot | None:
        """Read; while not ``ready``, wait (holding no reader) for records after where
        the read ended in the snapshot's partition, and read them. When the snapshot this
        store read last is not ``ready`` (a read right after one's own write), the wait
        comes first: what it finds is read then."""
        deadline = time.monotonic() + timeout
        snapshots = await self._opened(self._snapshots)
        found = snapshots.remembered(conversation_id)
        fresh = found is None or ready(found.snapshot)
        if fresh:
            found = await self._snapshot_read(conversation_id)
        assert found is not None
        while not (fresh and ready(found.snapshot)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return (found if fresh else await self._snapshot_read(conversation_id)).snapshot
            writes = await self._opened(self._snapshot_writes)
            end = await writes.wait_past(found.partition, found.end, remaining)
            end_at = end if end is not None and end > found.end else None
            found, fresh = await self._snapshot_read(conversation_id, end_at), True
        return found.snapshot

    async def _snapshot_read(self, conversation_id: str, end_at: int | None = None) -> SnapshotRead:
        snapshots = await self._opened(self._snapshots)
        async with self._reading[id(snapshots)]:
            return await snapshots.read(conversation_id, end_at)

    async def snapshots(self) -> Mapping[str, ConversationSnapshot]:
        return await self.all_snapshots()

    async def all_snapshots(self, progress: bool | None = False) -> dict[str, ConversationSnapshot]:
        """Every conversation's latest snapshot; a progress bar while reading when
        ``progress`` (None: when interactive)."""
        snapshots = await self._opened(self._snapshots)
        async with self._reading[id(snapshots)]:
            return await snapshots.all(progress)

    async def publish(
        self, event: ConversationEvent, related: tuple[str, ...] = (), operation: bool = False
    ) -> TopicPosition:
        """Through the publisher; a history ``operation`` on a sealed conversation (or one
        taking a sealed one's history) goes through the intake even where publishers
        write to ``events``: never the clear log for sealed content."""
        publisher = self._publisher
        if operation and not self.settings.intake:
            for conversation_id in (event.conversation_id, *related):
                if await self.has_key(conversation_id):
                    publisher = self._sealed
                    break
        opened = await self._opened(publisher)
        return await opened.publish(event.conversation_id, event)

    async def publish_all(self, events: Sequence[ConversationEvent]) -> list[TopicPosition]:
        """Through the publisher, together (where the workers seal: into the intake
        together, and the conversation's owner seals each into ``events`` in order)."""
        publisher = await self._opened(self._publisher)
        return await publisher.publish_together(events[0].conversation_id, events)

    async def ask(self, request: ChatRequest, timeout: float) -> ChatReply:  # noqa: ASYNC109
        chat = await self._opened(self._chat)
        asking = _asking(request)
        return await chat.ask(
            request.conversation_id,
            request.text,
            timeout,
            **asking,
            regenerate=request.regenerate,
        )

    async def ask_stream(
        self,
        request: ChatRequest,
        timeout: float,  # noqa: ASYNC109 - the wait for the reply
        join: bool = False,
    ) -> AsyncGenerator[StreamedReply, None]:
        chat = await self._opened(self._chat)
        asking = _asking(request)
        async for item in chat.ask_stream(
            request.conversation_id, request.text, timeout, join=join, **asking
        ):
            yield item

    def turn_end(self, conversation_id: str, request_id: str) -> TopicPosition | None:
        """From the reply record's header (:mod:`goaicore.store.turn_ends`)."""
        return self._chat.turn_ends.take(conversation_id, request_id)

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        chat = await self._opened(self._chat)
        await chat.cancel(request_id, conversation_id=conversation_id)

    async def has_key(self, conversation_id: str) -> bool:
        return await self._key_of(conversation_id) is not None

    async def key_destroyed(
        self,
        conversation_id: str,
        erasure: TopicPosition,
        timeout: float,  # noqa: ASYNC109 - how long the worker may take to fold the erasure
    ) -> None:
        deadline = time.monotonic() + timeout
        while doomed_by(await self._key_of(conversation_id), erasure.offset):
            if time.monotonic() > deadline:
                raise OperationRefused(
                    f"erasure appended at {erasure} and folded, but the data key of "
                    f"{conversation_id!r} was not destroyed within {timeout:.0f} s: is a "
                    "store worker running? It destroys the key when it folds the erasure"
                )
            await asyncio.sleep(POLL_SECONDS)

    async def close(self) -> None:
        async with self._opening:  # nothing opens while the store closes
            opened, self._open = self._open, []
            for client in reversed(opened):
                await client.close()

    async def _key_of(self, conversation_id: str) -> ConversationKey | None:
        keys = await self._opened(self._keys)
        async with self._reading[id(keys)]:
            return await keys.key_of(conversation_id)

    async def _opened(self, client: C) -> C:
        """``client``, started the first time it is wanted."""
        if client not in self._open:
            async with self._opening:
                if client not in self._open:
                    await client.start()
                    self._open.append(client)
        return client


def _asking(request: ChatRequest) -> dict[str, Any]:
    """The chat client's arguments for ``request``, besides its conversation and text."""
    return {
        "system": request.system,
        "tools": request.tools,
        "model": request.model,
        "request_id": request.request_id,
        "deadline": request.deadline,
    }


class KafkaConversationStore(StoreApplication):
    """A :class:`~goaicore.store.port.ConversationStore` over a deployment's topics (see
    the module docstring); ``source`` names this service in what it appends."""

    def __init__(self, settings: Settings | None = None, source: str = "publisher") -> None:
        self.settings = settings or Settings()
        self.kafka = KafkaBackend(self.settings, source)
        super().__init__(
            self.kafka,
            source=source,
            read_wait=self.settings.read_wait,
            history_threads=self.settings.history_threads,
        )
