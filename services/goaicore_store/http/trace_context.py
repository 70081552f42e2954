"""Each HTTP request served in its caller's trace, so the records it writes carry it.

A request's valid W3C ``traceparent`` (and ``tracestate``) header is continued, as
OpenTelemetry's propagator does; without one, or with an invalid one (ignored, never
an error), the request is a new trace. Its server span is current while the
views run, so the events, chat request and history operations they publish carry it
in their ``traceparent``, and the chat worker's turn and reply continue it from the
request record. A request forwarded to the conversation's owner takes it along
(``routes.forwarded_headers``). Probes and metric scrapes are not traced.
"""

from __future__ import annotations

from aiohttp import web
from opentelemetry.trace import SpanKind

from goaicore.tracing import continued, tracer
from goaicore_store.http.auth import HEALTH_PATH, READY_PATH
from goaicore_store.http.errors import Handler
from goaicore_store.http.routes import METRICS_PATH


def route_of(request: web.Request) -> str:
    """The matched route's template (no ids from the path), or the bare method's name."""
    resource = request.match_info.route.resource
    template = resource.canonical if resource is not None else ""
    return f"{request.method} {template}".rstrip()


UNTRACED = frozenset({HEALTH_PATH, READY_PATH, METRICS_PATH})
"""Probes and scrapes: they write nothing, and a span each would flood the exporter."""


@web.middleware
async def trace_context(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Serve ``request`` in a span of its caller's trace, or of a new one."""
    if request.path in UNTRACED:
        return await handler(request)
    with tracer("goaicore.http").start_as_current_span(
        route_of(request),
        context=continued(request.headers),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": request.method},
        record_exception=False,  # an ApiError is an answer, which json_errors makes
        set_status_on_exception=False,
    ) as span:
        response = await handler(request)
        span.set_attribute("http.response.status_code", response.status)
        return response
