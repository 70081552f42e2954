"""The trace context middleware on a real aiohttp server: a request is served in a span of
its caller's trace (a child of the caller's span), else of a new trace; an invalid
traceparent is ignored, never an error; probes make no spans."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from opentelemetry import trace

from goaicore.tracing import context_of, record_headers
from goaicore_store.http import json_errors, trace_context
from goaicore_store.http.errors import ApiError
from tests.tracing import new_traceparent, recorded_spans

Client = TestClient[web.Request, web.Application]


async def carried(request: web.Request) -> web.Response:
    """The trace context a record published while serving this request would carry."""
    return web.json_response({name: value.decode() for name, value in record_headers()})


async def refuse(request: web.Request) -> web.Response:
    raise ApiError(409, "not now")


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    app = web.Application(middlewares=[json_errors, trace_context])
    app.router.add_post("/v1/conversations/{conversation_id}/events", carried)
    app.router.add_post("/refuse", refuse)
    app.router.add_get("/health", carried)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


def span_context_of(headers: dict[str, str]) -> trace.SpanContext:
    return trace.get_current_span(context_of(headers)).get_span_context()


async def carried_by(client: Client, headers: dict[str, str]) -> trace.SpanContext:
    answer = await client.post("/v1/conversations/c-1/events", headers=headers)
    assert answer.status == 200
    return span_context_of(await answer.json())


async def test_a_request_continues_its_callers_trace_in_a_span_of_its_own(
    client: Client,
) -> None:
    spans = recorded_spans()
    traceparent, trace_id = new_traceparent()
    caller = span_context_of({"traceparent": traceparent})
    served = await carried_by(client, {"traceparent": traceparent, "tracestate": "game=1"})
    assert format(served.trace_id, "032x") == trace_id
    assert served.span_id != caller.span_id
    assert served.trace_state.get("game") == "1"
    [span] = [s for s in spans.get_finished_spans() if s.context.span_id == served.span_id]
    assert span.name == "POST /v1/conversations/{conversation_id}/events"  # no ids in it
    assert span.kind == trace.SpanKind.SERVER
    assert span.parent is not None
    assert span.parent.span_id == caller.span_id
    assert span.attributes is not None
    assert span.attributes["http.response.status_code"] == 200


async def test_without_a_traceparent_each_request_is_a_new_trace(client: Client) -> None:
    first = await carried_by(client, {})
    second = await carried_by(client, {})
    assert first.is_valid
    assert second.is_valid
    assert first.trace_id != second.trace_id


@pytest.mark.parametrize(
    "invalid",
    [
        "",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + "x" * 4000,
    ],
)
async def test_an_invalid_traceparent_is_ignored(client: Client, invalid: str) -> None:
    served = await carried_by(client, {"traceparent": invalid})
    assert served.is_valid
    assert format(served.trace_id, "032x") != "4bf92f3577b34da6a3ce929d0e0e4736"


async def test_a_refusal_is_still_a_json_answer(client: Client) -> None:
    traceparent, _ = new_traceparent()
    answer = await client.post("/refuse", headers={"traceparent": traceparent})
    assert answer.status == 409
    assert await answer.json() == {"error": {"type": "conflict", "message": "not now"}}


async def test_a_probe_makes_no_span(client: Client) -> None:
    spans = recorded_spans()
    traceparent, trace_id = new_traceparent()
    answer = await client.get("/health", headers={"traceparent": traceparent})
    assert answer.status == 200
    finished = spans.get_finished_spans()
    assert not [s for s in finished if format(s.context.trace_id, "032x") == trace_id]
