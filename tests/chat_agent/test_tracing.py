"""One ask is one trace: the client's span, then the worker's turn with its read-your-writes
wait, LLM calls, tool call, event appends and reply, exported over OTLP as the standard
OTEL_* variables say; every record written carries the trace's traceparent. The same over
the HTTP API (the caller's traceparent continued, else a new trace), and a snapshot
carries its last folded event's."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from goaicore.clients import ChatClient, EventPublisher
from goaicore.config import Settings
from goaicore.devstack.demo import wait_ready
from goaicore.kafka.partitioner import partition_for
from goaicore.records import ReplyStatus
from goaicore.records.avro.api import decode_snapshot
from goaicore.testing import OpenAIServer
from goaicore.tracing import context_of
from tests.chat_agent.helpers import ChatWorker, http, llm_env, wait_http
from tests.tracing import new_traceparent, recorded_spans, records_of, records_when, trace_of

Span = dict[str, Any]


class OtlpReceiver:
    """An OTLP/HTTP trace endpoint that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = ExportTraceServiceRequest()
                request.ParseFromString(self.rfile.read(int(self.headers["Content-Length"])))
                for resource in request.resource_spans:
                    service = next(
                        a.value.string_value
                        for a in resource.resource.attributes
                        if a.key == "service.name"
                    )
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            receiver.spans.append(
                                {
                                    "service": service,
                                    "name": span.name,
                                    "trace_id": span.trace_id.hex(),
                                    "span_id": span.span_id.hex(),
                                    "parent": span.parent_span_id.hex(),
                                }
                            )
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    endpoint = OtlpReceiver()
    yield endpoint
    endpoint.close()


def _headers_of(settings: Settings, topic: str, conversation: str) -> list[dict[str, bytes]]:
    """The headers of every record of ``conversation`` in ``topic``."""
    consumer = KafkaConsumer(bootstrap_servers=settings.require_bootstrap())
    partition = TopicPartition(topic, partition_for(conversation, settings.partitions))
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    found: list[dict[str, bytes]] = []
    for records in consumer.poll(timeout_ms=5000, max_records=1000).values():
        found += [dict(r.headers) for r in records if r.key == conversation.encode()]
    consumer.close()
    return found


def test_one_ask_is_one_connected_trace(
    topics: Settings, llm: OpenAIServer, receiver: OtlpReceiver
) -> None:
    worker = ChatWorker(
        topics,
        "traced",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_SERVICE_NAME="worker-under-test",
        **llm_env(llm),
    ).start()
    spans = recorded_spans()  # this process's spans: the game's, and the client's
    try:
        wait_http(worker.url)
        with trace.get_tracer("game").start_as_current_span("game.turn") as root:
            with EventPublisher(topics) as publisher:
                publisher.game_event("traced-1", "The player reached Leeds")
            with ChatClient(topics) as client:
                reply = client.ask("traced-1", 'call score_lookup {"team": "Leeds"}', timeout=90)
        assert reply.status == ReplyStatus.OK
        trace_id = format(root.get_span_context().trace_id, "032x")
        expected = {
            "chat.turn",
            "chat.read_your_writes",
            "llm.call",
            "tool.call",
            "chat.events.append",
            "chat.reply.store",
            "chat.reply.publish",
        }
        deadline = time.monotonic() + 60
        while {s["name"] for s in receiver.spans if s["trace_id"] == trace_id} < expected:
            assert time.monotonic() < deadline, [s["name"] for s in receiver.spans]
            time.sleep(0.2)
    finally:
        worker.stop()
    [ask] = [
        s
        for s in spans.get_finished_spans()
        if s.name == "client.ask" and s.context.trace_id == root.get_span_context().trace_id
    ]
    assert ask.parent is not None
    assert ask.parent.span_id == root.get_span_context().span_id
    mine = [s for s in receiver.spans if s["trace_id"] == trace_id]
    assert {s["service"] for s in mine} == {"worker-under-test"}
    [turn] = [s for s in mine if s["name"] == "chat.turn"]
    # The ask's context, carried by the request record.
    assert turn["parent"] == format(ask.context.span_id, "016x")
    children = {s["name"]: s for s in mine if s["parent"] == turn["span_id"]}
    assert set(children) == expected - {"chat.turn"}
    assert len([s for s in mine if s["name"] == "llm.call"]) == 2  # call, then answer
    # Every record of the trace carries it: the game event, the request, the turn's events
    # and the reply.
    for topic in ("events", "requests", "replies"):
        headers = _headers_of(topics, topics.topic(topic), "traced-1")
        assert headers, topic
        for carried in headers:
            span_context = trace.get_current_span(context_of(carried)).get_span_context()
            assert format(span_context.trace_id, "032x") == trace_id, topic


