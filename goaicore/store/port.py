"""The conversation store port: every use case a caller has, behind one asyncio protocol.

Interfaces (the HTTP API, the command line, the console, the sync clients, sessions
for agent frameworks) are thin adapters over a :class:`ConversationStore`; the
implementations are over Kafka (:mod:`goaicore.store.kafka`), inside the store worker,
and in memory (:mod:`goaicore.store.memory`). Each applies the same rules
(:mod:`goaicore.store`), and :mod:`goaicore.testing.conformance` holds every promise
below as a test that runs against any of them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, Self, runtime_checkable

from goaicore.records import (
    ChatReply,
    ConversationEvent,
    ConversationSnapshot,
    LoggedEvent,
    SnapshotMessage,
    TopicPosition,
)
from goaicore.records.types import EventBody
from goaicore.store.history import Erased, Forked, Rewound, Undone
from goaicore.store.reply_streams import StreamedReply


@dataclass(frozen=True)
class Appended:
    """An event appended: its id and where it landed (``events``, or ``intake`` where the
    workers seal). Give it to :meth:`ConversationStore.read` as ``after`` to read your
    own write."""

    event_id: str
    position: TopicPosition


@dataclass(frozen=True)
class Conversation:
    """A conversation as a store holds it: its folded snapshot (None: no events yet) and,
    when asked for, its events in log order."""

    conversation_id: str
    snapshot: ConversationSnapshot | None
    events: tuple[LoggedEvent, ...] = ()
    skipped: int = 0
    """Records under its key the fold does not take (undecodable, another conversation's
    event, a seal that does not open): left out of ``events``, and logged."""

    @property
    def exists(self) -> bool:
        """The fold has taken at least one of its events."""
        return self.snapshot is not None


@runtime_checkable
class ConversationStore(Protocol):
    """One way into the conversation store; every implementation keeps these promises.

    - A conversation's events are applied in the order they were appended; different
      conversations run concurrently, each one's chat requests in arrival order.
    - :meth:`read` with ``after`` sees that write (read-your-writes); a chat turn sees
      everything appended to its conversation before it was asked.
    - :meth:`ask` is idempotent by ``request_id``: asking again gets the same reply and
      never a second turn.
    - Bad input raises :class:`~goaicore.records.validation.InvalidInputError` (or one of
      :mod:`goaicore.store.errors`) and writes nothing; a request the turn cannot run is
      a reply with status ``rejected``, ``timeout`` or ``error`` and one ``TurnFailed``.
    """

    async def read(
        self,
        conversation_id: str,
        *,
        after: Appended | None = None,
        history: bool = True,
        snapshot: bool = True,
        timeout: float = 10.0,  # noqa: ASYNC109 - how long the workers may be waited for
    ) -> Conversation:
        """The conversation's snapshot and (``history``) its events, the snapshot having
        applied every event returned and the write ``after``
        (:class:`~goaicore.store.errors.WriteNotApplied` when it has not within
        ``timeout`` seconds). ``snapshot=False``: the events alone, as the log holds
        them, with no snapshot and no wait (no worker needed)."""
        ...

    async def append(self, conversation_id: str, event: ConversationEvent | EventBody) -> Appended:
        """Append one event (a whole envelope, or a body to wrap) once the log has it."""
        ...

    async def append_all(
        self, conversation_id: str, events: Iterable[ConversationEvent | EventBody]
    ) -> list[Appended]:
        """Append several events of the conversation together, in order, once the log has
        them all; what each landed as, in the order given (``[]`` for no events).

        Each is a whole envelope or a body to wrap, checked as :meth:`append` checks it,
        every one before any is written: one bad event refuses the group and nothing is
        written. Where their records fit the record limit together
        (GOAICORE_MAX_RECORD_BYTES) they go in one record batch, which the broker appends
        whole or not at all: no other writer's event lands between them, and a crash
        leaves all or none. A larger group goes in consecutive record batches, in order,
        each whole, each sent once the log has the one before it; a failure between two
        raises with the earlier batches written, and calling again with the same
        envelopes (the same event ids) completes the group, since the fold applies an
        event id once (it remembers the conversation's last 128 event ids: the earlier
        batches must be among them). Where the workers seal (the intake), the group
        goes to the intake together and the conversation's owner seals each, in order.
        :meth:`read` ``after`` the last one's :class:`Appended` sees them all.
        """
        ...

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
        """Run a chat turn on the conversation and return its reply (idempotent by
        ``request_id``); :class:`~goaicore.store.errors.ReplyTimeout` when none came in
        ``timeout`` seconds."""
        ...

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
        """``ask``, streamed: the turn's progress as it happens (text deltas, tool calls
        and results; a ``Restarted`` when another worker runs it again from the start),
        then its ``ChatReply``, whose history is the one ``ask`` would have stored. The
        input is checked now; the request leaves on the first iteration. Asking again
        with a ``request_id`` whose turn runs joins its stream from the start; one
        answered already gets its reply. Leaving early does not stop the turn."""
        ...

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        """Stop the turn of ``request_id`` in the conversation: it ends with the text
        generated so far, recorded as a cancelled turn with its tokens (the history stays
        valid to send), and its reply says ``cancelled``. A cancel that comes before the
        turn starts stops it as it starts; one after it finished changes nothing."""
        ...

    async def undo(self, conversation_id: str, ask_again: bool = False) -> Undone:
        """Rewind to just before the last user message (whose text comes back)."""
        ...

    async def regenerate(
        self,
        conversation_id: str,
        timeout: float = 60.0,  # noqa: ASYNC109 - the ask's wait
    ) -> ChatReply:
        """Undo the last exchange, then ask its user message again."""
        ...

    async def rewind(
        self, conversation_id: str, until_offset: int, reason: str = "rewind"
    ) -> Rewound:
        """Make the history what it was after the event at ``until_offset`` (-1: empty)."""
        ...

    async def replace_tail(
        self,
        conversation_id: str,
        count: int,
        messages: Sequence[SnapshotMessage],
        *,
        expected_event_id: str | None = None,
        reason: str = "replace",
    ) -> Rewound:
        """Replace the history's last ``count`` messages with ``messages`` (none: remove
        them), as one event: a rewind to the last event folded that carries the history
        with that change (nothing leaves the log). Each new message takes the
        ``event_id`` of the one it stands in for (at its place, else the last replaced),
        so undo and the console still point at the events they came from.

        Refused with :class:`~goaicore.store.errors.OperationRefused`, before anything is
        appended, when the history has fewer than ``count`` messages, when ``expected_event_id`` is
        given and is not the last message's ``event_id`` (the history changed since the
        caller read it), or when the history would not be valid to send (a tool call
        left unanswered, a tool result answering none); a conversation without events
        is :class:`~goaicore.store.errors.ConversationNotFound`. An event that lands
        between the read and the append makes the fold refuse it
        (:class:`~goaicore.store.errors.OperationRefused`, nothing changed: try again).
        """
        ...

    async def fork(
        self,
        source_id: str,
        new_id: str,
        before_offset: int | None = None,
        as_of: datetime | None = None,
    ) -> Forked:
        """Start ``new_id`` with ``source_id``'s history up to a point (default: now)."""
        ...

    async def set_metadata(
        self,
        conversation_id: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Iterable[str] | None = None,
        attributes: Mapping[str, str | None] | None = None,
    ) -> TopicPosition:
        """Change the title, owner, tags or attributes (None removes an attribute)."""
        ...

    async def delete(self, conversation_id: str, reason: str = "") -> TopicPosition:
        """Delete the conversation: its history and metadata leave the snapshot."""
        ...

    async def erase(
        self,
        conversation_id: str,
        reason: str = "",
        timeout: float = 30.0,  # noqa: ASYNC109 - the wait for the data key's destruction
        name_forks: bool = True,
    ) -> Erased:
        """Erase the conversation's content, keeping its audit skeleton: the data key of
        its sealed content is destroyed (waiting up to ``timeout`` seconds for its owner).
        ``name_forks`` reads every snapshot to name the forks that keep a copy."""
        ...

    async def conversations(self) -> list[str]:
        """The ids of every conversation with a snapshot (deleted ones included), sorted."""
        ...

    async def close(self) -> None:
        """Release what the store holds (connections, tasks); idempotent."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc: object) -> None: ...
