"""The conversation store in one process, with no broker and no database.

The same records, fold and rules as the store over Kafka: every event is encoded as
the log holds it, kept in its conversation's partition at the next offset, and folded
by :func:`~goaicore.fold.records.fold_records`; chat turns run by the store's rules
(:mod:`goaicore.store.turns`, idempotency, output limits, one conversation's requests
in arrival order); everything else is :class:`~goaicore.store.application.
StoreApplication`'s. So an application's unit tests, and a quick start, see what
production does::

    async with InMemoryConversationStore() as store:
        reply = await store.ask("player-1", "Hello")

With ``sealed=True`` each conversation's content is sealed under a data key of its
own, as a worker with master keys does, and erasing destroys the key: the log's copies
read as erased. Erasing drops the conversation's stored replies either way. Everything
is lost when the process ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.providers.base import Provider
from goaicore.conversation.providers.offline import OfflineProvider
from goaicore.conversation.tools import Tool
from goaicore.fold.policy import policy_for_record_limit
from goaicore.fold.records import LogRecord, Rejected, fold_records
from goaicore.kafka.partitioner import partition_for
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationRewound,
    ConversationSnapshot,
    LogPosition,
    TopicPosition,
)
from goaicore.records.avro.api import encode_event
from goaicore.sealing.records import KeyLookup
from goaicore.store import history
from goaicore.store.application import StoreApplication
from goaicore.store.idempotency import RecentReplies, answer
from goaicore.store.inputs import RecordLimits
from goaicore.store.limits import OutputLimits
from goaicore.store.reply_streams import ReplyStreams, StreamedReply, request_at
from goaicore.store.turns import TurnSettings
from goaicore.threads import HISTORY_THREADS, TOOL_THREADS, ThreadPool

if TYPE_CHECKING:
    from goaicore.sealing.keys import DataKey

EVENTS = "events"
"""The topic name positions carry: the log is this store's ``events``."""

DEFAULT_RECORD_LIMIT = 900_000
DEFAULT_CONTEXT_TOKENS = 16_000
DEFAULT_TURN_TIMEOUT = 120.0


