"""The ``peers`` suite on a tiny shape on Apache Kafka: the store worker, Kafka Streams
and Quix Streams each fold every event, and the report's shape (every figure beside the
store worker's). A check of the suite, not a benchmark: no timing is asserted."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from goaicore.bench import peers, runner
from goaicore.bench.registry import BROKER_SUITES
from goaicore.bench.store import Shape
from goaicore.kafka.connection import make_consumer, topic_partitions
from goaicore.kafka.local import broker_slug
from goaicore.kafka.partition_reader import read_to_end
from goaicore.records import ConversationSnapshot
from goaicore.records.avro.api import decode_snapshot
from goaicore.settings import Settings
from tests.brokers import SessionBroker

TINY = Shape(conversations=4, each=5)


def test_peers_is_a_broker_suite_of_apache_kafka_only(tmp_path: Path) -> None:
    runner.load_suites()
    assert BROKER_SUITES["peers"] is peers.peers
    out = io.StringIO()
    path = tmp_path / "bench.json"
    assert runner.run(["peers"], path, Console(file=out, width=400), brokers=("embedded",)) == []
    assert "skipping peers on" in out.getvalue()
    skipped = json.loads(path.read_text())["skipped"]
    assert skipped == [
        {
            "broker": broker_slug("embedded"),
            "suite": "peers",
            "reason": "Kafka Streams and Quix Streams are compared on Apache Kafka",
        }
    ]


def _published(settings: Settings) -> list[bytes]:
    """The values on the run's events topic but its one warm-up event's (each run makes
    its own), in topic order."""
    consumer = make_consumer(settings)
    try:
        return [
            record.value
            for partition in topic_partitions(consumer, settings.topic("events"))
            for record in read_to_end(consumer, partition, 0, settings)
            if record.key != b"warm-up"
        ]
    finally:
        consumer.close()


def _last_snapshots(settings: Settings) -> dict[str, ConversationSnapshot]:
    """The last snapshot of each conversation on the run's output topic."""
    consumer = make_consumer(settings)
    try:
        last: dict[str, ConversationSnapshot] = {}
        for partition in topic_partitions(consumer, settings.topic(peers.OUTPUT)):
            for record in read_to_end(consumer, partition, 0, settings):
                last[record.key.decode()] = decode_snapshot(record.value)
        return last
    finally:
        consumer.close()


@pytest.mark.apache_kafka
@pytest.mark.timeout(600)
def test_each_peer_folds_every_event_and_is_reported_beside_the_store_worker(
    kafka_broker: SessionBroker, tmp_path: Path
) -> None:
    if peers.unavailable_reason() is not None:
        pytest.skip(f"the peers cannot run here: {peers.unavailable_reason()}")
    given: list[Settings] = []

    def make_settings(prefix: str, data_dir: Path) -> Settings:
        given.append(kafka_broker.settings(data_dir, "p"))
        return given[-1]

    rows = runner.with_ratios(
        peers.measure(make_settings, tmp_path, shapes=(TINY,), repeats=1, warm_up=Shape(2, 3))
    )

    # One run of each, in turn, each on topics of its own, given the same bytes.
    assert len(given) == len(peers.PEERS)
    published = [_published(settings) for settings in given]
    assert len(published[0]) == TINY.events + 2 * 3  # and the warm-up batch
    assert published[1] == published[0]
    assert published[2] == published[0]
    for settings in given:
        snapshots = _last_snapshots(settings)
        assert set(snapshots) >= {f"conv-{c}" for c in range(TINY.conversations)}
        for c in range(TINY.conversations):
            snapshot = snapshots[f"conv-{c}"]
            numbers = range(c, TINY.events, TINY.conversations)
            texts = [f"event {n}" if n % 3 else f"q {n}" for n in numbers]
            assert [m.text for m in snapshot.messages] == texts
            assert snapshot.event_count == TINY.each
            assert snapshot.last_position is not None

    by_name = {m.name: m for m in rows}
    assert len(by_name) == len(rows) == 3 * len(peers.PEERS)
    for peer in peers.PEERS:
        for what in peers.NAMES:
            row = by_name[f"{peer.name} {what}"]
            assert row.suite == "peers"
            assert row.params == TINY.params
            assert peer.guarantee in row.note
            assert math.isfinite(row.value)
            # CPU time moves in 10 ms ticks: a few events may take less than one
            assert row.value >= 0 if what == "CPU per event" else row.value > 0, row.name
            if peer is peers.WORKER:
                assert row.baseline is None
            else:
                assert row.baseline == f"{peers.WORKER.name} {what}"
                if by_name[row.baseline].value:
                    assert row.ratio == pytest.approx(row.value / by_name[row.baseline].value)
        written = by_name[f"{peer.name} snapshots written"].value
        assert TINY.conversations <= written <= TINY.events
