"""Chat workers, a scripted LLM and a reply collector for the chat agent's tests."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from goaicore.clients.snapshots import SnapshotReader
from goaicore.config import Settings
from goaicore.kafka import ensure_topics
from goaicore.net import free_loopback_port
from goaicore.records import ChatReply, ChatRequest, ConversationSnapshot
from goaicore.records.avro.api import decode_chat_reply, encode_chat_request
from goaicore.testing import OpenAIServer, RecordedRequest, ScriptedResponse, openai_reply
from goaicore.testing.openai_server import openai_error
from goaicore.testing.streams import token_text
from tests.store.workers import StoreWorker, worker_env


class ChatWorker(StoreWorker):
    """``goaicore worker`` with a web port and the LLM settings of the test."""

    def __init__(self, settings: Settings, name: str = "worker", **env: str) -> None:
        super().__init__(settings, name)
        self.web_port = free_loopback_port()
        self.env = env

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def start(self) -> ChatWorker:
        env = {
            k: v
            for k, v in worker_env(self.settings).items()
            if not k.startswith(("OPENAI_", "ANTHROPIC_"))
        }
        env.update(self.env)
        command = [sys.executable, "-m", "goaicore", "worker", "--loglevel", "info"]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*command, "--web-port", str(self.web_port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self


def llm_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    """Worker variables that point the OpenAI SDK at a scripted server."""
    return {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": server.base_url, **extra}


class ScriptedLLM:
    """Answers by what the latest message says, so concurrent conversations never mix.

    - a tool result as the last message: ``tool said: <content>``;
    - ``call <tool> <json>``: a call of that tool with those arguments;
    - ``fail``: a 400 error; ``slow <seconds>``: waits, then echoes;
    - ``big <n>``: a reply of ``n`` bytes of text;
    - ``drip <n> <per second> [tag]``: ``n`` tokens (``token0 token1 ...``), streamed at
      that rate when the request streams;
    - anything else: ``echo: <text>``, after ``delay`` seconds.
    It records how many calls were in flight at once.
    """

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: RecordedRequest) -> ScriptedResponse:
        messages = (request.body or {}).get("messages") or [{}]
        last = messages[-1]
        text = last.get("content") if isinstance(last.get("content"), str) else ""
        if last.get("role") == "tool":
            return openai_reply(f"tool said: {text}")
        if text.startswith("call "):
            _, name, arguments = text.split(" ", 2)
            return openai_reply(tool_calls=[(name, json.loads(arguments))])
        if text == "fail":
            return openai_error(400, "the test model refuses")
        if text.startswith("big "):
            return openai_reply("b" * int(text.split()[1]))
        if text.startswith("drip "):
            _, tokens, rate, *_ = text.split()
            return openai_reply(token_text(int(tokens)), chunk_delay=1 / float(rate))
        if text.startswith("slow "):
            time.sleep(float(text.split()[1]))
        elif self.delay:
            time.sleep(self.delay)
        return openai_reply(f"echo: {text}")


class Replies:
    """Every reply on the replies topic from now on, by request id (duplicates kept)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.seen: dict[str, list[ChatReply]] = defaultdict(list)
        self.headers: dict[str, list[list[tuple[str, bytes]]]] = defaultdict(list)
        """Each reply's record headers, as ``seen``."""
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._producer = KafkaProducer(bootstrap_servers=settings.require_bootstrap())

    def __enter__(self) -> Replies:
        self._thread.start()
        assert self._ready.wait(30), "reply listener did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.close()

    def _run(self) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=self.settings.require_bootstrap(), fetch_max_wait_ms=50
        )
        topic = self.settings.topic("replies")
        # A topic created a moment ago may not be in every broker's metadata yet.
        deadline = time.monotonic() + 30
        while not consumer.partitions_for_topic(topic) and time.monotonic() < deadline:
            time.sleep(0.2)
        partitions = [TopicPartition(topic, p) for p in range(self.settings.partitions)]
        consumer.assign(partitions)
        consumer.seek_to_end(*partitions)
        for partition in partitions:
            consumer.position(partition)
        self._ready.set()
        while not self._stop.is_set():
            for records in consumer.poll(timeout_ms=100).values():
                for record in records:
                    reply = decode_chat_reply(record.value)
                    with self._cond:
                        self.seen[reply.request_id].append(reply)
                        self.headers[reply.request_id].append(list(record.headers or ()))
                        self._cond.notify_all()
        consumer.close()

    def send(self, request: ChatRequest, key: bytes | None = None) -> str:
        """Publish a request as it is (no client-side checks), keyed by its conversation."""
        payload = encode_chat_request(request)
        self.send_raw(key or request.conversation_id.encode(), payload)
        return request.request_id

    def send_raw(self, key: bytes, value: bytes) -> None:
        self._producer.send(self.settings.topic("requests"), key=key, value=value).get(10)

    def wait(self, request_id: str, timeout: float = 60.0, count: int = 1) -> ChatReply:
        """The first reply to ``request_id`` once ``count`` replies to it arrived."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.seen[request_id]) >= count, timeout):
                raise AssertionError(f"{count} replies to {request_id} did not arrive")
            return self.seen[request_id][0]


def http(
    method: str,
    url: str,
    body: Any = None,
    raw: bytes | None = None,
    timeout: float = 60.0,
    token: str | None = None,
    extra_headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    """A real HTTP request; returns the status and the decoded JSON answer."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Content-Type": "application/json", **(extra_headers or {})}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@contextmanager
def a_deployment(settings: Settings) -> Iterator[Settings]:
    """``settings``' topics created and a store worker running on them, answering HTTP,
    until the block ends."""
    ensure_topics(settings)
    worker = ChatWorker(settings).start()
    try:
        wait_http(worker.url)
        yield settings
    finally:
        worker.stop()


def wait_http(url: str, timeout: float = 60.0) -> None:
    """Wait until the worker's web server answers (any status)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {timeout:.0f} s")


def snapshot_when(
    settings: Settings, conversation: str, ready: Any, timeout: float = 30.0
) -> ConversationSnapshot:
    """The conversation's snapshot from the snapshots topic once ``ready(snapshot)``."""
    deadline = time.monotonic() + timeout
    snapshot = None
    with SnapshotReader(settings) as reader:
        while time.monotonic() < deadline:
            snapshot = reader.get(conversation)
            if snapshot is not None and ready(snapshot):
                return snapshot
            time.sleep(0.2)
    raise AssertionError(f"snapshot of {conversation} not as expected: {snapshot}")