class MemoryBackend:
    """The log, snapshots, recent replies and data keys of an in-memory store; chat
    turns run here, on the folded snapshot, one at a time per conversation."""

    events_topic = EVENTS
    intake = False

    def __init__(
        self,
        provider: Provider,
        tools: Mapping[str, Tool],
        turn: TurnSettings,
        limits: OutputLimits,
        partitions: int,
        record_limit: int,
        sealed: bool,
    ) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be 1 or more, got {partitions}")
        self.provider = provider
        self.tools = dict(tools)
        self.turn = turn
        self.limits = limits
        self.partitions = partitions
        self.record_limit = record_limit
        self.policy = policy_for_record_limit(record_limit)
        self.log: list[list[LogRecord]] = [[] for _ in range(partitions)]
        self.stored: dict[str, ConversationSnapshot] = {}
        self.rejected: list[Rejected] = []
        """Records the fold did not take, with the reason (a deployment's dead letters)."""
        self._replies: dict[str, RecentReplies] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        self._sealing = _Sealing() if sealed else None
        self.streams = ReplyStreams()
        self._asked: set[asyncio.Task[ChatReply]] = set()  # kept until done (asyncio: weak)
        self._requests = itertools.count()  # each ask's request, as a record would be placed
        self._written: asyncio.Event | None = None
        """Set by the next write, for the waits that want to know of it."""

    @property
    def keys(self) -> KeyLookup | None:
        return self._sealing.lookup if self._sealing is not None else None

    async def records(
        self, conversation_id: str, until_offset: int | None = None, related: tuple[str, ...] = ()
    ) -> list[LogRecord]:
        key = conversation_id.encode()
        partition = self.log[partition_for(conversation_id, self.partitions)]
        end = len(partition) if until_offset is None else until_offset + 1
        return [record for record in partition[:end] if record.key == key]

    async def snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        return self.stored.get(conversation_id)

    async def snapshot_when(
        self,
        conversation_id: str,
        ready: Callable[[ConversationSnapshot | None], bool],
        timeout: float,  # noqa: ASYNC109 - the port's shape: a write folds at once here
    ) -> ConversationSnapshot | None:
        """A write folds as it is appended, so the snapshot changes only with one: looked
        at again after each write, until ``timeout``."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            snapshot = self.stored.get(conversation_id)
            remaining = deadline - asyncio.get_running_loop().time()
            if ready(snapshot) or remaining <= 0:
                return snapshot
            if self._written is None:
                self._written = asyncio.Event()
            written = self._written
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(written.wait(), remaining)

    async def snapshots(self) -> Mapping[str, ConversationSnapshot]:
        return dict(self.stored)

    async def publish(
        self, event: ConversationEvent, related: tuple[str, ...] = (), operation: bool = False
    ) -> TopicPosition:
        return self.write(event)

    async def publish_all(self, events: Sequence[ConversationEvent]) -> list[TopicPosition]:
        return [self.write(event) for event in events]  # at once: nothing runs in between

    async def ask(self, request: ChatRequest, timeout: float) -> ChatReply:  # noqa: ASYNC109
        return await self._ask(request, self._request_at())

    def turn_end(self, conversation_id: str, request_id: str) -> TopicPosition | None:
        """None: a turn's events are folded as they are written, before its reply."""
        return None

    def _request_at(self) -> str:
        return request_at(0, next(self._requests))

    async def _ask(self, request: ChatRequest, at: str) -> ChatReply:
        """Answer the request sent ``at`` (a reply that is not final answers only it)."""
        conversation_id = request.conversation_id
        lock = self._turns.setdefault(conversation_id, asyncio.Lock())  # FIFO: arrival order
        async with lock:
            recent = self._replies.get(conversation_id, RecentReplies())
            reply, final = recent.get(request.request_id), True
            if reply is None:
                reply, final = await self._run(request)
                if final:  # a request late to run is run by its retry
                    self._replies[conversation_id] = recent.with_reply(
                        reply, self.limits.replies_table_bytes
                    )
            self.streams.finish(reply, None if final else at)
            return reply

    async def _run(self, request: ChatRequest) -> tuple[ChatReply, bool]:
        """The request's reply, and whether it is final (to be stored for retries)."""
        run = self.streams.start(request.conversation_id, request.request_id)
        try:
            outcome = await answer(
                request,
                self.stored.get(request.conversation_id),
                lambda model: self.provider,
                self.tools,
                self.turn,
                run.report if request.stream else None,
                run.cancel,
                lambda: self._regeneration(request.conversation_id),
            )
            for event in self.limits.fit_events(outcome.events):
                self.write(event)
            return self.limits.fit_reply(outcome.reply), outcome.final
        except BaseException:
            self.streams.forget(run)  # its followers are told, not left waiting
            raise

    async def _regeneration(self, conversation_id: str) -> tuple[ConversationRewound, str]:
        """What a regenerate of the conversation undoes, from its log as it is now."""
        policy = history.policy_for(self.stored.get(conversation_id), self.record_limit)
        records = await self.records(conversation_id)
        limits = RecordLimits(self.record_limit, self._sealing is not None)
        return history.regeneration(conversation_id, records, policy, self.keys, limits)

    async def ask_stream(
        self,
        request: ChatRequest,
        timeout: float,  # noqa: ASYNC109 - the wait for the reply
        join: bool = False,
    ) -> AsyncGenerator[StreamedReply, None]:
        following = self.streams.follow(request.conversation_id, request.request_id)
        following.sent_at = self._request_at()
        # Runs on without a follower.
        asked = asyncio.create_task(self._ask(request, following.sent_at))
        self._asked.add(asked)
        asked.add_done_callback(self._asked.discard)
        asked.add_done_callback(_settled)
        async for item in following.items(timeout):
            yield item

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        self.streams.cancel(conversation_id, request_id)

    async def has_key(self, conversation_id: str) -> bool:
        return self._sealing is not None and self._sealing.has_key(conversation_id)

    async def key_destroyed(
        self,
        conversation_id: str,
        erasure: TopicPosition,
        timeout: float,  # noqa: ASYNC109 - the port's shape: folding the erasure destroyed it
    ) -> None:
        return None

    async def close(self) -> None:
        """The tools' threads end (the log and snapshots live as long as the object)."""
        if self.turn.tool_pool is not None:
            self.turn.tool_pool.close()

    def write(self, event: ConversationEvent) -> TopicPosition:
        """Append ``event`` to its partition and fold it, as the store worker would; an
        erasure folded destroys the key its conversation's content was sealed under."""
        key = event.conversation_id.encode()
        number = partition_for(event.conversation_id, self.partitions)
        written = event if self._sealing is None else self._sealing.seal(event)
        offset = len(self.log[number])
        position = LogPosition(partition=number, offset=offset)
        record = LogRecord(key, encode_event(written), position, partitions=self.partitions)
        self.log[number].append(record)
        current = lambda key: self.stored.get(key.decode())  # noqa: E731
        for outcome in fold_records([record], self.policy, current, keys=self.keys):
            if isinstance(outcome, Rejected):
                self.rejected.append(outcome)
                continue
            self.stored[event.conversation_id] = outcome.snapshot
            erased = outcome.snapshot.erased_before
            if erased is not None and erased.offset == offset:  # its replies go with it
                self._replies.pop(event.conversation_id, None)
                if self._sealing is not None:
                    self._sealing.destroy(event.conversation_id)
        woken, self._written = self._written, None
        if woken is not None:
            woken.set()
        return TopicPosition(EVENTS, number, offset)


