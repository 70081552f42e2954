"""What a store needs of where the log lives: the backend under
:class:`~goaicore.store.application.StoreApplication`.

A backend moves records: it reads a conversation's records and snapshot, appends an
event (where sealed content must go is its own concern), hands a checked chat request
to whoever runs turns, and looks data keys up. What to append, when to refuse and
what to wait for are the application's, so each backend (in memory, over Kafka,
inside the store worker) is thin and all of them behave alike.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Protocol

from goaicore.fold.records import LogRecord
from goaicore.records import (
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationSnapshot,
    TopicPosition,
)
from goaicore.sealing.records import KeyLookup
from goaicore.store.reply_streams import StreamedReply


class StoreBackend(Protocol):
    """Where a store's log, snapshots, chat turns and data keys are."""

    @property
    def events_topic(self) -> str:
        """The name positions in the log carry."""
        ...

    @property
    def record_limit(self) -> int:
        """The largest record written (GOAICORE_MAX_RECORD_BYTES)."""
        ...

    @property
    def intake(self) -> bool:
        """Appends go to an intake a worker seals from: room is kept for the seal."""
        ...

    @property
    def keys(self) -> KeyLookup | None:
        """Opens sealed events (None: nothing sealed can be opened here)."""
        ...

    async def records(
        self, conversation_id: str, until_offset: int | None = None, related: tuple[str, ...] = ()
    ) -> list[LogRecord]:
        """The conversation's records in log order (up to ``until_offset``), the keys that
        open them (and those of ``related`` conversations) looked up first."""
        ...

    async def snapshot(self, conversation_id: str) -> ConversationSnapshot | None:
        """The conversation's latest stored snapshot."""
        ...

    async def snapshot_when(
        self,
        conversation_id: str,
        ready: Callable[[ConversationSnapshot | None], bool],
        timeout: float,  # noqa: ASYNC109 - how long the workers may be waited for
    ) -> ConversationSnapshot | None:
        """The conversation's latest stored snapshot once ``ready`` holds for it (read at
        least once, looked at again as soon as it may have changed: no fixed sleep), or
        the latest one when ``timeout`` seconds pass first."""
        ...

    async def snapshots(self) -> Mapping[str, ConversationSnapshot]:
        """Every conversation's latest stored snapshot."""
        ...

    async def publish(
        self, event: ConversationEvent, related: tuple[str, ...] = (), operation: bool = False
    ) -> TopicPosition:
        """Append ``event`` (checked already) once the log has it. A history ``operation``
        on sealed content (the conversation, or a ``related`` one, has a key) is never
        written in the clear: where the backend cannot seal it, its owner must."""
        ...

    async def publish_all(self, events: Sequence[ConversationEvent]) -> list[TopicPosition]:
        """Append ``events`` (one conversation's, checked already, at least one) together,
        in order, and return each one's position once the log has them all: in one record
        batch where they fit the record limit together (no other record lands between
        them; a crash leaves all or none), else in consecutive batches, each whole, each
        sent once the one before it is on the log."""
        ...

    async def ask(self, request: ChatRequest, timeout: float) -> ChatReply:  # noqa: ASYNC109
        """The reply to ``request`` (checked already), from whoever runs the turn."""
        ...

    def ask_stream(
        self,
        request: ChatRequest,
        timeout: float,
        join: bool = False,
    ) -> AsyncGenerator[StreamedReply, None]:
        """The progress of ``request``'s turn as it happens (it asks for streaming,
        checked already), then its reply; a run of it already under way is joined from
        its start (``join``: the caller retries, so one may be)."""
        ...

    def turn_end(self, conversation_id: str, request_id: str) -> TopicPosition | None:
        """Where the turn of the reply :meth:`ask` (or :meth:`ask_stream`) just gave
        for ``request_id`` ended in ``events``, taken once: the store's next read waits
        until the snapshot has applied it. None: nothing to wait for (nothing appended,
        a reply sent again, or a backend whose snapshots fold as events are written)."""
        ...

    async def cancel(self, conversation_id: str, request_id: str) -> None:
        """Tell the turn of ``request_id`` to stop (it ends, recorded, with what it
        generated so far): now if it runs, else as it starts."""
        ...

    async def has_key(self, conversation_id: str) -> bool:
        """The conversation has a data key now (its content is sealed)."""
        ...

    async def key_destroyed(
        self,
        conversation_id: str,
        erasure: TopicPosition,
        timeout: float,  # noqa: ASYNC109 - how long the key's owner may be waited for
    ) -> None:
        """Return once the key the erasure at ``erasure`` destroys is gone."""
        ...

    async def close(self) -> None:
        """Release connections and tasks; idempotent."""
        ...
