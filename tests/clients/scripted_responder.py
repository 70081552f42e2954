"""A stand-in chat worker for client tests: answers every request on the replies topic."""

from __future__ import annotations

import threading
from collections.abc import Callable

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from goaicore.config import Settings
from goaicore.records import ChatReply, ChatRequest, ReplyStatus
from goaicore.records.avro.api import decode_chat_request, encode_chat_reply


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