class InMemoryConversationStore(StoreApplication):
    """A :class:`~goaicore.store.port.ConversationStore` in memory (see the module
    docstring). ``provider`` answers chat turns (default: the offline model), with
    ``tools`` to call (synchronous ones in their own pool of ``tool_threads``);
    ``partitions`` and ``record_limit`` shape the log as a deployment's topics would;
    history operations fold in a pool of ``history_threads``."""

    def __init__(
        self,
        provider: Provider | None = None,
        *,
        tools: Iterable[Tool] | Mapping[str, Tool] = (),
        system_prompt: str | None = None,
        partitions: int = 1,
        record_limit: int = DEFAULT_RECORD_LIMIT,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        turn_timeout: float = DEFAULT_TURN_TIMEOUT,
        prices: PriceTable | None = None,
        sealed: bool = False,
        tool_threads: int = TOOL_THREADS,
        history_threads: int = HISTORY_THREADS,
    ) -> None:
        listed = tools.values() if isinstance(tools, Mapping) else tools
        limits = OutputLimits.for_record_limit(record_limit, sealed=sealed)
        turn = TurnSettings(
            system_prompt=system_prompt,
            turn_timeout=turn_timeout,
            context_tokens=context_tokens,
            max_tool_result_bytes=limits.tool_result_bytes,
            prices=prices or PriceTable(),
            tool_pool=ThreadPool(tool_threads, "goaicore-tools"),
        )
        self.memory = MemoryBackend(
            provider or OfflineProvider(),
            {t.name: t for t in listed},
            turn,
            limits,
            partitions,
            record_limit,
            sealed,
        )
        super().__init__(self.memory, history_threads=history_threads)


def _settled(asked: asyncio.Task[ChatReply]) -> None:
    """An ask run for a stream is done; its failure reached the stream's followers."""
    if not asked.cancelled():
        asked.exception()  # retrieved: asyncio need not report it


class _Sealing:
    """Data keys by conversation, made on first use and destroyed by an erasure."""

    def __init__(self) -> None:
        from goaicore.sealing.keys import DataKey  # the sealing extra: asked for

        self._make = DataKey.generate
        self._keys: dict[str, DataKey] = {}

    def has_key(self, conversation_id: str) -> bool:
        return conversation_id in self._keys

    def seal(self, event: ConversationEvent) -> ConversationEvent:
        from goaicore.sealing.records import seal_event

        key = self._keys.get(event.conversation_id)
        if key is None:
            key = self._keys[event.conversation_id] = self._make()
        return seal_event(event, key)

    def lookup(self, conversation_id: str, key_id: str) -> DataKey | None:
        key = self._keys.get(conversation_id)
        return key if key is not None and key.key_id == key_id else None

    def destroy(self, conversation_id: str) -> None:
        self._keys.pop(conversation_id, None)
