"""HistoryOperations: undo, rewind, fork, metadata, deletion and erasure from synchronous
code (``goaicore.HistoryOperations``), each an event appended to the log.

The store over Kafka (:class:`~goaicore.store.kafka.KafkaConversationStore`) from
synchronous code (:class:`~goaicore.store.sync_store.SyncConversationStore`), with the
two questions a retention policy asks of every snapshot.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from goaicore.records import ConversationSnapshot, utc_now
from goaicore.settings import Settings
from goaicore.store import history
from goaicore.store.errors import ConversationNotFound, OperationPending, OperationRefused
from goaicore.store.history import Erased, Forked, Rewound, Undone
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.sync_store import SyncConversationStore
from goaicore.sync import run_sync

if TYPE_CHECKING:
    from goaicore.clients.chat_client import ChatClient
    from goaicore.records import ChatReply

__all__ = [
    "ConversationNotFound",
    "Erased",
    "Forked",
    "HistoryOperations",
    "OperationPending",
    "OperationRefused",
    "Rewound",
    "Undone",
]


class HistoryOperations(SyncConversationStore):
    """Undo, rewind, fork, set metadata, delete and erase conversations (see the module
    docstring and :class:`~goaicore.store.sync_store.SyncConversationStore`).

    Every call reads what it needs from the log and appends one event, or raises
    :class:`~goaicore.records.validation.InvalidInputError` and appends nothing when the
    operation cannot apply; when the fold refused the appended event (the conversation
    changed meanwhile), it raises :class:`OperationRefused` saying so, and the event
    changed nothing.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        self._kafka = KafkaConversationStore(self.settings, source=history.SOURCE)
        super().__init__(self._kafka)

    def regenerate(
        self, conversation_id: str, client: ChatClient, timeout: float = 60.0
    ) -> ChatReply:
        """Ask the last exchange's user message again (as the log holds it) in one
        request that carries its undo: the rewind is appended with the new turn, never
        without it (refused as undo is, before anything is sent)."""
        text = run_sync(self._kafka.regenerated_text(conversation_id))
        return client.ask(conversation_id, text, timeout=timeout, regenerate=True)

    def forks_of(self, conversation_id: str, progress: bool | None = False) -> tuple[str, ...]:
        """The conversations forked from this one, and from those, in order: each holds
        a copy of history it took from here."""
        return history.forks_of(conversation_id, self._snapshots(progress))

    def idle(
        self, days: float, now: datetime | None = None, progress: bool | None = None
    ) -> list[str]:
        """Conversations with content whose last event is more than ``days`` old: what a
        retention policy erases. One erased with nothing since is not listed again."""
        history.check_days(days)  # refused before the snapshots are read
        return history.idle(self._snapshots(progress), days, now or utc_now())

    def _snapshots(self, progress: bool | None) -> dict[str, ConversationSnapshot]:
        return run_sync(self._kafka.kafka.all_snapshots(progress))
