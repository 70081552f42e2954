"""The store worker's Faust app (id ``<prefix>.store``): fold agent, chat agent, HTTP views.

The table's changelog topic IS ``<prefix>.snapshots`` (compacted, Avro
ConversationSnapshot values, keyed by conversation id), so any consumer can
read a conversation's latest snapshot from that topic, and a restarted
worker recovers its table from it. Snapshots are staged and written once per
GOAICORE_SNAPSHOT_FLUSH_MS under a backlog (``WriteCache``); offsets of ``events``
are committed after the table's changelog writes; an event seen again after a crash is at or
below the snapshot's last position and changes nothing (the fold is idempotent).

The chat agent (``goaicore_store.chat.agent``) answers ``requests`` from the
same table, and the HTTP API (``goaicore_store.http``) serves it. This module
builds them all into a :class:`goaicore_store.topology.StoreApp`; they import
only the topology, never this module.
"""

from __future__ import annotations

import logging
import socket
from functools import partial
from pathlib import Path
from typing import Any

import faust

from goaicore.conversation.pricing import PriceTable
from goaicore.conversation.providers.choice import Providers
from goaicore.fold.native import snapshot_size
from goaicore.kafka.faust.disk_table import lock_table_dir, store_url
from goaicore.kafka.faust.durable_table import DurableTable
from goaicore.kafka.faust.lanes import add_batch_lane
from goaicore.kafka.faust.recovery import SteadyTableManager
from goaicore.kafka.faust.write_cache import WriteCache
from goaicore.kafka.high_watermarks import HighWatermarks
from goaicore.kafka.limits import max_batch_bytes, topic_max_message_bytes
from goaicore.kafka.partitioner import partition_for
from goaicore.kafka.profile import client_profile, faust_broker_urls
from goaicore.kafka.security import faust_credentials
from goaicore.kafka.topics import erasure_configs
from goaicore.net import free_loopback_port
from goaicore.records import ConversationSnapshot, LogPosition
from goaicore.sealing.keyring import master_keys
from goaicore.settings import Settings
from goaicore.store.limits import OutputLimits
from goaicore.store.reply_streams import ReplyStreams
from goaicore.store.turns import TurnSettings
from goaicore.threads import ThreadPool
from goaicore_store.chat.agent import ChatAgent
from goaicore_store.chat.tools import DEFAULT_TOOLS, load_tools, traced
from goaicore_store.codecs import CODEC, KEY_CODEC, REPLIES_CODEC, SNAPSHOT_CODEC, register
from goaicore_store.fold_agent import FOLD_BATCH, apply_batch
from goaicore_store.http import (
    BearerTokens,
    bearer_auth,
    json_errors,
    register_history_views,
    register_views,
    trace_context,
)
from goaicore_store.http.server import ApiApp
from goaicore_store.intake_agent import INTAKE_BATCH, seal_batch
from goaicore_store.keys import ConversationKeys
from goaicore_store.metrics import StoreMetrics, faust_monitor
from goaicore_store.port import worker_store
from goaicore_store.topology import ChatServices, StoreApp, app_id

log = logging.getLogger(__name__)

ROCKSDB_BLOCK_CACHE_BYTES = 64 * 1024 * 1024
REWRAP_INTERVAL = 10.0  # seconds between looks for keys an older master key wraps


def keyed_table(
    app: faust.App, name: str, changelog: Any, codec: str, partitions: int
) -> DurableTable:
    """A table keyed by conversation id whose changelog is ``changelog``, values in ``codec``.

    It writes its changelog itself (:class:`DurableTable`), each record to its key's
    partition (the rule every producer of ours uses), with the changelog topic's
    serializers: raw keys, ``codec`` values. ``use_partitioner`` tells Faust the same.
    """
    table = DurableTable(
        app,
        name=name,
        default=None,
        beacon=app.tables.beacon,
        changelog_topic=changelog,
        partitions=partitions,
        use_partitioner=True,
    )
    app.tables.add(table)
    table.key_serializer = "raw"
    table.value_serializer = codec
    return table


def log_topic(
    app: faust.App,
    settings: Settings,
    name: str,
    value_serializer: str = "raw",
    *,
    acks: bool = True,
) -> Any:
    """One of goaicore's topics (created by ``goaicore create-topics``), keys raw.

    ``acks=False`` for a table's changelog, as Faust makes its own: the worker writes
    it and reads it only to recover, so its offsets are never acknowledged, and an
    acking topic whose end runs ahead of the consumer's position looks to Faust's
    monitor like a stalled stream (an error every few seconds once the worker has
    run for ``stream_processing_timeout``).
    """
    return app.topic(
        settings.topic(name),
        key_serializer="raw",
        value_serializer=value_serializer,
        partitions=settings.partitions,
        internal=False,
        acks=acks,
    )


