"""The store worker's Prometheus metrics, all named ``goaicore_*``, served at ``/metrics``.

One registry per app (a process may build several in tests), holding faust-streaming's
own sensors (``goaicore_messages_received``, ``goaicore_topic_messages_sent``, ...,
from :mod:`faust.sensors.prometheus`) and the fold's and the chat's metrics below.
docs/operations.md lists each with what it counts.
"""

from __future__ import annotations

import bisect
import collections
import time
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field
from typing import Any

from faust.sensors.prometheus import FaustMetrics, PrometheusMonitor
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from goaicore.conversation.errors import ChatError
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.base import (
    Completion,
    CompletionRequest,
    Provider,
    stream_or_complete,
)
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    CompactionApplied,
    ConversationEvent,
    ToolResult,
)
from goaicore.tracing import tracer

PREFIX = "goaicore"
TRACER = tracer(__name__)
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
BYTES = tuple(2**n for n in range(8, 21, 2))  # 256 B to 1 MiB


def _counter(registry: CollectorRegistry, name: str, doc: str, *labels: str) -> Counter:
    return Counter(f"{PREFIX}_{name}", doc, labels, registry=registry)


def _histogram(
    registry: CollectorRegistry, name: str, doc: str, buckets: Iterable[float], *labels: str
) -> Histogram:
    return Histogram(f"{PREFIX}_{name}", doc, labels, buckets=tuple(buckets), registry=registry)


def faust_monitor(registry: CollectorRegistry) -> PrometheusMonitor:
    """faust-streaming's own sensors in ``registry``, under our prefix, each labelled
    child looked up once (:class:`LabelledOnce`), counting batch lanes a batch at a
    time (:class:`BatchedMonitor`)."""
    metrics = FaustMetrics.create(registry, PREFIX)
    labelled: dict[str, Any] = {
        name: LabelledOnce(metric)
        for name, metric in metrics._asdict().items()
        if getattr(metric, "_labelnames", ())
    }
    return BatchedMonitor(metrics=metrics._replace(**labelled))


class BatchedMonitor(PrometheusMonitor):
    """Faust's Prometheus monitor, which also counts a batch lane's records and a batch's
    table reads at once (``goaicore.kafka.faust.lanes``): the same figures as its calls
    for each record and each read, which cost the store worker a tenth of its time."""

    def on_messages_in(self, tp: Any, count: int, last_offset: int) -> None:
        """``count`` records of ``tp`` read, up to ``last_offset``: what ``count`` calls
        of ``on_message_in`` record (but each record's arrival time, which only a
        stream's own latency figures read)."""
        self.messages_received_total += count
        self.messages_active += count
        self.messages_received_by_topic[tp.topic] += count
        self.tp_read_offsets[tp] = last_offset
        metrics = self._metrics
        metrics.messages_received.inc(count)
        metrics.active_messages.inc(count)
        metrics.messages_received_per_topics.labels(topic=tp.topic).inc(count)
        metrics.messages_received_per_topics_partition.labels(
            topic=tp.topic, partition=tp.partition
        ).set(last_offset)

    def on_table_gets(self, table: Any, count: int) -> None:
        """``count`` reads of ``table``: what ``count`` calls of ``on_table_get`` record."""
        self._table_or_create(table).keys_retrieved += count
        self._metrics.table_operations.labels(
            table=f"table.{table.name}", operation=self.KEYS_RETRIEVED
        ).inc(count)


class Observations:
    """Observations of a histogram held in a list and added together: on the next read of
    the metrics (:meth:`StoreMetrics.expose`), or once :data:`HELD` are waiting.

    ``Histogram.observe`` takes a lock and walks the buckets on every call: with a
    snapshot written per event, a twentieth of the store worker's time. Added together,
    each bucket is counted once per flush.
    """

    HELD = 4096

    def __init__(self, histogram: Histogram) -> None:
        self.histogram = histogram
        self.pending: list[float] = []

    def observe(self, amount: float) -> None:
        self.pending.append(amount)
        if len(self.pending) >= self.HELD:
            self.flush()

    def flush(self) -> None:
        amounts, self.pending = self.pending, []
        if amounts:
            observe_all(self.histogram, amounts)


