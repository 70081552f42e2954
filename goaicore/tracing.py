"""W3C trace context on records, so one ask is one trace from the client to the reply.

Publishers put a ``traceparent`` header on every record: the caller's current span
when it has one (its own tracing), else a new trace. The worker continues that
trace through the read-your-writes wait, each LLM and tool call, the event appends
and the reply, and puts its own context on the records it writes.

A request to the worker's HTTP API continues its caller's ``traceparent`` the same
way (a new trace when it has none, or an invalid one), and a snapshot carries the
context of the last event folded into it.

Only ``opentelemetry-api`` is needed for this; spans are recorded and exported
when a process sets up the SDK (:func:`setup_from_environment`, driven by the
standard ``OTEL_*`` variables, off by default).
"""

from __future__ import annotations

import atexit
import os
import random
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
_TRACE_HEADERS = (TRACEPARENT, "tracestate")
_W3C = TraceContextTextMapPropagator()

Headers = Iterable[tuple[str, bytes | str]] | Mapping[str, bytes | str] | None


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def ask_span(conversation_id: object, request_id: str) -> AbstractContextManager[trace.Span]:
    """The client span of one ask; its context goes on the request record."""
    return tracer("goaicore.clients").start_as_current_span(
        "client.ask",
        kind=trace.SpanKind.CLIENT,
        attributes={
            "goaicore.conversation_id": str(conversation_id),
            "goaicore.request_id": request_id,
        },
    )


def record_headers() -> list[tuple[str, bytes]]:
    """Headers carrying the current trace context, or a new trace's when none is active."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=_traced(otel_context.get_current()))
    return [(key, value.encode()) for key, value in carrier.items()]


def _traced(context: otel_context.Context) -> otel_context.Context:
    """``context``, or a new trace's in it when it holds no valid span."""
    if trace.get_current_span(context).get_span_context().is_valid:
        return context
    fresh = SpanContext(
        trace_id=random.getrandbits(128) or 1,
        span_id=random.getrandbits(64) or 1,
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(fresh), context)


def _trace_items(headers: Headers) -> list[tuple[str, bytes | str]]:
    """The trace context headers among ``headers`` (names lowercase), in their order."""
    items = headers.items() if isinstance(headers, Mapping) else (headers or ())
    found: list[tuple[str, bytes | str]] = []
    for key, value in items:
        name = (key.decode(errors="replace") if isinstance(key, bytes) else str(key)).lower()
        if name in _TRACE_HEADERS:
            found.append((name, value))
    return found


def context_of(headers: Headers) -> otel_context.Context:
    """The trace context a record's headers carry (an empty one when they carry none)."""
    carrier = {
        name: value.decode(errors="replace") if isinstance(value, bytes) else str(value)
        for name, value in _trace_items(headers)
    }
    return _W3C.extract(carrier)


def continued(headers: Headers) -> otel_context.Context:
    """The context a caller's headers carry when they hold a valid ``traceparent`` (an
    invalid one is ignored, as the W3C propagator does), else a new trace's: everything
    done for one HTTP request is then one trace, whether or not its caller traces."""
    return _traced(context_of(headers))


def trace_headers(headers: Headers) -> list[tuple[str, bytes]]:
    """A record's trace context headers, to carry over to a record written from it."""
    return [
        (name, value if isinstance(value, bytes) else str(value).encode())
        for name, value in _trace_items(headers)
    ]


def setup_from_environment(service: str) -> bool:
    """Record and export spans as the standard variables say; False when tracing is off.

    ``OTEL_TRACES_EXPORTER``: ``otlp`` (OTLP over HTTP/protobuf, configured by the
    ``OTEL_EXPORTER_OTLP_*`` variables), ``console``, or ``none`` (the default);
    ``OTEL_SERVICE_NAME`` names the service (default ``service``); ``OTEL_SDK_DISABLED``
    turns it all off.
    """
    exporters = [
        name.strip()
        for name in os.environ.get("OTEL_TRACES_EXPORTER", "none").split(",")
        if name.strip() and name.strip() != "none"
    ]
    if not exporters or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service)})
    provider = TracerProvider(resource=resource)
    for name in exporters:
        exporter: Any
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        elif name == "console":
            exporter = ConsoleSpanExporter()
        else:
            from goaicore.errors import ConfigError

            raise ConfigError(f"OTEL_TRACES_EXPORTER={name!r}: use otlp, console or none")
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)
    return True
