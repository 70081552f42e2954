"""The conversation store in one process, with no broker and no database.

The same records, fold and rules as the store over Kafka: every event is encoded as
the log holds it, kept in its conversation's partition at the next offset, and folded
by :func:`~goaicore.fold.records.fold_records`; chat turns run by the store's rules
(:mod:`goaicore.store.turns`, idempotency, output limits, one conversation's requests
in arrival order); history operations decide by :mod:`goaicore.store.history`. So an
application's unit tests, and a quick start, see what production does::

    async with InMemoryConversationStore() as store:
        reply = await store.ask("player-1", "Hello")

With ``sealed=True`` each conversation's content is sealed under a data key of its
own, as a worker with master keys does, and erasing destroys the key: the log's copies
read as erased. Everything is lost when the process ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Self

from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.providers.base import Provider
from goaicore.conversation.providers.offline import OfflineProvider
from goaicore.conversation.tools import Tool
from goaicore.errors import GoaicoreError
from goaicore.fold.admission import Unfoldable, admit
from goaicore.fold.policy import PolicyTimeline, policy_for_record_limit
from goaicore.fold.records import Applied, LogRecord, Rejected, fold_records
from goaicore.kafka.partitioner import partition_for
from goaicore.records import (
    ChatReply,
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationSnapshot,
    LoggedEvent,
    LogPosition,
    TopicPosition,
    new_event,
    utc_now,
)
from goaicore.records.avro.api import decode_event, encode_event
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id
from goaicore.store import history
from goaicore.store.errors import WriteNotApplied
from goaicore.store.history import SOURCE, Erased, Forked, Rewound, Scan, Stop, Undone
from goaicore.store.idempotency import RecentReplies, recover_from_log
from goaicore.store.inputs import RecordLimits, chat_request_record, event_record
from goaicore.store.limits import OutputLimits
from goaicore.store.port import Appended, Conversation
from goaicore.store.read_your_writes import applied
from goaicore.store.turns import TurnSettings, run_request

if TYPE_CHECKING:
    from goaicore.sealing.keys import DataKey

EVENTS = "events"
"""The topic name positions carry: the log is this store's ``events``."""

DEFAULT_RECORD_LIMIT = 900_000
DEFAULT_CONTEXT_TOKENS = 16_000
DEFAULT_TURN_TIMEOUT = 120.0


