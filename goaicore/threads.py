"""Thread pools of their own, one for each kind of blocking work.

``asyncio.to_thread`` runs every call in the event loop's one default pool, so blocking
work of one kind waits behind another's: many history operations folding at once
(each a fold of a conversation's log) held a turn's synchronous tool back for seconds.
Synchronous tools and the history operations' folds each run in a :class:`ThreadPool`
of their own, sized by GOAICORE_TOOL_THREADS and GOAICORE_HISTORY_THREADS.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from goaicore.settings.worker import HISTORY_THREADS, TOOL_THREADS

__all__ = ["HISTORY_THREADS", "TOOL_THREADS", "ThreadPool", "tools_pool"]

P = ParamSpec("P")
T = TypeVar("T")


class ThreadPool:
    """Up to ``threads`` threads (named ``name``), made when first used, for blocking
    calls from the event loop; the caller's context variables go along (as with
    ``asyncio.to_thread``)."""

    def __init__(self, threads: int, name: str) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"a thread pool needs 1 or more threads, not {threads!r}")
        self.threads = threads
        self.name = name
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` in one of this pool's threads, once one is free."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.threads, thread_name_prefix=self.name)
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close(self) -> None:
        """Let the threads end once their calls return (a later ``run`` makes new ones)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    def __repr__(self) -> str:
        return f"ThreadPool({self.threads}, {self.name!r})"


tools_pool = ThreadPool(TOOL_THREADS, "goaicore-tools")
"""Where a synchronous tool runs when its turn names no pool of its own."""
