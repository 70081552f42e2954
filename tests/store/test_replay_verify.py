"""``goaicore replay`` as of an offset or a time; ``goaicore verify`` finding a bad snapshot."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from kafka import KafkaProducer

from goaicore.clients import EventPublisher, HistoryReader
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.fold.records import LogRecord
from goaicore.kafka import ensure_topics
from goaicore.records import GameEvent, UserMessage, new_event
from goaicore.records.avro.api import encode_snapshot
from goaicore.replay.log import replay
from goaicore.replay.verify import verify_log
from tests.cli import run_goaicore
from tests.fold.conversations import fold_all
from tests.store.stories import rounds_and_a_stray

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def goaicore(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return run_goaicore(*args, env=settings_env(settings))


def _publish_story(settings: Settings) -> list[int]:
    ensure_topics(settings)
    story = [
        new_event("v1", UserMessage(text="first"), occurred_at=T0),
        new_event("v1", GameEvent(kind="k", text="second"), occurred_at=T0 + timedelta(hours=1)),
        new_event("v1", UserMessage(text="third"), occurred_at=T0 + timedelta(hours=2)),
    ]
    with EventPublisher(settings) as publisher:
        return [p.offset for p in publisher.publish_many(("v1", e) for e in story)]


def test_replay_until_an_offset_and_as_of_a_time(settings: Settings) -> None:
    offsets = _publish_story(settings)
    with HistoryReader(settings) as reader:
        upto = replay(reader, "v1", until_offset=offsets[1]).snapshot
        asof = replay(reader, "v1", as_of=T0 + timedelta(minutes=90)).snapshot
    assert upto is not None
    assert asof is not None
    assert [m.text for m in upto.messages] == ["first", "second"]
    assert [m.text for m in asof.messages] == ["first", "second"]

    by_offset = goaicore(settings, "replay", "v1", "--until-offset", str(offsets[0]))
    assert by_offset.returncode == 0, by_offset.stderr
    assert "events applied 1" in by_offset.stdout
    assert "user: first" in by_offset.stdout
    assert "third" not in by_offset.stdout
    by_time = goaicore(settings, "replay", "v1", "--as-of", "2026-03-01T10:30:00+00:00")
    assert "events applied 2" in by_time.stdout
    assert "system: second" in by_time.stdout
    replayed = json.loads(goaicore(settings, "replay", "v1", "--json").stdout)
    assert replayed["conversation_id"] == "v1"
    assert replayed["snapshot"]["event_count"] == 3
    assert [m["text"] for m in replayed["snapshot"]["messages"]][:2] == ["first", "second"]
    nothing = json.loads(goaicore(settings, "replay", "nobody", "--json").stdout)
    assert nothing == {"conversation_id": "nobody", "snapshot": None}
    bad = goaicore(settings, "replay", "v1", "--as-of", "yesterday")
    assert bad.returncode == 2
    assert "expected an ISO time, got 'yesterday'" in bad.stderr


def test_verify_reports_a_wrong_snapshot_and_a_conversation_without_events(
    settings: Settings,
) -> None:
    _publish_story(settings)
    with HistoryReader(settings) as reader:
        logged = list(reader.logged_events("v1"))
    good = fold_all([(e.event, e.position) for e in logged])
    assert good is not None
    wrong = dataclasses.replace(good, event_count=good.event_count + 1)
    producer = KafkaProducer(bootstrap_servers=settings.require_bootstrap())
    snapshots = settings.topic("snapshots")
    producer.send(snapshots, key=b"v1", value=encode_snapshot(good)).get(10)
    ok = goaicore(settings, "verify")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "verified 1 snapshots: 1 equal, 0 different" in ok.stdout

    producer.send(snapshots, key=b"v1", value=encode_snapshot(wrong)).get(10)
    producer.close()
    result = goaicore(settings, "verify", "v1", "nobody")
    assert result.returncode == 1
    assert "DIFFERENT v1 event_count: stored 4 replayed 3" in result.stdout
    assert "NO EVENTS nobody: the log has no events of it" in result.stdout
    assert "verified 1 snapshots: 0 equal, 1 different, 1 without events" in result.stdout

    as_json = goaicore(settings, "verify", "v1", "nobody", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {
        "against": "log",
        "checked": 1,
        "equal": 0,
        "different": ["v1"],
        "differences": [
            {"conversation_id": "v1", "field": "event_count", "stored": 4, "replayed": 3}
        ],
        "pending": [],
        "unknown": ["nobody"],
        "unreadable": {},
    }


class CountingReader(HistoryReader):
    """A history reader that counts how often each partition is read (by its core, the
    asyncio reader it is a facade over)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.reads: Counter[int] = Counter()
        read = self._core._read

        def counted(partition: Any, partitions: int) -> AsyncIterator[list[LogRecord]]:
            self.reads[partition.partition] += 1
            return read(partition, partitions)

        self._core._read = counted  # type: ignore[method-assign]


def test_verify_folds_every_conversation_in_one_read_of_the_log(settings: Settings) -> None:
    conversations = [f"c{n}" for n in range(12)]
    history = rounds_and_a_stray(settings, conversations)
    stored = {c: fold_all(history[c]) for c in conversations[:10]}
    stored["c10"] = fold_all(history["c10"][:2])  # behind the log: later events not counted
    assert all(s is not None for s in stored.values())

    with CountingReader(settings) as reader:
        report = verify_log(reader, {c: s for c, s in stored.items() if s}, progress=False)
        assert set(reader.reads.values()) == {1}  # each partition read once, for all
        assert len(reader.reads) == settings.partitions
        assert reader.skipped == 1  # the stray record, as the worker dead-lettered it
    assert (report.checked, report.equal, report.differences) == (11, 11, [])

    c3 = stored["c3"]
    assert c3 is not None
    wrong = dataclasses.replace(c3, message_count=99)
    with CountingReader(settings) as reader:
        named = verify_log(reader, {"c3": wrong}, ["c3", "c11", "nobody"], progress=False)
    assert [(d.conversation_id, d.field) for d in named.differences] == [
        ("c3", "message_count"),
        ("c11", "snapshot"),  # events, but no snapshot
    ]
    assert named.unknown == ["nobody"]
    assert named.checked == 2
