"""The Agents SDK's session contract, held by GoaicoreSession over the in-memory store and
over Apache Kafka (a store worker folding): the latest N items in order, add_items all
or none, a retried add_items adding nothing twice, concurrent calls on one session (the
same items twice, acknowledgements out of order, one of them failing), a write cancelled
once it reached the log, a closed session refusing every call, a session stored under a
conversation id of its own, session settings given as a dict, concurrent first writes
from two processes serialized, pop_item and clear_session as history operations in the
log."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SessionSettings

from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.integrations.openai_agents import GoaicoreSession
from goaicore.records import ConversationEvent
from goaicore.records.types import EventBody
from goaicore.records.validation import InvalidInputError
from goaicore.store.kafka import KafkaConversationStore
from goaicore.store.memory import InMemoryConversationStore
from goaicore.store.port import Appended, ConversationStore
from goaicore.sync import on_private_loop

StoreFactory = Callable[[], ConversationStore]


@pytest.fixture(params=["memory", pytest.param("kafka", marks=pytest.mark.integration)])
def make_store(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "memory":
        return InMemoryConversationStore
    settings: Settings = request.getfixturevalue("kafka_deployment")
    return lambda: KafkaConversationStore(settings, source="openai-agents")


@pytest.fixture
async def store(make_store: StoreFactory) -> AsyncIterator[ConversationStore]:
    opened = make_store()
    yield opened
    await on_private_loop(opened.close())


@pytest.fixture
async def session(store: ConversationStore) -> AsyncIterator[GoaicoreSession]:
    opened = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", store)
    yield opened
    await opened.aclose()


def user(text: str) -> Any:  # an item of the SDK's TypedDict union
    return {"content": text, "role": "user"}


def step(call_id: str, output: str) -> Any:
    return [
        {"id": f"rs_{call_id}", "summary": [], "type": "reasoning", "encrypted_content": "enc"},
        {
            "arguments": '{"sides": 6}',
            "call_id": call_id,
            "name": "roll",
            "type": "function_call",
            "id": f"fc_{call_id}",
            "status": "completed",
        },
        {"call_id": call_id, "output": output, "type": "function_call_output"},
    ]


def reply(text: str) -> Any:
    return {
        "id": f"msg_{text}",
        "content": [{"annotations": [], "text": text, "type": "output_text", "logprobs": []}],
        "role": "assistant",
        "status": "completed",
        "type": "message",
    }


async def test_the_latest_n_items_in_chronological_order(session: GoaicoreSession) -> None:
    added = [user("roll for me"), *step("c1", "4"), reply("You rolled 4."), user("again")]
    await session.add_items(added[:1])
    await session.add_items(added[1:5])
    await session.add_items(added[5:])
    assert await session.get_items() == added
    assert await session.get_items(limit=2) == added[-2:]
    assert await session.get_items(limit=100) == added
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == added
    session.session_settings = type(session.session_settings)(limit=3)  # type: ignore[misc]
    assert await session.get_items() == added[-3:]
    assert await session.get_items(limit=1) == added[-1:]
    stored = [json.dumps(item) for item in await session.get_items(limit=-1)]
    assert stored == [json.dumps(item) for item in added]  # byte for byte, keys in order


async def test_a_batch_with_an_item_json_cannot_hold_adds_nothing(
    session: GoaicoreSession,
) -> None:
    await session.add_items([user("first")])
    unwritable: Any = {"content": object(), "role": "user"}
    with pytest.raises(TypeError):
        await session.add_items([user("second"), unwritable])
    assert await session.get_items() == [user("first")]


class LandsThenFails:
    """A store whose next append_all reaches the log and then raises, as a broker
    acknowledgement lost on the way back would."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.fail_next = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def append_all(
        self, conversation_id: str, events: Sequence[ConversationEvent | EventBody]
    ) -> list[Appended]:
        appended = await self.store.append_all(conversation_id, events)
        if self.fail_next:
            self.fail_next = False
            raise ConnectionError("the acknowledgement was lost")
        return appended


