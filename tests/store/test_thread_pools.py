"""Tools and history operations each run in a thread pool of their own: a history
operation filling its pool, or anything filling asyncio's default one, never holds back
a turn's synchronous tool."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from goaicore.conversation.tools import tool
from goaicore.records import GameEvent, ReplyStatus
from goaicore.store.errors import OperationRefused
from goaicore.store.memory import InMemoryConversationStore
from goaicore.threads import ThreadPool

GUARD = 60.0  # a bound on a hang, not a timing: the test fails, it does not wait forever


async def test_a_sync_tool_runs_while_history_operations_and_the_default_pool_are_blocked() -> None:
    release = threading.Event()
    ran: list[str] = []

    @tool
    def score_lookup(city: str) -> str:
        """The score of a city.

        Args:
            city: the city's name.
        """
        ran.append(city)
        return f"{city}: 3 points"

    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(1))
    store = InMemoryConversationStore(tools=[score_lookup], history_threads=2)
    try:
        await store.append("other", GameEvent(kind="story", text="nothing to undo"))
        default_blocked = asyncio.ensure_future(asyncio.to_thread(release.wait))
        history_blocked = [
            asyncio.ensure_future(store.history_pool.run(release.wait)) for _ in range(2)
        ]
        waiting = asyncio.ensure_future(store.undo("other"))  # queued behind the blocked pool
        reply = await asyncio.wait_for(store.ask("player", "score_lookup Leeds"), GUARD)
        assert reply.status is ReplyStatus.OK, reply.error
        assert ran == ["Leeds"]
        assert not waiting.done()  # the history operation still waits for its pool
        assert not any(task.done() for task in [default_blocked, *history_blocked])
    finally:
        release.set()
    await asyncio.wait_for(asyncio.gather(default_blocked, *history_blocked), GUARD)
    with pytest.raises(OperationRefused, match="nothing to undo"):
        await asyncio.wait_for(waiting, GUARD)
    await store.close()


async def test_a_pool_runs_with_the_callers_context_and_refuses_no_threads() -> None:
    name: contextvars.ContextVar[str] = contextvars.ContextVar("name")
    name.set("caller")
    pool = ThreadPool(1, "goaicore-test")
    try:
        assert await pool.run(name.get) == "caller"
        assert (await pool.run(threading.current_thread)).name.startswith("goaicore-test")
    finally:
        pool.close()
    for threads in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="1 or more threads"):
            ThreadPool(threads, "bad")  # type: ignore[arg-type]
