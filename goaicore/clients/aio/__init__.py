"""Kafka clients for asyncio services (aiokafka), used as ``async with``: the cores of
the sync clients in ``goaicore.clients``, which call them through ``goaicore.sync``."""

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
