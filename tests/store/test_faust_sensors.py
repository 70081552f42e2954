"""faust-streaming's sensors with each labelled child looked up once (``LabelledOnce``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from goaicore_store.metrics import LabelledOnce, faust_monitor


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
