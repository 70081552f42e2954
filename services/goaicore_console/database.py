"""The console's projection: the query port (``goaicore.projection.queries``) over a few
PostgreSQL connections kept open, each question asked in a thread.

This is where the console meets the database: its pages ask a
:class:`~goaicore.projection.queries.ProjectionQueries` only. The PostgreSQL answers
are synchronous (psycopg), so a page asks them off the event loop, one connection per
question at a time, so one slow question (a verify of everything) never holds up the
other pages.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from goaicore.projection.db import Connection, connect
from goaicore.projection.postgres.queries import PostgresQueries
from goaicore.projection.queries import ProjectionQueries
from goaicore.settings import Settings

P = ParamSpec("P")
T = TypeVar("T")


class Database:
    """Up to ``size`` open connections to the projection's schema."""

    def __init__(self, settings: Settings, size: int = 4) -> None:
        self.settings = settings
        self._idle: queue.LifoQueue[Connection] = queue.LifoQueue()
        self._slots = asyncio.Semaphore(size)
        self._closed = False

    async def run(
        self,
        query: Callable[Concatenate[ProjectionQueries, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """``query(queries, *args, **kwargs)`` in a worker thread."""

        def call() -> T:
            return self._call(query, *args, **kwargs)

        async with self._slots:
            return await asyncio.to_thread(call)

    def _call(
        self,
        query: Callable[Concatenate[ProjectionQueries, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = connect(self.settings)
        try:
            result = query(PostgresQueries(conn), *args, **kwargs)
        except BaseException:
            conn.close()  # its state is unknown after a failure
            raise
        if self._closed:
            conn.close()  # a query that ran on past close(): nothing takes it back
        else:
            self._idle.put(conn)
        return result

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return
