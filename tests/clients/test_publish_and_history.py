"""EventPublisher and HistoryReader against a real broker."""

from __future__ import annotations

import random

import pytest
from kafka import KafkaProducer

from goaicore.clients import EventPublisher, HistoryReader, InvalidInputError
from goaicore.config import Settings
from goaicore.kafka.connection import MissingTopicError
from goaicore.kafka.partitioner import partition_for
from goaicore.records import AssistantTurn, GameEvent, UserMessage, new_event


def test_thousand_events_over_fifty_conversations_read_back_in_order(topics: Settings) -> None:
    rng = random.Random(7)
    conversations = [f"player-{n}" for n in range(50)]
    script = [rng.choice(conversations) for _ in range(1000)]
    events = [
        new_event(conv, UserMessage(text=f"message {i} of {conv}"), source="test")
        for i, conv in enumerate(script)
    ]
    with EventPublisher(topics) as publisher:
        positions = publisher.publish_many((e.conversation_id, e) for e in events)
    assert len(positions) == 1000
    for event, position in zip(events, positions, strict=True):
        assert position.partition == partition_for(event.conversation_id, 3)

    with HistoryReader(topics) as reader:
        for conv in conversations:
            expected = [e for e in events if e.conversation_id == conv]
            assert list(reader.events(conv)) == expected
        assert sum(1 for _ in reader.all_events(progress=False)) == 1000
        assert reader.skipped == 0


def test_end_of_log_is_found_when_the_last_batch_holds_many_records(topics: Settings) -> None:
    """Many records in one batch: a reader trusting the embedded broker's end offset stops early."""
    events = [new_event("batched", UserMessage(text=f"m{i}")) for i in range(40)]
    with EventPublisher(topics) as publisher:
        futures = [publisher.send("batched", e) for e in events]  # linger: one batch
        publisher.flush()
    assert len({f.get().partition for f in futures}) == 1
    with HistoryReader(topics) as reader:
        assert [e.event_id for e in reader.events("batched")] == [e.event_id for e in events]


def test_helpers_publish_the_right_bodies(topics: Settings) -> None:
    with EventPublisher(topics, source="harrogate") as publisher:
        first = publisher.game_event(
            "p1",
            "Player checked in at Harrogate Theatre",
            kind="check-in",
            attributes={"venue": "Harrogate Theatre"},
        )
        second = publisher.user_message("p1", "What's my score?")
        third = publisher.publish("p1", AssistantTurn(text="Ten points.", provider="offline"))
    assert first.offset < second.offset < third.offset
    with HistoryReader(topics) as reader:
        read = list(reader.events("p1"))
    assert [type(e.body) for e in read] == [GameEvent, UserMessage, AssistantTurn]
    assert read[0].body == GameEvent(
        kind="check-in",
        text="Player checked in at Harrogate Theatre",
        attributes={"venue": "Harrogate Theatre"},
    )
    assert {e.source for e in read} == {"harrogate"}


def test_reading_stops_at_an_offset(topics: Settings) -> None:
    with EventPublisher(topics) as publisher:
        positions = [publisher.user_message("q", f"m{i}") for i in range(5)]
    with HistoryReader(topics) as reader:
        read = list(reader.logged_events("q", until_offset=positions[2].offset))
    assert [r.offset for r in read] == [p.offset for p in positions[:3]]


@pytest.mark.parametrize(
    ("conversation_id", "body", "message"),
    [
        ("", UserMessage(text="hi"), "conversation_id must not be empty"),
        ("   ", UserMessage(text="hi"), "conversation_id must not be empty"),
        (42, UserMessage(text="hi"), "conversation_id must be a string, got int"),
        ("c", "just a string", "expected a ConversationEvent or an event body, got str"),
        ("c", UserMessage(text=7), "does not fit the schema"),  # type: ignore[arg-type]
        ("c", new_event("other", UserMessage(text="x")), "belongs to conversation 'other'"),
    ],
)
def test_bad_input_is_refused_before_sending(
    topics: Settings, conversation_id: object, body: object, message: str
) -> None:
    with EventPublisher(topics) as publisher, pytest.raises(InvalidInputError, match=message):
        publisher.publish(conversation_id, body)  # type: ignore[arg-type]
    with HistoryReader(topics) as reader:
        assert list(reader.all_events(progress=False)) == []


def test_oversized_event_and_bad_helper_input_are_refused(topics: Settings) -> None:
    small = topics.with_overrides(max_record_bytes=2048)
    with EventPublisher(small) as publisher:
        with pytest.raises(InvalidInputError, match="limit is 2,048"):
            publisher.user_message("c", "x" * 5000)
        with pytest.raises(InvalidInputError, match="text must not be empty"):
            publisher.game_event("c", "")
        with pytest.raises(InvalidInputError, match="attributes must map strings to strings"):
            publisher.game_event("c", "ok", attributes={"n": 1})  # type: ignore[dict-item]
        with pytest.raises(InvalidInputError, match="at most 256"):
            publisher.user_message("c" * 300, "hi")
    with HistoryReader(topics) as reader:
        assert list(reader.all_events(progress=False)) == []


def test_history_skips_and_counts_undecodable_records(topics: Settings) -> None:
    with EventPublisher(topics) as publisher:
        publisher.user_message("mixed", "before")
    producer = KafkaProducer(bootstrap_servers=topics.require_bootstrap())
    producer.send(topics.topic("events"), key=b"mixed", value=b"not avro").get(10)
    producer.close()
    with EventPublisher(topics) as publisher:
        publisher.user_message("mixed", "after")
    with HistoryReader(topics) as reader:
        texts = [e.body.text for e in reader.events("mixed")]  # type: ignore[union-attr]
        assert texts == ["before", "after"]
        assert reader.skipped == 1


def test_missing_topic_is_a_clear_error(settings: Settings) -> None:
    with (
        HistoryReader(settings) as reader,
        pytest.raises(MissingTopicError, match="does not exist"),
    ):
        list(reader.events("c"))
