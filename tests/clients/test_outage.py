"""Long-lived clients of every kind through a broker outage, on an Apache Kafka node of
their own (stopped, then started again on its folder: the same ports and data).

During the outage every call fails within its bound with the documented error
(NotAcknowledged for a publish or a request, ReplyTimeout for an ask); once the node is
back the same clients work again, without being made anew, and what was reported not
acknowledged is retried with its own ids. The outage outlasts the producers' request
timeout and the group's session, so queued records and the group's membership expire.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from goaicore import (
    AsyncChatClient,
    AsyncEventPublisher,
    ChatClient,
    EventPublisher,
    HistoryReader,
    NotAcknowledged,
    ReplyTimeout,
)
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.records import ReplyStatus, UserMessage
from tests.brokers import start_apache_kafka
from tests.clients.scripted_responder import ScriptedResponder
from tests.outage import Subscribed, eventually

T = TypeVar("T")

OUTAGE = float(os.environ.get("GOAICORE_TEST_OUTAGE_SECONDS", "50"))
"""Past aiokafka's 40 s request timeout and the group's session timeout."""
BOUND = 5.0
"""Each call's own timeout during the outage."""
RETURNS_WITHIN = 60.0
"""How long the test waits for a bounded call to come back before calling it stuck."""

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(600)]


class Loop:
    """An event loop of the test's own, in a thread: the async clients live on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], within: float = RETURNS_WITHIN) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(within)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def returns(call: Callable[[], T]) -> T:
    """``call``'s result or error, failing the test when it never comes back."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(call)
        try:
            return future.result(RETURNS_WITHIN)
        except concurrent.futures.TimeoutError:
            pytest.fail(f"a call bounded by {BOUND} s was still waiting after {RETURNS_WITHIN} s")


def test_long_lived_clients_fail_in_bounded_time_during_an_outage_and_work_after_it(
    tmp_path: Path,
) -> None:
    node = tmp_path / "kafka"  # a node of this test's own: it stops and restarts it
    first = start_apache_kafka(node)
    kafka: LocalKafka | None = first
    settings = Settings(
        env={},
        bootstrap_servers=first.bootstrap_servers,
        broker_profile="standard",
        topic_prefix=f"o{uuid.uuid4().hex[:12]}",
        partitions=3,
        data_dir=tmp_path,
    )
    ensure_topics(settings)
    loop = Loop()
    responder = ScriptedResponder(settings).__enter__()
    publisher = EventPublisher(settings, source="outage")
    chat = ChatClient(settings)
    history = HistoryReader(settings)
    snapshots = SnapshotReader(settings)
    subscribed = Subscribed(settings, "gateway")
    async_publisher = loop.run(AsyncEventPublisher(settings, source="outage-async").start())
    async_chat = loop.run(AsyncChatClient(settings).start())
    try:
        publisher.publish("c", UserMessage(text="before"))
        assert chat.ask("c", "before", timeout=60).status is ReplyStatus.OK

        first.stop()
        kafka = None
        down = time.monotonic()

        unsent = returns(
            lambda: _raises(NotAcknowledged, lambda: publisher.publish("c", _body("during"), BOUND))
        )
        assert len(unsent.events) == 1
        assert unsent.request_id is None
        assert "may still be appended" in str(unsent)
        async_unsent = returns(
            lambda: _raises(
                NotAcknowledged,
                lambda: loop.run(async_publisher.publish("c", _body("during a"), BOUND)),
            )
        )
        slow = returns(lambda: _raises(ReplyTimeout, lambda: chat.ask("c", "during", BOUND)))
        assert slow.request_id is not None
        async_slow = returns(
            lambda: _raises(ReplyTimeout, lambda: loop.run(async_chat.ask("c", "during", BOUND)))
        )
        untaken = returns(
            lambda: _raises(NotAcknowledged, lambda: chat.send("c", "during", timeout=BOUND))
        )
        assert untaken.request_id is not None
        assert not untaken.events
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - down)))

        kafka = start_apache_kafka(node)
        assert kafka.bootstrap_servers == settings.bootstrap_servers

        # The same clients, not made anew, work again.
        after = eventually(lambda: publisher.publish("c", _body("after")))
        eventually(lambda: loop.run(async_publisher.publish("c", _body("after a"))))
        for conversation_id, event in unsent.events + async_unsent.events:
            publisher.publish(conversation_id, event)  # the safe retry: the same envelopes
        asked = eventually(lambda: chat.ask("c", "after", timeout=30))
        assert asked.status is ReplyStatus.OK
        retried = chat.ask("c", "during", timeout=60, request_id=slow.request_id)
        assert retried.request_id == slow.request_id
        async_retried = loop.run(
            async_chat.ask("c", "during", 60, request_id=async_slow.request_id), 90
        )
        assert async_retried.status is ReplyStatus.OK
        # The request the broker did not acknowledge was appended after all: its retry is
        # answered (the stand-in responder answers every copy; a worker answers it once).
        again = chat.ask("c", "during", timeout=60, request_id=untaken.request_id)
        assert again.request_id == untaken.request_id
        copies = [r for r in responder.seen if r.request_id == untaken.request_id]
        assert len(copies) == 2  # the producer kept it, and sent it before the retry

        events = eventually(lambda: list(history.events("c")))
        ids = [event.event_id for event in events]
        assert set(unsent.event_ids + async_unsent.event_ids) <= set(ids)
        assert after.offset >= 1
        assert eventually(lambda: snapshots.get("c")) is None  # no worker folds here
        subscribed.wait_for(asked.request_id)
        subscribed.wait_for(async_retried.request_id)
    finally:
        subscribed.close()
        for client in (publisher, chat, history, snapshots):
            client.close()
        loop.run(async_publisher.close())
        loop.run(async_chat.close())
        loop.stop()
        responder.__exit__(None, None, None)
        if kafka is not None:
            kafka.stop()


E = TypeVar("E", bound=BaseException)


def _raises(kind: type[E], call: Callable[[], Any]) -> E:
    """The error of ``kind`` that ``call()`` raises."""
    with pytest.raises(kind) as raised:
        call()
    return raised.value


def _body(text: str) -> UserMessage:
    return UserMessage(text=text)
