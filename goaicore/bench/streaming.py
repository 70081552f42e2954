"""Streamed chat turns through the store worker: the first token, the wait after the
last one, and the worker's CPU for a streamed turn.

The LLM is the scripted OpenAI-compatible server answering every request with a text of
:data:`TOKENS` tokens streamed at :data:`RATE` a second (``openai_stream_tokens``),
its first token one interval after the request: a model of known speed. Each of N
concurrent conversations asks its questions one after another through one
``AsyncChatClient`` (closed loop, as in the ``chat`` suite), on the worker and echo
service of :func:`~goaicore.bench.chat_stack.chat_stack`.

- **first token**: from just before an ``ask_stream`` is iterated to its first
  ``TextDelta``. Baseline, at the same concurrency in the same run: the server's own
  first token, streamed straight from it through the same SDK (``OpenAIProvider.stream``,
  the worker's aiohttp transport; the time of its first text), plus the bare aiokafka
  echo round trip (``goaicore.bench.echo``): the floor a first token through Kafka could
  reach.
- **after the last token**: from the last ``TextDelta`` the client gets to its
  ``ChatReply``, and from the server's write of the last token (noted by the server,
  which runs in this process: ``on_sent``) to the ``ChatReply``. The worker ends the
  stream, appends the turn's events, stores and publishes the reply. Baseline: the echo
  round trip at the same concurrency.
- **CPU**: the worker process's user and system CPU time over batches of streamed
  turns and the same batches not streamed (``ask``), alternating, per turn. A turn not
  streamed reads the LLM's stream all the same (to end a cancelled turn with its text);
  it writes no chunks. Each batch includes the worker's idle work while it runs and for
  :data:`SETTLE` seconds after it (its fold of the batch's last events).
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from goaicore.bench import echo
from goaicore.bench.brokers import broker_settings
from goaicore.bench.chat_stack import QUANTILES, chat_stack, percentile, percentile_rows
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.clients.aio import AsyncChatClient
from goaicore.conversation.messages import Message
from goaicore.conversation.progress import TextDelta
from goaicore.conversation.providers.base import CompletionRequest
from goaicore.kafka.local import LocalBroker
from goaicore.records import ChatReply, ReplyStatus
from goaicore.settings import Settings
from goaicore.testing import (
    OpenAIServer,
    RecordedRequest,
    Responder,
    ScriptedResponse,
    openai_stream_tokens,
)

SUITE = "stream"
TOKENS = 40  # tokens per answer
RATE = 50.0  # tokens a second
LEVELS = ((1, 20), (10, 6), (100, 3))  # (concurrent conversations, questions each)
CPU_SHAPE = (10, 4)  # a CPU batch: concurrent conversations, questions each
CPU_ROUNDS = 2  # batches of each kind, alternating
SETTLE = 0.5  # seconds after a CPU batch before the worker's CPU time is read again
TIMEOUT = 120.0  # seconds an ask may take

FIRST = "first token through the worker"
LLM_FIRST = "LLM's first token, called directly"
ECHO = "bare aiokafka echo"
FLOOR = "echo plus the LLM's first token"
LAST_DELTA = "last text delta to reply"
LAST_SENT = "LLM's last token sent to reply"
CPU_STREAMED = "worker CPU per streamed turn"
CPU_PLAIN = "worker CPU per turn not streamed"


CONCURRENCY = 128
"""The worker's GOAICORE_CHAT_CONCURRENCY here: every conversation's turn runs at once (at
the default, 32, a hundred turns of 0.8 s each would wait for one another)."""


def _note() -> str:
    return (
        f"one worker (chat concurrency {CONCURRENCY}); LLM: {TOKENS} tokens at {RATE:g}/s, "
        f"first after {1000 / RATE:g} ms"
    )


def paced_tokens(tokens: int, rate_per_s: float) -> Responder:
    """``openai_stream_tokens``, its first token too one interval after the request."""
    respond = openai_stream_tokens(tokens, rate_per_s)

    def paced(request: RecordedRequest) -> ScriptedResponse:
        return dataclasses.replace(respond(request), delay=1 / rate_per_s)

    return paced


class LastWrites:
    """When the scripted server wrote each answer's last token, by the question it
    answered (the text of the request's last message); the server's ``on_sent``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: dict[str, float] = {}

    def note(self, request: RecordedRequest) -> None:
        at = time.perf_counter()
        messages = request.body.get("messages") if isinstance(request.body, dict) else None
        content = messages[-1].get("content") if isinstance(messages, list) and messages else None
        if isinstance(content, str):
            with self._lock:
                self._at[content] = at

    def pop(self, question: str) -> float | None:
        with self._lock:
            return self._at.pop(question, None)


@dataclass
class Streamed:
    """Seconds per ask: to the first text delta, from the last one to the reply, and
    from the server's last write to the reply."""

    first: list[float] = field(default_factory=list)
    after_delta: list[float] = field(default_factory=list)
    after_sent: list[float] = field(default_factory=list)


async def _streamed_ask(
    client: AsyncChatClient, conversation_id: str, question: str
) -> tuple[float, float, float]:
    """One streamed ask: (started, first delta, last delta) and the reply's arrival,
    as ``perf_counter`` readings; the reply must be ok."""
    first = last = replied = None
    reply: ChatReply | None = None
    started = time.perf_counter()
    async for item in client.ask_stream(conversation_id, question, timeout=TIMEOUT):
        now = time.perf_counter()
        if isinstance(item, TextDelta):
            first = now if first is None else first
            last = now
        elif isinstance(item, ChatReply):
            reply, replied = item, now
        else:  # a Restarted or tool progress: not the turn measured
            raise RuntimeError(f"bench stream: unexpected {type(item).__name__}")
    if reply is None or reply.status != ReplyStatus.OK:
        raise RuntimeError(f"bench request failed: {reply.error if reply else 'no reply'}")
    if first is None or last is None or replied is None:
        raise RuntimeError("bench stream: a reply without text deltas")
    return first - started, replied - last, replied


def _through_worker(
    settings: Settings, last_writes: LastWrites, conversations: int, questions: int
) -> Streamed:
    """Closed-loop streamed asks from one asyncio client."""
    result = Streamed()
    replies: list[tuple[str, float]] = []

    async def converse(client: AsyncChatClient, n: int) -> None:
        for q in range(questions):
            question = f"stream {conversations}/{n}/{q}"
            conversation = f"bench-stream-{conversations}-{n}"
            first, after_delta, replied = await _streamed_ask(client, conversation, question)
            result.first.append(first)
            result.after_delta.append(after_delta)
            replies.append((question, replied))

    async def main() -> None:
        async with AsyncChatClient(settings) as client:
            # the worker is up, and the client reads the reply stream
            await _streamed_ask(client, "bench-stream-warmup", f"ready? {conversations}")
            await asyncio.gather(*(converse(client, n) for n in range(conversations)))

    asyncio.run(main())
    for question, replied in replies:  # read after: the server notes on its own thread
        sent = last_writes.pop(question)
        if sent is None:
            raise RuntimeError(f"bench stream: the server noted no answer to {question!r}")
        result.after_sent.append(replied - sent)
    return result


def _direct(base_url: str, conversations: int, questions: int) -> list[float]:
    """Seconds to the first text of the same server streamed straight through the SDK."""
    from goaicore.conversation.providers import OpenAIProvider

    # The store worker's transport (services/goaicore_store/app.py): only the worker differs.
    provider = OpenAIProvider("bench", api_key="bench", base_url=base_url, transport="aiohttp")

    async def first_text(text: str) -> float:
        heard: list[float] = []

        def on_text(piece: str) -> None:
            if not heard:
                heard.append(time.perf_counter())

        request = CompletionRequest(("Be brief",), [Message.user(text)])
        started = time.perf_counter()
        await provider.stream(request, on_text)
        if not heard:
            raise RuntimeError("bench stream: the LLM streamed no text")
        return heard[0] - started

    async def converse(n: int) -> list[float]:
        return [await first_text(f"direct {conversations}/{n}/{q}") for q in range(questions)]

    async def main() -> list[float]:
        try:
            await first_text("ready?")  # the SDK's client is made, as the worker's is
            parts = await asyncio.gather(*(converse(n) for n in range(conversations)))
        finally:
            await provider.aclose()
        return [x for part in parts for x in part]

    return asyncio.run(main())


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (all its threads)."""
    import psutil

    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def _cpu_per_turn(settings: Settings, pid: int) -> tuple[float, float, int]:
    """The worker's CPU seconds per streamed turn and per turn not streamed, and the
    turns of each kind."""
    conversations, questions = CPU_SHAPE
    spent = {True: 0.0, False: 0.0}

    async def converse(client: AsyncChatClient, streamed: bool, tag: str) -> None:
        for q in range(questions):
            conversation, question = f"bench-cpu-{tag}", f"cpu {tag}/{q}"
            if streamed:
                await _streamed_ask(client, conversation, question)
                continue
            reply = await client.ask(conversation, question, timeout=TIMEOUT)
            if reply.status != ReplyStatus.OK:
                raise RuntimeError(f"bench request failed: {reply.error}")

    async def main() -> None:
        async with AsyncChatClient(settings) as client:
            await _streamed_ask(client, "bench-cpu-warmup", "ready?")
            await client.ask("bench-cpu-warmup", "ready again?", timeout=TIMEOUT)
            for batch in range(CPU_ROUNDS):
                for streamed in (False, True):
                    kind = "streamed" if streamed else "plain"
                    before = _cpu_seconds(pid)
                    await asyncio.gather(
                        *(
                            converse(client, streamed, f"{kind}-{batch}-{n}")
                            for n in range(conversations)
                        )
                    )
                    await asyncio.sleep(SETTLE)
                    spent[streamed] += _cpu_seconds(pid) - before

    asyncio.run(main())
    turns = CPU_ROUNDS * conversations * questions
    return spent[True] / turns, spent[False] / turns, turns


def _level_rows(
    conversations: int, through: Streamed, direct: list[float], echoed: list[float]
) -> list[Measurement]:
    note = _note()
    params = {"conversations": conversations}

    def rows(kind: str, seconds: list[float], *versus: str) -> list[Measurement]:
        baseline, also = (versus[0], versus[1:]) if versus else (None, ())
        return percentile_rows(SUITE, kind, seconds, params, note, baseline, also)

    floor = [
        Measurement(
            SUITE,
            f"{FLOOR} p{int(q * 100)}",
            (percentile(echoed, q) + percentile(direct, q)) * 1000,
            "ms",
            dict(params),
            note,
        )
        for q in QUANTILES
    ]
    overhead = statistics.median(through.first) - statistics.median(direct)
    return [
        *rows(FIRST, through.first, FLOOR, LLM_FIRST),
        *rows(LLM_FIRST, direct),
        *rows(ECHO, echoed),
        *floor,
        Measurement(
            SUITE,
            "first token overhead of the worker (p50 difference)",
            overhead * 1000,
            "ms",
            dict(params),
            note,
        ),
        *rows(LAST_DELTA, through.after_delta, ECHO),
        *rows(LAST_SENT, through.after_sent, ECHO),
    ]


def measure(settings: Settings) -> list[Measurement]:
    """Every figure of the suite, on the broker and topic prefix of ``settings``."""
    settings = settings.with_overrides(chat_concurrency=CONCURRENCY)
    rows: list[Measurement] = []
    last_writes = LastWrites()
    with (
        OpenAIServer(responder=paced_tokens(TOKENS, RATE), on_sent=last_writes.note) as llm,
        chat_stack(settings, llm) as stack,
    ):
        for conversations, questions in LEVELS:
            direct = _direct(llm.base_url, conversations, questions)
            echoed = echo.echo_latencies(settings, conversations, questions)
            through = _through_worker(settings, last_writes, conversations, questions)
            rows += _level_rows(conversations, through, direct, echoed)
        streamed, plain, turns = _cpu_per_turn(settings, stack.worker.pid)
    params = {"conversations": CPU_SHAPE[0], "turns": turns}
    note = _note()
    rows += [
        Measurement(SUITE, CPU_STREAMED, streamed * 1000, "ms", params, note, baseline=CPU_PLAIN),
        Measurement(SUITE, CPU_PLAIN, plain * 1000, "ms", dict(params), note),
    ]
    return rows


@broker_suite(SUITE)
def stream(broker: LocalBroker) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        return measure(broker_settings(broker, "bench-stream", Path(tmp)))
