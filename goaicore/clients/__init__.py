"""Kafka clients for game services, reply consumers and auditors (kafka-python)."""

from goaicore.clients.chat_client import ChatClient, ReplyTimeout
from goaicore.clients.deadletter import DeadLetter, DeadLetterWriter
from goaicore.clients.history import HistoryReader, LoggedEvent
from goaicore.clients.publisher import EventPublisher, LogPosition
from goaicore.clients.replies import ReplySubscriber
from goaicore.clients.validation import InvalidInputError

__all__ = [
    "ChatClient",
    "DeadLetter",
    "DeadLetterWriter",
    "EventPublisher",
    "HistoryReader",
    "InvalidInputError",
    "LogPosition",
    "LoggedEvent",
    "ReplySubscriber",
    "ReplyTimeout",
]
