"""Properties of the in-memory store: its snapshot is the fold of its own log, whatever
was appended, rewinding to any valid point gives the history folded up to it, and
replacing the last message changes that message alone, or nothing."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.fold.policy import policy_for_record_limit
from goaicore.fold.records import Applied, fold_records
from goaicore.records import (
    ConversationEvent,
    LogPosition,
    SnapshotMessage,
    UserMessage,
    new_event,
)
from goaicore.store.errors import ConversationNotFound, OperationRefused
from goaicore.store.history import Scan
from goaicore.store.memory import DEFAULT_RECORD_LIMIT, InMemoryConversationStore
from tests.fold.conversations import conversation_log

POLICY = policy_for_record_limit(DEFAULT_RECORD_LIMIT)


def _store_with(
    logs: list[list[tuple[ConversationEvent, LogPosition]]], partitions: int, sealed: bool
) -> InMemoryConversationStore:
    store = InMemoryConversationStore(partitions=partitions, sealed=sealed)

    async def append_all() -> None:
        # The conversations' events interleave in their partitions, as on a topic.
        for step in range(max((len(log) for log in logs), default=0)):
            for log in logs:
                if step < len(log):
                    await store.append(log[step][0].conversation_id, log[step][0])

    asyncio.run(append_all())
    return store


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True).flatmap(
        lambda ids: st.tuples(*(conversation_log(f"c{i}", max_steps=8) for i in ids))
    ),
    st.integers(1, 3),
    st.booleans(),
)
def test_the_snapshot_is_the_fold_of_the_log(
    logs: tuple[list[tuple[ConversationEvent, LogPosition]], ...], partitions: int, sealed: bool
) -> None:
    store = _store_with(list(logs), partitions, sealed)
    for log in logs:
        if not log:
            continue
        conversation_id = log[0][0].conversation_id
        read = asyncio.run(store.read(conversation_id))
        assert [e.event.event_id for e in read.events] == [event.event_id for event, _ in log]
        records = asyncio.run(store.memory.records(conversation_id))
        replayed = None
        for outcome in fold_records(records, POLICY, keys=store.memory.keys):
            if isinstance(outcome, Applied):
                replayed = outcome.snapshot
        assert read.snapshot == replayed


@settings(max_examples=40, deadline=None)
@given(conversation_log("c", max_steps=8), st.data())
def test_a_rewind_restores_the_history_folded_up_to_its_point(
    log: list[tuple[ConversationEvent, LogPosition]], data: st.DataObject
) -> None:
    store = _store_with([log], partitions=1, sealed=False)
    events = asyncio.run(store.read("c")).events
    if not events:
        return
    until = data.draw(st.sampled_from([e.offset for e in events]))
    records = asyncio.run(store.memory.records("c", until_offset=until))
    then = None
    for outcome in fold_records(records, POLICY):
        if isinstance(outcome, Applied):
            then = outcome.snapshot
    try:
        rewound = asyncio.run(store.rewind("c", until))
    except OperationRefused:  # inside a tool chain, or after a deletion: refused, unchanged
        assert asyncio.run(store.read("c")).events == events
        return
    assert then is not None
    after = asyncio.run(store.read("c")).snapshot
    assert after is not None
    assert rewound.messages == len(then.messages)
    assert [m.text for m in after.messages] == [m.text for m in then.messages]


@settings(max_examples=40, deadline=None)
@given(conversation_log("c", max_steps=8), st.booleans())
def test_replace_tail_changes_the_last_message_alone_or_nothing(
    log: list[tuple[ConversationEvent, LogPosition]], remove: bool
) -> None:
    store = _store_with([log], partitions=1, sealed=False)
    before = asyncio.run(store.read("c"))
    if before.snapshot is None:
        return
    message = None if remove else SnapshotMessage(role="user", text="instead")
    try:
        replaced = asyncio.run(store.replace_tail("c", 1, [] if message is None else [message]))
    except (OperationRefused, ConversationNotFound):  # nothing to replace, or not valid after
        assert asyncio.run(store.read("c")).events == before.events
        return
    after = asyncio.run(store.read("c")).snapshot
    assert after is not None
    *kept, last = before.snapshot.messages
    expected = kept if message is None else [*kept, replace(message, event_id=last.event_id)]
    assert list(after.messages) == expected
    assert replaced.messages == len(expected)
    assert replaced.until_offset == before.events[-1].offset


class AnotherWriterComesBetween(InMemoryConversationStore):
    """Another writer's event lands after an operation read the log, before it appends."""

    async def _scan(self, conversation_id: str, *args: Any, **kw: Any) -> Scan:
        found = await super()._scan(conversation_id, *args, **kw)
        await self.append(conversation_id, UserMessage(text="in between"))
        return found


async def test_a_replace_computed_before_another_write_changes_nothing() -> None:
    store = AnotherWriterComesBetween()
    await store.memory.publish_all(
        [new_event("c", UserMessage(text="hello")), new_event("c", UserMessage(text="typo"))]
    )
    with pytest.raises(OperationRefused, match="history since changed"):
        await store.replace_tail("c", 1, [SnapshotMessage(role="user", text="fixed")])
    snapshot = (await store.read("c")).snapshot
    assert snapshot is not None
    assert [m.text for m in snapshot.messages] == ["hello", "typo", "in between"]
