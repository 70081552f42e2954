"""Publishers without a key write to ``intake``; the owning worker seals into ``events``.

On Apache Kafka with a sealing worker: events from EventPublisher, AsyncEventPublisher,
``goaicore publish-event`` and the history operations reach ``events`` sealed only; a
chat request sent after a published event sees it; a record that is not an event
becomes a dead letter and the worker goes on; replay and verify agree.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kafka import KafkaProducer

from goaicore.clients import AsyncEventPublisher, EventPublisher, HistoryReader
from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.kafka.dead_letters import DeadLetter
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ConversationErased, GameEvent, ReplyStatus, new_chat_request, new_event
from goaicore.records.avro.api import decode_event, encode_event
from goaicore.records.validation import InvalidInputError
from goaicore.replay.verify import verify_log
from goaicore.sealing.content import MARK
from goaicore.store.history_operations import HistoryOperations, OperationPending
from goaicore.store.inputs import event_record
from goaicore.testing import OpenAIServer
from tests.chat_agent.helpers import Replies, snapshot_when
from tests.cli import goaicore
from tests.kafka.helpers import wait_until
from tests.sealing.helpers import start_worker, topic_records

LORE = "Quetzalfire sleeps under the mill"


def test_published_events_reach_the_log_sealed_by_the_worker_that_owns_them(
    sealed: Settings, llm: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation = f"intake-{uuid.uuid4().hex[:8]}"
    worker = start_worker(sealed, llm, "intake")
    try:
        with EventPublisher(sealed) as publisher:
            position = publisher.game_event(conversation, LORE, "lore", {"hoard": "gold"})
        assert position.topic == sealed.topic("intake")
        # Sent right after: the worker seals its intake up to the end before the turn.
        with Replies(sealed) as replies:
            ask = new_chat_request(conversation, "What sleeps under the mill?")
            replies.send(ask)
            assert replies.wait(ask.request_id).status == ReplyStatus.OK
        snapshot = snapshot_when(sealed, conversation, lambda s: s.message_count == 3)
        assert [m.text for m in snapshot.messages] == [
            LORE,
            "What sleeps under the mill?",
            "echo: What sleeps under the mill?",
        ]

        # A record that is no event: a dead letter, and the worker seals what follows.
        with KafkaProducer(bootstrap_servers=sealed.require_bootstrap()) as raw:
            raw.send(sealed.topic("intake"), key=conversation.encode(), value=b"not avro")
            raw.flush()

        async def publish_async() -> None:
            async with AsyncEventPublisher(sealed) as publisher:
                where = await publisher.user_message(conversation, "Quetzalfire? Truly?")
                assert where.topic == sealed.topic("intake")

        asyncio.run(publish_async())
        monkeypatch.setenv("GOAICORE_INTAKE", "on")  # a game service: no master key
        cli = goaicore(sealed, "publish-event", conversation, "Quetzalfire woke", "--kind", "lore")
        assert cli.returncode == 0, cli.stderr
        assert "intake[" in cli.stdout
        assert "seals it into the log" in cli.stdout
        snapshot_when(sealed, conversation, lambda s: s.message_count == 5)

        with HistoryOperations(sealed) as ops:
            titled = ops.set_metadata(conversation, title="Quetzalfire's lair")
            first_offset = snapshot.last_position.offset - 2  # type: ignore[union-attr]
            rewound = ops.rewind(conversation, first_offset)
        assert titled.topic == rewound.position.topic == sealed.topic("events")
        after = snapshot_when(sealed, conversation, lambda s: len(s.messages) == 1)
    finally:
        worker.stop()
    assert [m.text for m in after.messages] == [LORE]
    assert after.title == "Quetzalfire's lair"

    events = topic_records(sealed, "events", conversation)
    assert len(events) == 7
    stored = [decode_event(r.value) for r in events]  # type: ignore[attr-defined]
    assert all(e.sealed is not None for e in stored)
    assert not any(b"Quetzalfire" in r.value or b"hoard" in r.value for r in events)  # type: ignore[attr-defined]
    assert [(r.offset, e.event_id) for r, e in zip(events, stored, strict=True)][-2:] == [  # type: ignore[attr-defined]
        (titled.offset, stored[-2].event_id),
        (rewound.position.offset, stored[-1].event_id),
    ]
    tailed = goaicore(
        sealed, "tail", "--topic", "events", "--from-beginning", "--idle-timeout", "3"
    )
    lore = [line for line in tailed.stdout.splitlines() if f"{conversation} game[lore]" in line]
    key_id = stored[0].sealed.key_id  # type: ignore[union-attr]
    assert len(lore) == 2
    assert all(line.endswith(f"(sealed under key {key_id})") for line in lore)
    assert LORE not in tailed.stdout
    intake = topic_records(sealed, "intake", conversation)
    assert len(intake) == 6  # the bad record too; in the clear until the window expires it
    assert b"Quetzalfire" in intake[0].value  # type: ignore[attr-defined]

    [letter] = [
        DeadLetter.from_record(r) for r in topic_records(sealed, "dead-letters", conversation)
    ]
    assert (letter.topic, letter.offset) == (sealed.topic("intake"), intake[1].offset)  # type: ignore[attr-defined]
    assert letter.value == b"not avro"

    with HistoryReader(sealed) as history:
        assert isinstance(next(history.events(conversation)).body, GameEvent)
        with SnapshotReader(sealed) as snapshots:
            latest = snapshots.get(conversation)
        assert latest is not None
        report = verify_log(history, {conversation: latest}, progress=False)
    assert report.differences == []


def test_an_operation_no_worker_seals_in_time_is_pending_and_applies_once_one_runs(
    sealed: Settings, llm: OpenAIServer
) -> None:
    conversation = f"pending-{uuid.uuid4().hex[:8]}"
    with (
        HistoryOperations(sealed.with_overrides(read_wait=0.5)) as ops,
        pytest.raises(OperationPending, match="no store worker sealed it") as pending,
    ):
        ops.set_metadata(conversation, title="waits for a worker")
    assert f"{sealed.topic('intake')}[" in str(pending.value)
    worker = start_worker(sealed, llm, "pending")
    try:
        titled = snapshot_when(sealed, conversation, lambda s: s.title == "waits for a worker")
    finally:
        worker.stop()
    assert titled.event_count == 1
    assert len(topic_records(sealed, "events", conversation)) == 1


def test_the_intake_keeps_an_erasure_in_order_and_sets_aside_what_it_cannot_seal(
    sealed: Settings, llm: OpenAIServer
) -> None:
    conversation = f"order-{uuid.uuid4().hex[:8]}"
    before, after = (f"{LORE} ({when} the erasure)" for when in ("before", "after"))
    worker = start_worker(sealed, llm, "order")
    try:
        with EventPublisher(sealed) as publisher:  # one flush: the worker takes them at once
            publisher.publish_many(
                [
                    (conversation, GameEvent(kind="lore", text=before)),
                    (conversation, ConversationErased(reason="asked")),
                    (conversation, GameEvent(kind="lore", text=after)),
                ]
            )
        snapshot = snapshot_when(sealed, conversation, lambda s: s.event_count == 3)
        with KafkaProducer(bootstrap_servers=sealed.require_bootstrap()) as raw:
            huge = new_event(conversation, GameEvent(kind="k", text="x" * 899_800), source="t")
            raw.send(sealed.topic("intake"), key=conversation.encode(), value=encode_event(huge))
            elsewhere = (partition_for(conversation, sealed.partitions) + 1) % sealed.partitions
            stray = encode_event(new_event(conversation, GameEvent(kind="k", text="stray")))
            raw.send(
                sealed.topic("intake"), key=conversation.encode(), value=stray, partition=elsewhere
            )
            raw.flush()
        wait_until(
            lambda: len(topic_records(sealed, "dead-letters", conversation)) == 1,
            timeout=30,
            what="a dead letter",
        )
        # The stray in another partition: forwarded to its own, sealed there and folded.
        forwarded = snapshot_when(sealed, conversation, lambda s: s.event_count == 4)
    finally:
        worker.stop()
    assert [m.text for m in snapshot.messages] == [after]  # sealed under a key made after it
    assert [m.text for m in forwarded.messages] == [after, "stray"]
    with HistoryReader(sealed) as history:
        texts = [getattr(e.body, "text", None) for e in history.events(conversation)]
        with SnapshotReader(sealed) as snapshots:
            latest = snapshots.get(conversation)
        assert latest is not None
        report = verify_log(history, {conversation: latest}, progress=False)
    assert texts == [MARK, None, after, "stray"]
    assert (report.differences, report.unreadable) == ([], {})
    letters = [
        DeadLetter.from_record(r) for r in topic_records(sealed, "dead-letters", conversation)
    ]
    assert [letter.reason for letter in letters] == ["too-large-sealed"]

    # A worker started again, with the intake idle since: a request waits for nothing.
    again = start_worker(sealed, llm, "order-again")
    try:
        with Replies(sealed) as replies:
            ask = new_chat_request(conversation, "Still there?")
            replies.send(ask)
            assert replies.wait(ask.request_id).status == ReplyStatus.OK
    finally:
        again.stop()
    assert "not taken in up to" not in (sealed.data_dir / "order-again.log").read_text()


def test_publishers_leave_room_for_the_seal(sealed: Settings) -> None:
    small = sealed.with_overrides(max_record_bytes=65_536)
    text = "x" * 65_400  # fits the limit alone, not with the seal beside it
    direct = small.with_overrides(intake_override=False)
    assert len(event_record(direct, "test", "room", GameEvent(kind="k", text=text))[1]) < 65_536
    with pytest.raises(InvalidInputError, match="event is"):
        event_record(small, "test", "room", GameEvent(kind="k", text=text))


def test_verify_reports_content_whose_key_is_missing_without_an_erasure(
    sealed: Settings, llm: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost, erased = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("lost", "erased"))
    worker = start_worker(sealed, llm, "keys-lost")
    try:
        with EventPublisher(sealed) as publisher:
            for conversation in (lost, erased):
                publisher.game_event(conversation, LORE)
        for conversation in (lost, erased):
            snapshot_when(sealed, conversation, lambda s: s.message_count == 1)
        with HistoryOperations(sealed) as ops:
            assert ops.erase(erased).key_destroyed
    finally:
        worker.stop()
    # The key of ``lost`` goes without an erasure (a topic restored without it, say).
    with KafkaProducer(bootstrap_servers=sealed.require_bootstrap()) as raw:
        raw.send(sealed.topic("keys"), key=lost.encode(), value=None)
        raw.flush()

    monkeypatch.setenv("GOAICORE_MASTER_KEYS", sealed.master_keys or "")
    checked = goaicore(sealed, "verify", lost, erased)
    assert checked.returncode == 1, checked.stderr
    [offset] = [r.offset for r in topic_records(sealed, "events", lost)]  # type: ignore[attr-defined]
    assert (
        f"UNREADABLE {lost}: 1 sealed events (from offset {offset}) do not open" in checked.stdout
    )
    assert f"UNREADABLE {erased}" not in checked.stdout  # its erasure explains it
    assert (
        checked.stdout.splitlines()[-1]
        == "verified 2 snapshots: 1 equal, 1 different, 1 unreadable"
    )
