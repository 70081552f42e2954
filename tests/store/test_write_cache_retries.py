"""A changelog write the broker did not take is tried again, and the futures that
acknowledge records are done only once every value staged before them is written.

The table here keeps its changelog in memory and lets each test decide which writes
the "broker" takes: the rules under test are the cache's, not Kafka's (the broker
kill in ``tests/kafka/test_cluster_failover.py`` exercises them on Apache Kafka).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.kafka.faust.durable_table import DurableTable
from goaicore.kafka.faust.write_cache import WriteCache


class BrokerRefused(Exception):
    """What the in-memory broker raises for a write it did not take."""


class MemoryTable:
    """The part of a DurableTable a WriteCache uses, with a changelog in memory."""

    name = "snapshots"

    def __init__(self) -> None:
        self.staged: dict[bytes, Any] = {}
        self.staged_headers: dict[bytes, Sequence[tuple[str, bytes]]] = {}
        self.data: dict[bytes, Any] = {}
        self.changelog: list[tuple[bytes, Any]] = []  # what the broker took, in order
        self.writes: list[tuple[dict[bytes, Any], asyncio.Future[bool]]] = []
        self.refuse_sends = 0  # the next sends raise (the producer refused them)

    def stage(
        self,
        values: Mapping[bytes, Any],
        headers: Mapping[bytes, Sequence[tuple[str, bytes]]] | None = None,
    ) -> None:
        self.staged.update(values)
        for key in values:
            if headers and key in headers:
                self.staged_headers[key] = headers[key]

    async def send(self, values: Mapping[bytes, Any]) -> int:
        if self.refuse_sends:
            self.refuse_sends -= 1
            raise BrokerRefused("the producer is closed")
        outcome: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.writes.append((dict(values), outcome))
        for key, value in values.items():
            self.data[key] = value
            if self.staged.get(key) is value:
                del self.staged[key]
        return len(self.writes) - 1

    async def delivered(self, sent: int) -> None:
        values, outcome = self.writes[sent]
        if not await outcome:
            raise BrokerRefused(f"write {sent} expired: its leader is gone")
        self.changelog.extend(values.items())

    def decide(self, index: int, taken: bool) -> None:
        self.writes[index][1].set_result(taken)

    def latest(self) -> dict[bytes, Any]:
        return dict(self.changelog)


def cache_of(table: MemoryTable, interval: float = 60.0) -> WriteCache:
    return WriteCache(cast(DurableTable, table), interval, 1 << 30, lambda value: 8)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def until(condition: Any, within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_a_refused_delivery_is_sent_again_and_its_stage_done_only_then() -> None:
    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        done = cache.stage({b"a": 1})
        assert done is not None
        await cache.write()
        table.decide(0, taken=False)
        await settle()
        assert not done.done()
        await until(lambda: len(table.writes) == 2)  # the retry, after its backoff
        assert table.writes[1][0] == {b"a": 1}
        table.decide(1, taken=True)
        await until(done.done)
        assert done.result() is None
        assert table.latest() == {b"a": 1}
        later = cache.stage({b"b": 2})  # the cache goes on after a failure
        assert later is not None
        await cache.write()
        table.decide(2, taken=True)
        await until(later.done)

    asyncio.run(scenario())


def test_a_later_write_is_not_done_before_an_earlier_one_that_failed_is_written() -> None:
    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        first = cache.stage({b"a": 1})
        await cache.write()
        second = cache.stage({b"b": 1})
        await cache.write()
        assert first is not None
        assert second is not None
        table.decide(0, taken=False)
        table.decide(1, taken=True)
        await settle()
        assert not first.done()
        assert not second.done()  # b's offsets must not pass a's
        await until(lambda: len(table.writes) == 3)
        table.decide(2, taken=True)
        await until(lambda: first.done() and second.done())
        assert table.latest() == {b"a": 1, b"b": 1}

    asyncio.run(scenario())


def test_a_retry_sends_the_latest_value_never_an_older_one_after_a_newer() -> None:
    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        cache.stage({b"a": 1})
        await cache.write()
        newer = cache.stage({b"a": 2})
        await cache.write()
        table.decide(1, taken=True)
        table.decide(0, taken=False)  # the older write fails after the newer was taken
        await until(lambda: len(table.writes) == 3)
        assert table.writes[2][0] == {b"a": 2}
        table.decide(2, taken=True)
        assert newer is not None
        await until(newer.done)
        assert table.latest() == {b"a": 2}

    asyncio.run(scenario())


def test_a_send_the_producer_refuses_is_tried_again() -> None:
    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        table.refuse_sends = 2
        done = cache.stage({b"a": 1}, {b"a": [("traceparent", b"00-x")]})
        await cache.write()  # refused: logged and staged again, never raised
        assert table.writes == []
        assert table.staged == {b"a": 1}
        await until(lambda: len(table.writes) == 1, within=5)
        assert table.writes[0][0] == {b"a": 1}
        assert table.staged_headers[b"a"] == [("traceparent", b"00-x")]
        table.decide(0, taken=True)
        assert done is not None
        await until(done.done)
        assert table.latest() == {b"a": 1}

    asyncio.run(scenario())


def test_drain_returns_once_everything_is_written_through_failures() -> None:
    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        done = cache.stage({b"a": 1, b"b": 1})

        async def broker() -> None:
            for index, taken in enumerate([False, False, True]):
                await until(lambda index=index: len(table.writes) > index)
                table.decide(index, taken)

        refusing = asyncio.ensure_future(broker())
        await asyncio.wait_for(cache.drain(), timeout=10)
        await refusing
        assert done is not None
        assert done.done()
        assert table.latest() == {b"a": 1, b"b": 1}

    asyncio.run(scenario())


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from([b"a", b"b", b"c"]), st.booleans(), st.booleans(), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_stages_are_done_only_once_what_was_staged_up_to_them_is_written(
    steps: list[tuple[bytes, bool, bool, bool]],
) -> None:
    """Stage a rising value of some key, sometimes write (the producer refusing some
    sends); the broker takes or refuses writes as they come; in the end every stage is
    done, and none before the changelog held (that value or a later one of) every key
    staged up to it: acknowledging a record any earlier could commit its offset before
    its snapshot is written."""

    async def scenario() -> None:
        table = MemoryTable()
        cache = cache_of(table)
        staged: dict[bytes, int] = {}
        futures: list[tuple[asyncio.Future[None], dict[bytes, int]]] = []
        finished: list[int] = []
        early: list[Any] = []  # stages done before what they need was written
        decided = 0
        for value, (key, write_now, taken, refused) in enumerate(steps, start=1):
            staged[key] = value
            done = cache.stage({key: value})
            assert done is not None
            index = len(futures)
            futures.append((done, dict(staged)))

            def check(_: Any, index: int = index) -> None:
                needed, latest = futures[index][1], table.latest()
                if any(latest.get(k, 0) < v for k, v in needed.items()):
                    early.append((index, needed, latest))
                finished.append(index)

            done.add_done_callback(check)
            if write_now:
                table.refuse_sends = int(refused)  # the producer refuses the send itself
                await cache.write()
            if decided < len(table.writes) and not (taken and write_now):
                table.decide(decided, taken)  # deliveries decided late, some refused
                decided += 1
            await settle()

        async def take_the_rest() -> None:
            nonlocal decided
            while True:
                while decided < len(table.writes):
                    table.decide(decided, True)
                    decided += 1
                await asyncio.sleep(0.005)

        taker = asyncio.ensure_future(take_the_rest())
        await asyncio.wait_for(cache.drain(), timeout=30)
        taker.cancel()
        assert early == []
        assert sorted(finished) == list(range(len(futures)))
        assert table.latest() == staged

    asyncio.run(scenario())