@pytest.fixture(scope="module")
def served(worker: ChatWorker) -> ChatWorker:
    """The module's worker, once it owns its partitions (an ask is answered by the owner)."""
    wait_ready(worker.url)
    return worker


def _post(url: str, body: Any, traceparent: str | None = None) -> tuple[int, Any]:
    headers = {"traceparent": traceparent} if traceparent is not None else None
    return http("POST", url, body, extra_headers=headers)


def test_an_http_event_carries_the_callers_trace(topics: Settings, served: ChatWorker) -> None:
    traceparent, trace_id = new_traceparent()
    url = f"{served.url}/v1/conversations/http-traced-event/events"
    status, answer = _post(url, {"text": "The player reached York"}, traceparent)
    assert status == 201, answer
    [event] = records_of(topics, topics.topic("events"), "http-traced-event")
    assert event.offset == answer["offset"]
    assert trace_of(event) == trace_id


def test_an_http_ask_is_one_trace_from_request_to_reply(
    topics: Settings, served: ChatWorker
) -> None:
    traceparent, trace_id = new_traceparent()
    url = f"{served.url}/v1/conversations/http-traced-ask/messages"
    status, reply = _post(url, {"text": "hello over http", "timeout": 30}, traceparent)
    assert status == 200, reply
    assert reply["text"] == "echo: hello over http"
    written = {
        topic: records_when(topics, topics.topic(topic), "http-traced-ask", count)
        for topic, count in (("requests", 1), ("events", 2), ("replies", 1))
    }
    # The request, the turn's user message and assistant turn, and the reply.
    for topic, records in written.items():
        assert [trace_of(r) for r in records] == [trace_id] * len(records), topic


def test_a_streamed_http_ask_is_one_trace_too(topics: Settings, served: ChatWorker) -> None:
    traceparent, trace_id = new_traceparent()
    request = urllib.request.Request(
        f"{served.url}/v1/conversations/http-traced-stream/messages",
        data=json.dumps({"text": "streamed over http", "timeout": 30}).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "traceparent": traceparent,
        },
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        stream = response.read().decode()
    assert "event: done" in stream, stream
    for topic, count in (("requests", 1), ("events", 2), ("replies", 1)):
        records = records_when(topics, topics.topic(topic), "http-traced-stream", count)
        assert [trace_of(r) for r in records] == [trace_id] * len(records), topic


def test_without_a_traceparent_an_http_request_is_a_new_trace_of_its_own(
    topics: Settings, served: ChatWorker
) -> None:
    url = f"{served.url}/v1/conversations/http-untraced/messages"
    status, reply = _post(url, {"text": "untraced", "timeout": 30})
    assert status == 200, reply
    status, answer = _post(
        f"{served.url}/v1/conversations/http-untraced/events", {"text": "The player left"}
    )
    assert status == 201, answer
    [request] = records_when(topics, topics.topic("requests"), "http-untraced", 1)
    [reply_record] = records_when(topics, topics.topic("replies"), "http-untraced", 1)
    *turn, event = records_when(topics, topics.topic("events"), "http-untraced", 3)
    asked = trace_of(request)
    assert asked is not None
    assert [trace_of(r) for r in [*turn, reply_record]] == [asked] * 3
    assert trace_of(event) not in (None, asked)  # the second request, a trace of its own