def create_app(
    settings: Settings,
    web_port: int | None = None,
    data_dir: Path | None = None,
    web_host: str = "127.0.0.1",
    canonical_url: str | None = None,
) -> StoreApp:
    """The store app; ``web_host`` is where HTTP binds, ``canonical_url`` how peers reach it.

    Workers forward requests to the owner of a conversation at its canonical URL, so in
    a container it must be an address the other workers can resolve (the pod IP, the
    compose service name), never 0.0.0.0.
    """
    register()
    port = web_port or free_loopback_port()
    url = canonical_url or default_canonical_url(web_host, port)
    datadir = data_dir or settings.data_dir / "store"
    datadir.mkdir(parents=True, exist_ok=True)
    on_disk = settings.table_store == "rocksdb"
    table_lock = lock_table_dir(datadir) if on_disk else None
    partitions = settings.partitions
    app = ApiApp(
        app_id(settings),
        broker=faust_broker_urls(settings),
        store=store_url(settings.table_store),
        # Each partition's database caches at most this much (Faust's default is 2 GiB).
        rocksdb_options={"block_cache_size": ROCKSDB_BLOCK_CACHE_BYTES},
        topic_partitions=partitions,
        table_standby_replicas=1,
        TableManager=SteadyTableManager,  # a watchdog on table recovery
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        producer_max_request_size=max_batch_bytes(settings),
        web_host=web_host,
        web_bind=web_host,  # Faust binds 0.0.0.0 unless told; web_host only names the URL
        web_port=port,
        canonical_url=url,
        # Only our API: Faust's own pages (tables, router, stats, graph) are off.
        web_router_enabled=False,
        web_tables_enabled=False,
        web_stats_enabled=False,
        web_graph_enabled=False,
        web_metrics_enabled=False,
        web_application_options={
            "middlewares": [
                json_errors,
                trace_context,  # inside json_errors: every answer is made in the request's trace
                bearer_auth(BearerTokens(settings.http_tokens)),
            ],
            "client_max_size": settings.max_record_bytes + 64 * 1024,
        },
        datadir=str(datadir),
        # Faust's own topics (the replies changelog, the assignor's) get the cluster's
        # replication like ours; Faust's default of 1 would lose them with one broker.
        topic_replication_factor=_replication(settings),
        broker_credentials=faust_credentials(settings),
        # A turn's events go in one record batch when they fit the record limit
        # (ChatAgent.append); the embedded profile keeps one record per batch.
        **{"producer_max_batch_size": settings.max_record_bytes, **client_profile(settings).faust},
    )
    metrics = StoreMetrics()
    # faust-streaming's own sensors, in the same registry and under the same prefix.
    app.monitor = faust_monitor(metrics.registry)
    CODEC.on_encoded = metrics.snapshot_sizes.observe
    events = log_topic(app, settings, "events")
    snapshots = log_topic(app, settings, "snapshots", SNAPSHOT_CODEC, acks=False)
    table = keyed_table(app, "snapshots", snapshots, SNAPSHOT_CODEC, partitions)
    store = StoreApp(
        app=app,
        settings=settings,
        events=events,
        intake=log_topic(app, settings, "intake"),
        snapshots=snapshots,
        dead_letters=log_topic(app, settings, "dead-letters"),
        requests=log_topic(app, settings, "requests"),
        replies=log_topic(app, settings, "replies"),
        reply_stream=log_topic(app, settings, "reply-stream"),
        table=table,
        snapshot_writes=WriteCache(
            table,
            settings.snapshot_flush_ms / 1000,
            settings.snapshot_flush_bytes,
            snapshot_size,
        ),
        replies_table=_replies_table(app, settings),
        keys=_keys(app, settings, table),
        chat=_chat_services(settings),
        metrics=metrics,
        web_port=port,
        table_lock=table_lock,
    )
    add_batch_lane(app, events, partial(apply_batch, store), FOLD_BATCH, store.snapshot_writes)
    add_batch_lane(app, store.intake, partial(seal_batch, store), INTAKE_BATCH)
    conversations = worker_store(store)
    chat = ChatAgent(store, store.chat, conversations.backend)
    app.agent(store.requests, name="chat")(chat.consume)
    app.timer(REWRAP_INTERVAL, name="rewrap-keys")(partial(rewrap_keys, store))
    watermarks = [store.chat.watermarks, store.chat.intake_watermarks]

    async def stop_clients(sender: Any, *args: Any, **kwargs: Any) -> None:
        for each in watermarks:
            if each is not None:
                await each.stop()
        # Faust closes its loop without finalising async generators, so the providers'
        # HTTP clients are closed here, while it still runs.
        await store.chat.providers.aclose()

    app.on_before_shutdown.connect(stop_clients)  # type: ignore[arg-type]

    async def close_store(sender: Any, *args: Any, **kwargs: Any) -> None:
        await conversations.close()

    app.on_before_shutdown.connect(close_store)  # type: ignore[arg-type]
    register_views(store, conversations)
    register_history_views(store, conversations)
    return store