async def test_a_retried_add_items_adds_nothing_twice(make_store: StoreFactory) -> None:
    store = make_store()
    flaky = LandsThenFails(store)
    session = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", flaky)  # type: ignore[arg-type]
    try:
        batch = [user("roll"), *step("c1", "3")]
        with pytest.raises(ConnectionError):
            await session.add_items(batch)
        await session.add_items(batch)  # the caller retries: the same items
        await session.add_items([user("roll")])  # a new call, the same text: a new item
        assert await session.get_items() == [*batch, user("roll")]
    finally:
        await session.aclose()
        await on_private_loop(store.close())


async def test_concurrent_batches_never_interleave(session: GoaicoreSession) -> None:
    first = [user(f"a{i}") for i in range(5)]
    second = [user(f"b{i}") for i in range(5)]
    await asyncio.gather(session.add_items(first), session.add_items(second))
    items = await session.get_items()
    assert items in ([*first, *second], [*second, *first])


class Overlapping:
    """A store whose append_all calls overlap: each waits a moment, lands, then the
    first one waits longer before it returns (its acknowledgement arrives last), and
    with ``fail_first`` raises instead, as one lost on the way back would."""

    def __init__(self, store: ConversationStore, *, fail_first: bool = False) -> None:
        self.store = store
        self.fail_first = fail_first
        self.calls = 0
        self.landed: list[Appended] = []
        self.reads_after: list[Appended | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def append_all(
        self, conversation_id: str, events: Sequence[ConversationEvent | EventBody]
    ) -> list[Appended]:
        self.calls += 1
        first = self.calls == 1
        await asyncio.sleep(0.02)  # every call of a gather is on its way
        appended = await self.store.append_all(conversation_id, events)
        self.landed.append(appended[-1])
        if first:
            await asyncio.sleep(0.3)
            if self.fail_first:
                raise ConnectionError("the acknowledgement was lost")
        return appended

    async def read(self, conversation_id: str, **options: Any) -> Any:
        self.reads_after.append(options.get("after"))
        return await self.store.read(conversation_id, **options)


@pytest.fixture
async def overlapping(store: ConversationStore) -> AsyncIterator[GoaicoreSession]:
    opened = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", Overlapping(store))  # type: ignore[arg-type]
    yield opened
    await opened.aclose()


def _overlapping(session: GoaicoreSession) -> Overlapping:
    store = session._store
    assert isinstance(store, Overlapping)
    return store


async def test_concurrent_calls_adding_the_same_items_both_add_them(
    overlapping: GoaicoreSession,
) -> None:
    yes = [user("yes")]
    await asyncio.gather(overlapping.add_items(yes), overlapping.add_items(yes))
    assert await overlapping.get_items() == [user("yes"), user("yes")]


async def test_a_read_waits_for_the_furthest_write_whichever_call_ends_last(
    overlapping: GoaicoreSession,
) -> None:
    await asyncio.gather(overlapping.add_items([user("a")]), overlapping.add_items([user("b")]))
    store = _overlapping(overlapping)
    assert await overlapping.get_items() == [user("a"), user("b")]
    furthest = max(store.landed, key=lambda appended: appended.position.offset)
    assert store.landed[-1] == furthest  # the first call landed first but ended last
    assert store.reads_after[-1] == furthest


async def test_a_failed_add_items_retried_after_another_call_adds_nothing_twice(
    store: ConversationStore,
) -> None:
    flaky = Overlapping(store, fail_first=True)
    session = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", flaky)  # type: ignore[arg-type]
    try:
        batch = [user("roll"), *step("c1", "2")]
        failed, added = await asyncio.gather(
            session.add_items(batch), session.add_items([user("meanwhile")]), return_exceptions=True
        )
        assert isinstance(failed, ConnectionError)
        assert added is None
        await session.add_items(batch)  # the caller retries: the same items
        assert await session.get_items() == [*batch, user("meanwhile")]
    finally:
        await session.aclose()


class PausesAfterWriting:
    """A store whose next write (an append, a rewind) reaches the log and then waits
    for ``release``, so the caller can be cancelled with the outcome already decided."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store
        self.armed = False
        self.written = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def _pause(self) -> None:
        if self.armed:
            self.armed = False
            self.written.set()
            await asyncio.to_thread(self.release.wait, 10)

    async def append_all(self, conversation_id: str, events: Any) -> list[Appended]:
        appended = await self.store.append_all(conversation_id, events)
        await self._pause()
        return appended

    async def replace_tail(self, conversation_id: str, *args: Any, **options: Any) -> Any:
        rewound = await self.store.replace_tail(conversation_id, *args, **options)
        await self._pause()
        return rewound

    async def rewind(self, conversation_id: str, *args: Any, **options: Any) -> Any:
        rewound = await self.store.rewind(conversation_id, *args, **options)
        await self._pause()
        return rewound


@pytest.mark.parametrize("operation", ["add", "pop", "clear"])
async def test_a_write_cancelled_after_it_reached_the_log_is_cancelled_once_known(
    store: ConversationStore, operation: str
) -> None:
    paused = PausesAfterWriting(store)
    session = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", paused)
    item = user("once")
    try:
        if operation != "add":
            await session.add_items([item])
        paused.armed = True
        calls = {
            "add": lambda: session.add_items([item]),
            "pop": session.pop_item,
            "clear": session.clear_session,
        }
        mutation: asyncio.Task[Any] = asyncio.create_task(calls[operation]())
        try:
            assert await asyncio.to_thread(paused.written.wait, 10)
            mutation.cancel()
            await asyncio.sleep(0)
            mutation.cancel()
            await asyncio.sleep(0.05)
            assert not mutation.done()  # waiting for the outcome, not abandoning it
            paused.release.set()
            with pytest.raises(asyncio.CancelledError):
                await mutation
        finally:
            paused.release.set()
        assert mutation.cancelled()
        assert await session.get_items() == ([item] if operation == "add" else [])
    finally:
        await session.aclose()


async def test_a_closed_session_refuses_every_call(store: ConversationStore) -> None:
    session = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", store)
    await session.add_items([user("kept")])
    session.close()
    session.close()  # again: nothing to do
    calls = [
        session.get_items(),
        session.add_items([]),  # the empty add, which writes nothing, is refused too
        session.add_items([user("late")]),
        session.pop_item(),
        session.clear_session(),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="is closed"):
            await call
    await session.aclose()
    reopened = GoaicoreSession(session.session_id, store)
    assert await reopened.get_items() == [user("kept")]  # the store it was given stays open
    await reopened.aclose()


async def test_a_session_stored_under_a_conversation_id_of_its_own(
    store: ConversationStore,
) -> None:
    conversation_id = f"agents-{uuid.uuid4().hex[:10]}"
    named = "a session id no conversation may have: " + "x" * 300
    session = GoaicoreSession(named, store, conversation_id=conversation_id)
    assert session.session_id == named  # what the SDK sees (the runs' group id)
    assert session.conversation_id == conversation_id
    await session.add_items([user("hello")])
    logged = await on_private_loop(store.read(conversation_id, snapshot=False))
    assert [type(e.event.body).__name__ for e in logged.events] == ["UserMessage"]
    same = GoaicoreSession(conversation_id, store)  # named by the conversation itself
    assert same.conversation_id == conversation_id
    assert await same.get_items() == [user("hello")]
    await session.aclose()
    await same.aclose()
    with pytest.raises(InvalidInputError):
        GoaicoreSession(named, store)
    with pytest.raises(InvalidInputError):
        GoaicoreSession("fine", store, conversation_id=" ")


def test_session_settings_are_normalised_as_the_sdk_s_sessions_do() -> None:
    store = InMemoryConversationStore()
    assert GoaicoreSession("s", store).session_settings == SessionSettings()
    given = GoaicoreSession("s", store, session_settings={"limit": 0}).session_settings
    assert isinstance(given, SessionSettings)
    assert given.limit == 0
    given = GoaicoreSession("s", store, session_settings=SessionSettings(limit=5)).session_settings
    assert given == SessionSettings(limit=5)
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        GoaicoreSession("s", store, session_settings={"limitt": 1})


async def test_pop_item_takes_the_last_item_out_as_a_history_operation(
    session: GoaicoreSession, store: ConversationStore
) -> None:
    assert await session.pop_item() is None
    added = [user("roll"), *step("c1", "5"), reply("Five."), reply("Anything else?")]
    await session.add_items(added)
    assert await session.pop_item() == added[-1]  # out of a run of two replies
    assert await session.get_items() == added[:-1]
    assert await session.pop_item() == added[-2]
    assert await session.pop_item() == added[-3]  # a tool output: its call stays, raw
    assert await session.get_items() == added[:-3]
    late: Any = {"call_id": "c1", "output": "6", "type": "function_call_output"}
    await session.add_items([late])
    assert (await session.get_items())[-1]["output"] == "6"  # type: ignore[typeddict-item]
    await session.clear_session()
    assert await session.get_items() == []
    await session.clear_session()  # empty already: nothing to do
    await session.add_items([user("after the clear")])
    assert await session.get_items() == [user("after the clear")]
    # nothing was deleted: the log keeps every event, the operations among them
    logged = await on_private_loop(store.read(session.session_id, snapshot=False))
    kinds = [type(e.event.body).__name__ for e in logged.events]
    assert kinds.count("ConversationRewound") == 4  # three pops and a clear
    assert kinds.count("UserMessage") == 2


def test_a_session_works_from_any_loop_and_thread(make_store: StoreFactory) -> None:
    store = make_store()
    session = GoaicoreSession(f"agents-{uuid.uuid4().hex[:10]}", store)
    try:
        asyncio.run(session.add_items([user("from one loop")]))
        got: list[Any] = []

        def in_a_thread() -> None:
            got.extend(asyncio.run(session.get_items()))

        thread = threading.Thread(target=in_a_thread)
        thread.start()
        thread.join()
        assert got == [user("from one loop")]
    finally:
        session.close()
        asyncio.run(on_private_loop(store.close()))
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(session.get_items())


WRITER = """
import asyncio, json, sys, time
from goaicore.config import Settings
from goaicore.devstack.worker_process import settings_env
from goaicore.integrations.openai_agents import GoaicoreSession
from goaicore.store.kafka import KafkaConversationStore

session_id, name, start = sys.argv[1], sys.argv[2], float(sys.argv[3])

async def main():
    session = GoaicoreSession(session_id, KafkaConversationStore(Settings()))
    await session.get_items()  # connected before the start
    await asyncio.sleep(max(0.0, start - time.time()))
    await session.add_items([{"content": f"{name}{i}", "role": "user"} for i in range(5)])
    await session.aclose()

asyncio.run(main())
"""


@pytest.mark.integration
def test_two_processes_first_writes_to_one_session_are_serialized(
    kafka_deployment: Settings, tmp_path: Path
) -> None:
    session_id = f"agents-two-{uuid.uuid4().hex[:8]}"
    env = settings_env(kafka_deployment)
    start = time.time() + 8.0
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, session_id, name, str(start)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    store = KafkaConversationStore(kafka_deployment)
    session = GoaicoreSession(session_id, store)
    try:
        items = asyncio.run(session.get_items())
    finally:
        session.close()
        asyncio.run(on_private_loop(store.close()))
    a = [user(f"a{i}") for i in range(5)]
    b = [user(f"b{i}") for i in range(5)]
    assert items in ([*a, *b], [*b, *a])  # one session, each batch whole, neither split
