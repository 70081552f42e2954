"""The projector's own metrics and health, on an HTTP port of its own.

``GET /metrics``: the Prometheus text format, every name ``goaicore_projector_*``;
``GET /health``: 200 while the process runs, with its state (``starting``,
``standby`` while another projector holds the schema, ``projecting``). Neither
shows any content of the log; docs/operations.md lists the metrics.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from goaicore.projection.projector import BatchWritten, Projector

SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ProjectorMetrics:
    """Rows, batch latency, lag and position per partition, dead letters."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.rows = Counter(
            "goaicore_projector_rows", "Rows written, by table", ["table"], registry=r
        )
        self.batch_seconds = Histogram(
            "goaicore_projector_batch_seconds",
            "Time to write and commit one batch",
            buckets=SECONDS,
            registry=r,
        )
        self.lag = Gauge(
            "goaicore_projector_lag",
            "Records the fetches report that are not written yet",
            ["topic", "partition"],
            registry=r,
        )
        self.position = Gauge(
            "goaicore_projector_position",
            "Next offset to write, as committed with the rows",
            ["topic", "partition"],
            registry=r,
        )
        self.dead_letters = Counter(
            "goaicore_projector_dead_letters", "Records set aside", registry=r
        )
        self._dead_lettered = 0
        self.skipped = Counter(
            "goaicore_projector_skipped",
            "Records of events skipped undecoded, by reason (the store worker dead-letters them)",
            ["reason"],
            registry=r,
        )
        self._skipped: dict[str, int] = {}

    def batch_written(self, batch: BatchWritten) -> None:
        """The projector's ``on_batch`` hook (its writer thread)."""
        self.rows.labels("conversation_events").inc(batch.events)
        self.rows.labels("conversation_snapshots").inc(batch.snapshots)
        self.rows.labels("chat_replies").inc(batch.replies)
        self.rows.labels("dead_letters").inc(batch.dead_letters)
        self.batch_seconds.observe(batch.seconds)

    def stepped(self, projector: Projector) -> None:
        """After each step (the reading thread): lag, positions and dead letters."""
        for (topic, partition), lag in projector.lag().items():
            self.lag.labels(topic, str(partition)).set(lag)
        for (topic, partition), at in dict(projector.positions).items():
            self.position.labels(topic, str(partition)).set(at)
        self.dead_letters.inc(projector.dead_lettered - self._dead_lettered)
        self._dead_lettered = projector.dead_lettered
        for reason, count in dict(projector.skipped).items():
            self.skipped.labels(reason).inc(count - self._skipped.get(reason, 0))
            self._skipped[reason] = count


class StatusServer:
    """``/metrics`` and ``/health`` on ``host:port``, served from a daemon thread."""

    def __init__(
        self, metrics: ProjectorMetrics, state: Callable[[], str], host: str, port: int
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry))
                elif self.path == "/health":
                    body = json.dumps({"status": "ok", "state": state()}).encode()
                    self._send(200, "application/json", body)
                else:
                    error = {"type": "not_found", "message": f"no route {self.path!r}"}
                    self._send(404, "application/json", json.dumps({"error": error}).encode())

            def _send(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # scrapes every few seconds would drown the projector's log

        self._http = ThreadingHTTPServer((host, port), Handler)
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(
            target=self._http.serve_forever, name="goaicore-projector-http", daemon=True
        )

    def start(self) -> StatusServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
