"""A stand-in chat worker for client tests: answers every request on the replies topic."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from goaicore.config import Settings
from goaicore.records import ChatReply, ChatRequest, ReplyStatus
from goaicore.records.avro.api import decode_chat_request, encode_chat_reply

BAD_REPLY = b"\xc3\x01garbage"


def echo(request: ChatRequest) -> ChatReply:
    return ChatReply(
        request_id=request.request_id,
        conversation_id=request.conversation_id,
        status=ReplyStatus.OK,
        text=f"echo: {request.text}",
    )


class ScriptedResponder:
    """Reads ``requests`` from the start and publishes ``answer(request)`` to ``replies``."""

    def __init__(
        self, settings: Settings, answer: Callable[[ChatRequest], ChatReply] = echo
    ) -> None:
        self.settings = settings
        self.answer = answer
        self.seen: list[ChatRequest] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ScriptedResponder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        bootstrap = self.settings.require_bootstrap()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=50)
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        topic = self.settings.topic("requests")
        partitions = [TopicPartition(topic, p) for p in range(self.settings.partitions)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        while not self._stop.is_set():
            for records in consumer.poll(timeout_ms=100).values():
                for record in records:
                    request = decode_chat_request(record.value)
                    self.seen.append(request)
                    reply = self.answer(request)
                    producer.send(
                        self.settings.topic("replies"),
                        key=record.key,
                        value=encode_chat_reply(reply),
                    )
            producer.flush()
        consumer.close()
        producer.close()


def publish_replies_around_a_bad_one(settings: Settings) -> tuple[list[ChatReply], Any]:
    """Two good replies with an undecodable record between them on the replies topic;
    the good ones and the bad record's metadata."""
    replies = settings.topic("replies")
    good = [
        ChatReply(request_id=f"r{n}", conversation_id="c", status=ReplyStatus.OK, text=f"t{n}")
        for n in range(2)
    ]
    producer = KafkaProducer(bootstrap_servers=settings.require_bootstrap())
    producer.send(replies, key=b"c", value=encode_chat_reply(good[0])).get(10)
    bad = producer.send(replies, key=b"c", value=BAD_REPLY).get(10)
    producer.send(replies, key=b"c", value=encode_chat_reply(good[1])).get(10)
    producer.close()
    return good, bad
