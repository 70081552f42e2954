"""Kafka clients for game services, reply consumers and auditors: the asyncio ones on
aiokafka (``goaicore.clients.aio``), and the sync facades over them."""

from goaicore.clients.aio import (
    AsyncChatClient,
    AsyncEventPublisher,
    AsyncHistoryReader,
    AsyncReplySubscriber,
)
from goaicore.clients.chat_client import ChatClient
from goaicore.clients.publisher import EventPublisher
from goaicore.clients.replies import ReplySubscriber
from goaicore.kafka.dead_letters import DeadLetter, DeadLetterWriter
from goaicore.records import LoggedEvent, TopicPosition
from goaicore.records.validation import InvalidInputError
from goaicore.replay.reader import HistoryReader
from goaicore.store.errors import NotAcknowledged, ReplyTimeout

__all__ = [
    "AsyncChatClient",
    "AsyncEventPublisher",
    "AsyncHistoryReader",
    "AsyncReplySubscriber",
    "ChatClient",
    "DeadLetter",
    "DeadLetterWriter",
    "EventPublisher",
    "HistoryReader",
    "InvalidInputError",
    "LoggedEvent",
    "NotAcknowledged",
    "ReplySubscriber",
    "ReplyTimeout",
    "TopicPosition",
]
