"""The store worker folds the log into the snapshots topic, and survives restarts."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.fold import FOLD_VERSION
from goaicore.fold.policy import policy_of
from goaicore.kafka import ensure_topics
from goaicore.records import AssistantTurn, GameEvent, ToolCall, ToolResult, UserMessage
from goaicore.records.avro.api import encode_snapshot
from goaicore.replay.log import replay
from goaicore.replay.verify import verify_log, verify_snapshot
from tests.cli import run_goaicore
from tests.store.workers import (
    StoreWorker,
    dead_letters,
    publish_ticks,
    wait_folded,
    worker_env,
)


@pytest.fixture
def topics(settings: Settings) -> Settings:
    ensure_topics(settings)
    return settings


@pytest.fixture
def worker(topics: Settings) -> Iterator[StoreWorker]:
    process = StoreWorker(topics).start()
    yield process
    process.stop()


def test_worker_folds_events_into_the_snapshots_topic(
    topics: Settings, worker: StoreWorker
) -> None:
    with EventPublisher(topics) as publisher:
        publisher.game_event("p1", "Checked in at Harrogate Theatre", kind="check-in")
        publisher.user_message("p1", "Score?")
        publisher.publish(
            "p1", AssistantTurn(tool_calls=(ToolCall(id="k", name="score", arguments="{}"),))
        )
        publisher.publish("p1", ToolResult(tool_call_id="k", name="score", content="2-1"))
        last = publisher.publish("p1", AssistantTurn(text="2-1 to Leeds."))
        other = publisher.user_message("p2", "hello")
    stored = wait_folded(topics, {"p1": last.offset, "p2": other.offset}, workers=(worker,))
    assert [m.role for m in stored["p1"].messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    with HistoryReader(topics) as history:
        assert replay(history, "p1").snapshot == stored["p1"]
        assert verify_snapshot(history, stored["p2"]) == []
    with SnapshotReader(topics) as reader:
        assert reader.get("p1") == stored["p1"]
        assert reader.get("nobody") is None

    verify = run_goaicore("verify", env=worker_env(topics))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "verified 2 snapshots: 2 equal, 0 different" in verify.stdout
    unknown = run_goaicore("verify", "nobody", env=worker_env(topics))
    assert unknown.returncode == 0, unknown.stderr
    assert "NO EVENTS nobody: the log has no events of it" in unknown.stdout
    assert "verified 0 snapshots: 0 equal, 0 different, 1 without events" in unknown.stdout
    shown = run_goaicore("replay", "p1", env=worker_env(topics))
    assert shown.returncode == 0, shown.stderr
    assert "events applied 5" in shown.stdout
    assert "assistant: 2-1 to Leeds." in shown.stdout


def test_bad_records_go_to_dead_letters_and_the_worker_goes_on(
    topics: Settings, worker: StoreWorker
) -> None:
    producer = KafkaProducer(bootstrap_servers=topics.require_bootstrap())
    events = topics.topic("events")
    garbage = producer.send(events, key=b"p3", value=b"\x00garbage").get(10)
    with EventPublisher(topics) as publisher:
        from goaicore.records import new_event
        from goaicore.records.avro.api import encode_event

        stray = encode_event(new_event("p3", UserMessage(text="under another key")))
    mismatch = producer.send(events, key=b"someone-else", value=stray).get(10)
    producer.close()
    with EventPublisher(topics) as publisher:
        last = publisher.game_event("p3", "still folding", kind="tick")
    stored = wait_folded(topics, {"p3": last.offset}, workers=(worker,))
    assert [m.text for m in stored["p3"].messages] == ["still folding"]

    letters = dead_letters(topics)
    assert letters[(garbage.partition, garbage.offset)].reason == "bad-magic"
    assert letters[(mismatch.partition, mismatch.offset)].reason == "key-mismatch"
    assert letters[(garbage.partition, garbage.offset)].value == b"\x00garbage"
    assert worker.alive()


def test_a_restarted_worker_recovers_its_table(topics: Settings) -> None:
    first = StoreWorker(topics, "first").start()
    last = publish_ticks(topics, "r")
    wait_folded(topics, last, workers=(first,))
    assert first.stop() == 0

    second = StoreWorker(topics, "second").start()
    try:
        with EventPublisher(topics) as publisher:
            more = {c: publisher.game_event(c, "after restart", kind="tick").offset for c in last}
        stored = wait_folded(topics, more, workers=(second,))
    finally:
        second.stop()
    assert {s.event_count for s in stored.values()} == {11}  # 10 before + 1 after the restart
    assert all(s.messages[-1].text == "after restart" for s in stored.values())


def test_a_conversation_of_megabytes_folds_within_the_record_limit(
    topics: Settings, worker: StoreWorker
) -> None:
    """The report's case: 400 game events of 3 KB (1.2 MB of history), no chat turn."""
    with EventPublisher(topics) as publisher:
        sent = publisher.publish_many(
            ("big", GameEvent(kind="world", text=f"{n:04d} " + "w" * 3000)) for n in range(400)
        )
        after = publisher.game_event("small", "the worker is still folding", kind="tick")
    stored = wait_folded(topics, {"big": sent[-1].offset, "small": after.offset}, workers=(worker,))
    big = stored["big"]
    assert len(encode_snapshot(big)) <= topics.max_record_bytes - 16 * 1024
    assert big.format_version == FOLD_VERSION
    assert big.max_bytes == topics.max_record_bytes - 16 * 1024
    assert big.event_count == 400
    assert big.dropped_messages + len(big.messages) == 400
    assert big.dropped_messages > 100
    assert big.messages[-1].text.startswith("0399 ")
    with HistoryReader(topics) as history:
        assert verify_snapshot(history, big) == []
    assert worker.alive()


