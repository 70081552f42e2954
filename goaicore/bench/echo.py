"""A bare aiokafka request/reply echo service: the floor under a chat turn's latency.

The service (``python -m goaicore.bench.echo``) consumes ``<prefix>.echo-requests``
in a consumer group and produces each request's value back to
``<prefix>.echo-replies`` under the same key: one fetch and one produce with the
client profile's settings, nothing else. :func:`start_service` starts it as a child
process; :func:`echo_latencies` asks it at a given concurrency from one asyncio
client (aiokafka too) and times each round trip.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from typing import Any

from goaicore.devstack.worker_process import settings_env
from goaicore.extras import needs
from goaicore.kafka.connection import make_admin
from goaicore.kafka.profile import client_profile
from goaicore.kafka.security import aiokafka_options
from goaicore.settings import Settings

with needs("kafka"):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # type: ignore[import-untyped]
    from kafka.admin import NewTopic

REQUESTS = "echo-requests"
REPLIES = "echo-replies"
READY = b"ready?"


def _clients(settings: Settings) -> dict[str, Any]:
    return {"bootstrap_servers": settings.require_bootstrap(), **aiokafka_options(settings)}


def _fetch_wait(settings: Settings) -> int:
    """The profile's fetch wait: the embedded broker answers an empty fetch only after it."""
    wait: int = client_profile(settings).consumer.get("fetch_max_wait_ms", 500)
    return wait


def _producer(settings: Settings) -> Any:
    """acks=all, idempotent where the broker supports it (the embedded one does not)."""
    idempotent = not settings.embedded_broker
    return AIOKafkaProducer(acks="all", enable_idempotence=idempotent, **_clients(settings))


async def serve(settings: Settings) -> None:
    """Echo every request to the replies topic until cancelled."""
    consumer = AIOKafkaConsumer(
        settings.topic(REQUESTS),
        group_id=f"{settings.topic_prefix}.echo",
        auto_offset_reset="earliest",
        fetch_max_wait_ms=_fetch_wait(settings),
        **_clients(settings),
    )
    producer = _producer(settings)
    await consumer.start()
    await producer.start()
    try:
        async for record in consumer:
            await producer.send(settings.topic(REPLIES), key=record.key, value=record.value)
    finally:
        await consumer.stop()
        await producer.stop()


async def _ask_all(settings: Settings, conversations: int, questions: int) -> list[float]:
    producer = _producer(settings)
    replies = AIOKafkaConsumer(
        settings.topic(REPLIES),
        auto_offset_reset="latest",
        fetch_max_wait_ms=_fetch_wait(settings),
        **_clients(settings),
    )
    waiting: dict[bytes, asyncio.Future[None]] = {}
    await producer.start()
    await replies.start()

    async def listen() -> None:
        async for record in replies:
            future = waiting.pop(record.value, None)
            if future is not None and not future.done():
                future.set_result(None)

    async def ask(conversation: str, value: bytes) -> float:
        future = asyncio.get_running_loop().create_future()
        waiting[value] = future
        started = time.perf_counter()
        await producer.send(settings.topic(REQUESTS), key=conversation.encode(), value=value)
        await asyncio.wait_for(future, 60)
        return time.perf_counter() - started

    async def converse(n: int) -> list[float]:
        return [await ask(f"echo-{n}", uuid.uuid4().bytes) for _ in range(questions)]

    listener = asyncio.create_task(listen())
    try:
        await replies.seek_to_end()
        for attempt in range(600):  # the service is up and its group has formed
            try:
                await asyncio.wait_for(ask("echo-ready", READY + bytes([attempt % 256])), 0.5)
                break
            except TimeoutError:
                continue
        parts = await asyncio.gather(*(converse(n) for n in range(conversations)))
        return [x for part in parts for x in part]
    finally:
        listener.cancel()
        await replies.stop()
        await producer.stop()


def start_service(settings: Settings) -> subprocess.Popen[bytes]:
    """Create the echo's topics and start the service as a child process (its output
    goes to ``echo.log`` in the data dir); the caller terminates it."""
    admin = make_admin(settings)
    try:
        admin.create_topics(
            [NewTopic(settings.topic(t), settings.partitions, 1) for t in (REQUESTS, REPLIES)]
        )
    finally:
        admin.close()
    with open(settings.data_dir / "echo.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "goaicore.bench.echo"],
            env=settings_env(settings),
            stdout=log,
            stderr=log,
        )


def echo_latencies(settings: Settings, conversations: int, questions: int) -> list[float]:
    """Round-trip seconds of ``questions`` requests from each of ``conversations`` at once."""
    return asyncio.run(_ask_all(settings, conversations, questions))


def main() -> None:
    asyncio.run(serve(Settings()))


if __name__ == "__main__":
    main()
