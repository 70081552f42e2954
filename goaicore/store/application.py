"""The conversation store's use cases, once, over any backend: what every store does.

:class:`StoreApplication` implements :class:`~goaicore.store.port.ConversationStore`
over a :class:`~goaicore.store.backend.StoreBackend`: it checks every input, wraps and
appends events, asks, reads with read-your-writes, and runs the history operations by
:mod:`goaicore.store.history`'s rules on a fold of the conversation's records. The
backends (in memory, over Kafka, inside the store worker) only move records.

Read-your-writes: a write through an intake reaches ``events`` once a worker sealed
it, so the store remembers its latest such write of each conversation, and the next
read or operation on that conversation waits for it. A history operation gives its
caller no ``Appended`` to read after, so the store remembers its latest operation on
each conversation too, and the next read of that conversation's snapshot waits for it.
An ask is remembered the same way: its reply can come before the snapshot has folded
its turn, so the store keeps where the turn ended (:mod:`goaicore.store.turn_ends`),
and the next read of that conversation waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Self

from goaicore.fold.admission import Unfoldable
from goaicore.fold.policy import PolicyTimeline
from goaicore.fold.records import LogRecord, admitted, fold_records, log_skipped
from goaicore.records import (
    EVENT_BODY_TYPES,
    ChatReply,
    ChatRequest,
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationRewound,
    ConversationSnapshot,
    LoggedEvent,
    SnapshotMessage,
    TopicPosition,
    new_event,
    utc_now,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import check_conversation_id, check_request_id
from goaicore.store import history
from goaicore.store.backend import StoreBackend
from goaicore.store.errors import OperationPending, WriteNotApplied
from goaicore.store.history import SOURCE, Erased, Forked, Rewound, Scan, Stop, Undone
from goaicore.store.inputs import RecordLimits, chat_request_record, event_group, event_record
from goaicore.store.port import Appended, Conversation
from goaicore.store.read_your_writes import applied
from goaicore.store.reply_streams import StreamedReply
from goaicore.threads import HISTORY_THREADS, ThreadPool

POLL_SECONDS = 0.1
"""How often a wait for the workers looks again where nothing tells it of a change: an
operation's event sealed through the intake (the log read again), and a data key an
erasure destroys (the keys topic). A wait for a snapshot asks its backend instead."""

UNSEALED_KEPT = 10_000
"""Conversations whose latest intake write (and, apart, latest history operation) a
store remembers, to read it back."""


class StoreApplication:
    """A :class:`~goaicore.store.port.ConversationStore` over ``backend`` (see the module
    docstring); ``source`` names the appending service in the events it wraps, and
    ``read_wait`` is how long an operation waits for a worker to seal (GOAICORE_READ_WAIT).
    History operations fold in ``history_pool``, ``history_threads`` threads of their own
    (GOAICORE_HISTORY_THREADS): many at once hold back only each other, never a turn's
    tools or asyncio's default pool.
    """

    def __init__(
        self,
        backend: StoreBackend,
        source: str = "publisher",
        read_wait: float = 10.0,
        history_threads: int = HISTORY_THREADS,
    ) -> None:
        self.backend = backend
        self.history_pool = ThreadPool(history_threads, "goaicore-history")
        self.source = source
        self.read_wait = max(read_wait, 1.0)
        self._limits = RecordLimits(backend.record_limit, backend.intake)
        self._unsealed: OrderedDict[str, Appended] = OrderedDict()
        """Each conversation's latest write to an intake a worker may not have sealed yet
        (the newest UNSEALED_KEPT: an older one is sealed long since)."""
        self._operated: OrderedDict[str, Appended] = OrderedDict()
        """Each conversation's latest history operation or answered ask by this store,
        until a read saw its snapshot apply it (the newest UNSEALED_KEPT)."""

    # -- reading

    async def read(
        self,
        conversation_id: str,
        *,
        after: Appended | None = None,
        history: bool = True,
        snapshot: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 - how long the workers may be waited for
    ) -> Conversation:
        check_conversation_id(conversation_id)
        deadline = time.monotonic() + timeout
        after = after or self._unsealed.get(conversation_id)
        folded: ConversationSnapshot | None = None
        if after is not None and (snapshot or history):  # a write through intake reaches
            # events once sealed: its snapshot says when
            folded = await self._snapshot_applying(
                conversation_id, (after,), None, deadline, timeout
            )
            self._sealed(conversation_id, after)
        events: list[LoggedEvent] = []
        skipped = 0
        if history:
            events, skipped = await self._logged(conversation_id)
        if not snapshot:
            return Conversation(conversation_id, None, tuple(events), skipped)
        operated = self._operated.get(conversation_id)
        if history or after is None or operated is not None:  # else the snapshot that
            # applied ``after`` is the answer
            writes = tuple(w for w in (after, operated) if w is not None)
            last = events[-1].offset if events else None
            folded = await self._snapshot_applying(conversation_id, writes, last, deadline, timeout)
            if operated is not None and self._operated.get(conversation_id) == operated:
                del self._operated[conversation_id]
        return Conversation(conversation_id, folded, tuple(events), skipped)

    async def conversations(self) -> list[str]:
        return sorted(await self.backend.snapshots())

    # -- appending

    async def append(self, conversation_id: str, event: ConversationEvent | EventBody) -> Appended:
        checked = self._checked(conversation_id, event)
        position = await self.backend.publish(checked)
        return self._appended(conversation_id, [checked], [position])[-1]

    async def append_all(
        self, conversation_id: str, events: Iterable[ConversationEvent | EventBody]
    ) -> list[Appended]:
        check_conversation_id(conversation_id)
        checked = [self._checked(conversation_id, event) for event in event_group(events)]
        if not checked:
            return []
        positions = await self.backend.publish_all(checked)
        return self._appended(conversation_id, checked, positions)

    def _checked(
        self, conversation_id: str, event: ConversationEvent | EventBody
    ) -> ConversationEvent:
        """``event`` as appended (a body wrapped), checked to fit the record limit."""
        check_conversation_id(conversation_id)
        if isinstance(event, EVENT_BODY_TYPES):
            event = new_event(conversation_id, event, source=self.source)
        event_record(self._limits, self.source, conversation_id, event)  # fits, or refused
        assert isinstance(event, ConversationEvent)  # event_record refused anything else
        return event

    def _appended(
        self,
        conversation_id: str,
        events: list[ConversationEvent],
        positions: list[TopicPosition],
    ) -> list[Appended]:
        """What the caller is given for ``events`` appended at ``positions``; the last is
        remembered when it went to an intake (a later read waits until it is sealed)."""
        appended = [
            Appended(event.event_id, position)
            for event, position in zip(events, positions, strict=True)
        ]
        last = appended[-1]
        if last.position.topic != self.backend.events_topic:
            _remember(self._unsealed, conversation_id, last)
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
        request = self._chat_request(
            conversation_id, text, system, tools, model, request_id, timeout, stream=False
        )
        return self._answered(request, await self.backend.ask(request, timeout))

    def ask_stream(
        self,
        conversation_id: str,
        text: str,
        *,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        timeout: float = 30.0,
    ) -> AsyncIterator[StreamedReply]:
        request = self._chat_request(
            conversation_id, text, system, tools, model, request_id, timeout, stream=True
        )
        return self._answered_stream(
            request, self.backend.ask_stream(request, timeout, join=request_id is not None)
        )

    async def _answered_stream(
        self, request: ChatRequest, items: AsyncGenerator[StreamedReply, None]
    ) -> AsyncGenerator[StreamedReply, None]:
        """``items``, the reply noted as :meth:`_answered` notes it; leaving early
        closes them."""
        async with contextlib.aclosing(items) as stream:
            async for item in stream:
                yield self._answered(request, item) if isinstance(item, ChatReply) else item

    def _answered(self, request: ChatRequest, reply: ChatReply) -> ChatReply:
        """``reply``, once the store knows to read after its turn: the conversation's
        next read waits until its snapshot applied the turn's last event."""
        end = self.backend.turn_end(request.conversation_id, request.request_id)
        if end is not None:
            _remember(self._operated, request.conversation_id, Appended("", end))
        return reply

    def _chat_request(
        self,
        conversation_id: str,
        text: str,
        system: str | None,
        tools: Iterable[str],
        model: str | None,
        request_id: str | None,
        timeout: float,
        stream: bool,
    ) -> ChatRequest:
        """The request for an ask, every argument checked; its turn's deadline is when the
        ask stops waiting."""
        deadline = utc_now() + timedelta(seconds=timeout)
        request, _ = chat_request_record(
            self._limits,
            conversation_id,
            text,
            system,
            tools,
            model,
            deadline,
            request_id,
            stream=stream,
        )
        return request

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        check_conversation_id(conversation_id)
        await self.backend.cancel(conversation_id, check_request_id(request_id))

    async def regenerate(
        self,
        conversation_id: str,
        timeout: float = 60.0,  # noqa: ASYNC109 - the ask's wait
    ) -> ChatReply:
        """One chat request that carries the undo: the worker that owns the conversation
        runs the turn on the history as the undo leaves it and appends the rewind with
        the turn's events, so a turn that fails or times out appends no rewind. What
        undo refuses is refused here before anything is sent."""
        text = await self.regenerated_text(conversation_id)
        request, _ = chat_request_record(
            self._limits,
            conversation_id,
            text,
            None,
            (),
            None,
            utc_now() + timedelta(seconds=timeout),
            None,
            regenerate=True,
        )
        return self._answered(request, await self.backend.ask(request, timeout))

    async def regenerated_text(self, conversation_id: str) -> str:
        """The user message a regenerate asks again, once undo's checks pass (nothing to
        undo, multimodal content, a fork's message: refused); nothing is appended."""
        policy = await self._policy(conversation_id)
        found = await self._scan(conversation_id, policy, copies_content=True)
        return history.last_user_message(conversation_id, found, ask_again=True)[1]

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

    async def replace_tail(
        self,
        conversation_id: str,
        count: int,
        messages: Sequence[SnapshotMessage],
        *,
        expected_event_id: str | None = None,
        reason: str = "replace",
    ) -> Rewound:
        history.check_replacement(count, messages)  # refused before the log is read
        policy = await self._policy(conversation_id)
        found = await self._scan(conversation_id, policy, copies_content=True)
        body = history.replaced_tail(
            conversation_id, found, count, messages, expected_event_id, reason
        )
        return await self._rewound(conversation_id, body, policy)

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
        history.refuse_fork_into(new_id, bool(await self.backend.records(new_id)))
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
        stored = await self._stored(conversation_id)
        policy = history.policy_for(stored, self.backend.record_limit)
        change = history.metadata_change(
            conversation_id, title, owner, tags, attributes, policy, stored
        )
        return await self._operate(conversation_id, change, policy)

    async def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        policy = await self._policy(conversation_id)
        await self._scan(conversation_id, policy)  # not found, or deleted: refused here
        return await self._operate(conversation_id, ConversationDeleted(reason=reason), policy)

    async def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,  # noqa: ASYNC109 - the wait for the key's owner
        name_forks: bool = True,
    ) -> Erased:
        policy = await self._policy(conversation_id)
        found = await self._scan(conversation_id, policy, allow_deleted=True)
        snapshots = await self.backend.snapshots() if name_forks else {}
        forks = history.forks_of(conversation_id, snapshots)
        had_key = await self.backend.has_key(conversation_id)
        already = history.erased_since_last_event(found.latest)
        erasure = ConversationErased(reason=reason)
        position = await self._operate(conversation_id, erasure, policy, wait=timeout)
        if had_key:
            await self.backend.key_destroyed(conversation_id, position, timeout)
        return Erased(position, key_destroyed=had_key, forks=forks, already_erased=already)

    # -- lifecycle

    async def close(self) -> None:
        await self.backend.close()
        self.history_pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the log, read and folded

    async def _logged(self, conversation_id: str) -> tuple[list[LoggedEvent], int]:
        """The conversation's events the fold takes (each under the bounds its stretch
        was folded under), and how many records it does not."""
        records = await self.backend.records(conversation_id)
        stored = await self.backend.snapshot(conversation_id)  # its stretches' bounds
        policy = history.policy_for(stored, self.backend.record_limit)
        return await self.history_pool.run(self._admitted, records, policy)

    def _admitted(
        self, records: list[LogRecord], policy: PolicyTimeline
    ) -> tuple[list[LoggedEvent], int]:
        logged, skipped = [], 0
        for record in records:
            limit = policy.at(record.position).record_limit
            event = admitted(record, self.backend.keys, limit)
            if isinstance(event, Unfoldable):
                skipped += 1
                log_skipped(self.backend.events_topic, record, event.reason, event.detail)
            else:
                logged.append(event)
        return logged, skipped

    async def _policy(self, conversation_id: str) -> PolicyTimeline:
        """The bounds the worker folded this conversation under (its stored snapshot's),
        once this store's own earlier writes of it are folded (every operation starts
        here)."""
        return history.policy_for(await self._stored(conversation_id), self.backend.record_limit)

    async def _stored(self, conversation_id: str) -> ConversationSnapshot | None:
        """The conversation's stored snapshot, once this store's own earlier writes of it
        are folded (the id checked first) and, as far as a worker folds it in time, its
        own latest operation on it: an operation checked against the conversation as it
        stands sees the one its caller made just before."""
        check_conversation_id(conversation_id)
        await self._own_writes_sealed(conversation_id)
        operated = self._operated.get(conversation_id)
        if operated is not None:
            deadline = time.monotonic() + self.read_wait
            try:
                return await self._snapshot_applying(
                    conversation_id, (operated,), None, deadline, self.read_wait
                )
            except WriteNotApplied:  # no worker folds it: the fold checks it after all
                pass
        return await self.backend.snapshot(conversation_id)

    async def _scan(
        self,
        conversation_id: str,
        policy: PolicyTimeline,
        stop: Stop | None = None,
        allow_deleted: bool = False,
        copies_content: bool = False,
    ) -> Scan:
        """The fold of the conversation's records (every caller asked its ``_policy`` first:
        the id is checked and this store's own writes of it are folded)."""
        records = await self.backend.records(conversation_id)

        def folded() -> Scan:  # off the event loop: a long conversation folds for a while
            outcomes = fold_records(records, policy, keys=self.backend.keys)
            return history.scan(conversation_id, outcomes, stop, allow_deleted, copies_content)

        return await self.history_pool.run(folded)

    async def _rewind(
        self,
        conversation_id: str,
        found: Scan,
        until_offset: int,
        reason: str,
        policy: PolicyTimeline,
    ) -> Rewound:
        body = history.rewound(conversation_id, found, until_offset, reason)
        return await self._rewound(conversation_id, body, policy)

    async def _rewound(
        self, conversation_id: str, body: ConversationRewound, policy: PolicyTimeline
    ) -> Rewound:
        position = await self._operate(conversation_id, body, policy)
        return Rewound(position, body.until_offset, len(body.messages))

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

        Through an intake, the event's place in ``events`` is where the worker sealed it:
        the log is read again until it is there, for ``wait`` seconds (``read_wait``
        unless given), else :class:`OperationPending`.
        """
        event = new_event(conversation_id, body, source=SOURCE)
        event_record(self._limits, SOURCE, conversation_id, event)  # fits, or refused
        position = await self.backend.publish(event, related, operation=True)
        topic = self.backend.events_topic
        direct = position.topic == topic
        patience = wait if wait is not None else self.read_wait
        deadline = time.monotonic() + patience
        while True:
            until = position.offset if direct else None
            records = await self.backend.records(conversation_id, until, related)
            found = await self.history_pool.run(self._applied_at, records, event, policy)
            if found is not None or direct:
                applied_at = found or position
                _remember(self._operated, conversation_id, Appended(event.event_id, applied_at))
                return applied_at
            if time.monotonic() > deadline:
                raise OperationPending(
                    f"appended to {position}, but no store worker sealed it into {topic} "
                    f"within {patience:.0f} s: is one running? It takes effect once one "
                    "does; do not repeat it"
                )
            await asyncio.sleep(POLL_SECONDS)

    def _applied_at(
        self, records: list[LogRecord], event: ConversationEvent, policy: PolicyTimeline
    ) -> TopicPosition | None:
        outcomes = fold_records(records, policy, keys=self.backend.keys)
        return history.applied_at(outcomes, event, policy, self.backend.events_topic)

    # -- read-your-writes

    async def _own_writes_sealed(self, conversation_id: str) -> None:
        """Wait until a worker sealed this store's latest intake write of the conversation
        into ``events``: an operation must see what its caller appended before it."""
        pending = self._unsealed.get(conversation_id)
        if pending is None:
            return
        deadline = time.monotonic() + self.read_wait
        try:
            await self._snapshot_applying(
                conversation_id, (pending,), None, deadline, self.read_wait
            )
        except WriteNotApplied:
            raise WriteNotApplied(
                f"this store's write at {pending.position} ({conversation_id!r}) is not "
                f"sealed into {self.backend.events_topic} after {self.read_wait:g} s: is a "
                "store worker running? Nothing was done; try again once it is"
            ) from None
        self._sealed(conversation_id, pending)

    def _sealed(self, conversation_id: str, write: Appended) -> None:
        """``write`` is folded: later reads need not wait for it."""
        if self._unsealed.get(conversation_id) == write:
            del self._unsealed[conversation_id]

    async def _snapshot_applying(
        self,
        conversation_id: str,
        writes: tuple[Appended, ...],
        last_offset: int | None,
        deadline: float,
        timeout: float,  # noqa: ASYNC109 - the whole read's, for the message
    ) -> ConversationSnapshot | None:
        """The snapshot once it has applied ``writes`` and the event at ``last_offset``
        (the backend looks again as soon as the snapshot may have changed)."""
        topic = self.backend.events_topic
        snapshot = await self.backend.snapshot_when(
            conversation_id,
            lambda snapshot: _behind(snapshot, writes, last_offset, topic) is None,
            max(deadline - time.monotonic(), 0.0),
        )
        behind = _behind(snapshot, writes, last_offset, topic)
        if behind is not None:
            raise WriteNotApplied(
                f"the snapshot of {conversation_id!r} has not applied {behind} after "
                f"{timeout:g} s: is a store worker running?"
            )
        return snapshot


def _remember(latest: OrderedDict[str, Appended], conversation_id: str, write: Appended) -> None:
    """``write`` is the conversation's latest of its kind (the newest UNSEALED_KEPT kept)."""
    latest[conversation_id] = write
    latest.move_to_end(conversation_id)
    while len(latest) > UNSEALED_KEPT:
        latest.popitem(last=False)


def _behind(
    snapshot: ConversationSnapshot | None,
    writes: tuple[Appended, ...],
    last_offset: int | None,
    events_topic: str,
) -> str | None:
    """What the snapshot has yet to apply (None: nothing): the caller's ``writes``, and
    the last event read with it."""
    for write in writes:
        if not applied(snapshot, write, events_topic):
            return f"the write at {write.position}"
    if last_offset is None:
        return None
    last = snapshot.last_position if snapshot is not None else None
    if last is None or last.offset < last_offset:
        return f"the event at offset {last_offset} of its partition of {events_topic}"
    return None