def test_a_conversation_verifies_after_the_record_limit_changed_under_it(
    topics: Settings,
) -> None:
    """The worker folded a long conversation under one record limit, then restarted under a
    smaller one: the snapshot remembers the earlier bound, and a replay folds each stretch
    under its own (under the latest alone, the history would differ)."""
    with EventPublisher(topics) as publisher:
        sent = publisher.publish_many(
            ("long", GameEvent(kind="world", text=f"{n:04d} " + "w" * 2000)) for n in range(300)
        )
    first = StoreWorker(topics, "first").start()
    try:
        wait_folded(topics, {"long": sent[-1].offset}, workers=(first,))
    finally:
        assert first.stop() == 0
    smaller = dataclasses.replace(topics, max_record_bytes=topics.max_record_bytes // 2)
    second = StoreWorker(smaller, "second").start()
    try:
        with EventPublisher(topics) as publisher:
            more = publisher.publish_many(
                ("long", GameEvent(kind="world", text=f"later {n} " + "w" * 2000))
                for n in range(20)
            )
        stored = wait_folded(topics, {"long": more[-1].offset}, workers=(second,))["long"]
    finally:
        second.stop()
    assert stored.max_bytes == smaller.max_record_bytes - 16 * 1024
    assert [(b.max_bytes, b.until.offset) for b in stored.earlier_bounds] == [
        (topics.max_record_bytes - 16 * 1024, sent[-1].offset)
    ]
    with HistoryReader(topics) as history:
        assert verify_snapshot(history, stored) == []
        assert verify_log(history, {"long": stored}).differences == []
        alone = replay(history, "long", policy=policy_of(stored)).snapshot
    assert alone is not None
    assert alone.messages != stored.messages


def test_oversized_and_unfoldable_records_become_dead_letters_that_fit(
    topics: Settings, worker: StoreWorker
) -> None:
    from goaicore.records import new_chat_request, new_event
    from goaicore.records.avro.api import encode_chat_request, encode_event

    events = topics.topic("events")
    producer = KafkaProducer(
        bootstrap_servers=topics.require_bootstrap(), max_request_size=2 * topics.max_record_bytes
    )
    # Undecodable and as large as the topic accepts: its dead letter cannot be a copy.
    huge = producer.send(events, key=b"p4", value=b"\x00" * (topics.max_record_bytes + 30_000)).get(
        30
    )
    long_id = "x" * 5000
    stray = encode_event(new_event(long_id, UserMessage(text="a conversation id too long")))
    too_long = producer.send(events, key=long_id.encode(), value=stray).get(30)
    unnamed = {}  # ids no caller can give; NUL would be U+FFFD in PostgreSQL, another id's
    for bad in ("nulx\x00y", "tab\tid", "line\u2028id"):
        event = encode_event(new_event(bad, UserMessage(text="an id with a control")))
        unnamed[bad] = producer.send(events, key=bad.encode(), value=event).get(30)
    asked = dataclasses.replace(new_chat_request("placeholder", "hi"), conversation_id="nul\x00")
    request = producer.send(
        topics.topic("requests"), key=b"nul\x00", value=encode_chat_request(asked)
    ).get(30)
    producer.close()
    with EventPublisher(topics) as publisher:
        last = publisher.game_event("p4", "still folding", kind="tick")
    stored = wait_folded(topics, {"p4": last.offset}, workers=(worker,))
    assert [m.text for m in stored["p4"].messages] == ["still folding"]

    letters = dead_letters(topics)
    big = letters[(huge.partition, huge.offset)]
    assert big.reason == "too-large"  # over the record limit: not even decoded
    assert big.value is not None
    assert len(big.value) <= topics.max_record_bytes - 8 * 1024
    assert big.value == b"\x00" * len(big.value)
    assert f"value {topics.max_record_bytes + 30_000} bytes, kept {len(big.value)}" in big.truncated
    assert letters[(too_long.partition, too_long.offset)].reason == "conversation-id-too-long"
    for bad, sent in unnamed.items():
        letter = letters[(sent.partition, sent.offset)]
        assert (letter.reason, letter.key) == ("invalid-conversation-id", bad.encode())
        assert "conversation_id holds U+" in letter.message
    deadline = time.monotonic() + 60
    while (
        refused := dead_letters(topics, "requests").get(
            place := (request.partition, request.offset)
        )
    ) is None:
        assert time.monotonic() < deadline, f"no dead letter for the request at {place}"
        time.sleep(0.5)
    assert refused.reason == "invalid-conversation-id"
    assert worker.alive()
