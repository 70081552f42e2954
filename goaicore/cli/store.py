"""The store the commands use: the deployment's topics, through the conversation store."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from goaicore.store.kafka import KafkaConversationStore
    from goaicore.store.sync_store import SyncConversationStore


def kafka_store(source: str = "cli") -> tuple[SyncConversationStore, KafkaConversationStore]:
    """The store over Kafka for a command (as ``with``), and the asyncio store under it."""
    from goaicore.store.kafka import KafkaConversationStore
    from goaicore.store.sync_store import SyncConversationStore

    store = KafkaConversationStore(source=source)
    return SyncConversationStore(store), store
