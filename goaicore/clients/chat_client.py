"""ChatClient: send chat requests and wait for the matching replies.

One background listener reads the ``replies`` topic for every ask of this
client, so many concurrent asks share one consumer. The listener is positioned
at the end of every partition before the first request leaves, so a reply
cannot arrive before anyone listens for it; replies are matched by request id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from goaicore.config import Settings
from goaicore.errors import BrokerError, client_errors
from goaicore.kafka.connection import make_consumer, make_producer, topic_partitions
from goaicore.lifecycle import Closing
from goaicore.records import ChatReply, new_id, utc_now
from goaicore.records.avro.api import decode_chat_reply
from goaicore.records.avro.errors import DecodeError
from goaicore.records.validation import (
    check_request_id,
)
from goaicore.store.errors import ReplyTimeout, timed_out
from goaicore.store.inputs import chat_request_record
from goaicore.tracing import ask_span, record_headers

log = logging.getLogger(__name__)


class _Pending:
    """One request id's reply, shared by every ask waiting for it in this client."""

    __slots__ = ("done", "reply", "waiters")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.reply: ChatReply | None = None
        self.waiters = 0


class ChatClient(Closing):
    """Request/reply over Kafka: ``ask`` waits for the reply, ``send`` does not."""

    def __init__(self, settings: Settings | None = None, source: str = "chat-client") -> None:
        self.settings = settings or Settings()
        self.source = source
        self.requests_topic = self.settings.topic("requests")
        self.replies_topic = self.settings.topic("replies")
        self.skipped = 0
        # No linger: each request is sent and waited for alone, and every millisecond
        # of it is the caller's latency (publishers keep the profile's 5 ms to batch).
        self._producer = make_producer(self.settings, linger_ms=0)
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._listening = threading.Event()
        self._listener_error: BaseException | None = None
        self._listener = threading.Thread(target=self._listen, name="goaicore-replies", daemon=True)
        self._listener.start()

    def send(
        self,
        conversation_id: str,
        text: str,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        deadline: datetime | None = None,
        request_id: str | None = None,
    ) -> str:
        """Publish a chat request and return its request id without waiting.

        ``request_id`` (generated when absent) makes a retry idempotent: the worker
        answers a request id it has answered before with the stored reply.
        """
        request, payload = chat_request_record(
            self.settings, conversation_id, text, system, tools, model, deadline, request_id
        )
        with client_errors():
            sent = self._producer.send(
                self.requests_topic,
                key=conversation_id.encode(),
                value=payload,
                headers=record_headers(),
            )
            sent.get(timeout=30)
        return request.request_id

    def ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float = 30.0,
        system: str | None = None,
        tools: Iterable[str] = (),
        model: str | None = None,
        request_id: str | None = None,
        deadline: datetime | None = None,
    ) -> ChatReply:
        """Send a chat request and wait up to ``timeout`` seconds for its reply.

        Pass the ``request_id`` of an earlier ask (``ReplyTimeout.request_id``, or
        the reply's) to retry it: the worker answers with that request's reply and
        runs no second LLM turn, also after a restart. The reply carries the id.

        The worker gives up on the turn at ``deadline`` (default: when this wait
        ends). A later deadline lets the turn finish after a ReplyTimeout, so that
        asking again with the same id gets its answer.
        """
        request_id = new_id() if request_id is None else check_request_id(request_id)
        with ask_span(conversation_id, request_id):
            return self._ask(
                conversation_id, text, timeout, system, tools, model, request_id, deadline
            )

    def _ask(
        self,
        conversation_id: str,
        text: str,
        timeout: float,
        system: str | None,
        tools: Iterable[str],
        model: str | None,
        request_id: str,
        deadline: datetime | None,
    ) -> ChatReply:
        self._wait_listening(timeout, request_id)
        with self._lock:
            pending = self._pending.setdefault(request_id, _Pending())
            pending.waiters += 1
        try:
            if deadline is None:
                deadline = utc_now() + timedelta(seconds=timeout)
            self.send(conversation_id, text, system, tools, model, deadline, request_id)
            if not pending.done.wait(timeout) or pending.reply is None:
                raise timed_out(request_id, timeout)
            return pending.reply
        finally:
            with self._lock:
                pending.waiters -= 1
                if not pending.waiters:
                    self._pending.pop(request_id, None)

    def _wait_listening(self, timeout: float, request_id: str) -> None:
        if not self._listening.wait(max(timeout, 10.0)):
            raise ReplyTimeout("the reply listener did not start in time", request_id)
        if self._listener_error is not None:
            raise BrokerError(
                f"the reply listener failed: {self._listener_error}"
            ) from self._listener_error

    def _listen(self) -> None:
        consumer = make_consumer(self.settings)
        try:
            assigned = topic_partitions(consumer, self.replies_topic)
            consumer.assign(assigned)
            consumer.seek_to_end(*assigned)
            for partition in assigned:
                consumer.position(partition)  # resolve now, before any request is sent
            self._listening.set()
            while not self._closing.is_set():
                for records in consumer.poll(timeout_ms=200).values():
                    for record in records:
                        self._deliver(record)
        except BaseException as err:
            self._listener_error = err
            self._listening.set()
            log.exception("reply listener stopped")
        finally:
            consumer.close()

    def _deliver(self, record: Any) -> None:
        reply = reply_of(record)
        if reply is None:
            self.skipped += 1
            return
        with self._lock:
            pending = self._pending.get(reply.request_id)
        if pending is not None and pending.reply is None:
            pending.reply = reply
            pending.done.set()

    def close(self) -> None:
        self._closing.set()
        self._listener.join(timeout=10)
        self._producer.close()


def reply_of(record: Any) -> ChatReply | None:
    """The reply a record of the replies topic holds; None (logged) when it does not decode."""
    try:
        return decode_chat_reply(record.value)
    except DecodeError as err:
        log.warning(
            "skipped an undecodable reply at %s[%d]@%d: %s",
            record.topic,
            record.partition,
            record.offset,
            err.reason,
        )
        return None
