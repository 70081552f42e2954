"""Peers: the store worker beside Kafka Streams and Quix Streams, folding the same events.

On Apache Kafka only (the embedded broker's runs are skipped). For each shape the events
are made once by goaicore's generator, and each system gets the same encoded events on
topics of its own (a fresh prefix per run): it is started, warmed up (the one warm-up
event and a warm-up batch of 20,000 events on conversations of their own, folded before
timing, so Kafka Streams' JVM has compiled its hot paths), given a few seconds to
settle, then the events are published at once and it is timed from the publishing to
the broker's append time of its last output snapshot (the output topic has
``message.timestamp.type=LogAppendTime``). Each figure is the median of interleaved
runs (worker, Kafka Streams, Quix, then again), beside the store worker's in the same
run as a ratio. Where the compiled core is installed, the store worker also runs in
pure Python (``GOAICORE_NATIVE=off``), whose ratio is what the core buys (the Quix app
folds with goaicore's fold, so the core runs in it too):

- events/s over the timed events;
- CPU µs per event: the folding process's user and system time (all its threads) from
  the publishing to its last output, over the number of events;
- snapshots written for the timed events: one per event, or one per key per batch or
  commit, as each system emits them.

The work each does per event:

- the store worker: goaicore's fold (validation, duplicates, bounds, anomalies), the
  snapshot encoded with goaicore's encoder, written in its transactions (effectively
  once);
- Kafka Streams (``java/KafkaStreamsFold.java``): ``groupByKey().aggregate()`` of a
  ConversationSnapshot Avro record (the message appended, counts, last position), in its
  state store and on the output topic; at-least-once, ``commit.interval.ms=100``;
- Quix Streams (:mod:`goaicore.bench.quix_app`): goaicore's fold and encoder in a
  stateful dataframe; at-least-once, Quix's default.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from goaicore.bench import kafka_streams, quix_app
from goaicore.bench.brokers import broker_settings
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.bench.store import (
    WORKER_PROCESS,
    Process,
    Run,
    Shape,
    _all_folded,
    _events,
    timed_run,
)
from goaicore.extras import MissingExtraError, needs
from goaicore.kafka.connection import make_admin
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.topics import TOPICS, ensure_topics, topic_configs
from goaicore.records import ConversationEvent
from goaicore.records.avro.native import native_module
from goaicore.settings import Settings

with needs("kafka"):
    from kafka.admin import NewTopic

SUITE = "peers"
SHAPES = (Shape(200, 100), Shape(10_000, 10))
REPEATS = 3  # interleaved runs of each system, whose median is reported
WARM_UP = Shape(500, 40)
"""Folded before timing, on conversations of their own: 20,000 events, past the
invocations after which the JVM compiles a method with its optimizing compiler (C2),
so Kafka Streams is timed warm (a warm-up of 2,000 left it about 15% more CPU)."""
OUTPUT = "snapshots"
NOTE = "loopback, one process each"


@dataclass(frozen=True)
class Peer:
    """A system folding the events: how it is run, the guarantee it runs with."""

    name: str
    process: Process
    guarantee: str
    work: str
    native: bool = True
    """Whether goaicore's compiled core runs in it, where it is installed."""


def _folded(last: dict[bytes, int], published: int) -> Callable[[list[Any]], bool]:
    return _all_folded(last)


WORKER = Peer(
    "store worker",
    WORKER_PROCESS,
    "effectively-once",
    "goaicore's fold, snapshots encoded with goaicore's encoder",
)
PURE_PYTHON = Peer(
    "store worker in pure Python",
    WORKER_PROCESS,
    "effectively-once",
    "the store worker with GOAICORE_NATIVE=off: every record read, written and folded "
    "in Python alone",
    native=False,
)
KAFKA_STREAMS = Peer(
    kafka_streams.LABEL,
    Process(lambda settings, total: kafka_streams.command(settings, OUTPUT), OUTPUT, _folded),
    kafka_streams.GUARANTEE,
    "groupByKey().aggregate() of a ConversationSnapshot Avro record: message appended, "
    "counts, last position; no validation",
)
QUIX = Peer(
    "Quix Streams 3.28",
    Process(
        lambda settings, total: [
            *(sys.executable, "-m", "goaicore.bench.quix_app", "--output", OUTPUT)
        ],
        OUTPUT,
        _folded,
    ),
    quix_app.GUARANTEE,
    "goaicore's fold and encoder in a stateful dataframe, the same work as the store worker",
)
PEERS = (
    (WORKER, PURE_PYTHON, KAFKA_STREAMS, QUIX)
    if native_module() is not None
    else (WORKER, KAFKA_STREAMS, QUIX)
)
"""Every system compared here: the store worker in pure Python too where the compiled
core is installed (and not switched off), to show what it buys."""
NAMES = ("events/s", "CPU per event", "snapshots written")


