"""``goaicore verify`` with the log's partitions shared among processes: the same report
as one pass, in the same order, whatever the number of processes."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from goaicore.clients import HistoryReader
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.errors import BrokerError
from goaicore.kafka import ensure_topics
from goaicore.kafka.connection import make_admin
from goaicore.kafka.topics import TopicMismatchError
from goaicore.records import ConversationSnapshot
from goaicore.records.avro.api import encode_snapshot
from goaicore.replay.verify import Difference, LogVerifier, verify_log
from goaicore.replay.verify_shards import (
    Shard,
    ShardProcessDied,
    VerifyResult,
    _Counted,
    _ShardProcesses,
    merge,
    plan_shards,
    verify_against_log,
)
from tests.cli import run_goaicore
from tests.fold.conversations import fold_all
from tests.store.stories import rounds_and_a_stray

CONVERSATIONS = [f"c{n}" for n in range(12)]


def _log_and_snapshots(settings: Settings) -> dict[str, ConversationSnapshot]:
    """Three rounds of events for twelve conversations and a stray record the worker sets
    aside; on the snapshots topic, an outdated snapshot then the right one for c0..c9, a
    wrong one for c3 (its latest), a tombstone for c11, none for c10."""
    histories = rounds_and_a_stray(settings, CONVERSATIONS)
    producer = KafkaProducer(bootstrap_servers=settings.require_bootstrap())
    stored: dict[str, ConversationSnapshot] = {}
    topic = settings.topic("snapshots")
    for conversation in CONVERSATIONS[:10]:
        history = histories[conversation]
        outdated, latest = fold_all(history[:1]), fold_all(history)
        assert outdated is not None
        assert latest is not None
        if conversation == "c3":
            latest = dataclasses.replace(latest, message_count=99)
        for snapshot in (outdated, latest):
            producer.send(topic, key=conversation.encode(), value=encode_snapshot(snapshot))
        stored[conversation] = latest
    producer.send(topic, key=b"c11", value=None)
    producer.flush(10)
    producer.close()
    return stored


@pytest.mark.parametrize("processes", [1, 2, 4])
def test_any_number_of_processes_gives_the_report_of_one_pass(
    settings: Settings, processes: int
) -> None:
    stored = _log_and_snapshots(settings)
    with HistoryReader(settings) as reader:
        one_pass = verify_log(reader, stored, progress=False)

    result = verify_against_log(settings, processes=processes, progress=processes == 2)

    assert result.report == one_pass
    assert [(d.conversation_id, d.field) for d in result.report.differences] == [
        ("c3", "message_count")
    ]
    assert (result.report.checked, result.report.equal) == (10, 9)
    assert result.skipped_events == 1  # the stray record, as the worker dead-lettered it
    assert result.skipped_snapshots == 0

    named = verify_against_log(settings, ["c11", "nobody", "c3", "c0"], processes=processes)
    assert [(d.conversation_id, d.field) for d in named.report.differences] == [
        ("c11", "snapshot"),  # events, but its snapshot is a tombstone
        ("c3", "message_count"),
    ]
    assert named.report.unknown == ["nobody"]
    assert named.report.checked == 3


def test_the_command_verifies_in_processes_and_refuses_them_with_db(settings: Settings) -> None:
    _log_and_snapshots(settings)
    env = settings_env(settings)
    found = run_goaicore("verify", "--processes", "2", env=env)
    assert found.returncode == 1, found.stderr
    assert "DIFFERENT c3 message_count: stored 99 replayed 3" in found.stdout
    assert "10 snapshots" in found.stdout
    refused = run_goaicore("verify", "--db", "--processes", "2", env=env)
    assert refused.returncode == 2
    assert "--processes applies to a verify against the log" in refused.stderr
    invalid = run_goaicore("verify", "--processes", "0", env=env)
    assert invalid.returncode == 2


def test_shards_deal_out_the_partitions_or_those_of_the_named_conversations() -> None:
    assert plan_shards(6, [], 4) == [
        Shard((0, 4)),
        Shard((1, 5)),
        Shard((2,)),
        Shard((3,)),
    ]
    assert plan_shards(3, [], 8) == [Shard((0,)), Shard((1,)), Shard((2,))]
    assert plan_shards(6, [], 1) == [Shard((0, 1, 2, 3, 4, 5))]
    shards = plan_shards(3, ["c0", "c1", "c2", "c3"], 2)
    assert sorted(c for s in shards for c in s.conversation_ids) == ["c0", "c1", "c2", "c3"]
    assert all(len(s.partitions) >= 1 for s in shards)
    one = plan_shards(3, ["c0", "c0x"], 8)
    assert sum(len(s.partitions) for s in one) == len({p for s in one for p in s.partitions})


def test_merged_reports_follow_the_named_order_else_the_conversation_ids() -> None:
    def part(*ids: str) -> VerifyResult:
        verifier = LogVerifier({})
        report = verifier.report()
        report.differences = [Difference(c, "snapshot", None, "missing") for c in ids]
        report.unknown = list(ids)
        report.checked = len(ids)
        return VerifyResult(report, skipped_events=1)

    merged = merge([part("b", "d"), part("a", "c")], [])
    assert [d.conversation_id for d in merged.report.differences] == ["a", "b", "c", "d"]
    assert merged.report.checked == 4
    assert merged.skipped_events == 2
    named = merge([part("b", "d"), part("a", "c")], ["d", "a", "c", "b"])
    assert named.report.unknown == ["d", "a", "c", "b"]


def test_a_verify_fed_in_batches_equals_one_fed_at_once(settings: Settings) -> None:
    stored = _log_and_snapshots(settings)
    with HistoryReader(settings) as reader:
        records = list(reader.all_records(progress=False))
    whole = LogVerifier(stored)
    assert len(list(whole.feed(records))) == 1  # the stray record
    batched = LogVerifier(stored)
    rejected = [
        r for start in range(0, len(records), 5) for r in batched.feed(records[start : start + 5])
    ]
    assert len(rejected) == 1
    assert batched.report() == whole.report()


def test_topics_not_co_partitioned_are_refused_with_both_counts(settings: Settings) -> None:
    admin = make_admin(settings)
    admin.create_topics(
        [NewTopic(settings.topic("events"), 3, 1), NewTopic(settings.topic("snapshots"), 2, 1)]
    )
    admin.close()
    with pytest.raises(TopicMismatchError, match=r"has 2 partitions and \S+ 3:"):
        verify_against_log(settings)


def _processes(settings: Settings, shards: int) -> _ShardProcesses:
    ctx = multiprocessing.get_context("spawn")
    return _ShardProcesses(ctx, ctx.Value("q", 0), settings, plan_shards(shards, [], shards))


def test_a_shard_process_error_is_raised_here_and_the_others_are_stopped(tmp_path: Path) -> None:
    unreachable = Settings(env={}, bootstrap_servers="127.0.0.1:9", data_dir=tmp_path)
    others = _processes(unreachable, 2)
    counted = _Counted(multiprocessing.get_context("spawn").Value("q", 0), check=others.check)
    finished_here = []

    def here() -> VerifyResult:
        """A long shard here, between its batches counting (which checks the others)."""
        for _ in range(1200):
            counted(0)
            time.sleep(0.05)
        finished_here.append(True)
        return VerifyResult(LogVerifier({}).report())

    with pytest.raises(BrokerError, match=r"127\.0\.0\.1:9"):
        others.run(here)
    assert finished_here == []  # raised at a batch, not once the shard here was done
    assert all(not process.is_alive() for _, process, _ in others.children)


def test_a_shard_process_that_dies_without_a_report_is_named(settings: Settings) -> None:
    ensure_topics(settings)
    others = _processes(settings, 1)
    _, process, _ = others.children[0]

    def here() -> VerifyResult:
        process.kill()
        process.join()
        return VerifyResult(LogVerifier({}).report())

    with pytest.raises(ShardProcessDied, match=r"partitions \[0\] ended \(exit code -9\)"):
        others.run(here)