def observe_all(histogram: Histogram, amounts: list[float]) -> None:
    """``histogram.observe`` of each of ``amounts``, each bucket and the sum added to once
    (prometheus_client's own fields; one call each where a histogram has others)."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for amount in amounts:
            histogram.observe(amount)
        return
    counts = collections.Counter(bisect.bisect_left(bounds, amount) for amount in amounts)
    total.inc(sum(amounts))
    for index, count in counts.items():
        buckets[index].inc(count)


class LabelledOnce:
    """A labelled Prometheus metric whose children are looked up once per label values.

    Faust's monitor asks ``labels()`` of two metrics for every record it reads and of
    another for every fetch (each time a lock, label checks and string conversions):
    5-12% of the store worker's busy time while folding. The cache is dropped
    whenever Faust removes a child (on rebalance), so no child outlives its export.
    """

    def __init__(self, metric: Any) -> None:
        self._metric = metric
        self._children: dict[Any, Any] = {}

    def labels(self, *values: Any, **labels: Any) -> Any:
        key = values or tuple(labels.items())
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._metric.labels(*values, **labels)
        return child

    def remove(self, *values: Any) -> None:
        self._children.clear()
        self._metric.remove(*values)

    def clear(self) -> None:
        self._children.clear()
        self._metric.clear()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._metric, name)


@dataclass
class StoreMetrics:
    """Every metric of one store worker."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.events_folded = _counter(r, "events_folded", "Events applied to snapshots")
        self.fold_batch_seconds = _histogram(
            r, "fold_batch_seconds", "Time to fold one fetched batch", SECONDS
        )
        self.intake_sealed = _counter(
            r, "intake_sealed", "Events taken from intake and appended (sealed) to events"
        )
        self.intake_batch_seconds = _histogram(
            r, "intake_batch_seconds", "Time to seal and append one fetched intake batch", SECONDS
        )
        self.snapshot_bytes = _histogram(
            r, "snapshot_bytes", "Encoded size of each snapshot written", BYTES
        )
        self.snapshot_sizes = Observations(self.snapshot_bytes)
        """Where the snapshots' sizes are observed: the worker writes one per event."""
        self.dead_letters = _counter(r, "dead_letters", "Records set aside, by reason", "reason")
        self.forwarded = _counter(
            r,
            "forwarded",
            "Records read in another partition than their key's, forwarded to it, by the "
            "topic they were sent to",
            "topic",
        )
        self.chat_requests = _counter(
            r, "chat_requests", "Chat requests answered, by reply status", "status"
        )
        self.turn_seconds = _histogram(
            r, "turn_seconds", "Chat turn latency, request taken up to reply", SECONDS
        )
        self.llm_seconds = _histogram(
            r, "llm_seconds", "Latency of each LLM call", SECONDS, "provider", "model"
        )
        self.llm_errors = _counter(
            r, "llm_errors", "Failed LLM calls, by error", "provider", "model", "error"
        )
        self.tokens = _counter(
            r, "llm_tokens", "Tokens sent (in) and received (out)", "provider", "model", "direction"
        )
        self.cost_usd = _counter(
            r, "llm_cost_usd", "Priced cost of the LLM calls, in US dollars", "provider", "model"
        )
        self.compactions = _counter(
            r, "compactions", "History compactions appended, by strategy", "strategy"
        )
        self.read_waits = _counter(
            r, "read_your_writes_waits", "Chat requests that waited for the fold to catch up"
        )
        self.read_timeouts = _counter(
            r, "read_your_writes_timeouts", "Waits that ran out (GOAICORE_READ_WAIT)"
        )
        self.read_wait_seconds = _histogram(
            r, "read_your_writes_seconds", "Time waited for the fold", SECONDS
        )
        self.tool_calls = _counter(r, "tool_calls", "Tool calls run, by tool", "tool")
        self.tool_errors = _counter(r, "tool_errors", "Tool calls that failed, by tool", "tool")

    def expose(self) -> bytes:
        """The Prometheus text format of every metric."""
        self.snapshot_sizes.flush()
        return generate_latest(self.registry)

    def answered(self, reply: ChatReply, events: Iterable[ConversationEvent]) -> None:
        """Count a chat request's reply and what its turn appended."""
        self.chat_requests.labels(reply.status.value).inc()
        self.turn_seconds.observe(reply.latency_ms / 1000)
        for event in events:
            body = event.body
            if isinstance(body, ToolResult):
                self.tool_calls.labels(body.name).inc()
                if body.is_error:
                    self.tool_errors.labels(body.name).inc()
            elif isinstance(body, CompactionApplied):
                self.compactions.labels(body.strategy).inc()
            elif isinstance(body, AssistantTurn) and body.cost_usd_nanos:
                provider, model = body.provider or "unknown", body.model or "unknown"
                self.cost_usd.labels(provider, model).inc(body.cost_usd_nanos / 1e9)


class MeasuredProvider:
    """A provider whose every call is timed, counted (latency, errors, tokens) and traced
    (a ``llm.call`` span in the turn's trace)."""

    def __init__(self, provider: Provider, metrics: StoreMetrics) -> None:
        self._provider = provider
        self._metrics = metrics

    @property
    def name(self) -> str:
        return self._provider.name

    @property
    def model(self) -> str:
        return self._provider.model

    async def complete(self, request: CompletionRequest) -> Completion:
        return await self._measured(self._provider.complete(request))

    async def stream(self, request: CompletionRequest, on_text: TextSink) -> Completion:
        """The provider's stream where it has one (else its whole completion as one
        piece), measured as ``complete`` is."""
        return await self._measured(stream_or_complete(self._provider, request, on_text))

    async def _measured(self, call: Awaitable[Completion]) -> Completion:
        labels = (self._provider.name, self._provider.model)
        started = time.perf_counter()
        with TRACER.start_as_current_span(
            "llm.call",
            kind=SpanKind.CLIENT,
            attributes={"gen_ai.system": labels[0], "gen_ai.request.model": labels[1]},
        ) as span:
            try:
                completion = await call
            except ChatError as err:
                self._metrics.llm_errors.labels(*labels, type(err).__name__).inc()
                raise
            finally:
                self._metrics.llm_seconds.labels(*labels).observe(time.perf_counter() - started)
            span.set_attribute("gen_ai.usage.input_tokens", completion.usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", completion.usage.completion_tokens)
        usage = completion.usage
        self._metrics.tokens.labels(*labels, "in").inc(usage.prompt_tokens)
        self._metrics.tokens.labels(*labels, "out").inc(usage.completion_tokens)
        return completion

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)
