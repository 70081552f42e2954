"""Coalesced table writes: each key's latest value reaches the changelog once per interval.

A store worker folding a backlog of many conversations touched nearly every one of
them in each fetch, so it wrote one snapshot per event: measured on Apache Kafka with
10,000 conversations of 10 events, 99,000 snapshots for 100,000 events, a snapshot
costing more than folding its event. Kafka Streams' record cache keeps each key's
latest value and writes it once per commit interval; this does the same for a
:class:`~goaicore.kafka.faust.durable_table.DurableTable`.

A staged value is read at once (the table's overlay) and its record is sent by the
next write: when the oldest staged value is ``interval`` old, when the staged values
pass ``max_bytes``, or when the caller asks (the fold's lane once it has caught up
with its partitions, an erasure, a rebalance, shutdown). Each stage returns a future
done once the broker has its records and every record staged before: the records
that produced them are acknowledged only then, so a crash loses nothing that is not
read again. Writes are sent in order, one at a time, and their deliveries are
awaited in the background in the same order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from goaicore.kafka.faust.durable_table import DurableTable

log = logging.getLogger(__name__)


class WriteCache:
    """The staged writes of one table and when they are sent (see the module docstring)."""

    def __init__(
        self,
        table: DurableTable,
        interval: float,
        max_bytes: int,
        size: Callable[[Any], int],
    ) -> None:
        self.table = table
        self.interval = interval
        self.max_bytes = max_bytes
        self.size = size  # a value's encoded size (an estimate is enough)
        self._pending: dict[bytes, Any] = {}
        self._sizes: dict[bytes, int] = {}
        self._bytes = 0
        self._oldest: float | None = None  # when the oldest pending value was staged
        self._waiters: list[asyncio.Future[None]] = []  # done by the next write's delivery
        self._lock = asyncio.Lock()  # one write at a time: records leave in staging order
        self._delivering: tuple[asyncio.Task[None], list[asyncio.Future[None]]] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timed: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None

    def stage(
        self,
        values: Mapping[bytes, Any],
        headers: Mapping[bytes, Sequence[tuple[str, bytes]]] | None = None,
    ) -> asyncio.Future[None] | None:
        """Stage ``values`` (read at once; each sent with its ``headers``); a future done
        once the broker has them and every value staged before, or None when nothing is
        left to wait for.

        A write that failed is raised here: the values it held are not on the broker.
        """
        if self._failure is not None:
            raise self._failure
        if values:
            self.table.stage(values, headers)
            if self._oldest is None:
                self._oldest = time.monotonic()
                if self.interval > 0:
                    self._timer = asyncio.get_running_loop().call_later(
                        self.interval, self._on_timer
                    )
            self._pending.update(values)
            if self.interval > 0:  # else every stage is written at once: no bytes to bound
                size, sizes = self.size, self._sizes
                for key, value in values.items():
                    grown = size(value) if value is not None else 0
                    self._bytes += grown - sizes.get(key, 0)
                    sizes[key] = grown
        if self._pending:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            return waiter
        if self._delivering is not None and not self._delivering[0].done():
            waiter = asyncio.get_running_loop().create_future()
            self._delivering[1].append(waiter)  # resolved with the write in flight
            return waiter
        return None

    def due(self) -> bool:
        """Whether the staged values are to be written now: the interval is over for the
        oldest, or they passed the byte bound."""
        if self._oldest is None:
            return False
        if self.interval <= 0 or self._bytes >= self.max_bytes:
            return True
        return time.monotonic() - self._oldest >= self.interval

    async def write(self) -> None:
        """Send every staged value now; their deliveries are awaited in the background."""
        async with self._lock:
            if self._failure is not None:
                raise self._failure
            if not self._pending:
                return
            values, waiters = self._pending, self._waiters
            self._pending, self._waiters, self._sizes = {}, [], {}
            self._bytes, self._oldest = 0, None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            try:
                sent = await self.table.send(values)
            except asyncio.CancelledError:
                self._restore(values, waiters)  # sent again by the next write
                raise
            except BaseException as error:
                self._fail(error, waiters)
                raise
            previous = self._delivering[0] if self._delivering is not None else None
            task = asyncio.ensure_future(self._deliver(previous, sent, waiters))
            self._delivering = (task, waiters)

    async def drain(self) -> None:
        """Send every staged value and return once the broker has all of them (and the
        futures of their stages are done)."""
        await self.write()
        if self._delivering is not None:
            await asyncio.shield(self._delivering[0])
        if self._failure is not None:
            raise self._failure

    async def _deliver(
        self,
        previous: asyncio.Task[None] | None,
        sent: Any,
        waiters: list[asyncio.Future[None]],
    ) -> None:
        try:
            if previous is not None:
                await previous
            if self._failure is not None:
                raise self._failure
            await self.table.delivered(sent)
        except BaseException as error:
            self._fail(error, waiters)
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _restore(self, values: dict[bytes, Any], waiters: list[asyncio.Future[None]]) -> None:
        """Put back a write that was interrupted before it was queued whole."""
        for key, value in values.items():
            if key not in self._pending:
                self._pending[key] = value
                self._sizes[key] = size = self.size(value) if value is not None else 0
                self._bytes += size
        self._waiters[:0] = waiters
        if self._oldest is None:
            self._oldest = time.monotonic()
            if self.interval > 0:
                self._timer = asyncio.get_running_loop().call_later(self.interval, self._on_timer)

    def _fail(self, error: BaseException, waiters: list[asyncio.Future[None]]) -> None:
        """A write's records may not be on the broker: its stages are never done (their
        records are read again after a restart), and every later stage or write raises."""
        if self._failure is None and not isinstance(error, asyncio.CancelledError):
            self._failure = error
            log.error("writing the %s table's changelog failed: %r", self.table.name, error)
        for waiter in waiters:
            waiter.cancel()

    def _on_timer(self) -> None:
        self._timer = None
        if self._pending:
            task = asyncio.ensure_future(self._write_quietly())
            self._timed.add(task)
            task.add_done_callback(self._timed.discard)

    async def _write_quietly(self) -> None:
        """A write on the timer: a failure is kept and raised to the next stage or write."""
        with contextlib.suppress(Exception):  # kept in _failure, logged by _fail
            await self.write()
