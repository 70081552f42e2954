"""The broker killed (kill -9) under load, for 30 s and for 5 minutes, then started again.

Long-lived clients publish events and send and ask chat requests all the while; a store
worker answers from the test LLM server, which counts its calls. After the restart the
same clients, not made anew, go on, and for all work the broker acknowledged:

- lost events: an acknowledged publish whose event is not on the log: 0;
- unanswered asks: an acknowledged request with no reply within a bound: 0;
- double LLM calls: a request that called the LLM twice: 0.

Work reported not acknowledged (NotAcknowledged, a ReplyTimeout) is retried with its own
ids, as the README says to, and must then be applied once too. The counts are printed.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from goaicore import ChatClient, EventPublisher, HistoryReader, NotAcknowledged, ReplyTimeout
from goaicore.config import Settings
from goaicore.errors import GoaicoreError
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.records import ConversationEvent, UserMessage, new_event
from goaicore.testing import OpenAIServer
from tests.brokers import start_apache_kafka
from tests.chat_agent.helpers import ChatWorker, ScriptedLLM, llm_env, wait_http
from tests.outage import Subscribed, eventually

CONVERSATIONS = 6
ANSWERED_WITHIN = 180.0
"""How long after the restart an acknowledged request may take to get its reply."""


@dataclass
class Books:
    """What the load did, as its callers saw it."""

    acknowledged: dict[str, str] = field(default_factory=dict)  # event id -> conversation
    unacknowledged: list[tuple[str, ConversationEvent]] = field(default_factory=list)
    sent: dict[str, str] = field(default_factory=dict)  # request id -> its text
    unsent: list[tuple[str, str, str]] = field(default_factory=list)  # conv, text, request id
    answered: set[str] = field(default_factory=set)
    timed_out: list[tuple[str, str, str]] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Load:
    """Events published and requests sent and asked continuously until stopped."""

    def __init__(self, publisher: EventPublisher, chat: ChatClient, tag: str) -> None:
        self.publisher = publisher
        self.chat = chat
        self.tag = tag
        self.books = Books()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._publish, daemon=True),
            threading.Thread(target=self._send, daemon=True),
            threading.Thread(target=self._ask, daemon=True),
        ]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the load; every thread returns, since every call it makes is bounded."""
        if self._stop.is_set():
            return
        self._stop.set()
        for thread in self._threads:
            thread.join(120)
            assert not thread.is_alive(), "a load thread is stuck in a bounded call"

    def _loop(self, step: Callable[[int], None], pause: float) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                step(n)
            except GoaicoreError as err:
                with self.books.lock:
                    self.books.errors[type(err).__name__] += 1
            time.sleep(pause)

    def _publish(self) -> None:
        def step(n: int) -> None:
            conversation = f"c{n % CONVERSATIONS}"
            events = [
                (conversation, new_event(conversation, UserMessage(text=f"e{n}.{i}")))
                for i in range(3)
            ]
            try:
                self.publisher.publish_many(events, timeout=5)
            except NotAcknowledged as err:
                with self.books.lock:
                    self.books.unacknowledged += err.events
                return
            with self.books.lock:
                self.books.acknowledged.update((e.event_id, c) for c, e in events)

        self._loop(step, 0.05)

    def _send(self) -> None:
        def step(n: int) -> None:
            conversation, text = f"c{n % CONVERSATIONS}", f"{self.tag} send {n}"
            try:
                request_id = self.chat.send(conversation, text, timeout=5)
            except NotAcknowledged as err:
                with self.books.lock:
                    self.books.unsent.append((conversation, text, err.request_id or ""))
                return
            with self.books.lock:
                self.books.sent[request_id] = text

        self._loop(step, 0.3)

    def _ask(self) -> None:
        def step(n: int) -> None:
            conversation, text = f"c{n % CONVERSATIONS}", f"{self.tag} ask {n}"
            request_id = uuid.uuid4().hex
            try:
                reply = self.chat.ask(conversation, text, timeout=10, request_id=request_id)
            except ReplyTimeout:
                with self.books.lock:
                    self.books.timed_out.append((conversation, text, request_id))
                return
            with self.books.lock:
                self.books.answered.add(reply.request_id)

        self._loop(step, 0.3)


