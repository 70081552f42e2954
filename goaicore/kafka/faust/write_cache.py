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

A write the broker did not take (a leader killed while its batches waited, say) is
tried again, never given up: each of its keys is staged again with the table's
latest value, its futures wait for the next write, and so do those of every write
sent after it before the failure was known (their records are on the broker, but
one staged before them is not). Retries wait a backoff that grows to
``MAX_RETRY_BACKOFF``; none is lost, as a worker that stopped writing would be.
A future is never done before every value staged up to it is on the broker (that
value or a later one of its key): acknowledging a batch any earlier would let its
offsets be committed past records whose snapshots are not written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from goaicore.kafka.faust.durable_table import DurableTable

log = logging.getLogger(__name__)

Waiter = tuple[int, "asyncio.Future[None]"]
"""A stage's future, with its place in staging order."""

FIRST_RETRY_BACKOFF = 0.1
MAX_RETRY_BACKOFF = 5.0


@dataclass
class _Write:
    """One write in flight: what it sent and who waits for it."""

    values: dict[bytes, Any]
    headers: dict[bytes, Sequence[tuple[str, bytes]]]
    waiters: list[Waiter]
    restages_before: int  # how many retries were staged before it was sent (it holds them)
    task: asyncio.Task[int] | None = field(default=None)


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
        self._waiters: list[Waiter] = []  # done by the next write's delivery
        self._stages = 0  # stages so far: each waiter's place in staging order
        self._lock = asyncio.Lock()  # one write at a time: records leave in staging order
        self._delivering: _Write | None = None  # the last write sent
        self._timer: asyncio.TimerHandle | None = None
        self._timed: set[asyncio.Task[None]] = set()
        self._restages = 0  # failed writes staged again so far
        self._backoff = FIRST_RETRY_BACKOFF  # before the next retry, if one fails

    def stage(
        self,
        values: Mapping[bytes, Any],
        headers: Mapping[bytes, Sequence[tuple[str, bytes]]] | None = None,
    ) -> asyncio.Future[None] | None:
        """Stage ``values`` (read at once; each sent with its ``headers``); a future done
        once the broker has them and every value staged before, or None when nothing is
        left to wait for."""
        if values:
            self.table.stage(values, headers)
            self._note_pending(values, self.interval)
        if self._pending or self._waiters:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(self._numbered(waiter))
            return waiter
        last = self._delivering
        if last is not None and last.task is not None and not last.task.done():
            waiter = asyncio.get_running_loop().create_future()
            last.waiters.append(self._numbered(waiter))  # done with the write in flight
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
        """Send every staged value now; their deliveries are awaited in the background.
        A send the producer refuses is staged again and tried after a backoff."""
        async with self._lock:
            if not self._pending and not self._waiters:
                return
            values, waiters = self._pending, self._waiters
            self._pending, self._waiters, self._sizes = {}, [], {}
            self._bytes, self._oldest = 0, None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            staged_headers = self.table.staged_headers
            headers = {k: h for k in values if (h := staged_headers.get(k)) is not None}
            write = _Write(values, headers, waiters, self._restages)
            try:
                sent = await self.table.send(values)
            except asyncio.CancelledError:
                self._restage(write, count=False)  # sent again by the next write
                raise
            except Exception as error:
                log.warning(
                    "writing the %s table's changelog failed, retrying in %.1f s: %r",
                    self.table.name,
                    self._backoff,
                    error,
                )
                self._restage(write)
                return
            previous = self._delivering.task if self._delivering is not None else None
            write.task = asyncio.ensure_future(self._deliver(previous, sent, write))
            self._delivering = write

    async def drain(self) -> None:
        """Send every staged value and return once the broker has all of them (and the
        futures of their stages are done), retrying writes the broker did not take."""
        while True:
            await self.write()
            last = self._delivering
            if last is not None and last.task is not None and not last.task.done():
                await asyncio.shield(last.task)
                continue
            if not self._pending and not self._waiters:
                return
            await asyncio.sleep(self._backoff)

    async def _deliver(self, previous: asyncio.Task[int] | None, sent: Any, write: _Write) -> int:
        """Wait for ``write`` to reach the broker after the writes before it; the number
        of retries a later write must hold before its futures may be done."""
        try:
            required = await previous if previous is not None else 0
            await self.table.delivered(sent)
        except asyncio.CancelledError:
            for _, waiter in write.waiters:
                waiter.cancel()
            raise
        except Exception as error:
            log.warning(
                "the broker did not take a write of the %s table's changelog, retrying in"
                " %.1f s: %r",
                self.table.name,
                self._backoff,
                error,
            )
            self._restage(write)
            return self._restages
        if write.restages_before < required:  # a retry staged after it was sent waits still
            self._restage(write, values=False)
            return required
        self._backoff = FIRST_RETRY_BACKOFF
        for _, waiter in write.waiters:
            if not waiter.done():
                waiter.set_result(None)
        return required

    def _restage(self, write: _Write, *, values: bool = True, count: bool = True) -> None:
        """Stage each key of ``write`` again with the table's value (its latest: a write
        after this one may have sent a newer), and make its futures wait for the next write."""
        if values:
            staged, data, pending = self.table.staged, self.table.data, self._pending
            # A key pending already is sent by the next write. Any other is staged again
            # with what the table reads: its staged value when the send never queued it,
            # else the stored one.
            again = {
                key: staged[key] if key in staged else data.get(key)
                for key in write.values
                if key not in pending
            }
            if again:
                self.table.stage(again, {k: write.headers[k] for k in again if k in write.headers})
                self._note_pending(again, self._backoff)
            if count:
                self._restages += 1
        # Before the waiters staged after it was sent, after those of earlier writes
        # carried already: all are done together, in staging order.
        self._waiters = sorted(write.waiters + self._waiters, key=itemgetter(0))
        if self._oldest is None:
            self._oldest = time.monotonic()
            self._schedule(self._backoff)
        if count:
            self._backoff = min(self._backoff * 2, MAX_RETRY_BACKOFF)

    def _numbered(self, waiter: asyncio.Future[None]) -> Waiter:
        self._stages += 1
        return (self._stages, waiter)

    def _note_pending(self, values: Mapping[bytes, Any], delay: float) -> None:
        """Count ``values`` among the pending ones, starting the interval if they are the first."""
        if self._oldest is None:
            self._oldest = time.monotonic()
            self._schedule(delay)
        self._pending.update(values)
        if self.interval > 0:  # else every stage is written at once: no bytes to bound
            size, sizes = self.size, self._sizes
            for key, value in values.items():
                grown = size(value) if value is not None else 0
                self._bytes += grown - sizes.get(key, 0)
                sizes[key] = grown

    def _schedule(self, delay: float) -> None:
        if delay > 0 and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._pending or self._waiters:
            task = asyncio.ensure_future(self._write_quietly())
            self._timed.add(task)
            task.add_done_callback(self._timed.discard)

    async def _write_quietly(self) -> None:
        """A write on the timer (a failure is logged and retried by the write itself)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self.write()
