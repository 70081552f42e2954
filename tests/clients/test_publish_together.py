"""A group of one conversation's events published together: one record batch where they
fit the record limit (the broker appends it whole), consecutive whole batches in order
where they do not, and read back whole on either broker."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from goaicore import AsyncEventPublisher, AsyncHistoryReader, InvalidInputError
from goaicore.config import Settings
from goaicore.records import TopicPosition, UserMessage, new_event
from tests.brokers import SessionBroker
from tests.kafka_segments import StoredBatch, stored_batches


async def _read_back(settings: Settings, conversation_id: str) -> list[tuple[str, int]]:
    """The conversation's events as the log holds them: (text, offset) each."""
    async with AsyncHistoryReader(settings) as reader:
        return [
            (logged.event.body.text, logged.offset)  # type: ignore[union-attr]
            async for logged in reader.logged_events(conversation_id)
        ]


def _batches_of(kafka_broker: SessionBroker, landed: list[TopicPosition]) -> list[StoredBatch]:
    """The record batches on the broker's disk that hold the records at ``landed``."""
    assert kafka_broker.apache is not None
    stored = stored_batches(kafka_broker.apache, landed[0].topic, landed[0].partition)
    return [b for b in stored if any(b.holds(p.offset) for p in landed)]


async def test_a_group_that_fits_is_one_record_batch(
    topics: Settings, kafka_broker: SessionBroker
) -> None:
    # 600 kB together: far more than aiokafka's default batch size, within the record limit
    texts = [f"message {i} " + "y" * 30_000 for i in range(20)]
    async with AsyncEventPublisher(topics, source="together") as publisher:
        landed = await publisher.publish_together("grouped", [UserMessage(text=t) for t in texts])
        assert await publisher.publish_together("grouped", []) == []
    offsets = [p.offset for p in landed]
    assert offsets == list(range(offsets[0], offsets[0] + len(texts)))  # nothing in between
    assert {p.topic for p in landed} == {topics.topic("events")}
    assert await _read_back(topics, "grouped") == list(zip(texts, offsets, strict=True))
    if kafka_broker.apache is not None:  # how the broker stored them: one batch
        [batch] = _batches_of(kafka_broker, landed)
        assert (batch.base_offset, batch.last_offset) == (offsets[0], offsets[-1])
        assert batch.records == len(texts)


async def test_groups_published_at_once_stay_whole(topics: Settings) -> None:
    """Two groups and single events of one conversation at once: each group contiguous."""
    firsts = [UserMessage(text=f"first {i}") for i in range(15)]
    seconds = [UserMessage(text=f"second {i}") for i in range(15)]
    async with AsyncEventPublisher(topics) as publisher:
        await asyncio.gather(
            publisher.publish_together("at-once", firsts),
            publisher.publish_together("at-once", seconds),
            *(publisher.user_message("at-once", f"single {i}") for i in range(5)),
        )
    texts = [text for text, _ in await _read_back(topics, "at-once")]
    for group in (firsts, seconds):
        start = texts.index(group[0].text)
        assert texts[start : start + len(group)] == [m.text for m in group]
    assert len(texts) == 35


async def test_a_group_over_the_record_limit_goes_in_whole_batches_in_order(
    topics: Settings, kafka_broker: SessionBroker
) -> None:
    small = topics.with_overrides(max_record_bytes=65_536)
    events = [new_event("large", UserMessage(text=f"{i:03} " + "x" * 10_000)) for i in range(20)]
    async with AsyncEventPublisher(small) as publisher:
        landed = await publisher.publish_together("large", events)
    offsets = [p.offset for p in landed]
    assert offsets == list(range(offsets[0], offsets[0] + len(events)))
    async with AsyncHistoryReader(topics) as reader:
        read = [logged.event async for logged in reader.logged_events("large")]
    assert read == events
    if kafka_broker.apache is not None:
        batches = _batches_of(kafka_broker, landed)
        assert len(batches) >= 4  # about 200 kB of values in batches of at most 64 kB
        assert sum(b.records for b in batches) == len(events)
        assert batches[0].base_offset == offsets[0]
        assert batches[-1].last_offset == offsets[-1]
        for before, after in itertools.pairwise(batches):
            assert after.base_offset == before.last_offset + 1


async def test_one_bad_event_sends_none_of_the_group(topics: Settings) -> None:
    stranger = new_event("someone-else", UserMessage(text="not mine"))
    async with AsyncEventPublisher(topics) as publisher:
        with pytest.raises(InvalidInputError, match="belongs to conversation"):
            await publisher.publish_together("refused", [UserMessage(text="ok"), stranger])
    assert await _read_back(topics, "refused") == []
