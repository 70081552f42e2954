"""Killed between writing a batch and committing it, the projector loses and repeats nothing."""

from __future__ import annotations

import signal
import time

from goaicore.config import Settings
from tests.projector.helpers import (
    ProjectorProcess,
    fold_logged,
    publish,
    publish_snapshots,
    query,
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


def test_killed_between_write_and_commit_loses_and_repeats_nothing(projection: Settings) -> None:
    events = [e for n in range(CONVERSATIONS) for e in game_session(f"conv-{n}")]
    logged = publish(projection, events)
    snapshots = fold_logged(logged)
    publish_snapshots(projection, list(snapshots.values()))

    # Two crashes at different points, each right after a batch was written.
    for run, crash_at in enumerate(("3", "2")):
        crashed = ProjectorProcess(
            projection,
            "--batch-size",
            "10",
            "--crash-after-write-before-commit",
            crash_at,
            name=f"crashed-{run}",
        ).start()
        assert crashed.wait(60) == -signal.SIGKILL, crashed.log()
        assert "fault hook: killed after writing batch" in crashed.log()
        rows, _, read = _counts(projection)
        assert rows == read, "rows and positions must commit together"
        assert 0 < rows < len(events)

    restarted = ProjectorProcess(projection, "--batch-size", "10", name="restarted").start()
    try:
        deadline = time.monotonic() + 60
        while _counts(projection)[:2] != (len(events), CONVERSATIONS):
            assert time.monotonic() < deadline, restarted.log()
            assert restarted.process is not None
            assert restarted.process.poll() is None
            time.sleep(0.2)
    finally:
        assert restarted.stop() == 0, restarted.log()

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