async def rewrap_keys(store: StoreApp) -> None:
    """Master key rotation: wrap the keys of the conversations this worker owns (their
    events partitions are assigned to it) again under the current master key."""
    events = store.events.get_topic_name()
    owned = {tp.partition for tp in store.app.assignor.assigned_actives() if tp.topic == events}
    partitions = store.settings.partitions
    done = await store.keys.rewrap_owned(lambda c: partition_for(c, partitions) in owned)
    if done:
        log.info("wrapped %d data keys again under the current master key", done)


def default_canonical_url(web_host: str, port: int) -> str:
    """How peers reach a worker bound to ``web_host``: a wildcard bind means this host's name."""
    host = socket.gethostname() if web_host in ("0.0.0.0", "::", "") else web_host
    return f"http://{host}:{port}"


def _takes_intake(settings: Settings) -> bool:
    """Whether publishers write to ``intake`` here: the workers seal, or it is set so."""
    return settings.master_keys is not None or settings.intake


def _replication(settings: Settings) -> int:
    factor = settings.replication_factor
    return 1 if settings.embedded_broker or factor < 1 else factor


def _replies_table(app: faust.App, settings: Settings) -> Any:
    """Recent replies per conversation, for idempotent requests (see goaicore.store.idempotency).

    Keyed by conversation id and partitioned like every topic, so a conversation's
    replies recover on the worker that owns the conversation.
    """
    partitions = settings.partitions
    changelog = app.topic(
        f"{app_id(settings)}-replies-changelog",
        key_serializer="raw",
        value_serializer=REPLIES_CODEC,
        partitions=partitions,
        compacting=True,
        internal=True,
        allow_empty=True,
        acks=False,  # a changelog (see log_topic)
        config={
            "max.message.bytes": str(topic_max_message_bytes(settings)),
            **erasure_configs("compacted", settings),  # erased replies leave the disk too
        },
    )
    return keyed_table(app, "replies", changelog, REPLIES_CODEC, partitions)


def _keys(app: faust.App, settings: Settings, snapshots: Any) -> ConversationKeys:
    """The data keys of this worker's conversations; the keys topic is their changelog."""
    changelog = log_topic(app, settings, "keys", KEY_CODEC, acks=False)
    table = keyed_table(app, "keys", changelog, KEY_CODEC, settings.partitions)

    def erased_before(conversation_id: str) -> LogPosition | None:
        snapshot: ConversationSnapshot | None = snapshots.get(conversation_id.encode())
        return snapshot.erased_before if snapshot is not None else None

    return ConversationKeys(table, master_keys(settings), erased_before)


def _chat_services(settings: Settings) -> ChatServices:
    """The chat agent's LLM providers, tools, limits and the log's high watermarks."""
    limits = OutputLimits.for_record_limit(
        settings.max_record_bytes, sealed=settings.master_keys is not None
    )
    return ChatServices(
        providers=Providers(settings, transport="aiohttp"),  # closed at shutdown
        registry=traced(load_tools(settings.tools or DEFAULT_TOOLS)),
        turn=TurnSettings(
            system_prompt=settings.system_prompt,
            turn_timeout=settings.turn_timeout,
            context_tokens=settings.context_tokens,
            max_tool_result_bytes=limits.tool_result_bytes,
            prices=PriceTable.from_file(settings.prices) if settings.prices else PriceTable(),
            tool_pool=ThreadPool(settings.tool_threads, "goaicore-tools"),
        ),
        watermarks=HighWatermarks(settings),
        intake_watermarks=HighWatermarks(settings, "intake") if _takes_intake(settings) else None,
        streams=ReplyStreams(),
        concurrency=settings.chat_concurrency,
        read_wait=settings.read_wait,
        limits=limits,
    )