class InMemoryConversationStore:
    """A :class:`~goaicore.store.port.ConversationStore` in memory (see the module
    docstring). ``provider`` answers chat turns (default: the offline model), with
    ``tools`` to call; ``partitions`` and ``record_limit`` shape the log as a
    deployment's topics would."""

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
    ) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be 1 or more, got {partitions}")
        self.provider: Provider = provider or OfflineProvider()
        listed = tools.values() if isinstance(tools, Mapping) else tools
        self.tools: dict[str, Tool] = {t.name: t for t in listed}
        self.partitions = partitions
        self.limits = OutputLimits.for_record_limit(record_limit, sealed=sealed)
        self.turn = TurnSettings(
            system_prompt=system_prompt,
            turn_timeout=turn_timeout,
            context_tokens=context_tokens,
            max_tool_result_bytes=self.limits.tool_result_bytes,
            prices=prices or PriceTable(),
        )
        self.policy = policy_for_record_limit(record_limit)
        self._inputs = RecordLimits(record_limit)
        self._log: list[list[LogRecord]] = [[] for _ in range(partitions)]
        self._snapshots: dict[str, ConversationSnapshot] = {}
        self._replies: dict[str, RecentReplies] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        self._sealing = _Sealing() if sealed else None
        self.rejected: list[Rejected] = []
        """Records the fold did not take, with the reason (a deployment's dead letters)."""

    # -- reading

    async def read(
        self,
        conversation_id: str,
        *,
        after: Appended | None = None,
        history: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 - the port's shape; nothing here waits
    ) -> Conversation:
        check_conversation_id(conversation_id)
        snapshot = self._snapshots.get(conversation_id)
        if after is not None and not applied(snapshot, after, EVENTS):
            raise WriteNotApplied(
                f"{after.position} ({after.event_id}) is not a write of {conversation_id!r} "
                "this store applied"
            )
        events = tuple(self._logged(conversation_id)) if history else ()
        return Conversation(conversation_id, snapshot, events)

    async def conversations(self) -> list[str]:
        return sorted(self._snapshots)

    # -- appending

    async def append(self, conversation_id: str, event: ConversationEvent | EventBody) -> Appended:
        _, value = event_record(self._inputs, "publisher", conversation_id, event)
        envelope = decode_event(value)
        return Appended(envelope.event_id, self._write(envelope))

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
        timeout: float = 30.0,  # noqa: ASYNC109 - the turn's deadline
    ) -> ChatReply:
        deadline = utc_now() + timedelta(seconds=timeout)
        request, _ = chat_request_record(
            self._inputs, conversation_id, text, system, tools, model, deadline, request_id
        )
        lock = self._turns.setdefault(conversation_id, asyncio.Lock())  # FIFO: arrival order
        async with lock:
            stored = self._replies.get(conversation_id, RecentReplies())
            answered = stored.get(request.request_id)
            if answered is not None:
                return answered
            snapshot = self._snapshots.get(conversation_id)
            outcome = recover_from_log(request, snapshot) or await run_request(
                request, snapshot, self.provider, self.tools, self.turn
            )
            for event in self.limits.fit_events(outcome.events):
                self._write(event)
            reply = self.limits.fit_reply(outcome.reply)
            self._replies[conversation_id] = stored.with_reply(
                reply, self.limits.replies_table_bytes
            )
            return reply

    async def regenerate(
        self,
        conversation_id: str,
        timeout: float = 60.0,  # noqa: ASYNC109 - the ask's wait
    ) -> ChatReply:
        undone = await self.undo(conversation_id, ask_again=True)
        return await self.ask(conversation_id, undone.text, timeout=timeout)

    # -- history operations

    async def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        policy = self._policy(conversation_id)
        found = self._scan(conversation_id, policy, copies_content=True)
        offset, text = history.last_user_message(conversation_id, found, ask_again)
        then = self._scan(conversation_id, policy, history.from_offset(offset))
        rewound = self._rewind(conversation_id, then, offset - 1, "undo", policy)
        return Undone(rewound.position, rewound.until_offset, rewound.messages, text)

    async def rewind(
        self, conversation_id: str, until_offset: int, reason: str = "rewind"
    ) -> Rewound:
        history.check_until_offset(until_offset)
        policy = self._policy(conversation_id)
        found = self._scan(
            conversation_id, policy, history.after_offset(until_offset), copies_content=True
        )
        return self._rewind(conversation_id, found, until_offset, reason, policy)

    async def fork(
        self,
        source_id: str,
        new_id: str,
        before_offset: int | None = None,
        as_of: datetime | None = None,
    ) -> Forked:
        stop = history.fork_stop(source_id, new_id, before_offset, as_of)
        found = self._scan(source_id, self._policy(source_id), stop, copies_content=True)
        history.refuse_fork_into(new_id, any(True for _ in self._records(new_id)))
        body = history.forked(source_id, found, before_offset)
        position = self._operate(new_id, body, self._policy(new_id))
        return Forked(position, found.partition, body.until_offset, len(body.messages))

    async def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        policy = self._policy(conversation_id)
        change = history.metadata_change(conversation_id, title, owner, tags, attributes, policy)
        return self._operate(conversation_id, change, policy)

    async def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy)  # not found, or deleted: refused here
        return self._operate(conversation_id, ConversationDeleted(reason=reason), policy)

    async def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,  # noqa: ASYNC109 - the port's shape; the key goes at once
    ) -> Erased:
        policy = self._policy(conversation_id)
        self._scan(conversation_id, policy, allow_deleted=True)
        forks = history.forks_of(conversation_id, self._snapshots)
        had_key = self._sealing is not None and self._sealing.has_key(conversation_id)
        position = self._operate(conversation_id, ConversationErased(reason=reason), policy)
        return Erased(position, key_destroyed=had_key, forks=forks)

    # -- lifecycle

    async def close(self) -> None:
        """Nothing to release: the store lives as long as the object."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the log

    def _write(self, event: ConversationEvent) -> TopicPosition:
        """Append ``event`` to its partition and fold it, as the store worker would."""
        key = event.conversation_id.encode()
        partition = partition_for(event.conversation_id, self.partitions)
        written = event if self._sealing is None else self._sealing.seal(event)
        offset = len(self._log[partition])
        record = LogRecord(
            key, encode_event(written), LogPosition(partition=partition, offset=offset)
        )
        self._log[partition].append(record)
        keys = self._sealing.lookup if self._sealing is not None else None
        for outcome in fold_records([record], self.policy, self._current, keys=keys):
            if isinstance(outcome, Rejected):
                self.rejected.append(outcome)
                continue
            self._snapshots[event.conversation_id] = outcome.snapshot
            erased = outcome.snapshot.erased_before
            if self._sealing is not None and erased is not None and erased.offset == offset:
                self._sealing.destroy(event.conversation_id)
        return TopicPosition(EVENTS, partition, offset)

    def _current(self, key: bytes) -> ConversationSnapshot | None:
        return self._snapshots.get(key.decode())

    def _records(self, conversation_id: str) -> Iterator[LogRecord]:
        key = conversation_id.encode()
        partition = partition_for(conversation_id, self.partitions)
        return (r for r in list(self._log[partition]) if r.key == key)

    def _logged(self, conversation_id: str) -> Iterator[LoggedEvent]:
        keys = self._sealing.lookup if self._sealing is not None else None
        for record in self._records(conversation_id):
            event = admit(record.key, record.value, keys)
            if not isinstance(event, Unfoldable):
                position = record.position
                yield LoggedEvent(position.partition, position.offset, event)

    def _policy(self, conversation_id: str) -> PolicyTimeline:
        stored = self._snapshots.get(conversation_id)
        return history.policy_for(stored, self._inputs.max_record_bytes)

    def _outcomes(
        self, conversation_id: str, policy: PolicyTimeline
    ) -> Iterator[Applied | Rejected]:
        keys = self._sealing.lookup if self._sealing is not None else None
        return fold_records(self._records(conversation_id), policy, keys=keys)

    def _scan(
        self,
        conversation_id: str,
        policy: PolicyTimeline,
        stop: Stop | None = None,
        allow_deleted: bool = False,
        copies_content: bool = False,
    ) -> Scan:
        check_conversation_id(conversation_id)
        outcomes = self._outcomes(conversation_id, policy)
        return history.scan(conversation_id, outcomes, stop, allow_deleted, copies_content)

    def _rewind(
        self,
        conversation_id: str,
        found: Scan,
        until_offset: int,
        reason: str,
        policy: PolicyTimeline,
    ) -> Rewound:
        body = history.rewound(conversation_id, found, until_offset, reason)
        position = self._operate(conversation_id, body, policy)
        return Rewound(position, until_offset, len(body.messages))

    def _operate(
        self, conversation_id: str, body: EventBody, policy: PolicyTimeline
    ) -> TopicPosition:
        """Append a history operation's event; refused if the fold did not apply it."""
        event = new_event(conversation_id, body, source=SOURCE)
        event_record(self._inputs, SOURCE, conversation_id, event)  # fits, or refused
        self._write(event)
        position = history.applied_at(
            self._outcomes(conversation_id, policy), event, policy, EVENTS
        )
        if position is None:  # the fold set it aside: a bug, never a silent loss
            raise GoaicoreError(f"the fold did not take {event.event_id} of {conversation_id!r}")
        return position


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
