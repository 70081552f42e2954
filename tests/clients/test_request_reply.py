"""ChatClient and ReplySubscriber against a real broker and a scripted responder."""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

import pytest
from kafka import KafkaConsumer, TopicPartition

from goaicore.clients import (
    ChatClient,
    InvalidInputError,
    ReplySubscriber,
    ReplyTimeout,
)
from goaicore.config import Settings
from goaicore.kafka.partition_reader import read_to_end
from goaicore.records import ChatReply, ReplyStatus
from tests.clients.scripted_responder import (
    ScriptedResponder,
    publish_replies_around_a_bad_one,
)


def test_fifty_concurrent_asks_each_get_their_own_reply(topics: Settings) -> None:
    with ScriptedResponder(topics) as responder, ChatClient(topics) as client:

        def ask(n: int) -> tuple[int, ChatReply]:
            return n, client.ask(f"conv-{n % 20}", f"question {n}", timeout=60)

        with ThreadPoolExecutor(max_workers=50) as pool:
            answers = list(pool.map(ask, range(50)))
    assert len(responder.seen) == 50
    for n, reply in answers:
        assert reply.status is ReplyStatus.OK
        assert reply.text == f"echo: question {n}"
        assert reply.conversation_id == f"conv-{n % 20}"
    assert len({reply.request_id for _, reply in answers}) == 50


def test_request_carries_system_tools_and_a_deadline(topics: Settings) -> None:
    with ScriptedResponder(topics) as responder, ChatClient(topics) as client:
        reply = client.ask("c", "hello", timeout=30, system="Be brief", tools=["get_score"])
    request = responder.seen[0]
    assert (request.system, request.tools) == ("Be brief", ("get_score",))
    assert request.deadline is not None
    assert reply.request_id == request.request_id


def test_ask_without_a_worker_times_out_clearly(topics: Settings) -> None:
    with ChatClient(topics) as client, pytest.raises(ReplyTimeout, match="is a store worker"):
        client.ask("c", "anyone there?", timeout=1)


def test_a_timeout_carries_the_request_id_given_or_generated(topics: Settings) -> None:
    with ChatClient(topics) as client:
        with pytest.raises(ReplyTimeout) as given:
            client.ask("c", "anyone?", timeout=0.5, request_id="my-retry-key")
        with pytest.raises(ReplyTimeout) as generated:
            client.ask("c", "anyone?", timeout=0.5)
    assert given.value.request_id == "my-retry-key"
    assert generated.value.request_id
    assert generated.value.request_id in str(generated.value)


def test_asks_with_one_request_id_send_it_and_share_its_reply(topics: Settings) -> None:
    with (
        ScriptedResponder(topics) as responder,
        ChatClient(topics) as client,
        ThreadPoolExecutor(max_workers=3) as pool,
    ):
        asked = [
            pool.submit(client.ask, "c", "once", timeout=30, request_id="same-id") for _ in range(3)
        ]
        answers = [future.result() for future in asked]
    assert {request.request_id for request in responder.seen} == {"same-id"}
    assert all(a.request_id == "same-id" and a.text == "echo: once" for a in answers)


@pytest.mark.parametrize(
    ("request_id", "message"),
    [
        ("", "request_id must not be empty"),
        (7, "request_id must be a string"),
        ("x" * 300, "request_id is 300 characters; at most 256"),
    ],
)
def test_a_bad_request_id_is_refused_before_sending(
    topics: Settings, request_id: object, message: str
) -> None:
    with ChatClient(topics) as client:
        with pytest.raises(InvalidInputError, match=message):
            client.send("c", "hi", request_id=request_id)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match=message):
            client.ask("c", "hi", timeout=1, request_id=request_id)  # type: ignore[arg-type]


def test_send_refuses_bad_input(topics: Settings) -> None:
    with ChatClient(topics) as client:
        with pytest.raises(InvalidInputError, match="conversation_id must not be empty"):
            client.send("", "hi")
        with pytest.raises(InvalidInputError, match="text must be a string"):
            client.send("c", None)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="limit"):
            ChatClient(topics.with_overrides(max_record_bytes=1024)).send("c", "x" * 4096)


def test_subscriber_skips_undecodable_replies_and_goes_on(
    topics: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    replies = topics.topic("replies")
    good, bad = publish_replies_around_a_bad_one(topics)

    with (
        caplog.at_level("WARNING", logger="goaicore.clients.aio.replies"),
        ReplySubscriber(topics, group_id="gateway", from_beginning=True) as subscriber,
    ):
        received = list(subscriber.replies(idle_timeout=3))
        assert subscriber.skipped == 1
    assert received == good
    [warning] = [r.getMessage() for r in caplog.records if r.name.endswith("aio.replies")]
    assert f"at {replies}[{bad.partition}]@{bad.offset}" in warning

    # The subscriber writes no dead letter: the projector writes the one a bad reply has.
    consumer = KafkaConsumer(bootstrap_servers=topics.require_bootstrap())
    letters = [
        record
        for p in range(topics.partitions)
        for record in read_to_end(
            consumer, TopicPartition(topics.topic("dead-letters"), p), settings=topics
        )
    ]
    consumer.close()
    assert letters == []

    # The group committed its position: a new member starts after what was read.
    with ReplySubscriber(topics, group_id="gateway") as again:
        assert list(again.replies(idle_timeout=2)) == []


def test_replies_of_a_subscriber_nobody_holds_keep_it_open_while_they_are_read(
    topics: Settings,
) -> None:
    """Iterating a subscriber made in the loop's own expression: the iteration keeps it."""
    good, _ = publish_replies_around_a_bad_one(topics)
    gc.collect()
    received = []
    for reply in ReplySubscriber(topics, group_id="unheld", from_beginning=True).replies(
        idle_timeout=3
    ):
        gc.collect()  # the subscriber must not be collected, and closed, under the loop
        received.append(reply)
    assert received == good
