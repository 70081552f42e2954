"""A bare Faust agent that only counts records: the baseline for the fold's throughput.

Same broker, same client profile, same topic as the store worker; it decodes
nothing and keeps no table. It writes one record to ``<prefix>.bench-count``
(its value the count) at its first and second events and when it has seen
``--expect`` events, so a run is timed from broker timestamps like the store
worker's, the first event being a warm-up.
"""

from __future__ import annotations

import argparse
from typing import Any

import faust

from goaicore.config import Settings
from goaicore.kafka.profile import client_profile, faust_broker_urls
from goaicore.kafka.security import faust_credentials
from goaicore.net import free_loopback_port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", type=int, required=True)
    args = parser.parse_args()
    settings = Settings()
    app = faust.App(
        f"{settings.topic_prefix}.bench-count",
        broker=faust_broker_urls(settings),
        store="memory://",
        topic_partitions=settings.partitions,
        consumer_auto_offset_reset="earliest",
        web_port=free_loopback_port(),
        web_host="127.0.0.1",
        datadir=str(settings.data_dir / "bench-count"),
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
    counts: dict[bytes, int] = {}
    seen = [0]

    @app.agent(events)
    async def count(stream: Any) -> None:
        async for event in stream.events():
            key = event.message.key
            counts[key] = counts.get(key, 0) + 1
            seen[0] += 1
            if seen[0] in (1, 2, args.expect):
                await marks.send(key=b"mark", value=str(seen[0]).encode())

    faust.Worker(app, loglevel="warning").execute_from_commandline()


if __name__ == "__main__":
    main()
