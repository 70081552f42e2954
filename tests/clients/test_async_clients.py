"""The asyncio clients against a real broker: the same behaviour as the kafka-python ones,
and the event loop keeps running while they wait."""

from __future__ import annotations

import asyncio

import pytest

from goaicore import (
    AsyncChatClient,
    AsyncEventPublisher,
    AsyncHistoryReader,
    AsyncReplySubscriber,
    InvalidInputError,
    ReplyTimeout,
)
from goaicore.config import Settings
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.partition_reader import read_to_end
from goaicore.records import GameEvent, ReplyStatus, UserMessage
from tests.clients.scripted_responder import (
    ScriptedResponder,
    publish_replies_around_a_bad_one,
)


async def test_published_events_read_back_in_order_per_conversation(topics: Settings) -> None:
    async with AsyncEventPublisher(topics, source="async-test") as publisher:
        positions = await publisher.publish_many(
            (f"conv-{n % 5}", UserMessage(text=f"message {n}")) for n in range(100)
        )
        checked_in = await publisher.game_event(
            "conv-0", "Checked in", kind="check-in", attributes={"venue": "Royal Hall"}
        )
        said = await publisher.user_message("conv-1", "On my way")
    assert len({(p.partition, p.offset) for p in positions}) == 100
    async with AsyncHistoryReader(topics) as reader:
        texts = [
            event.body.text
            async for event in reader.events("conv-0")
            if isinstance(event.body, UserMessage)
        ]
        assert texts == [f"message {n}" for n in range(0, 100, 5)]
        last = [logged async for logged in reader.logged_events("conv-0")][-1]
        assert last.position == checked_in.log_position
        assert isinstance(last.event.body, GameEvent)
        assert last.event.body.attributes == {"venue": "Royal Hall"}
        assert last.event.source == "async-test"
        until = [e async for e in reader.logged_events("conv-1", until_offset=said.offset - 1)]
        assert [e.event.body.text for e in until][-1] == "message 96"  # type: ignore[union-attr]
        everything = [logged async for logged in reader.all_events()]
        assert len(everything) == 102
        assert reader.skipped == 0


async def test_fifty_concurrent_asks_each_get_their_own_reply(topics: Settings) -> None:
    with ScriptedResponder(topics) as responder:
        async with AsyncChatClient(topics) as client:
            replies = await asyncio.gather(
                *(client.ask(f"conv-{n % 20}", f"question {n}", timeout=60) for n in range(50))
            )
            shared = await asyncio.gather(
                *(client.ask("c", "once", timeout=30, request_id="async-same") for _ in range(3))
            )
    for n, reply in enumerate(replies):
        assert (reply.status, reply.text) == (ReplyStatus.OK, f"echo: question {n}")
        assert reply.conversation_id == f"conv-{n % 20}"
    assert len({reply.request_id for reply in replies}) == 50
    assert {reply.request_id for reply in shared} == {"async-same"}
    assert len(responder.seen) == 53


async def test_the_loop_runs_on_while_an_ask_waits_and_the_timeout_carries_the_id(
    topics: Settings,
) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async with AsyncChatClient(topics) as client:
        ticker = asyncio.create_task(tick())
        before = ticks
        with pytest.raises(ReplyTimeout) as timed_out:
            await client.ask("c", "anyone?", timeout=1, request_id="async-retry-key")
        during = ticks - before
        ticker.cancel()
    assert timed_out.value.request_id == "async-retry-key"
    assert "async-retry-key" in str(timed_out.value)
    assert during > 0  # another coroutine ran while ask waited: nothing blocked the loop


async def test_bad_input_is_refused_before_anything_is_sent(topics: Settings) -> None:
    async with AsyncEventPublisher(topics) as publisher, AsyncChatClient(topics) as client:
        with pytest.raises(InvalidInputError, match="conversation_id must not be empty"):
            await publisher.game_event("", "x")
        with pytest.raises(InvalidInputError, match="limit"):
            await publisher.user_message("c", "x" * (topics.max_record_bytes + 1))
        with pytest.raises(InvalidInputError, match="text must be a string"):
            await client.send("c", None)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="request_id must not be empty"):
            await client.ask("c", "hi", request_id="")
    with pytest.raises(RuntimeError, match="async with"):
        await AsyncEventPublisher(topics).publish("c", UserMessage(text="x"))


async def test_subscriber_skips_undecodable_replies_and_goes_on(topics: Settings) -> None:
    good, _ = publish_replies_around_a_bad_one(topics)

    async with AsyncReplySubscriber(topics, group_id="gateway", from_beginning=True) as subscriber:
        received = [reply async for reply in subscriber.replies(idle_timeout=3)]
        assert subscriber.skipped == 1
    assert received == good
    consumer = make_consumer(topics)
    letters = [
        record
        for partition in topic_partitions(consumer, topics.topic("dead-letters"))
        for record in read_to_end(consumer, partition, settings=topics)
    ]
    consumer.close()
    assert letters == []  # the projector's to write
