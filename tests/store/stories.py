"""Logs the verify tests check: what they publish, and how it reads back."""

from __future__ import annotations

from kafka import KafkaProducer

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.records import ConversationEvent, LogPosition, UserMessage, new_event
from goaicore.records.avro.api import encode_event

Histories = dict[str, list[tuple[ConversationEvent, LogPosition]]]


def rounds_and_a_stray(settings: Settings, conversations: list[str], rounds: int = 3) -> Histories:
    """A user message per conversation per round and, before the last round, a record of
    c1 under c0's key (the worker sets it aside); each conversation's events as read."""
    ensure_topics(settings)
    producer = KafkaProducer(bootstrap_servers=settings.require_bootstrap())
    with EventPublisher(settings) as publisher:
        for round_ in range(rounds):
            if round_ == rounds - 1:
                stray = encode_event(new_event("c1", UserMessage(text="stray")))
                producer.send(settings.topic("events"), key=b"c0", value=stray).get(10)
            publisher.publish_many(
                (c, new_event(c, UserMessage(text=f"{c} {round_}"))) for c in conversations
            )
    producer.close()
    with HistoryReader(settings) as reader:
        logged = list(reader.all_events(progress=False))
    return {
        c: [(e.event, e.position) for e in logged if e.event.conversation_id == c]
        for c in conversations
    }
