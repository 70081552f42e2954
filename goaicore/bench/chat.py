"""Chat request-to-reply latency through the store worker, with an instant LLM.

The LLM is the scripted OpenAI-compatible server answering at once
(``openai_echo``), so the figures are the worker's own cost: Kafka round trips
(request, events, reply), read-your-writes, the fold and the SDK call. Each of
N concurrent conversations asks its questions one after another through one
``AsyncChatClient`` (closed loop, the shape of the echo's own client).
Baselines, at the same concurrency in the same run: the same server asked
directly through the same SDK (``OpenAIProvider``), and a bare aiokafka
request/reply echo service on the same broker (``goaicore.bench.echo``); "echo
plus the LLM" adds their medians, the floor a turn through Kafka could reach.
It runs on each benchmarked broker, a fresh one each time.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from goaicore.bench import echo
from goaicore.bench.brokers import broker_settings
from goaicore.bench.chat_stack import QUANTILES, chat_stack, percentile, percentile_rows
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients.aio import AsyncChatClient
from goaicore.conversation.messages import Message
from goaicore.conversation.providers.base import CompletionRequest
from goaicore.kafka.local import LocalBroker
from goaicore.records import ReplyStatus
from goaicore.settings import Settings
from goaicore.testing import OpenAIServer, openai_echo

LEVELS = ((1, 60), (10, 15), (100, 4))  # (concurrent conversations, questions each)
NOTE = "one worker process, instant scripted LLM"
THROUGH = "request to reply"
DIRECT = "LLM called directly"
ECHO = "bare aiokafka echo"
FLOOR = "echo plus the LLM"


def _through_worker(settings: Settings, conversations: int, questions: int) -> list[float]:
    """Closed-loop asks from one asyncio client, the shape of the echo's own client."""

    async def converse(client: AsyncChatClient, n: int) -> list[float]:
        latencies = []
        for q in range(questions):
            started = time.perf_counter()
            reply = await client.ask(f"bench-{conversations}-{n}", f"question {q}", timeout=60)
            latencies.append(time.perf_counter() - started)
            if reply.status != ReplyStatus.OK:
                raise RuntimeError(f"bench request failed: {reply.error}")
        return latencies

    async def main() -> list[float]:
        async with AsyncChatClient(settings) as client:
            await client.ask("bench-warmup", "ready?", timeout=120)  # the worker is up
            parts = await asyncio.gather(*(converse(client, n) for n in range(conversations)))
        return [x for part in parts for x in part]

    return asyncio.run(main())


def _direct(base_url: str, conversations: int, questions: int) -> list[float]:
    from goaicore.conversation.providers import OpenAIProvider

    # The store worker's transport (services/goaicore_store/app.py): only the worker differs.
    provider = OpenAIProvider("bench", api_key="bench", base_url=base_url, transport="aiohttp")

    async def converse(n: int) -> list[float]:
        latencies = []
        for q in range(questions):
            request = CompletionRequest(("Be brief",), [Message.user(f"question {q}")])
            started = time.perf_counter()
            await provider.complete(request)
            latencies.append(time.perf_counter() - started)
        return latencies

    async def main() -> list[float]:
        try:
            parts = await asyncio.gather(*(converse(n) for n in range(conversations)))
        finally:
            await provider.aclose()
        return [x for part in parts for x in part]

    return asyncio.run(main())


def _rows(
    kind: str,
    conversations: int,
    latencies: list[float],
    baseline: str | None = None,
    also: tuple[str, ...] = (),
) -> list[Measurement]:
    params = {"conversations": conversations}
    return percentile_rows("chat", kind, latencies, params, NOTE, baseline, also)


@broker_suite("chat")
def chat(broker: LocalBroker) -> list[Measurement]:
    rows: list[Measurement] = []
    with OpenAIServer(responder=openai_echo) as llm, tempfile.TemporaryDirectory() as tmp:
        settings = broker_settings(broker, "bench-chat", Path(tmp))
        with chat_stack(settings, llm):
            _through_worker(settings, 0, 0)  # its warm-up ask alone: the worker is up
            for conversations, questions in LEVELS:
                direct = _direct(llm.base_url, conversations, questions)
                echoed = echo.echo_latencies(settings, conversations, questions)
                through = _through_worker(settings, conversations, questions)
                rows += _rows(THROUGH, conversations, through, DIRECT, also=(FLOOR,))
                rows += _rows(DIRECT, conversations, direct)
                rows += _rows(ECHO, conversations, echoed)
                floor = [percentile(echoed, q) + percentile(direct, q) for q in QUANTILES]
                rows += [
                    Measurement(
                        "chat",
                        f"{FLOOR} p{int(q * 100)}",
                        value * 1000,
                        "ms",
                        {"conversations": conversations},
                        NOTE,
                    )
                    for q, value in zip(QUANTILES, floor, strict=True)
                ]
                overhead = statistics.median(through) - statistics.median(direct)
                rows.append(
                    Measurement(
                        "chat",
                        "overhead of the worker (p50 difference)",
                        overhead * 1000,
                        "ms",
                        {"conversations": conversations},
                        NOTE,
                    )
                )
    return rows
