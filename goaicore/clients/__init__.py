"""Kafka clients for game services, reply consumers and auditors: kafka-python, and
their asyncio twins on aiokafka (``goaicore.clients.aio``)."""

from goaicore.clients.aio import (
    AsyncChatClient,
    AsyncEventPublisher,
    AsyncHistoryReader,
    AsyncReplySubscriber,
)
from goaicore.clients.chat_client import ChatClient, ReplyTimeout
from goaicore.clients.deadletter import DeadLetter, DeadLetterWriter
from goaicore.clients.history_ops import HistoryOperations
from goaicore.clients.publisher import EventPublisher, TopicPosition
from goaicore.clients.replies import ReplySubscriber
from goaicore.records.validation import InvalidInputError
from goaicore.replay.reader import HistoryReader, LoggedEvent

__all__ = [
    "AsyncChatClient",
    "AsyncEventPublisher",
    "AsyncHistoryReader",
    "AsyncReplySubscriber",
    "ChatClient",
    "DeadLetter",
    "DeadLetterWriter",
    "EventPublisher",
    "HistoryOperations",
    "HistoryReader",
    "InvalidInputError",
    "LoggedEvent",
    "ReplySubscriber",
    "ReplyTimeout",
    "TopicPosition",
]