def unavailable_reason() -> str | None:
    """Why the peers cannot run here (no Java, no Maven, no quixstreams), else None."""
    if importlib.util.find_spec("quixstreams") is None:
        return "quixstreams is not installed; it comes with: pip install 'goaicore[peers]'"
    return kafka_streams.unavailable_reason()


def fresh_settings(settings: Settings) -> Settings:
    """``settings``' topics created, the output topic stamped with the broker's append
    time (what each run is timed to)."""
    spec = next(t for t in TOPICS if t.name == OUTPUT)
    admin = make_admin(settings)
    try:
        configs = {**topic_configs(spec, settings), "message.timestamp.type": "LogAppendTime"}
        admin.create_topics(
            [NewTopic(settings.topic(OUTPUT), settings.partitions, 1, topic_configs=configs)]
        )
    finally:
        admin.close()
    ensure_topics(settings)
    return settings


def measure(
    make_settings: Callable[[str, Path], Settings],
    folder: Path,
    shapes: Sequence[Shape] = SHAPES,
    repeats: int = REPEATS,
    warm_up: Shape = WARM_UP,
) -> list[Measurement]:
    """The rows of every shape; ``make_settings(prefix, data_dir)`` gives a run its
    settings on the broker (topics not yet created)."""
    reason = unavailable_reason()
    if reason is not None:
        raise MissingExtraError(f"the peers suite cannot run: {reason}")
    count = 0

    def run(peer: Peer, events: list[ConversationEvent], warm: list[ConversationEvent]) -> Run:
        nonlocal count
        count += 1
        data_dir = folder / f"run-{count}"
        data_dir.mkdir(parents=True)
        settings = make_settings(f"peers-{count}", data_dir)
        native = peer.native and native_module() is not None
        settings = fresh_settings(settings.with_overrides(native="auto" if native else "off"))
        return timed_run(peer.process, settings, events, warm, from_publish=True)

    rows: list[Measurement] = []
    for shape in shapes:
        # Made once: every system gets the same events, encoded to the same bytes.
        events = _events(shape)
        warm = _events(warm_up, prefix="warm")
        runs: dict[str, list[Run]] = {peer.name: [] for peer in PEERS}
        for _ in range(repeats):
            for peer in PEERS:
                runs[peer.name].append(run(peer, events, warm))
        rows += _rows(shape, runs, repeats)
    return rows


def _rows(shape: Shape, runs: dict[str, list[Run]], repeats: int) -> list[Measurement]:
    params = shape.params
    rows = []
    for peer in PEERS:
        done = runs[peer.name]
        figures = (
            (statistics.median(shape.events / max(r.seconds, 1e-3) for r in done), "events/s"),
            (statistics.median(r.cpu_seconds for r in done) / shape.events * 1e6, "µs/event"),
            (statistics.median(r.outputs for r in done), "snapshots"),
        )
        runs_note = f"median of {repeats} interleaved runs" if repeats > 1 else "one run"
        note = f"{NOTE}, {runs_note}; {peer.guarantee}; {peer.work}"
        for what, (value, unit) in zip(NAMES, figures, strict=True):
            baseline = None if peer is WORKER else f"{WORKER.name} {what}"
            rows.append(
                Measurement(
                    SUITE, f"{peer.name} {what}", value, unit, dict(params), note, baseline=baseline
                )
            )
    return rows


@broker_suite(
    SUITE, only_on=("kafka", "Kafka Streams and Quix Streams are compared on Apache Kafka")
)
def peers(broker: LocalBroker) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        return measure(
            lambda prefix, data_dir: broker_settings(broker, prefix, data_dir), Path(tmp)
        )
