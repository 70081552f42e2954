"""Bare Faust agents over the events topic: the baselines for the fold's throughput.

Same broker, same client profile, same topic as the store worker; they decode
nothing. ``--mode count`` counts records one event at a time (Faust's own floor);
``--mode changelog`` does what the fold does around its work, and nothing else: it
takes events in Faust's batches (``take_events``, the window the fold used before
its batch lane) and writes one changelog record per touched key per batch to a
table (each key's count). Either writes one record to ``<prefix>.bench-count``
(its value the count) at its first and second events and when it has seen
``--expect`` events, so a run is timed from broker timestamps like the store
worker's, the first event being a warm-up.
"""

from __future__ import annotations

import argparse
from typing import Any

from goaicore.extras import needs
from goaicore.kafka.faust.worker import QuietWorker
from goaicore.kafka.profile import client_profile, faust_broker_urls
from goaicore.kafka.security import faust_credentials
from goaicore.net import free_loopback_port
from goaicore.settings import Settings

with needs("worker"):
    import faust

# Faust's batching for the changelog baseline: the fold's batch size, and the
# window it used with take_events.
BATCH = 2000
WITHIN = 0.05
MARKED = (1, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--mode", choices=("count", "changelog"), default="count")
    args = parser.parse_args()
    settings = Settings()
    app = faust.App(
        f"{settings.topic_prefix}.bench-{args.mode}",
        broker=faust_broker_urls(settings),
        store="memory://",
        topic_partitions=settings.partitions,
        consumer_auto_offset_reset="earliest",
        web_port=free_loopback_port(),
        web_host="127.0.0.1",
        datadir=str(settings.data_dir / f"bench-{args.mode}"),
        broker_credentials=faust_credentials(settings),
        **client_profile(settings).faust,
    )
    events = app.topic(
        settings.topic("events"), key_serializer="raw", value_serializer="raw", internal=False
    )
    marks = app.topic(
        settings.topic("bench-count"),
        key_serializer="raw",
        value_serializer="raw",
        partitions=1,
        internal=False,
    )
    seen = [0]

    async def mark_up_to(count: int) -> None:
        before = seen[0]
        seen[0] = count
        for mark in (*MARKED, args.expect):
            if before < mark <= count:
                await marks.send(key=b"mark", value=str(mark).encode())

    if args.mode == "count":
        counts: dict[bytes, int] = {}

        @app.agent(events)
        async def count(stream: Any) -> None:
            async for event in stream.events():
                key = event.message.key
                counts[key] = counts.get(key, 0) + 1
                await mark_up_to(seen[0] + 1)

    else:
        table = app.Table(
            "counts",
            default=int,
            key_type=bytes,
            value_type=int,
            partitions=settings.partitions,
            use_partitioner=True,  # a batch holds keys of every partition, as the fold's
        )

        @app.agent(events)
        async def changelog(stream: Any) -> None:
            async for batch in stream.take_events(BATCH, within=WITHIN):
                touched: dict[bytes, int] = {}
                for event in batch:
                    key = event.message.key
                    touched[key] = touched.get(key, table[key]) + 1
                for key, value in touched.items():
                    table[key] = value
                await mark_up_to(seen[0] + len(batch))

    QuietWorker(app, loglevel="warning").execute_from_commandline()


if __name__ == "__main__":
    main()
