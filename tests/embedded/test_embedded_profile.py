"""The embedded broker's own suite: its client profile keeps goaicore correct on it.

The main suites run on Apache Kafka where Java is here; these run on the embedded
broker always, with the ``embedded`` profile, through the cases its measured gaps
touch (``goaicore.kafka.profile``): the end offset of a many-record batch (a group of
events appended together is one), a worker's table recovered after a restart, a group
that must form quickly. ``goaicore dev`` on it is tested in tests/infra/test_devstack.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from goaicore.config import Settings
from goaicore.kafka import EmbeddedBroker, ensure_topics
from goaicore.store.kafka import KafkaConversationStore
from goaicore.testing.conformance import check_store
from tests.brokers import SessionBroker
from tests.clients import test_publish_and_history as clients_suite
from tests.clients import test_publish_together as together_suite
from tests.store import test_store_worker as store_suite
from tests.store import test_verify_shards as verify_suite
from tests.store.workers import StoreWorker


@pytest.fixture
def topics(embedded_broker: EmbeddedBroker, postgres_url: str, data_dir: Path) -> Settings:
    settings = Settings(
        env={},
        bootstrap_servers=embedded_broker.bootstrap_servers,
        broker_profile="embedded",
        topic_prefix=f"e{uuid.uuid4().hex[:12]}",
        partitions=3,
        database_url=postgres_url,
        data_dir=data_dir,
    )
    ensure_topics(settings)
    return settings


@pytest.fixture
def worker(topics: Settings) -> Iterator[StoreWorker]:
    process = StoreWorker(topics).start()
    yield process
    process.stop()


def test_clients_round_trip(topics: Settings) -> None:
    clients_suite.test_thousand_events_over_fifty_conversations_read_back_in_order(topics)


def test_end_of_log_is_found_despite_its_end_offsets(topics: Settings) -> None:
    clients_suite.test_end_of_log_is_found_when_the_last_batch_holds_many_records(topics)


async def test_groups_of_events_read_back_whole(
    topics: Settings, embedded_broker: EmbeddedBroker
) -> None:
    broker = SessionBroker(embedded_broker.bootstrap_servers, "embedded")
    await together_suite.test_a_group_that_fits_is_one_record_batch(topics, broker)
    await together_suite.test_a_group_over_the_record_limit_goes_in_whole_batches_in_order(
        topics, broker
    )


GROUP_CHECKS = (
    "append_all_in_order_then_read_after_the_last",
    "append_all_applies_an_event_id_once",
    "append_all_groups_never_interleave",
    "replace_tail",
    "undo_and_rewind_after_replace_tail",
)


async def test_the_store_appends_groups_and_replaces_over_a_worker(
    topics: Settings, worker: StoreWorker
) -> None:
    """Groups are many-record batches in ``events``: the store reads after them (and its
    worker folds them) all the same."""
    report = await check_store(lambda: KafkaConversationStore(topics), only=GROUP_CHECKS)
    report.raise_for_failures()
    assert sorted(report.passed) == sorted(GROUP_CHECKS)


def test_worker_folds_and_verify_agrees(topics: Settings, worker: StoreWorker) -> None:
    store_suite.test_worker_folds_events_into_the_snapshots_topic(topics, worker)


def test_a_restarted_worker_recovers_its_table(topics: Settings) -> None:
    store_suite.test_a_restarted_worker_recovers_its_table(topics)


def test_verify_in_processes_reads_every_partition_to_its_end(topics: Settings) -> None:
    verify_suite.test_any_number_of_processes_gives_the_report_of_one_pass(topics, 2)
