"""faust-streaming's sensors: each labelled child looked up once (``LabelledOnce``), a batch
counted at once (``BatchedMonitor``), a histogram's observations added together."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from faust.types import TP
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram

from goaicore_store.metrics import BatchedMonitor, LabelledOnce, Observations, faust_monitor


def _samples(registry: CollectorRegistry, name: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(sample.labels.values()): sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def test_a_child_is_looked_up_once_and_counts_where_it_is_exported() -> None:
    registry = CollectorRegistry()
    metric = LabelledOnce(Counter("read", "records read", ["topic"], registry=registry))
    assert metric.labels(topic="events") is metric.labels(topic="events")
    metric.labels(topic="events").inc()
    metric.labels("events").inc(2)
    metric.labels(topic="requests").inc()
    assert _samples(registry, "read_total") == {("events",): 3, ("requests",): 1}


def test_a_child_removed_on_rebalance_is_not_used_again() -> None:
    registry = CollectorRegistry()
    metric = LabelledOnce(Counter("read", "records read", ["topic"], registry=registry))
    metric.labels(topic="events").inc(5)
    metric.remove("events")  # what Faust does with a topic's children on rebalance
    assert _samples(registry, "read_total") == {}
    metric.labels(topic="events").inc()
    assert _samples(registry, "read_total") == {("events",): 1}
    metric.clear()
    metric.labels(topic="events").inc()
    assert _samples(registry, "read_total") == {("events",): 1}


def test_the_monitor_caches_only_labelled_sensors() -> None:
    registry = CollectorRegistry()
    metrics = faust_monitor(registry)._metrics
    assert isinstance(metrics.messages_received_per_topics, LabelledOnce)
    assert isinstance(metrics.topic_partition_end_offset, LabelledOnce)
    assert not isinstance(metrics.messages_received, LabelledOnce)
    metrics.messages_received_per_topics.labels(topic="events").inc()
    assert _samples(registry, "goaicore_messages_received_per_topic_total") == {("events",): 1}


def _monitor_figures(monitor: Any) -> tuple[object, ...]:
    return (
        monitor.messages_received_total,
        monitor.messages_active,
        dict(monitor.messages_received_by_topic),
        dict(monitor.tp_read_offsets),
        {name: table.keys_retrieved for name, table in monitor.tables.items()},
    )


def test_a_batch_counted_at_once_counts_what_a_call_per_record_counts() -> None:
    """The lanes tell the monitor of a partition's records (and a batch's table reads)
    with one call: the figures, Faust's own and Prometheus', are those of one call each."""
    table = SimpleNamespace(name="snapshots")
    each, together = CollectorRegistry(), CollectorRegistry()
    one_by_one, batched = faust_monitor(each), faust_monitor(together)
    assert isinstance(batched, BatchedMonitor)
    batches = [(TP("events", 0), [3, 4, 5]), (TP("events", 1), [7]), (TP("events", 0), [6, 9])]
    for tp, offsets in batches:
        for offset in offsets:
            one_by_one.on_message_in(tp, offset, SimpleNamespace())  # type: ignore[arg-type]
        batched.on_messages_in(tp, len(offsets), offsets[-1])
    for _ in range(5):
        one_by_one.on_table_get(table, b"key")  # type: ignore[arg-type]
    batched.on_table_gets(table, 5)
    assert _monitor_figures(batched) == _monitor_figures(one_by_one)
    names = (
        "goaicore_messages_received_total",
        "goaicore_messages_received_per_topic_total",
        "goaicore_messages_received_per_topics_partition",
        "goaicore_active_messages",
        "goaicore_table_operations_total",
    )
    for name in names:
        assert _samples(each, name), name
        assert _samples(together, name) == _samples(each, name), name


@given(st.lists(st.floats(0, 2**22, allow_nan=False) | st.integers(0, 2**30), max_size=50))
def test_observations_added_together_make_the_histogram_each_observe_makes(
    amounts: list[float],
) -> None:
    each, together = CollectorRegistry(), CollectorRegistry()
    buckets = tuple(2**n for n in range(8, 21, 2))
    one = Histogram("sizes", "sizes", buckets=buckets, registry=each)
    held = Observations(Histogram("sizes", "sizes", buckets=buckets, registry=together))
    for amount in amounts:
        one.observe(amount)
        held.observe(amount)
    held.flush()
    for suffix in ("_bucket", "_count"):
        assert _samples(together, f"sizes{suffix}") == _samples(each, f"sizes{suffix}")
    assert _samples(together, "sizes_sum") == pytest.approx(_samples(each, "sizes_sum"))
