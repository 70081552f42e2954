"""Benchmarks of the local infrastructure: how fast the dev stack comes up."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from goaicore.bench.registry import Measurement, suite
from goaicore.kafka.embedded import EmbeddedBroker
from goaicore.kafka.topics import ensure_topics
from goaicore.projection.postgres.embedded import EmbeddedPostgres
from goaicore.settings import Settings


@suite("infra")
def infra() -> list[Measurement]:
    rows: list[Measurement] = []
    started = time.perf_counter()
    with EmbeddedBroker() as broker:
        ready = time.perf_counter() - started
        settings = Settings(
            bootstrap_servers=broker.bootstrap_servers, broker_profile="embedded", env={}
        )
        t0 = time.perf_counter()
        ensure_topics(settings)
        created = time.perf_counter() - t0
    rows.append(Measurement("infra", "embedded broker start to ready", ready * 1000, "ms"))
    rows.append(Measurement("infra", "create the seven topics", created * 1000, "ms"))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        server = EmbeddedPostgres(Path(tmp) / "pg").start()
        first = time.perf_counter() - t0
        server.stop()
        t0 = time.perf_counter()
        server = EmbeddedPostgres(Path(tmp) / "pg").start()
        again = time.perf_counter() - t0
        server.stop()
    rows.append(
        Measurement("infra", "embedded PostgreSQL first start (initdb)", first * 1000, "ms")
    )
    rows.append(Measurement("infra", "embedded PostgreSQL restart", again * 1000, "ms"))
    return rows