def _settings(kafka: LocalKafka, data_dir: Path, postgres_url: str) -> Settings:
    return Settings(
        env={},
        bootstrap_servers=kafka.bootstrap_servers,
        broker_profile="standard",
        topic_prefix=f"k{uuid.uuid4().hex[:12]}",
        partitions=3,
        data_dir=data_dir,
        database_url=postgres_url,
    )


@pytest.mark.apache_kafka
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("outage", [30, 300], ids=["30s", "5min"])
def test_a_broker_killed_under_load_loses_nothing_acknowledged(
    outage: int, tmp_path: Path, postgres_url: str
) -> None:
    node = tmp_path / "kafka"
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    kafka = start_apache_kafka(node)
    restarted: LocalKafka | None = None
    settings = _settings(kafka, data_dir, postgres_url)
    ensure_topics(settings)
    llm = ScriptedLLM()
    with OpenAIServer(responder=llm) as server:
        worker = ChatWorker(settings, "worker", **llm_env(server)).start()
        publisher = EventPublisher(settings, source="load")
        chat = ChatClient(settings)
        subscribed = Subscribed(settings, "outage-audit")
        try:
            wait_http(worker.url, timeout=120)
            eventually(lambda: chat.ask("c0", "warm up", timeout=30))
            with Load(publisher, chat, f"o{outage}") as load:
                time.sleep(10)
                before = len(load.books.acknowledged)
                assert kafka.nodes[0].pid is not None
                os.kill(kafka.nodes[0].pid, signal.SIGKILL)
                time.sleep(outage)
                restarted = start_apache_kafka(node)
                assert restarted.bootstrap_servers == settings.bootstrap_servers
                up = time.monotonic()
                count = len(load.books.acknowledged)
                while len(load.books.acknowledged) == count and time.monotonic() - up < 120:
                    time.sleep(1)
                time.sleep(20)  # the load goes on through the recovery
                load.stop()
            books = load.books
            assert before > 0
            assert worker.alive(), f"the worker died:\n{worker.log()[-4000:]}"

            # The safe retries of what was not acknowledged, with their own ids.
            for conversation, event in books.unacknowledged:
                eventually(functools.partial(publisher.publish, conversation, event))
            for conversation, text, request_id in books.unsent + books.timed_out:
                again = functools.partial(chat.ask, conversation, text, 60, request_id=request_id)
                assert eventually(again).request_id == request_id

            with HistoryReader(settings) as history:
                logged: Counter[str] = Counter()
                for conversation in {f"c{n}" for n in range(CONVERSATIONS)}:
                    logged.update(e.event_id for e in history.events(conversation))
            lost = [i for i in books.acknowledged if i not in logged]
            retried_lost = [e.event_id for _, e in books.unacknowledged if e.event_id not in logged]

            deadline = time.monotonic() + ANSWERED_WITHIN
            while set(books.sent) - subscribed.request_ids and time.monotonic() < deadline:
                time.sleep(1)
            unanswered = sorted(set(books.sent) - subscribed.request_ids)

            calls = Counter(_asked_text(body) for body in server.bodies)
            doubled = {t: c for t, c in calls.items() if t.startswith(f"o{outage} ") and c > 1}
            print(
                f"\noutage {outage} s: {len(books.acknowledged)} events acknowledged, "
                f"{len(books.unacknowledged)} not (retried); {len(books.sent)} requests sent, "
                f"{len(books.unsent)} not acknowledged, {len(books.answered)} asks answered, "
                f"{len(books.timed_out)} timed out (retried); errors {dict(books.errors)}; "
                f"lost events {len(lost)}, unanswered asks {len(unanswered)}, "
                f"double LLM calls {len(doubled)}"
            )
            assert lost == []
            assert retried_lost == []
            assert unanswered == []
            assert doubled == {}
            assert books.answered, "no ask was answered"
        finally:
            subscribed.close()
            publisher.close()
            chat.close()
            worker.stop()
            (restarted or kafka).stop()


def _asked_text(body: object) -> str:
    """The text a call of the LLM answers: its last message's."""
    if not isinstance(body, dict):
        return ""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""