@pytest.mark.parametrize(
    "invalid",
    [
        "not a traceparent",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # the invalid trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # the invalid span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # the forbidden version
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",  # upper case
        "00-4bf92f3577b34da6a3ce929d0e0e473\xe9-00f067aa0ba902b7-01",
    ],
)
def test_an_invalid_traceparent_is_ignored(
    topics: Settings, served: ChatWorker, invalid: str
) -> None:
    conversation = f"http-invalid-trace-{random.getrandbits(32):08x}"
    url = f"{served.url}/v1/conversations/{conversation}/events"
    status, answer = _post(url, {"text": "The player waved"}, invalid)
    assert status == 201, answer
    [event] = records_of(topics, topics.topic("events"), conversation)
    assert trace_of(event) not in (None, "4bf92f3577b34da6a3ce929d0e0e4736")


def test_history_operations_over_http_carry_the_callers_trace(
    topics: Settings, served: ChatWorker
) -> None:
    base = f"{served.url}/v1/conversations/http-traced-history"
    status, reply = _post(f"{base}/messages", {"text": "to be undone", "timeout": 30})
    assert status == 200, reply
    records_when(topics, topics.topic("events"), "http-traced-history", 2)
    tagged, tagged_trace = new_traceparent()
    headers = {"traceparent": tagged}
    status, answer = http("PATCH", f"{base}/metadata", {"title": "Traced"}, extra_headers=headers)
    assert status == 200, answer
    undone, undone_trace = new_traceparent()
    status, answer = _post(f"{base}/undo", {}, undone)
    assert status == 200, answer
    *_, metadata, undo = records_when(topics, topics.topic("events"), "http-traced-history", 4)
    assert (trace_of(metadata), trace_of(undo)) == (tagged_trace, undone_trace)


def test_a_snapshot_carries_the_trace_of_its_last_folded_event(
    topics: Settings, served: ChatWorker
) -> None:
    url = f"{served.url}/v1/conversations/http-traced-snapshot/events"
    traces = []
    for n in range(3):
        traceparent, trace_id = new_traceparent()
        traces.append(trace_id)
        status, answer = _post(url, {"text": f"Step {n}"}, traceparent)
        assert status == 201, answer
    events = records_of(topics, topics.topic("events"), "http-traced-snapshot")
    assert [trace_of(e) for e in events] == traces
    snapshots_topic = topics.topic("snapshots")
    deadline = time.monotonic() + 30
    while True:
        snapshots = records_of(topics, snapshots_topic, "http-traced-snapshot")
        last = decode_snapshot(snapshots[-1].value).last_position if snapshots else None
        if last is not None and last.offset == events[-1].offset:
            break
        assert time.monotonic() < deadline, last
        time.sleep(0.2)
    by_offset = {e.offset: e for e in events}
    for record in snapshots:  # each snapshot written, however the events were batched
        position = decode_snapshot(record.value).last_position
        assert position is not None
        assert dict(record.headers) == dict(by_offset[position.offset].headers)
    assert trace_of(snapshots[-1]) == traces[-1]


def test_rewind_fork_and_delete_over_http_carry_the_callers_trace(
    topics: Settings, served: ChatWorker
) -> None:
    source, target = "http-traced-ops", "http-traced-ops-fork"
    base = f"{served.url}/v1/conversations/{source}"
    status, answer = _post(f"{base}/events", {"text": "Kept"})
    assert status == 201, answer
    status, answer = _post(f"{base}/events", {"text": "Rewound away"})
    assert status == 201, answer
    first = records_when(topics, topics.topic("events"), source, 2)[0]
    rewound, rewound_trace = new_traceparent()
    status, answer = _post(f"{base}/rewind", {"until_offset": first.offset}, rewound)
    assert status == 200, answer
    forked, forked_trace = new_traceparent()
    status, answer = _post(f"{base}/fork", {"to": target}, forked)
    assert status == 201, answer
    deleted, deleted_trace = new_traceparent()
    status, answer = http(
        "DELETE", base, {"reason": "traced"}, extra_headers={"traceparent": deleted}
    )
    assert status == 200, answer
    *_, rewind, delete = records_when(topics, topics.topic("events"), source, 4)
    [fork] = records_when(topics, topics.topic("events"), target, 1)
    assert (trace_of(rewind), trace_of(fork), trace_of(delete)) == (
        rewound_trace,
        forked_trace,
        deleted_trace,
    )
