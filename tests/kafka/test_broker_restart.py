"""A single broker goes away and comes back on its data while the processes keep running.

Once with a controlled shutdown (SIGTERM), once killed (SIGKILL, as a crash):
the store worker and the projector that were running before carry on when the
broker is back, the events published meanwhile wait in the publisher, and
nothing is lost or doubled.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from goaicore.clients import EventPublisher
from goaicore.kafka import ensure_topics
from goaicore.kafka.apache import LocalKafka
from goaicore.records import ReplyStatus, new_chat_request
from goaicore.testing import OpenAIServer
from tests.brokers import start_apache_kafka
from tests.chat_agent.helpers import Replies, ScriptedLLM
from tests.kafka.helpers import (
    EventStream,
    assert_verified,
    chat_worker,
    committed_events,
    kafka_settings,
    log_event_ids,
    projected_event_counts,
    projector,
    wait_event_counts,
    wait_projected,
    wait_until,
)

pytestmark = [pytest.mark.apache_kafka, pytest.mark.timeout(1200)]

EVENTS, CONVERSATIONS = 3000, 30
TALK = [f"talk-{n}" for n in range(5)]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    broker = start_apache_kafka(tmp_path_factory.mktemp("kafka"))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def llm() -> Iterator[OpenAIServer]:
    with OpenAIServer(responder=ScriptedLLM()) as server:
        yield server


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_worker_and_projector_resume_when_the_broker_is_back(
    kafka: LocalKafka, postgres_url: str, llm: OpenAIServer, tmp_path: Path, how: str
) -> None:
    settings = kafka_settings(kafka, postgres_url, tmp_path / "data")
    ensure_topics(settings)
    with Replies(settings) as replies:
        worker = chat_worker(settings, llm)
        projection = projector(settings)
        try:
            before = [new_chat_request(c, f"{c} before the {how}") for c in TALK]
            for request in before:
                replies.send(request)
            for request in before:
                assert replies.wait(request.request_id, timeout=300).status == ReplyStatus.OK

            stream = EventStream(settings, EVENTS, CONVERSATIONS, pause=0.3).start()
            wait_until(
                lambda: committed_events(settings) >= 500,
                timeout=300,
                what="folding before the broker goes",
            )
            assert not stream.done.is_set(), "the stream ended before the broker went"
            if how == "stop":
                kafka.stop_node(0)
            else:
                kafka.kill_node(0)
            time.sleep(5)  # the clients find the broker gone
            assert worker.alive(), worker.log()[-4000:]
            kafka.start_node(0)

            stream.wait(timeout=600)
            after = [new_chat_request(c, f"{c} after the {how}") for c in TALK]
            for request in after:
                replies.send(request)
            for request in after:
                assert replies.wait(request.request_id, timeout=300).status == ReplyStatus.OK
            with EventPublisher(settings) as publisher:
                publisher.game_event("last", "the last event", kind="tick")

            expected = {**stream.expected_counts(), **dict.fromkeys(TALK, 4), "last": 1}
            stored = wait_event_counts(settings, expected, timeout=600, workers=(worker,))
            logged = log_event_ids(settings)
            events_in_log = sum(logged.values())
            wait_projected(settings, (events_in_log, len(expected)), projection, timeout=600)
            time.sleep(2)  # a late duplicate reply would show up meanwhile
            assert worker.alive(), worker.log()[-4000:]
            assert projection.alive()
        finally:
            worker.stop()
            projection.stop()

    requests = [*before, *after]
    assert all(len(replies.seen[r.request_id]) == 1 for r in requests)
    assert all(logged[event_id] == 1 for event_id in stream.event_ids)
    assert logged.most_common(1)[0][1] == 1
    assert events_in_log == EVENTS + 2 * len(requests) + 1
    assert {c: s.event_count for c, s in stored.items()} == expected
    assert projected_event_counts(settings) == expected
    assert_verified(settings, len(expected))
