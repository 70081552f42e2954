"""Kafka clients for game services, reply consumers and auditors (kafka-python)."""

from goaicore.clients.chat_client import ChatClient, ReplyTimeout
from goaicore.clients.deadletter import DeadLetter, DeadLetterWriter
from goaicore.clients.publisher import EventPublisher, TopicPosition
from goaicore.clients.replies import ReplySubscriber
from goaicore.records.validation import InvalidInputError
from goaicore.replay.reader import HistoryReader, LoggedEvent

__all__ = [
    "ChatClient",
    "DeadLetter",
    "DeadLetterWriter",
    "EventPublisher",
    "HistoryReader",
    "InvalidInputError",
    "LoggedEvent",
    "ReplySubscriber",
    "ReplyTimeout",
    "TopicPosition",
]
