"""A scripted HTTP server on 127.0.0.1 for driving the real LLM SDKs in tests.

Each test queues the responses it wants (or installs a responder function), points the
SDK's ``base_url`` at the server and afterwards reads what the SDK actually sent. The
server is a stdlib ``ThreadingHTTPServer`` on a free port in a daemon thread.

A response is scripted once, whole; when the request asks for ``"stream": true`` the
subclass for the API re-encodes it as that API's Server-Sent Events (``stream_events``),
sent with chunked transfer encoding so the connection stays reusable.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from goaicore.lifecycle import Running


@dataclass(frozen=True)
class ScriptedResponse:
    """One response: status, JSON (or text) body, headers, and a delay before sending.

    ``chunk_delay`` paces a streamed response: the seconds between its pieces of content.
    """

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received; ``body`` is the parsed JSON (None if not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


Responder = Callable[[RecordedRequest], ScriptedResponse]
OnSent = Callable[[RecordedRequest], None]


class _Listener(ThreadingHTTPServer):
    # The stdlib's backlog of 5 drops connections a client opens at once (a worker
    # with a hundred turns in flight), and each dropped one waits a second to retry.
    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client that hung up (mid-stream, or on a kept-alive connection)
        super().handle_error(request, client_address)


class ScriptedServer(Running):
    """Answers API requests from a queue of responses, then from ``responder``.

    Requests to a path ending in ``api_path`` are API calls; anything else gets a 404.
    When the queue is empty and there is no responder the server answers 500 and counts
    the request in ``unexpected``, so a test sees that more calls were made than scripted.
    ``on_sent``, if given, is called (on the serving thread) with each API request once
    its response is written: a streamed one's last piece and the end of the stream
    (a benchmark notes when the model's last token left). Use as a context manager, or
    call ``start()`` and ``stop()``.
    """

    api_path = "/"

    def __init__(
        self,
        responses: Iterable[ScriptedResponse] = (),
        *,
        responder: Responder | None = None,
        on_sent: OnSent | None = None,
    ) -> None:
        self.responder = responder
        self.on_sent = on_sent
        self._queue: deque[ScriptedResponse] = deque(responses)
        self._requests: list[RecordedRequest] = []
        self._unexpected = 0
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body go out as two writes; without this, Nagle's algorithm
                # and the client's delayed ACK add ~40 ms to every response
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                server._handle(self)

            do_GET = do_POST

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._httpd = _Listener(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still sleeping on a delay are cut short."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # ---- script and record --------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the SDK client."""
        return self.url

    def add(self, *responses: ScriptedResponse) -> Self:
        """Queue responses, answered in order."""
        with self._lock:
            self._queue.extend(responses)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every API request received, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of every API request received."""
        return [r.body for r in self.requests]

    @property
    def pending(self) -> int:
        """Queued responses not yet used."""
        with self._lock:
            return len(self._queue)

    @property
    def unexpected(self) -> int:
        """API requests that found no scripted response."""
        with self._lock:
            return self._unexpected

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` API requests have arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    # ---- serving ------------------------------------------------------------------

    def stream_events(self, request: RecordedRequest, body: dict[str, Any]) -> list[bytes] | None:
        """``body`` as the writes of this API's event stream; None sends it whole.

        Asked only for a 200 with a JSON object body answering a ``"stream": true``
        request. This generic server streams nothing; the per-API subclasses do.
        """
        return None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = handler.path.split("?", 1)[0]
        stream: list[bytes] | None = None
        request: RecordedRequest | None = None
        if not path.endswith(self.api_path):
            response = ScriptedResponse(404, {"error": {"message": f"no route {path}"}})
        else:
            request = RecordedRequest(
                handler.command, path, {k.lower(): v for k, v in handler.headers.items()}, body, raw
            )
            with self._lock:
                self._requests.append(request)
                scripted = self._queue.popleft() if self._queue else None
                self._lock.notify_all()
            if scripted is None and self.responder is not None:
                scripted = self.responder(request)
            if scripted is None:
                with self._lock:
                    self._unexpected += 1
                scripted = ScriptedResponse(
                    500,
                    {"error": {"message": "no scripted response left", "type": "test_script"}},
                    {"x-should-retry": "false"},
                )
            response = scripted
            if (
                isinstance(body, dict)
                and body.get("stream") is True
                and response.status == 200
                and isinstance(response.body, dict)
            ):
                stream = self.stream_events(request, response.body)
        if response.delay and self._stopping.wait(response.delay):
            handler.close_connection = True  # stopping: drop the connection unanswered
            return
        if stream is None:
            self._send(handler, response)
        else:
            self._send_stream(handler, response, stream)
        if request is not None and self.on_sent is not None:
            self.on_sent(request)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, response: ScriptedResponse) -> None:
        if isinstance(response.body, bytes):
            payload, kind = response.body, "application/octet-stream"
        elif isinstance(response.body, str):
            payload, kind = response.body.encode(), "text/plain"
        else:
            payload, kind = json.dumps(response.body).encode(), "application/json"
        try:
            handler.send_response(response.status)
            handler.send_header("Content-Type", kind)
            handler.send_header("Content-Length", str(len(payload)))
            for name, value in response.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
        except OSError:
            pass  # the client went away (a cancelled or timed-out call)

    def _send_stream(
        self, handler: BaseHTTPRequestHandler, response: ScriptedResponse, writes: list[bytes]
    ) -> None:
        # Unpaced, the whole stream goes out in one write; the client parses it the same.
        # (An empty chunk would end the body: there are none.)
        chunks = [w for w in writes if w] if response.chunk_delay else [b"".join(writes)]
        try:
            handler.send_response(response.status)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Transfer-Encoding", "chunked")
            for name, value in response.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            for number, chunk in enumerate(chunks):
                if number and self._stopping.wait(response.chunk_delay):
                    # stopping: cut the stream short, without the chunked terminator
                    handler.close_connection = True
                    return
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            handler.close_connection = True  # the client went away mid-stream
