"""Killed between writing a batch and committing it, the projector loses and repeats nothing."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from goaicore.config import Settings
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.records import ChatReply, ReplyStatus
from tests.projector.helpers import (
    ProjectorProcess,
    fold_logged,
    produce_at,
    publish,
    publish_replies,
    publish_snapshots,
    query,
    read_topic,
)
from tests.projector.sessions import game_session

CONVERSATIONS = 20


def _counts(settings: Settings) -> tuple[int, int, int]:
    """Event rows, snapshot rows, and the events the positions say were read."""
    events = query(settings, "SELECT count(*) FROM conversation_events")[0][0]
    snapshots = query(settings, "SELECT count(*) FROM conversation_snapshots")[0][0]
    read = query(
        settings,
        "SELECT coalesce(sum(next_offset), 0)::bigint FROM projector_positions WHERE topic = %s",
        settings.topic("events"),
    )[0][0]
    return events, snapshots, read


def _crashes(projection: Settings, crash_points: Sequence[str]) -> Iterator[ProjectorProcess]:
    """Run a projector per crash point, each killed (SIGKILL) right after writing that
    batch and before committing it; each is yielded once it died, for checks."""
    for run, crash_at in enumerate(crash_points):
        crashed = ProjectorProcess(
            projection,
            "--batch-size",
            "10",
            "--crash-after-write-before-commit",
            crash_at,
            name=f"crashed-{run}",
        ).start()
        assert crashed.wait(60) == -signal.SIGKILL, crashed.log()
        yield crashed


def _restart_until(projection: Settings, done: Callable[[], bool], timeout: float = 60) -> None:
    """Run a projector until ``done()``; it must stay up all along and stop cleanly."""
    restarted = ProjectorProcess(projection, "--batch-size", "10", name="restarted").start()
    try:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, restarted.log()
            assert restarted.process is not None
            assert restarted.process.poll() is None
            time.sleep(0.2)
    finally:
        assert restarted.stop() == 0, restarted.log()


def test_killed_between_write_and_commit_loses_and_repeats_nothing(projection: Settings) -> None:
    events = [e for n in range(CONVERSATIONS) for e in game_session(f"conv-{n}")]
    logged = publish(projection, events)
    snapshots = fold_logged(logged)
    publish_snapshots(projection, list(snapshots.values()))

    # Two crashes at different points, each right after a batch was written.
    for crashed in _crashes(projection, ("3", "2")):
        assert "fault hook: killed after writing batch" in crashed.log()
        rows, snapshot_rows, read = _counts(projection)
        assert rows == read, "rows and positions must commit together"
        # Some batches committed, not all; which topic's records a poll returns first is
        # the consumer's choice (the first batches may hold snapshots only).
        assert 0 < rows + snapshot_rows < len(events) + CONVERSATIONS

    _restart_until(projection, lambda: _counts(projection)[:2] == (len(events), CONVERSATIONS))

    positions = query(projection, "SELECT topic_partition, log_offset FROM conversation_events")
    assert sorted(positions) == sorted((p.partition, p.offset) for _, p in logged)
    assert query(projection, "SELECT count(DISTINCT event_id) FROM conversation_events") == [
        (len(events),)
    ]
    assert query(projection, "SELECT DISTINCT event_count FROM conversations") == [(7,)]
    stored = query(projection, "SELECT conversation_id, last_offset FROM conversation_snapshots")
    assert sorted(stored) == sorted(
        (conv, s.last_position.offset)  # type: ignore[union-attr]
        for conv, s in snapshots.items()
    )
    assert _counts(projection) == (len(events), CONVERSATIONS, len(events))


def _ends(settings: Settings, topic: str) -> dict[int, int]:
    """The end offset of each partition of one of the prefix's topics."""
    consumer = make_consumer(settings)
    try:
        partitions = topic_partitions(consumer, settings.topic(topic))
        return {tp.partition: int(end) for tp, end in consumer.end_offsets(partitions).items()}
    finally:
        consumer.close()


def _rows_match_positions(
    settings: Settings, table: str, topic: str, records: Iterable[tuple[int, int]]
) -> set[tuple[int, int]]:
    """Assert ``table`` holds a row for exactly those of ``records`` (positions of rows
    the topic should give) below the stored positions; the rows' positions."""
    read = dict(
        query(
            settings,
            "SELECT topic_partition, next_offset FROM projector_positions WHERE topic = %s",
            settings.topic(topic),
        )
    )
    rows = {(p, o) for p, o in query(settings, f"SELECT topic_partition, log_offset FROM {table}")}
    assert rows == {(p, o) for p, o in records if o < read.get(p, 0)}, table
    return rows


def test_killed_projector_keeps_replies_and_dead_letters_exactly_once(
    projection: Settings,
) -> None:
    logged = publish(projection, [e for n in range(6) for e in game_session(f"conv-{n}")])
    replies = publish_replies(
        projection,
        [
            ChatReply(request_id=f"r{n}", conversation_id=f"conv-{n % 6}", status=ReplyStatus.OK)
            for n in range(30)
        ],
    )
    bad = [
        (projection.topic(topic), p.partition, p.offset)
        for topic in (
            "replies",
            "snapshots",
        )  # the projector's dead letters (events': the worker's)
        for p in produce_at(projection, topic, [(b"conv-0", b"junk")] * 3)
    ]
    good_replies = {(p.partition, p.offset) for p in replies}
    events = {(p.partition, p.offset) for _, p in logged}

    def consistent() -> tuple[set[tuple[int, int]], ...]:
        letters = {(r.partition, r.offset) for r in read_topic(projection, "dead-letters")}
        return (
            _rows_match_positions(projection, "conversation_events", "events", events),
            _rows_match_positions(projection, "chat_replies", "replies", good_replies),
            _rows_match_positions(projection, "dead_letters", "dead-letters", letters),
        )

    for _ in _crashes(projection, ("2", "3")):
        consistent()  # rows and positions commit together, in every table

    def caught_up() -> bool:
        positions = query(
            projection, "SELECT topic, topic_partition, next_offset FROM projector_positions"
        )
        topics = ("events", "snapshots", "replies", "dead-letters")
        ends = {
            (projection.topic(t), p): o for t in topics for p, o in _ends(projection, t).items()
        }
        return {(t, p): o for t, p, o in positions} == ends

    _restart_until(projection, caught_up)

    stored_events, stored_replies, stored_letters = consistent()
    assert (stored_events, stored_replies) == (events, good_replies)
    assert stored_letters == {
        (r.partition, r.offset) for r in read_topic(projection, "dead-letters")
    }
    # Each bad record has a dead letter; a crash before its batch's commit may send a second.
    origins = query(
        projection, "SELECT origin_topic, origin_partition, origin_offset FROM dead_letters"
    )
    assert set(origins) == set(bad)
    assert query(projection, "SELECT DISTINCT event_count FROM conversations") == [(7,)]
