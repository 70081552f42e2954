"""Client settings per broker profile: the one place the embedded broker's gaps live.

Production (Apache Kafka or a compatible cluster) uses the ``standard``
profile. Its producers (the clients' aiokafka producers, sync and asyncio alike, the
projector's and tools' kafka-python producers, and the Faust worker's) all write with:

- ``acks=all``: a record is acknowledged only once every in-sync replica has
  it, so with ``min.insync.replicas=2`` losing the leader right after an
  acknowledgement loses nothing;
- idempotence: a send retried after a lost acknowledgement is not written
  twice, so the log holds each event once (the fold would skip the double by
  event id, but auditors read the log);
- ``linger_ms=5`` for the clients' and kafka-python producers: many publish calls
  share one request at a cost of at most 5 ms; the chat client's and the worker's
  producers do not linger (a chat request is waited for alone; the worker's writes come in
  batches already, and read-your-writes waits on them);
- compression: Avro text and snapshots shrink several times for little CPU, on
  the wire and on the brokers' disks. The clients' producers use ``lz4`` (their
  batches are small); the worker's Faust producer uses ``zstd``, since aiokafka
  compresses ``lz4`` at level 9 (LZ4 HC): a megabyte batch of snapshots took 15 ms
  to halve with it, and 4 ms to shrink to a third with ``zstd`` (the embedded profile
  keeps ``lz4``);
- a max request size of the record limit plus headroom, equal to the topics'
  ``max.message.bytes`` (``goaicore.kafka.limits``).

Faust uses goaicore's transport (``goaicore.kafka.faust.transport``, which fixes
a Faust race and is not a broker workaround). The ``embedded`` profile works
around the measured gaps of the embedded ``tansu`` broker (the README lists them
under "The embedded broker and its profile"), and is applied only when that
broker is in use:

- its end-offset answer (ListOffsets latest) can be wrong when the last batch
  holds several records, and Faust recovers tables up to ``end_offsets() - 1``:
  Faust produces one record per batch, and our readers take the log's end from
  the fetch high watermark instead of trusting end offsets;
- aiokafka's idempotent producer fails at start on it: the worker's producer and
  the clients' (the sync ones are facades over the asyncio ones) are not idempotent
  there (``goaicore.kafka.faust.embedded``);
- a group join takes about half the session timeout: short session, heartbeat
  and rebalance timeouts (Apache Kafka rejects sessions under 6 s by default);
- a fetch that finds no records waits its whole max wait even when records arrive
  meanwhile: a wait for new records (``goaicore.kafka.partition_watch``) fetches
  with a short max wait there (``watch_wait_ms``), a short poll, where Apache Kafka
  answers a longer fetch as soon as records arrive.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from goaicore.settings import Settings


@dataclass(frozen=True)
class ClientProfile:
    """Keyword arguments for each kind of client, for one broker profile."""

    name: str
    producer: dict[str, Any] = field(default_factory=dict)
    consumer: dict[str, Any] = field(default_factory=dict)
    faust: dict[str, Any] = field(default_factory=dict)
    aiokafka_producer: dict[str, Any] = field(default_factory=dict)
    trust_end_offsets: bool = True
    faust_scheme: str = "goaicore-kafka"
    watch_wait_ms: int = 100
    """The max wait of a fetch that waits for new records: the broker answers it as
    soon as records arrive (but on the embedded broker), else when this runs out. A wait
    for another partition waits at most this long for the fetch the broker holds."""


_PRODUCER = {"acks": "all", "enable_idempotence": True, "linger_ms": 5, "compression_type": "lz4"}

STANDARD = ClientProfile(
    name="standard",
    producer=_PRODUCER,
    consumer={},
    faust={"producer_compression_type": "zstd"},
    aiokafka_producer=_PRODUCER,
    trust_end_offsets=True,
)

EMBEDDED = ClientProfile(
    name="embedded",
    # kafka-python's idempotent producer and lz4 batches work on the embedded broker.
    producer=_PRODUCER,
    consumer={"session_timeout_ms": 2000, "heartbeat_interval_ms": 500, "fetch_max_wait_ms": 10},
    faust={
        "producer_compression_type": "lz4",
        "producer_max_batch_size": 1,
        "broker_session_timeout": 2,
        "broker_heartbeat_interval": 0.5,
        "broker_rebalance_timeout": 2,
    },
    aiokafka_producer={**_PRODUCER, "enable_idempotence": False},
    trust_end_offsets=False,
    faust_scheme="goaicore-embedded",
    watch_wait_ms=10,
)


def client_profile(settings: Settings) -> ClientProfile:
    """The profile for the broker these settings point at."""
    return EMBEDDED if settings.embedded_broker else STANDARD


def faust_broker_urls(settings: Settings) -> list[str]:
    """Faust ``broker`` URLs, with the transport of the settings' profile."""
    from goaicore.kafka.faust import register

    register()
    profile = client_profile(settings)
    servers = settings.require_bootstrap().split(",")
    return [f"{profile.faust_scheme}://{server}" for server in servers]
