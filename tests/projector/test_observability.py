"""The projector process: /metrics and /health on its own port, and its positions
reported to a consumer group after each commit (for lag tools; PostgreSQL stays the truth)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from kafka import KafkaAdminClient, KafkaProducer
from opentelemetry import trace
from prometheus_client.parser import text_string_to_metric_families

from goaicore.config import Settings
from goaicore.net import free_loopback_port
from goaicore.projection.projector import group_id
from goaicore.records import UserMessage, new_event
from tests.kafka.helpers import wait_until
from tests.projector.helpers import ProjectorProcess, project, publish, query
from tests.tracing import recorded_spans


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, text = _get(f"{url}/metrics")
    assert status == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _state(url: str) -> str:
    status, body = _get(f"{url}/health")
    return str(json.loads(body)["state"]) if status == 200 else ""


def test_metrics_health_and_group_positions_follow_what_is_written(projection: Settings) -> None:
    port = free_loopback_port()
    url = f"http://127.0.0.1:{port}"
    events = [new_event(f"obs-{n % 4}", UserMessage(text=f"m{n}")) for n in range(40)]
    logged = publish(projection, events)
    producer = KafkaProducer(bootstrap_servers=projection.require_bootstrap())
    events_topic = projection.topic("events")
    producer.send(events_topic, key=b"obs-0", value=b"\xc3\x01garbage").get(10)
    producer.close()
    # Its log in JSON lines, too (GOAICORE_LOG_FORMAT=json, passed on as every setting is).
    process = ProjectorProcess(
        projection.with_overrides(log_format="json"), "--http-port", str(port)
    ).start()
    try:
        wait_until(lambda: _reachable(url), 90, "no /health")
        # /health answers from the start; the tables exist once the projector projects.
        wait_until(lambda: _state(url) == "projecting", 90, "the projector did not start")
        wait_until(
            lambda: query(projection, "SELECT count(*) FROM conversation_events")[0][0] == 40,
            90,
            "the events were not projected",
        )
        status, body = _get(f"{url}/health")
        assert (status, json.loads(body)) == (200, {"status": "ok", "state": "projecting"})
        ends: dict[int, int] = {}
        for _, position in logged:
            ends[position.partition] = max(ends.get(position.partition, 0), position.offset + 1)

        def settled() -> bool:
            samples = _samples(url)
            lags = [v for (n, _), v in samples.items() if n == "goaicore_projector_lag"]
            return bool(lags) and not any(lags)

        wait_until(settled, 90, "the lag did not reach 0")
        samples = _samples(url)
        assert samples[("goaicore_projector_rows_total", (("table", "conversation_events"),))] == 40
        assert samples[("goaicore_projector_batch_seconds_count", ())] >= 1
        # A record of events that does not decode is the store worker's dead letter:
        # the projector counts it skipped and writes none.
        assert samples[("goaicore_projector_dead_letters_total", ())] == 0
        assert samples[("goaicore_projector_skipped_total", (("reason", "truncated"),))] == 1
        positions = {
            int(dict(labels)["partition"]): value
            for (name, labels), value in samples.items()
            if name == "goaicore_projector_position" and dict(labels)["topic"] == events_topic
        }
        # The undecodable record advanced its partition's position by one more.
        assert sum(positions.values()) == sum(ends.values()) + 1
        assert _get(f"{url}/nowhere")[0] == 404

        admin = KafkaAdminClient(bootstrap_servers=projection.require_bootstrap())
        try:

            def reported() -> dict[int, int]:
                group = group_id(projection)
                offsets = admin.list_group_offsets({group: None}).get(group, {})
                return {
                    tp.partition: int(o.offset)
                    for tp, o in offsets.items()
                    if tp.topic == events_topic
                }

            wait_until(
                lambda: reported() == positions, 90, "the group's offsets are not the positions"
            )
        finally:
            admin.close()
    finally:
        assert process.stop() == 0, process.log()[-3000:]
    lines = [json.loads(line) for line in process.log().splitlines() if line.strip()]
    [dead] = [line for line in lines if line["message"].startswith("skipped")]
    assert (dead["topic"], dead["level"]) == (events_topic, "WARNING")
    assert isinstance(dead["partition"], int)
    assert isinstance(dead["offset"], int)


def _reachable(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/health", timeout=2)
        return True
    except OSError:
        return False


def test_a_batch_span_links_the_traces_its_records_carry(projection: Settings) -> None:
    spans = recorded_spans()
    tracer = trace.get_tracer("game")
    with tracer.start_as_current_span("game.session") as session:
        publish(projection, [new_event("linked", UserMessage(text=f"m{n}")) for n in range(3)])
    project(projection)
    batches = [s for s in spans.get_finished_spans() if s.name == "projector.batch"]
    linked = {link.context.trace_id for batch in batches for link in batch.links}
    assert session.get_span_context().trace_id in linked
    written = [(batch.attributes or {}).get("goaicore.events") for batch in batches]
    assert sum(n for n in written if isinstance(n, int)) >= 3
