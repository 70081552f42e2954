"""The OpenAI Agents SDK session over goaicore: ``add_items`` and ``get_items`` latency.

A turn of an agent's run, as the SDK's ``Runner`` makes it: ``get_items`` (the history
for the model), ``add_items`` of the user's input, then ``add_items`` of the model's step
(reasoning, a function call, its output and the reply: four items). Each of
:data:`LEVELS` concurrent sessions runs its turns one after another, on:

- ``GoaicoreSession`` over Kafka: a ``KafkaConversationStore`` per session, a store
  worker folding (its ``get_items`` reads the snapshot that applied the session's own
  last write, so it includes the wait for the fold);
- ``GoaicoreSession`` over the in-memory store (the same session and rules, no broker);
- baseline, in the same run: the SDK's own ``SQLiteSession``, one database file on
  local disk (what the SDK's documentation starts with).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goaicore.bench.brokers import broker_settings
from goaicore.bench.chat_stack import percentile_rows, start_worker
from goaicore.bench.registry import Measurement, broker_suite
from goaicore.kafka.local import LocalBroker
from goaicore.kafka.topics import ensure_topics
from goaicore.settings import Settings
from goaicore.testing import OpenAIServer

SUITE = "session"
LEVELS = ((1, 40), (10, 10))
"""(concurrent sessions, turns each)."""
WARMUP_TURNS = 2

Timings = dict[str, list[float]]
SessionFactory = Callable[[str], Any]


def _step(turn: int) -> list[dict[str, Any]]:
    call = f"call_{turn}"
    return [
        {"id": f"rs_{turn}", "summary": [], "type": "reasoning", "encrypted_content": "x" * 400},
        {
            "arguments": '{"sides": 20}',
            "call_id": call,
            "name": "roll",
            "type": "function_call",
            "id": f"fc_{turn}",
            "status": "completed",
        },
        {"call_id": call, "output": str(turn % 20 + 1), "type": "function_call_output"},
        {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"You rolled {turn}.", "annotations": []}],
        },
    ]


async def _converse(session: Any, turns: int, timings: Timings) -> None:
    for turn in range(WARMUP_TURNS + turns):
        measured = turn >= WARMUP_TURNS
        started = time.perf_counter()
        await session.get_items()
        read = time.perf_counter()
        await session.add_items([{"content": f"roll {turn}", "role": "user"}])
        await session.add_items(_step(turn))
        done = time.perf_counter()
        if measured:
            timings["get_items"].append(read - started)
            timings["add_items"].append((done - read) / 2)


async def _run_level(make: SessionFactory, tag: str, sessions: int, turns: int) -> Timings:
    timings: Timings = {"get_items": [], "add_items": []}
    opened = [make(f"bench-{tag}-{sessions}-{n}") for n in range(sessions)]
    try:
        await asyncio.gather(*(_converse(s, turns, timings) for s in opened))
    finally:
        for session in opened:
            closing = getattr(session, "aclose", None)
            if closing is not None:
                await closing()
            else:
                session.close()
    return timings


def _levels(make: SessionFactory, tag: str) -> dict[tuple[int, int], Timings]:
    return {level: asyncio.run(_run_level(make, tag, *level)) for level in LEVELS}


def _sqlite(folder: Path) -> SessionFactory:
    from agents import SQLiteSession

    return lambda session_id: SQLiteSession(session_id, folder / "sessions.db")


def _goaicore(store_of: Callable[[], Any]) -> SessionFactory:
    from goaicore.integrations.openai_agents import GoaicoreSession

    class Owning(GoaicoreSession):
        """A session closing the store made for it (one per session, as apps do)."""

        async def aclose(self) -> None:
            from goaicore.sync import on_private_loop

            store = self._store
            await super().aclose()
            if store is not None:
                await on_private_loop(store.close())

    return lambda session_id: Owning(session_id, store_of())


def measure(settings: Settings) -> list[Measurement]:
    """Every figure of the suite, on the broker and topic prefix of ``settings``."""
    from goaicore.store.kafka import KafkaConversationStore
    from goaicore.store.memory import InMemoryConversationStore

    ensure_topics(settings)
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as llm:
        worker = start_worker(settings, llm)
        try:
            sqlite = _levels(_sqlite(Path(tmp)), "sqlite")
            in_memory = _levels(_goaicore(InMemoryConversationStore), "memory")
            kafka = _levels(_goaicore(lambda: KafkaConversationStore(settings)), "kafka")
        finally:
            worker.terminate()
            worker.wait(60)
    note = "a turn: get_items, add_items(user), add_items(a 4-item step)"
    rows: list[Measurement] = []
    for level in LEVELS:
        params = {"sessions": level[0], "turns": level[1]}
        for op in ("get_items", "add_items"):
            rows += percentile_rows(
                SUITE,
                f"{op} kafka",
                kafka[level][op],
                params,
                note,
                baseline=f"{op} sqlite",
                also=(f"{op} memory",),
            )
            rows += percentile_rows(
                SUITE,
                f"{op} memory",
                in_memory[level][op],
                params,
                note,
                baseline=f"{op} sqlite",
            )
            rows += percentile_rows(SUITE, f"{op} sqlite", sqlite[level][op], params, note)
    return rows


@broker_suite(SUITE)
def session(broker: LocalBroker) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        return measure(broker_settings(broker, "bench-session", Path(tmp)))
