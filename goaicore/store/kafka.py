"""The conversation store over Kafka: what a game service, the command line and the
console use to reach a deployment's store workers.

It appends with the publisher (to ``events``, or to ``intake`` where the workers seal),
asks with the request/reply client (the worker that owns the conversation runs the
turn), reads the log's events and the snapshots topic, and runs the history
operations by :mod:`goaicore.store.history`'s rules on a fold of the conversation's
partition. Every client opens on first use and closes with the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any, Self, TypeVar

from goaicore.clients.aio.chat_client import AsyncChatClient
from goaicore.clients.aio.keys import AsyncTopicKeys
from goaicore.clients.aio.publisher import AsyncEventPublisher
from goaicore.clients.aio.reader import AsyncHistoryReader
from goaicore.clients.aio.snapshots import AsyncSnapshotReader
from goaicore.config import Settings
from goaicore.fold.admission import Unfoldable, admit
from goaicore.fold.policy import PolicyTimeline
from goaicore.fold.records import LogRecord, fold_records
from goaicore.lifecycle import AsyncRunning
from goaicore.records import (
    EVENT_BODY_TYPES,
    ChatReply,
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationSnapshot,
    LoggedEvent,
    TopicPosition,
    new_event,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id
from goaicore.sealing.keyring import doomed_by
from goaicore.store import history
from goaicore.store.errors import OperationPending, OperationRefused, WriteNotApplied
from goaicore.store.history import SOURCE, Erased, Forked, Rewound, Scan, Stop, Undone
from goaicore.store.port import Appended, Conversation
from goaicore.store.read_your_writes import applied

C = TypeVar("C", bound=AsyncRunning)

POLL_SECONDS = 0.1
"""How often a wait for the workers (a snapshot, a sealed event, a destroyed key) looks."""


class KafkaConversationStore:
    """A :class:`~goaicore.store.port.ConversationStore` over a deployment's topics
    (see the module docstring); ``source`` names this service in what it appends."""

    def __init__(self, settings: Settings | None = None, source: str = "publisher") -> None:
        self.settings = settings or Settings()
        self.events_topic = self.settings.topic("events")
        self._publisher = AsyncEventPublisher(self.settings, source=source)
        self._operations = AsyncEventPublisher(self.settings, source=SOURCE)
        self._sealed_operations: AsyncEventPublisher | None = None  # intake, when it is off
        self._chat = AsyncChatClient(self.settings, source=source)
        self._reader = AsyncHistoryReader(self.settings)
        self._snapshots = AsyncSnapshotReader(self.settings)
        self._keys = AsyncTopicKeys(self.settings)
        self._unsealed: dict[str, Appended] = {}
        """Each conversation's latest write to ``intake`` a worker may not have sealed yet:
        what this store reads or operates on next waits for it (read-your-writes)."""
        self._open: list[AsyncRunning] = []
        self._opening = asyncio.Lock()

    # -- reading

    async def read(
        self,
        conversation_id: str,
        *,
        after: Appended | None = None,
        history: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 - how long the workers may be waited for
    ) -> Conversation:
        check_conversation_id(conversation_id)
        deadline = time.monotonic() + timeout
        after = after or self._unsealed.get(conversation_id)
        if after is not None:  # first: a write through intake reaches events when sealed
            await self._snapshot_applying(conversation_id, after, None, deadline, timeout)
            self._sealed(conversation_id, after)
        events: tuple[LoggedEvent, ...] = ()
        if history:
            events = tuple(await self._logged(conversation_id))
        last = events[-1].offset if events else None
        snapshot = await self._snapshot_applying(conversation_id, after, last, deadline, timeout)
        return Conversation(conversation_id, snapshot, events)

    async def conversations(self) -> list[str]:
        snapshots = await self._opened(self._snapshots)
        return sorted(await snapshots.all())

    # -- appending

    async def append(self, conversation_id: str, event: ConversationEvent | EventBody) -> Appended:
        check_conversation_id(conversation_id)
        if isinstance(event, EVENT_BODY_TYPES):
            event = new_event(conversation_id, event, source=self._publisher.source)
        publisher = await self._opened(self._publisher)
        position = await publisher.publish(conversation_id, event)
        assert isinstance(event, ConversationEvent)  # publish refused anything else
        appended = Appended(event.event_id, position)
        if position.topic != self.events_topic:
            self._unsealed[conversation_id] = appended
        return appended

    # -- chat

    async def ask(
        self,
        conversation_id: str,
        text: str,
        *,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        timeout: float = 30.0,  # noqa: ASYNC109 - the ask's wait, and the turn's deadline
    ) -> ChatReply:
        chat = await self._opened(self._chat)
        return await chat.ask(
            conversation_id,
            text,
            timeout=timeout,
            system=system,
            tools=tools,
            model=model,
            request_id=request_id,
        )

    async def regenerate(
        self,
        conversation_id: str,
        timeout: float = 60.0,  # noqa: ASYNC109 - the ask's wait
    ) -> ChatReply:
        undone = await self.undo(conversation_id, ask_again=True)
        return await self.ask(conversation_id, undone.text, timeout=timeout)

    # -- history operations

    async def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        policy = await self._policy(conversation_id)
        found = await self._scan(conversation_id, policy, copies_content=True)
        offset, text = history.last_user_message(conversation_id, found, ask_again)
        then = await self._scan(conversation_id, policy, history.from_offset(offset))
        rewound = await self._rewind(conversation_id, then, offset - 1, "undo", policy)
        return Undone(rewound.position, rewound.until_offset, rewound.messages, text)

    async def rewind(
        self, conversation_id: str, until_offset: int, reason: str = "rewind"
    ) -> Rewound:
        history.check_until_offset(until_offset)
        policy = await self._policy(conversation_id)
        found = await self._scan(
            conversation_id, policy, history.after_offset(until_offset), copies_content=True
        )
        return await self._rewind(conversation_id, found, until_offset, reason, policy)

    async def fork(
        self,
        source_id: str,
        new_id: str,
        before_offset: int | None = None,
        as_of: datetime | None = None,
    ) -> Forked:
        stop = history.fork_stop(source_id, new_id, before_offset, as_of)
        policy = await self._policy(source_id)
        found = await self._scan(source_id, policy, stop, copies_content=True)
        await self._own_writes_sealed(new_id)
        history.refuse_fork_into(new_id, await _any(self._records(new_id)))
        body = history.forked(source_id, found, before_offset)
        position = await self._operate(
            new_id, body, await self._policy(new_id), related=(source_id,)
        )
        return Forked(position, found.partition, body.until_offset, len(body.messages))

    async def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        policy = await self._policy(conversation_id)
        change = history.metadata_change(conversation_id, title, owner, tags, attributes, policy)
        return await self._operate(conversation_id, change, policy)

    async def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        policy = await self._policy(conversation_id)
        await self._scan(conversation_id, policy)  # not found, or deleted: refused here
        return await self._operate(conversation_id, ConversationDeleted(reason=reason), policy)

    async def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,  # noqa: ASYNC109 - the wait for the worker to destroy the key
    ) -> Erased:
        policy = await self._policy(conversation_id)
        await self._scan(conversation_id, policy, allow_deleted=True)
        forks = history.forks_of(conversation_id, await self._all_snapshots())
        keys = await self._opened(self._keys)
        had_key = await keys.key_of(conversation_id) is not None
        erasure = ConversationErased(reason=reason)
        position = await self._operate(conversation_id, erasure, policy, wait=timeout)
        if not had_key:
            return Erased(position, key_destroyed=False, forks=forks)
        deadline = time.monotonic() + timeout
        while doomed_by(await keys.key_of(conversation_id), position.offset):
            if time.monotonic() > deadline:
                raise OperationRefused(
                    f"erasure appended at {position} and folded, but the data key of "
                    f"{conversation_id!r} was not destroyed within {timeout:.0f} s: is a "
                    "store worker running? It destroys the key when it folds the erasure"
                )
            await asyncio.sleep(POLL_SECONDS)
        return Erased(position, key_destroyed=True, forks=forks)

    # -- lifecycle

    async def start(self) -> Self:
        """Nothing opens before it is needed; kept for ``async with``."""
        return self

    async def close(self) -> None:
        opened, self._open = self._open, []
        for client in reversed(opened):
            await client.close()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the clients, the log and the snapshots

    async def _opened(self, client: C) -> C:
        """``client``, started the first time it is wanted."""
        if client not in self._open:
            async with self._opening:
                if client not in self._open:
                    await client.start()
                    self._open.append(client)
        return client

    def _records(self, conversation_id: str, until: int | None = None) -> AsyncIterator[LogRecord]:
        async def records() -> AsyncIterator[LogRecord]:
            reader = await self._opened(self._reader)
            async for record in reader.records(conversation_id, until):
                yield record

        return records()

    async def _read_records(
        self, conversation_id: str, until: int | None = None, related: Iterable[str] = ()
    ) -> list[LogRecord]:
        """The conversation's records, with the keys to open them refreshed first where
        content may be sealed (a fold opens sealed events without reading the keys topic)."""
        records = [record async for record in self._records(conversation_id, until)]
        if self._keys.ring is not None and records:
            keys = await self._opened(self._keys)
            await keys.refresh(conversation_id, *related)
        return records

    async def _logged(self, conversation_id: str) -> list[LoggedEvent]:
        logged = []
        for record in await self._read_records(conversation_id):
            event = admit(record.key, record.value, self._keys.ring)
            if not isinstance(event, Unfoldable):
                logged.append(LoggedEvent(record.position.partition, record.position.offset, event))
        return logged

    async def _own_writes_sealed(self, *conversation_ids: str) -> None:
        """Wait until a worker sealed this store's latest intake write of each conversation
        into ``events``: an operation must see what its caller appended before it."""
        patience = max(self.settings.read_wait, 1.0)
        for conversation_id in conversation_ids:
            pending = self._unsealed.get(conversation_id)
            if pending is None:
                continue
            deadline = time.monotonic() + patience
            try:
                await self._snapshot_applying(conversation_id, pending, None, deadline, patience)
            except WriteNotApplied:
                raise OperationPending(
                    f"{pending.position} ({conversation_id!r}) is not sealed into "
                    f"{self.events_topic} after {patience:g} s: is a store worker running? "
                    "Nothing was done; try again once it is"
                ) from None
            self._sealed(conversation_id, pending)

    def _sealed(self, conversation_id: str, write: Appended) -> None:
        """``write`` is folded: later reads need not wait for it."""
        if self._unsealed.get(conversation_id) == write:
            del self._unsealed[conversation_id]

    async def _snapshot_applying(
        self,
        conversation_id: str,
        after: Appended | None,
        last_offset: int | None,
        deadline: float,
        timeout: float,  # noqa: ASYNC109 - the whole read's, for the message
    ) -> ConversationSnapshot | None:
        """The snapshot once it has applied ``after`` and the event at ``last_offset``."""
        while True:
            snapshot = await self._snapshot(conversation_id)
            behind = _behind(snapshot, after, last_offset, self.events_topic)
            if behind is None:
                return snapshot
            if time.monotonic() > deadline:
                raise WriteNotApplied(
                    f"the snapshot of {conversation_id!r} has not applied {behind} after "
                    f"{timeout:g} s: is a store worker running?"
                )
            await asyncio.sleep(POLL_SECONDS)

    async def _snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        snapshots = await self._opened(self._snapshots)
        return await snapshots.get(conversation_id)

    async def _all_snapshots(self) -> dict[str, ConversationSnapshot]:
        snapshots = await self._opened(self._snapshots)
        return await snapshots.all()

    async def _policy(self, conversation_id: str) -> PolicyTimeline:
        """The bounds the worker folded this conversation under (its stored snapshot's)."""
        stored = await self._snapshot(conversation_id)
        return history.policy_for(stored, self.settings.max_record_bytes)

    async def _scan(
        self,
        conversation_id: str,
        policy: PolicyTimeline,
        stop: Stop | None = None,
        allow_deleted: bool = False,
        copies_content: bool = False,
    ) -> Scan:
        check_conversation_id(conversation_id)
        await self._own_writes_sealed(conversation_id)
        records = await self._read_records(conversation_id)
        outcomes = fold_records(records, policy, keys=self._keys.ring)
        return history.scan(conversation_id, outcomes, stop, allow_deleted, copies_content)

    async def _rewind(
        self,
        conversation_id: str,
        found: Scan,
        until_offset: int,
        reason: str,
        policy: PolicyTimeline,
    ) -> Rewound:
        body = history.rewound(conversation_id, found, until_offset, reason)
        position = await self._operate(conversation_id, body, policy)
        return Rewound(position, until_offset, len(body.messages))

    async def _operate(
        self,
        conversation_id: str,
        body: EventBody,
        policy: PolicyTimeline,
        related: tuple[str, ...] = (),
        wait: float | None = None,
    ) -> TopicPosition:
        """Append a history operation's event, then fold the log up to it: refused if the
        fold did not apply it.

        Through ``intake`` (GOAICORE_INTAKE, or a conversation here or in ``related`` with
        a data key: its workers seal), the event's place in ``events`` is where the worker
        sealed it: the log is read again until it is there, for ``wait`` seconds
        (``read_wait``, at least a second, unless given).
        """
        event = new_event(conversation_id, body, source=SOURCE)
        publisher = await self._operations_publisher((conversation_id, *related))
        position = await publisher.publish(conversation_id, event)
        direct = position.topic == self.events_topic
        patience = wait if wait is not None else max(self.settings.read_wait, 1.0)
        deadline = time.monotonic() + patience
        while True:
            until = position.offset if direct else None
            records = await self._read_records(conversation_id, until, related)
            outcomes = fold_records(records, policy, keys=self._keys.ring)
            found = history.applied_at(outcomes, event, policy, self.events_topic)
            if found is not None:
                return found
            if direct:
                return position
            if time.monotonic() > deadline:
                raise OperationPending(
                    f"appended to {position}, but no store worker sealed it into "
                    f"{self.events_topic} within {patience:.0f} s: is one running? It takes "
                    "effect once one does; do not repeat it"
                )
            await asyncio.sleep(POLL_SECONDS)

    async def _operations_publisher(self, conversations: Iterable[str]) -> AsyncEventPublisher:
        """The intake's publisher where the workers seal (GOAICORE_INTAKE, or one of
        ``conversations`` has a data key): never the clear log for sealed content."""
        if self.settings.intake:
            return await self._opened(self._operations)
        keys = await self._opened(self._keys)
        if all([await keys.key_of(c) is None for c in conversations]):
            return await self._opened(self._operations)
        if self._sealed_operations is None:
            intake = self.settings.with_overrides(intake_override=True)
            self._sealed_operations = AsyncEventPublisher(intake, source=SOURCE)
        return await self._opened(self._sealed_operations)


def _behind(
    snapshot: ConversationSnapshot | None,
    after: Appended | None,
    last_offset: int | None,
    events_topic: str,
) -> str | None:
    """What the snapshot has yet to apply (None: nothing): the caller's write ``after``,
    and the last event read with it."""
    if after is not None and not applied(snapshot, after, events_topic):
        return f"the write at {after.position}"
    if last_offset is None:
        return None
    last = snapshot.last_position if snapshot is not None else None
    if last is None or last.offset < last_offset:
        return f"the event at offset {last_offset} of its partition of {events_topic}"
    return None


async def _any(records: AsyncIterator[Any]) -> bool:
    async for _ in records:
        return True
    return False
