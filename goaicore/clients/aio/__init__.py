"""Kafka clients for asyncio services (aiokafka): the same shape as the kafka-python ones,
awaited, and used as ``async with``."""

from goaicore.clients.aio.chat_client import AsyncChatClient
from goaicore.clients.aio.publisher import AsyncEventPublisher
from goaicore.clients.aio.replies import AsyncReplySubscriber
from goaicore.replay.log_reader import AsyncHistoryReader

__all__ = [
    "AsyncChatClient",
    "AsyncEventPublisher",
    "AsyncHistoryReader",
    "AsyncReplySubscriber",
]
