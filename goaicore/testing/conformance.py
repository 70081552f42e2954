"""The conversation store's conformance suite: every promise of a store, as a check.

Each check takes a fresh store from a factory and holds it to one promise of
:class:`~goaicore.store.port.ConversationStore`: order within a conversation,
concurrency across conversations, idempotent retries, read-your-writes, each history
operation, erasure, fork isolation, a clear error for each bad input. goaicore runs
it against each of its stores; run it against yours with one call::

    report = await check_store(lambda: MyStore(...))
    report.raise_for_failures()

The factory returns a store to be used as ``async with`` (it is closed after each
check); the checks use conversation ids of their own, so stores may share a backend.
Offsets are taken from what :meth:`~goaicore.store.port.ConversationStore.read` returns
(where a write lands first, e.g. an intake topic, may not be where the log holds it).
The store's model must answer a plain question with status ``ok`` and count the
tokens it was sent (any real provider does; so does the offline model).
"""

from __future__ import annotations

import asyncio
import traceback
import uuid
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from goaicore.conversation.progress import TextDelta
from goaicore.errors import GoaicoreError
from goaicore.fold.metadata import MAX_ATTRIBUTES
from goaicore.records import (
    AssistantTurn,
    ChatReply,
    ConversationEvent,
    ConversationRewound,
    GameEvent,
    ReplyStatus,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    new_event,
    utc_now,
)
from goaicore.records.types import EventBody
from goaicore.records.validation import InvalidInputError
from goaicore.store.errors import ConversationNotFound, OperationRefused, ReplyTimeout
from goaicore.store.port import Conversation, ConversationStore

StoreFactory = Callable[[], AbstractAsyncContextManager[ConversationStore]]
"""Makes a store to use as ``async with`` for one check."""


class ConformanceFailure(GoaicoreError, AssertionError):
    """A store broke a promise; the message says which and what it did instead."""


@dataclass(frozen=True)
class Check:
    """One promise of a store, held by ``run(store)``."""

    name: str
    promise: str
    run: Callable[[ConversationStore], Awaitable[None]]


@dataclass
class ConformanceReport:
    """What :func:`check_store` found: the checks passed, and each failure's traceback."""

    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def raise_for_failures(self) -> None:
        if self.failed:
            detail = "\n\n".join(f"{name}:\n{text}" for name, text in self.failed.items())
            raise ConformanceFailure(
                f"{len(self.failed)} of {len(self.failed) + len(self.passed)} checks "
                f"failed:\n\n{detail}"
            )


async def run_check(factory: StoreFactory, check: Check) -> None:
    """Run one check on a fresh store (closed afterwards); raises what the check raised."""
    async with factory() as store:
        await check.run(store)


async def check_store(
    factory: StoreFactory, only: Iterable[str] | None = None
) -> ConformanceReport:
    """Run every check (or those named in ``only``) and report, never stopping at one."""
    wanted = set(only) if only is not None else None
    report = ConformanceReport()
    for check in CHECKS:
        if wanted is not None and check.name not in wanted:
            continue
        try:
            await run_check(factory, check)
        except Exception:
            report.failed[check.name] = traceback.format_exc()
        else:
            report.passed.append(check.name)
    return report


# -- helpers


def expect(condition: object, message: str) -> None:
    """A promise held, or a :class:`ConformanceFailure` saying what broke."""
    if not condition:
        raise ConformanceFailure(message)


async def expect_error(
    kind: type[BaseException], action: Awaitable[Any], what: str
) -> BaseException:
    """``action`` raises ``kind``: the clear error a caller is promised."""
    try:
        await action
    except kind as err:
        expect(str(err), f"{what}: {kind.__name__} without a message")
        return err
    except Exception as err:
        raise ConformanceFailure(
            f"{what}: expected {kind.__name__}, got {type(err).__name__}: {err}"
        ) from err
    raise ConformanceFailure(f"{what}: expected {kind.__name__}, nothing was raised")


def new_id(label: str) -> str:
    """A conversation id no other check (or run) uses."""
    return f"conformance-{label}-{uuid.uuid4().hex[:12]}"


async def settled(store: ConversationStore, conversation_id: str) -> Conversation:
    """The conversation with its history, its snapshot having applied all of it."""
    return await store.read(conversation_id, history=True, timeout=30.0)


def bodies(conversation: Conversation) -> list[Any]:
    return [logged.event.body for logged in conversation.events]


def user_texts(conversation: Conversation) -> list[str]:
    return [b.text for b in bodies(conversation) if isinstance(b, UserMessage)]


def roles(conversation: Conversation) -> list[str]:
    snapshot = conversation.snapshot
    return [m.role for m in snapshot.messages] if snapshot is not None else []


async def ask_ok(store: ConversationStore, conversation_id: str, text: str, **kw: Any) -> Any:
    reply = await store.ask(conversation_id, text, timeout=60.0, **kw)
    expect(
        reply.status is ReplyStatus.OK,
        f"ask({text!r}) on {conversation_id!r}: status {reply.status.value}, error {reply.error!r}",
    )
    return reply


# -- the checks


async def _unknown_conversation_is_empty(store: ConversationStore) -> None:
    read = await store.read(new_id("unknown"))
    expect(not read.exists, f"a conversation never written has a snapshot: {read.snapshot}")
    expect(read.events == (), f"a conversation never written has events: {read.events}")


async def _append_then_read_after_it(store: ConversationStore) -> None:
    cid = new_id("append")
    appended = await store.append(cid, GameEvent(kind="arrival", text="The player arrives."))
    read = await store.read(cid, after=appended, timeout=30.0)
    expect(read.snapshot is not None, "read after an append found no snapshot")
    assert read.snapshot is not None
    expect(
        appended.event_id in read.snapshot.recent_event_ids,
        f"the snapshot read after {appended} has not applied it",
    )
    expect(
        [e.event.event_id for e in read.events] == [appended.event_id],
        f"history after one append: {[e.event.event_id for e in read.events]}",
    )


async def _order_within_a_conversation(store: ConversationStore) -> None:
    cid = new_id("order")
    texts = [f"message {i}" for i in range(12)]
    offsets = [(await store.append(cid, UserMessage(text=t))).position.offset for t in texts]
    expect(offsets == sorted(offsets), f"appends landed out of order: {offsets}")
    read = await settled(store, cid)
    expect(user_texts(read) == texts, f"history out of order: {user_texts(read)}")
    assert read.snapshot is not None
    snapshot_texts = [m.text for m in read.snapshot.messages if m.role == "user"]
    expect(snapshot_texts == texts, f"snapshot out of order: {snapshot_texts}")


async def _append_all_in_order_then_read_after_the_last(store: ConversationStore) -> None:
    cid = new_id("group")
    given = new_event(cid, UserMessage(text="an envelope"), source="conformance")
    group: list[ConversationEvent | EventBody] = [
        UserMessage(text="one"),
        GameEvent(kind="weather", text="It starts to rain."),
        given,
        AssistantTurn(text="an answer", provider="test"),
    ]
    appended = await store.append_all(cid, group)
    expect(len(appended) == len(group), f"{len(group)} events gave {len(appended)} results")
    expect(appended[2].event_id == given.event_id, "an envelope's event id was not kept")
    expect(len({a.event_id for a in appended}) == len(group), "two events of a group share an id")
    landed = [(a.position.topic, a.position.partition) for a in appended]
    offsets = [a.position.offset for a in appended]
    expect(len(set(landed)) == 1, f"one conversation's group landed apart: {landed}")
    expect(offsets == sorted(set(offsets)), f"a group landed out of order: {offsets}")
    read = await store.read(cid, after=appended[-1], timeout=30.0)
    assert read.snapshot is not None
    ids = [e.event.event_id for e in read.events]
    expect(ids == [a.event_id for a in appended], f"history after a group: {ids}")
    missing = [a for a in appended if a.event_id not in read.snapshot.recent_event_ids]
    expect(not missing, f"a read after the group's last event misses {missing}")
    texts = [m.text for m in read.snapshot.messages]
    expected = ["one", "It starts to rain.", "an envelope", "an answer"]
    expect(texts == expected, f"snapshot after a group: {texts}")
    expect(await store.append_all(cid, []) == [], "an empty group appended something")
    nothing = new_id("empty-group")
    expect(await store.append_all(nothing, []) == [], "an empty group appended something")
    expect(not (await store.read(nothing)).exists, "an empty group wrote a conversation")


async def _append_all_refuses_the_whole_group(store: ConversationStore) -> None:
    cid = new_id("bad-group")
    good = [UserMessage(text="fine"), UserMessage(text="also fine")]
    stranger = new_event(new_id("elsewhere"), UserMessage(text="x"), source="conformance")
    huge = UserMessage(text="x" * 2_000_000)
    bad_ones: list[tuple[ConversationEvent | EventBody, str]] = [
        (stranger, "another conversation's event"),
        (huge, "a 2 MB event"),
    ]
    for bad, what in bad_ones:
        await expect_error(
            InvalidInputError, store.append_all(cid, [*good, bad]), f"a group with {what}"
        )
    await expect_error(
        InvalidInputError,
        store.append_all(cid, [*good, "not an event"]),  # type: ignore[list-item]
        "a group with a string",
    )
    await expect_error(
        InvalidInputError,
        store.append_all(cid, UserMessage(text="alone")),  # type: ignore[arg-type]
        "append_all of one event, not a list",
    )
    await expect_error(InvalidInputError, store.append_all("", good), "a group under an empty id")
    read = await store.read(cid)
    expect(not read.exists and read.events == (), "a refused group wrote something")


async def _append_all_applies_an_event_id_once(store: ConversationStore) -> None:
    cid = new_id("group-again")
    events = [new_event(cid, UserMessage(text=t), source="conformance") for t in "abcd"]
    await store.append(cid, events[0])
    await store.append_all(cid, events[:2])  # the first again: it changes nothing
    await store.append_all(cid, events)  # as a caller completes a group that failed midway
    await store.append_all(cid, events)  # and once more, all of them again
    last = await store.append(cid, UserMessage(text="e"))  # after all of them in the log
    await store.read(cid, after=last, timeout=30.0)
    read = await settled(store, cid)
    assert read.snapshot is not None
    texts = [m.text for m in read.snapshot.messages]
    expect(texts == list("abcde"), f"events appended again changed the history: {texts}")
    expect(len(read.events) == 12, f"the log holds {len(read.events)} events, not all 12")
    expect(read.snapshot.duplicate_count == 7, f"{read.snapshot.duplicate_count} duplicates, not 7")


async def _append_all_groups_never_interleave(store: ConversationStore) -> None:
    cid = new_id("groups")
    firsts = [UserMessage(text=f"first {i}") for i in range(10)]
    seconds = [UserMessage(text=f"second {i}") for i in range(10)]
    one, two = await asyncio.gather(store.append_all(cid, firsts), store.append_all(cid, seconds))
    await store.read(cid, after=one[-1], timeout=30.0)
    await store.read(cid, after=two[-1], timeout=30.0)
    read = await settled(store, cid)
    assert read.snapshot is not None
    texts = [m.text for m in read.snapshot.messages]
    a, b = [m.text for m in firsts], [m.text for m in seconds]
    expect(texts in (a + b, b + a), f"two groups appended at once interleaved: {texts}")
    expect(user_texts(read) == texts, f"the log holds {user_texts(read)}")


async def _concurrency_across_conversations(store: ConversationStore) -> None:
    ids = [new_id(f"many{i}") for i in range(6)]
    replies = await asyncio.gather(*(ask_ok(store, c, f"hello from {c}") for c in ids))
    expect(len({r.request_id for r in replies}) == len(ids), "two asks shared a request id")
    for cid, reply in zip(ids, replies, strict=True):
        expect(reply.conversation_id == cid, f"{cid} got the reply of {reply.conversation_id}")
        read = await settled(store, cid)
        expect(user_texts(read) == [f"hello from {cid}"], f"{cid} holds {user_texts(read)}")
        expect(roles(read) == ["user", "assistant"], f"{cid}'s history: {roles(read)}")


async def _reads_and_operations_at_once(store: ConversationStore) -> None:
    ids = [new_id(f"busy{i}") for i in range(4)]
    for cid in ids:
        await store.append(cid, UserMessage(text=f"one {cid}"))
        await store.append(cid, UserMessage(text=f"two {cid}"))
    reads = await asyncio.gather(*(settled(store, cid) for cid in ids))
    for cid, read in zip(ids, reads, strict=True):
        expect(user_texts(read) == [f"one {cid}", f"two {cid}"], f"{cid} read {user_texts(read)}")
    firsts = [read.events[0].offset for read in reads]
    rewinds = asyncio.gather(*(store.rewind(c, o) for c, o in zip(ids, firsts, strict=True)))
    reads_beside = asyncio.gather(*(settled(store, cid) for cid in ids))
    rewound, also_read = await asyncio.gather(rewinds, reads_beside)
    expect([r.messages for r in rewound] == [1] * len(ids), f"rewinds at once kept {rewound}")
    for cid, read in zip(ids, also_read, strict=True):
        expect(f"one {cid}" in user_texts(read), f"a read beside the rewinds lost events of {cid}")
    for cid, read in zip(ids, await asyncio.gather(*(settled(store, c) for c in ids)), strict=True):
        assert read.snapshot is not None
        texts = [m.text for m in read.snapshot.messages]
        expect(texts == [f"one {cid}"], f"{cid} after its rewind holds {texts}")


async def _one_conversations_turns_never_interleave(store: ConversationStore) -> None:
    cid = new_id("turns")
    texts = [f"question {i}" for i in range(3)]
    await asyncio.gather(*(ask_ok(store, cid, t) for t in texts))
    read = await settled(store, cid)
    expect(sorted(user_texts(read)) == texts, f"asked {texts}, history holds {user_texts(read)}")
    expect(
        roles(read) == ["user", "assistant"] * len(texts),
        f"turns interleaved or lost: {roles(read)}",
    )


async def _ask_is_idempotent_by_request_id(store: ConversationStore) -> None:
    cid = new_id("retry")
    request_id = uuid.uuid4().hex
    first = await ask_ok(store, cid, "What is the weather?", request_id=request_id)
    again = await ask_ok(store, cid, "What is the weather?", request_id=request_id)
    expect(first.request_id == again.request_id == request_id, "the reply lost its request id")
    expect(first.text == again.text, f"a retry got another reply: {first.text!r} {again.text!r}")
    read = await settled(store, cid)
    turns = [b for b in bodies(read) if isinstance(b, AssistantTurn)]
    expect(len(user_texts(read)) == 1 and len(turns) == 1, f"a retry ran again: {bodies(read)}")


async def _a_request_id_is_a_conversations_own(store: ConversationStore) -> None:
    request_id = uuid.uuid4().hex
    first, second = new_id("own-a"), new_id("own-b")
    await ask_ok(store, first, "the same request id", request_id=request_id)
    await ask_ok(store, second, "the same request id", request_id=request_id)

    async def turn_ids(conversation_id: str) -> list[str]:
        read = await settled(store, conversation_id)
        return [e.event.event_id for e in read.events if e.event.causation_id == request_id]

    ids = await turn_ids(first)
    other = await turn_ids(second)
    expect(ids and other, f"a turn is missing from {first!r} or {second!r}: {ids} {other}")
    expect(not set(ids) & set(other), f"two conversations' turns share event ids: {ids} {other}")
    await ask_ok(store, first, "the same request id", request_id=request_id)
    expect(await turn_ids(first) == ids, f"a retry in {first!r} changed its turn's ids")


async def _ids_are_any_printable_text(store: ConversationStore) -> None:
    for label in ("ref-\u00fc-1", "nulx\ufffdy", "\u4f1a\u8a71 \U0001f3b2"):
        cid = new_id(label)
        await store.append(cid, UserMessage(text=f"in {label}"))
        read = await settled(store, cid)
        expect(read.conversation_id == cid, f"{cid!r} read back as {read.conversation_id!r}")
        expect(user_texts(read) == [f"in {label}"], f"{cid!r} holds {user_texts(read)}")


async def _a_turn_reads_what_came_before_it(store: ConversationStore) -> None:
    story = " ".join(["The dragon circles the tower of Harrogate."] * 40)
    plain, told = new_id("plain"), new_id("told")
    await store.append(told, GameEvent(kind="story", text=story))
    bare = await ask_ok(store, plain, "What happened?")
    seen = await ask_ok(store, told, "What happened?")
    expect(
        bare.usage is not None and seen.usage is not None,
        "replies carry no usage: the check cannot tell what the model was sent",
    )
    assert bare.usage is not None
    assert seen.usage is not None
    expect(
        seen.usage.prompt_tokens > bare.usage.prompt_tokens + 100,
        "the turn did not send the game event appended before it "
        f"({seen.usage.prompt_tokens} prompt tokens, {bare.usage.prompt_tokens} without it)",
    )


async def _undo(store: ConversationStore) -> None:
    cid = new_id("undo")
    await ask_ok(store, cid, "first question")
    await ask_ok(store, cid, "second question")
    undone = await store.undo(cid)
    expect(undone.text == "second question", f"undo gave back {undone.text!r}")
    expect(undone.messages == 2, f"undo kept {undone.messages} messages, not 2")
    read = await settled(store, cid)
    assert read.snapshot is not None
    texts = [m.text for m in read.snapshot.messages if m.role == "user"]
    expect(texts == ["first question"], f"history after undo: {texts}")
    expect(len(read.events) == 5, f"the log lost or gained events: {len(read.events)} of 5")
    await expect_error(
        ConversationNotFound, store.undo(new_id("nothing")), "undo of an unknown conversation"
    )


async def _regenerate(store: ConversationStore) -> None:
    cid = new_id("regenerate")
    await ask_ok(store, cid, "tell me a story")
    reply = await store.regenerate(cid, timeout=60.0)
    expect(reply.status is ReplyStatus.OK, f"regenerate: {reply.status.value} {reply.error}")
    read = await settled(store, cid)
    expect(roles(read) == ["user", "assistant"], f"history after regenerate: {roles(read)}")
    expect(user_texts(read) == ["tell me a story"] * 2, "the message was not asked again")


async def _a_regenerate_that_fails_leaves_the_history(store: ConversationStore) -> None:
    cid = new_id("regenerate-late")
    await ask_ok(store, cid, "tell me a story")
    try:
        late = await store.regenerate(cid, timeout=5.96e-08)
    except ReplyTimeout:
        pass  # the wait ended before the reply came
    else:
        expect(late.status is ReplyStatus.TIMEOUT, f"a late regenerate: {late.status.value}")
    await ask_ok(store, cid, "and then?")  # the regenerate's turn is done: turns are in order
    read = await settled(store, cid)
    assert read.snapshot is not None
    texts = [m.text for m in read.snapshot.messages if m.role == "user"]
    expect(
        texts == ["tell me a story", "and then?"],
        f"a regenerate whose turn timed out changed the history: {texts}",
    )
    rewinds = [b for b in bodies(read) if isinstance(b, ConversationRewound)]
    expect(not rewinds, f"a rewind was appended without the turn that replaces it: {rewinds}")
    told = new_id("regenerate-nothing")
    await store.append(told, GameEvent(kind="story", text="The tower stands."))
    await expect_error(
        OperationRefused, store.regenerate(told, timeout=60.0), "regenerate with nothing to undo"
    )
    read = await settled(store, told)
    expect(len(read.events) == 1, f"a refused regenerate appended {bodies(read)[1:]}")


async def _rewind(store: ConversationStore) -> None:
    cid = new_id("rewind")
    await store.append(cid, UserMessage(text="one"))
    await store.append(cid, UserMessage(text="two"))
    first = (await settled(store, cid)).events[0]  # offsets in events, as history shows them
    rewound = await store.rewind(cid, first.offset)
    expect(rewound.messages == 1, f"rewind to the first event kept {rewound.messages} messages")
    read = await settled(store, cid)
    assert read.snapshot is not None
    expect([m.text for m in read.snapshot.messages] == ["one"], "rewind did not restore it")
    emptied = await store.rewind(cid, -1)
    expect(emptied.messages == 0, "rewind to -1 left messages")
    await expect_error(InvalidInputError, store.rewind(cid, -2), "rewind to -2")
    last = (await settled(store, cid)).events[-1].offset
    past = await expect_error(
        OperationRefused, store.rewind(cid, last + 1), "a rewind past the last event"
    )
    expect(f"last event is at offset {last}" in str(past), f"it does not name {last}: {past}")


async def _a_tool_chain(store: ConversationStore, conversation_id: str) -> None:
    """A user message, a tool call and its result, appended one by one."""
    await store.append(conversation_id, UserMessage(text="roll a die"))
    call = ToolCall(id="call-1", name="roll", arguments="{}")
    await store.append(conversation_id, AssistantTurn(tool_calls=(call,), provider="test"))
    await store.append(conversation_id, ToolResult(tool_call_id="call-1", name="roll", content="4"))


async def _rewind_inside_a_tool_chain_is_refused(store: ConversationStore) -> None:
    cid = new_id("chain")
    await _a_tool_chain(store, cid)
    asked = (await settled(store, cid)).events[1]
    err = await expect_error(
        OperationRefused,
        store.rewind(cid, asked.offset),
        "rewind between a tool call and its result",
    )
    expect("nearest" in str(err), f"the refusal names no offset that works: {err}")


async def _turn(store: ConversationStore, conversation_id: str, asked: str, said: str) -> None:
    """A user message and its answer, appended as a turn would."""
    await store.append_all(
        conversation_id, [UserMessage(text=asked), AssistantTurn(text=said, provider="test")]
    )


def last_message(conversation: Conversation) -> Any:
    snapshot = conversation.snapshot
    expect(snapshot is not None and snapshot.messages, "no messages where some were expected")
    assert snapshot is not None
    return snapshot.messages[-1]


async def _replace_tail(store: ConversationStore) -> None:
    cid = new_id("replace")
    await _turn(store, cid, "hello", "hi there")
    answer = last_message(await settled(store, cid))
    edited = SnapshotMessage(role="assistant", text="hello again", event_id="not-kept")
    replaced = await store.replace_tail(cid, 1, [edited], expected_event_id=answer.event_id)
    expect(replaced.messages == 2, f"a replace kept {replaced.messages} messages, not 2")
    read = await settled(store, cid)
    now = last_message(read)
    expect(now.text == "hello again", f"the last message after a replace: {now.text!r}")
    expect(now.event_id == answer.event_id, f"the replaced message points at {now.event_id!r}")
    expect(replaced.until_offset == read.events[1].offset, f"replaced up to {replaced}")
    stale = SnapshotMessage(role="assistant", text="too late")
    err = await expect_error(
        OperationRefused,
        store.replace_tail(cid, 1, [stale], expected_event_id="an-event-read-before"),
        "a replace of a last message that is no longer last",
    )
    expect("changed" in str(err), f"the refusal does not say the history changed: {err}")
    removed = await store.replace_tail(cid, 1, [], reason="removed", expected_event_id=now.event_id)
    expect(removed.messages == 1, f"a removal kept {removed.messages} messages, not 1")
    read = await settled(store, cid)
    assert read.snapshot is not None
    expect([m.text for m in read.snapshot.messages] == ["hello"], "the removal did not remove")
    expect(len(read.events) == 4, f"the log lost or gained events: {len(read.events)} of 4")
    await store.replace_tail(cid, 1, [])
    await expect_error(OperationRefused, store.replace_tail(cid, 1, []), "a removal from nothing")


async def _replace_tail_refuses_what_is_not_valid(store: ConversationStore) -> None:
    cid = new_id("replace-chain")
    await _a_tool_chain(store, cid)
    before = len((await settled(store, cid)).events)
    await expect_error(
        OperationRefused, store.replace_tail(cid, 1, []), "removing a tool result its call awaits"
    )
    talk = SnapshotMessage(role="assistant", text="no result")
    await expect_error(
        OperationRefused,
        store.replace_tail(cid, 1, [talk]),
        "replacing a tool result by another role",
    )
    await expect_error(
        InvalidInputError,
        store.replace_tail(cid, 1, "text"),  # type: ignore[arg-type]
        "a replacement that is not a list of SnapshotMessage",
    )
    await expect_error(
        InvalidInputError, store.replace_tail(cid, 0, []), "a replacement of no message"
    )
    await expect_error(
        ConversationNotFound, store.replace_tail(new_id("none"), 1, []), "a replace of nothing"
    )
    after = len((await settled(store, cid)).events)
    expect(after == before, f"refused replaces appended {after - before} events")
    chain = (await settled(store, cid)).snapshot
    assert chain is not None
    together = [SnapshotMessage(role="assistant", text="rolled a 4")]  # the call with its result
    replaced = await store.replace_tail(
        cid, 2, together, expected_event_id=chain.messages[-1].event_id
    )
    expect(replaced.messages == 2, f"a call and its result replaced: {replaced.messages} kept")
    read = await settled(store, cid)
    assert read.snapshot is not None
    now = [(m.role, m.text, m.event_id) for m in read.snapshot.messages]
    first, call = chain.messages[0], chain.messages[1]
    wanted = [("user", "roll a die", first.event_id), ("assistant", "rolled a 4", call.event_id)]
    expect(now == wanted, f"after replacing the last two messages: {now}")


async def _undo_and_rewind_after_replace_tail(store: ConversationStore) -> None:
    cid = new_id("replace-undo")
    await _turn(store, cid, "first question", "first answer")
    await _turn(store, cid, "second question", "second answer")
    edited = SnapshotMessage(role="assistant", text="second answer, edited")
    await store.replace_tail(cid, 1, [edited])
    replaced_at = (await settled(store, cid)).events[-1].offset
    await store.append(cid, UserMessage(text="third question"))
    rewound = await store.rewind(cid, replaced_at)
    expect(rewound.messages == 4, f"a rewind to the replace kept {rewound.messages} messages")
    read = await settled(store, cid)
    texts = [m.text for m in read.snapshot.messages] if read.snapshot else []
    expect(texts[-1] == "second answer, edited", f"a rewind to the replace restored {texts}")
    undone = await store.undo(cid)
    expect(undone.text == "second question", f"undo after a replace gave back {undone.text!r}")
    read = await settled(store, cid)
    texts = [m.text for m in read.snapshot.messages] if read.snapshot else []
    expect(texts == ["first question", "first answer"], f"history after undo: {texts}")


async def _fork_isolation(store: ConversationStore) -> None:
    source, fork = new_id("source"), new_id("fork")
    await store.append(source, UserMessage(text="shared"))
    forked = await store.fork(source, fork)
    expect(forked.messages == 1, f"the fork took {forked.messages} messages, not 1")
    await store.append(source, UserMessage(text="source only"))
    await store.append(fork, UserMessage(text="fork only"))
    source_read, fork_read = await settled(store, source), await settled(store, fork)
    assert source_read.snapshot is not None
    assert fork_read.snapshot is not None
    source_texts = [m.text for m in source_read.snapshot.messages]
    fork_texts = [m.text for m in fork_read.snapshot.messages]
    expect(source_texts == ["shared", "source only"], f"the source holds {source_texts}")
    expect(fork_texts == ["shared", "fork only"], f"the fork holds {fork_texts}")
    origin = fork_read.snapshot.forked_from
    expect(origin is not None and origin.conversation_id == source, "the fork names no source")


async def _fork_refusals(store: ConversationStore) -> None:
    source, other = new_id("src"), new_id("taken")
    await store.append(source, UserMessage(text="hi"))
    await store.append(other, UserMessage(text="hi"))
    await expect_error(OperationRefused, store.fork(source, source), "a fork onto itself")
    await expect_error(OperationRefused, store.fork(source, other), "a fork onto a used id")
    await expect_error(
        ConversationNotFound, store.fork(new_id("none"), new_id("x")), "a fork of nothing"
    )
    await expect_error(
        InvalidInputError, store.fork(source, new_id("y"), before_offset=-1), "before_offset -1"
    )
    last = (await settled(store, source)).events[-1].offset
    past = await expect_error(
        OperationRefused,
        store.fork(source, new_id("y"), before_offset=last + 2),
        "a fork past the last event",
    )
    expect(f"at most {last + 1}" in str(past), f"it does not name {last + 1}: {past}")


async def _a_snapshot_read_after_an_operation_sees_it(store: ConversationStore) -> None:
    source, fork = new_id("seen"), new_id("seen-fork")
    await store.append(source, UserMessage(text="shared"))
    await store.fork(source, fork)
    forked = (await store.read(fork, history=False, timeout=30.0)).snapshot
    texts = [m.text for m in forked.messages] if forked is not None else None
    expect(texts == ["shared"], f"a read right after the fork holds {texts}")
    await store.set_metadata(source, title="seen")
    titled = (await store.read(source, history=False, timeout=30.0)).snapshot
    title = titled.title if titled is not None else None
    expect(title == "seen", f"a read right after setting the title gave {title!r}")
    await store.undo(source)
    undone = (await store.read(source, history=False, timeout=30.0)).snapshot
    left = [m.text for m in undone.messages] if undone is not None else None
    expect(left == [], f"a read right after undo holds {left}")


async def _a_snapshot_read_after_an_ask_sees_its_turn(store: ConversationStore) -> None:
    cid = new_id("asked")

    async def said() -> list[tuple[str, str | None]]:
        read = await store.read(cid, history=False, timeout=30.0)
        snapshot = read.snapshot
        return [(m.role, m.text) for m in snapshot.messages] if snapshot is not None else []

    asked = await ask_ok(store, cid, "Where is the inn?")
    seen = await said()
    expect(
        seen == [("user", "Where is the inn?"), ("assistant", asked.text)],
        f"a read right after an ask holds {seen}",
    )
    reply = (await streamed(store, cid, "And the smith?"))[-1]
    seen = await said()
    expect(seen[2:] == [("user", "And the smith?"), ("assistant", reply.text)], f"then {seen}")
    again = await store.regenerate(cid, timeout=60.0)
    seen = await said()
    expect(
        seen[2:] == [("user", "And the smith?"), ("assistant", again.text)],
        f"a read right after a regenerate holds {seen}",
    )


async def _metadata(store: ConversationStore) -> None:
    cid = new_id("meta")
    await store.set_metadata(
        cid, title="Tavern hunt", owner="ada", tags=["quest"], attributes={"region": "north"}
    )
    await store.set_metadata(cid, attributes={"region": None, "mood": "calm"})
    read = await settled(store, cid)
    snapshot = read.snapshot
    expect(snapshot is not None, "metadata of a new conversation made no snapshot")
    assert snapshot is not None
    expect(
        (snapshot.title, snapshot.owner, snapshot.tags) == ("Tavern hunt", "ada", ("quest",)),
        f"metadata: {snapshot.title!r} {snapshot.owner!r} {snapshot.tags!r}",
    )
    expect(dict(snapshot.attributes) == {"mood": "calm"}, f"attributes: {snapshot.attributes}")
    too_many = {f"a{i}": "x" for i in range(40)}
    await expect_error(
        InvalidInputError, store.set_metadata(cid, attributes=too_many), "40 attributes"
    )
    await store.set_metadata(cid, attributes={f"b{i}": "x" for i in range(MAX_ATTRIBUTES - 1)})
    events = len((await settled(store, cid)).events)
    full = await expect_error(
        OperationRefused,
        store.set_metadata(cid, attributes={"one_more": "x"}),
        f"attribute {MAX_ATTRIBUTES + 1} of a conversation",
    )
    expect("try again" not in str(full), f"a retry cannot succeed, yet: {full}")
    after = len((await settled(store, cid)).events)
    expect(after == events, f"a refused change appended {after - events} events")


async def _delete(store: ConversationStore) -> None:
    cid = new_id("delete")
    await ask_ok(store, cid, "remember me")
    await store.delete(cid, reason="player asked")
    read = await settled(store, cid)
    assert read.snapshot is not None
    expect(read.snapshot.deleted, "the snapshot is not marked deleted")
    expect(read.snapshot.messages == (), "a deleted conversation kept its history")
    expect(len(read.events) == 3, "deleting removed events from the log")
    await expect_error(OperationRefused, store.delete(cid), "deleting twice")
    await expect_error(OperationRefused, store.undo(cid), "undo of a deleted conversation")
    await expect_error(
        OperationRefused, store.set_metadata(cid, title="t"), "metadata of a deleted one"
    )
    after = len((await settled(store, cid)).events)
    expect(after == 3, f"refused changes of a deleted conversation appended {after - 3} events")
    await expect_error(ConversationNotFound, store.delete(new_id("none")), "delete of nothing")


async def _erase(store: ConversationStore) -> None:
    cid = new_id("erase")
    await ask_ok(store, cid, "My name is Ada and I live in Leeds")
    erased = await store.erase(cid, reason="the player asked")
    read = await settled(store, cid)
    snapshot = read.snapshot
    assert snapshot is not None
    expect(snapshot.messages == (), "erasure left messages in the snapshot")
    expect(snapshot.erased_before is not None, "the snapshot does not say it was erased")
    expect(snapshot.event_count >= 3, "erasure lost the audit skeleton's counts")
    if erased.key_destroyed:
        leaked = [b.text for b in bodies(read) if isinstance(b, UserMessage) and "Leeds" in b.text]
        expect(not leaked, f"content readable after its key was destroyed: {leaked}")
    expect(not erased.already_erased, "a first erasure says the conversation was erased already")
    again = await store.erase(cid)
    expect(again.position.offset > erased.position.offset, "erasing twice appended nothing")
    expect(again.already_erased, "erasing twice does not say it was erased already")
    expect(not again.key_destroyed, "erasing twice destroyed a key again")
    await ask_ok(store, cid, "a new start")
    later = await settled(store, cid)
    assert later.snapshot is not None
    expect(
        [m.text for m in later.snapshot.messages if m.role == "user"] == ["a new start"],
        "the conversation did not go on after its erasure",
    )
    await expect_error(ConversationNotFound, store.erase(new_id("none")), "erase of nothing")


async def _a_turn_that_cannot_run_is_a_reply(store: ConversationStore) -> None:
    cid = new_id("rejected")
    reply = await store.ask(cid, "use it", tools=["no-such-tool"], timeout=60.0)
    expect(
        reply.status is ReplyStatus.REJECTED,
        f"a request naming an unknown tool: {reply.status.value}",
    )
    expect("no-such-tool" in (reply.error or ""), f"the error does not name it: {reply.error}")
    read = await settled(store, cid)
    kinds = [type(b).__name__ for b in bodies(read)]
    expect(kinds == ["TurnFailed"], f"a rejected turn appended {kinds}, not one TurnFailed")


async def _a_deleted_conversation_takes_no_turn(store: ConversationStore) -> None:
    cid = new_id("deleted-ask")
    await ask_ok(store, cid, "remember me")
    await store.delete(cid)
    before = len((await settled(store, cid)).events)
    reply = await store.ask(cid, "are you there?", timeout=60.0)
    expect(
        reply.status is ReplyStatus.REJECTED and reply.text is None,
        f"an ask on a deleted conversation: {reply.status.value}, text {reply.text!r}",
    )
    expect("deleted" in (reply.error or ""), f"the refusal does not say why: {reply.error!r}")
    after = await settled(store, cid)
    expect(
        len(after.events) == before,
        f"an ask on a deleted conversation appended {bodies(after)[before:]}",
    )


async def _a_late_request_is_run_by_its_retry(store: ConversationStore) -> None:
    cid = new_id("late")
    request_id = uuid.uuid4().hex
    try:
        late = await store.ask(cid, "hello", request_id=request_id, timeout=5.96e-08)
    except ReplyTimeout:
        pass  # the wait ended before the reply came
    else:
        expect(late.status is ReplyStatus.TIMEOUT, f"a late request: {late.status.value}")
    await ask_ok(store, cid, "after it")  # the late request's reply is out: turns are in order
    again = await store.ask(cid, "hello", request_id=request_id, timeout=60.0)
    expect(
        again.status is ReplyStatus.OK,
        "a retry of a request whose deadline passed before it ran was not run: "
        f"{again.status.value} {again.error!r}",
    )
    read = await settled(store, cid)
    expect(
        user_texts(read) == ["after it", "hello"],
        f"the retry's turn is not in the history: {user_texts(read)}",
    )


async def _a_retry_after_erasure_is_refused_clearly(store: ConversationStore) -> None:
    cid = new_id("erased-retry")
    request_id = uuid.uuid4().hex
    await ask_ok(store, cid, "My name is Ada", request_id=request_id)
    await store.erase(cid)
    before = len((await settled(store, cid)).events)
    again = await store.ask(cid, "My name is Ada", request_id=request_id, timeout=60.0)
    expect(
        again.status is ReplyStatus.REJECTED and again.text is None,
        f"a retry after erasure: {again.status.value}, text {again.text!r}, {again.error!r}",
    )
    expect("erased" in (again.error or ""), f"the refusal does not say why: {again.error!r}")
    after = await settled(store, cid)
    expect(len(after.events) == before, f"the retry appended {bodies(after)[before:]}")


async def _list_conversations(store: ConversationStore) -> None:
    ids = sorted(new_id("listed") for _ in range(3))
    for cid in ids:
        appended = await store.append(cid, UserMessage(text="hello"))
        await store.read(cid, after=appended, history=False, timeout=30.0)
    listed = await store.conversations()
    expect(set(ids) <= set(listed), f"conversations() misses {set(ids) - set(listed)}")
    expect(listed == sorted(listed), "conversations() is not sorted")


async def streamed(store: ConversationStore, conversation_id: str, text: str, **kw: Any) -> Any:
    """A streamed ask's items, its reply last."""
    items = [i async for i in store.ask_stream(conversation_id, text, timeout=60.0, **kw)]
    expect(
        items and isinstance(items[-1], ChatReply), f"a stream did not end with its reply: {items}"
    )
    expect(
        not any(isinstance(i, ChatReply) for i in items[:-1]), f"a stream had two replies: {items}"
    )
    return items


def turns_of(conversation: Conversation) -> list[AssistantTurn]:
    return [b for b in bodies(conversation) if isinstance(b, AssistantTurn)]


async def _a_streamed_ask_stores_what_an_ask_stores(store: ConversationStore) -> None:
    whole, stream = new_id("whole"), new_id("streamed")
    text = "Tell me about the tower of Harrogate and its dragon."
    asked = await ask_ok(store, whole, text)
    items = await streamed(store, stream, text)
    reply = items[-1]
    expect(reply.status is ReplyStatus.OK, f"streamed ask: {reply.status.value} {reply.error}")
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    expect(deltas, f"a streamed ask gave no text as it came: {items}")
    expect("".join(deltas) == reply.text, f"deltas {deltas} do not make the reply {reply.text!r}")
    expect(reply.text == asked.text, f"streamed {reply.text!r}, asked {asked.text!r}")
    one, other = await settled(store, whole), await settled(store, stream)
    expect(roles(other) == roles(one) == ["user", "assistant"], f"histories: {roles(other)}")
    mine = [(t.text, t.tool_calls, t.raw_json, t.finish_reason) for t in turns_of(other)]
    theirs = [(t.text, t.tool_calls, t.raw_json, t.finish_reason) for t in turns_of(one)]
    expect(mine == theirs, f"a streamed turn stored {mine}, the same ask stored {theirs}")


async def _a_streamed_retry_gets_its_reply_once(store: ConversationStore) -> None:
    cid, request_id = new_id("stream-retry"), uuid.uuid4().hex
    first = (await streamed(store, cid, "Where is the key?", request_id=request_id))[-1]
    again = (await streamed(store, cid, "Where is the key?", request_id=request_id))[-1]
    expect(first.status is again.status is ReplyStatus.OK, f"{first.status} {again.status}")
    expect(first.text == again.text, f"a retry got another reply: {first.text!r} {again.text!r}")
    read = await settled(store, cid)
    expect(len(turns_of(read)) == 1, f"a streamed retry ran again: {bodies(read)}")


async def _leaving_a_stream_does_not_stop_its_turn(store: ConversationStore) -> None:
    cid, request_id = new_id("left"), uuid.uuid4().hex
    stream = store.ask_stream(
        cid, "Describe the market square.", request_id=request_id, timeout=60.0
    )
    async for _ in stream:
        break  # the caller goes away after the first item
    await stream.aclose()  # type: ignore[attr-defined]
    reply = await ask_ok(store, cid, "Describe the market square.", request_id=request_id)
    read = await settled(store, cid)
    expect(len(turns_of(read)) == 1, f"the turn ran {len(turns_of(read))} times")
    expect(turns_of(read)[0].text == reply.text, "the turn recorded is not the one answered")


async def _a_cancelled_turn_is_recorded_and_valid(store: ConversationStore) -> None:
    cid, request_id = new_id("cancel"), uuid.uuid4().hex
    await store.cancel(cid, request_id)  # before its turn starts: it stops as it starts
    reply = (await streamed(store, cid, "Tell me everything.", request_id=request_id))[-1]
    expect(reply.status is ReplyStatus.CANCELLED, f"a cancelled turn answered {reply.status}")
    read = await settled(store, cid)
    expect(roles(read) == ["user", "assistant"], f"a cancelled turn left {roles(read)}")
    [turn] = turns_of(read)
    expect(turn.finish_reason == "cancelled", f"the turn's finish reason: {turn.finish_reason}")
    expect(
        turn.usage is None or turn.usage.prompt_tokens == 0,
        f"a turn cancelled before its LLM call counts tokens: {turn.usage}",
    )
    after = await ask_ok(store, cid, "And now?")
    expect(after.status is ReplyStatus.OK, "the history after a cancel is not valid to send")
    await store.cancel(cid, uuid.uuid4().hex)  # no turn of it: nothing happens
    expect(len(turns_of(await settled(store, cid))) == 2, "a cancel of nothing changed the log")
    elsewhere = new_id("cancel-elsewhere")  # the same request id in another conversation
    other = (await streamed(store, elsewhere, "Tell me everything.", request_id=request_id))[-1]
    expect(
        other.status is ReplyStatus.OK,
        f"a cancel in {cid!r} stopped another conversation's request of that id: {other.status}",
    )


async def _bad_input_is_refused_clearly(store: ConversationStore) -> None:
    cid = new_id("bad")
    await expect_error(InvalidInputError, store.read(""), "read of an empty id")
    await expect_error(InvalidInputError, store.append("", UserMessage(text="x")), "empty id")
    await expect_error(
        InvalidInputError,
        store.append(cid, "not an event"),  # type: ignore[arg-type]
        "append of a string",
    )
    other = ConversationEvent(
        event_id=uuid.uuid4().hex,
        conversation_id=new_id("elsewhere"),
        occurred_at=utc_now(),
        body=UserMessage(text="x"),
    )
    await expect_error(InvalidInputError, store.append(cid, other), "another conversation's event")
    await expect_error(InvalidInputError, store.ask(cid, "  "), "ask with blank text")
    await expect_error(InvalidInputError, store.ask(cid, "hi", request_id=""), "empty request id")
    try:
        store.ask_stream(cid, " ")
    except InvalidInputError:
        pass
    else:
        raise ConformanceFailure("a streamed ask with blank text was not refused as it was made")
    await expect_error(InvalidInputError, store.read("x" * 100_000), "a 100,000-character id")
    for bad in ("nul\x00id", "tab\tid", "del\x7fid", "c1\x85id", "line\u2028id", "lone\ud800"):
        await expect_error(InvalidInputError, store.read(bad), f"read of the id {bad!r}")
        await expect_error(
            InvalidInputError, store.append(bad, UserMessage(text="x")), f"the id {bad!r}"
        )
        await expect_error(InvalidInputError, store.ask(bad, "hi"), f"ask under the id {bad!r}")
    huge = "x" * 2_000_000
    await expect_error(InvalidInputError, store.append(cid, UserMessage(text=huge)), "2 MB event")
    read = await store.read(cid)
    expect(not read.exists and read.events == (), "a refused input wrote something")


CHECKS: tuple[Check, ...] = (
    Check(
        "unknown_conversation_is_empty",
        "reading a new id finds nothing",
        _unknown_conversation_is_empty,
    ),
    Check(
        "append_then_read_after_it",
        "a read after a write sees it",
        _append_then_read_after_it,
    ),
    Check(
        "order_within_a_conversation",
        "events apply in append order",
        _order_within_a_conversation,
    ),
    Check(
        "append_all_in_order_then_read_after_the_last",
        "a group of events lands in order, and a read after its last event sees them all",
        _append_all_in_order_then_read_after_the_last,
    ),
    Check(
        "append_all_refuses_the_whole_group",
        "one bad event in a group refuses the group, and nothing is written",
        _append_all_refuses_the_whole_group,
    ),
    Check(
        "append_all_applies_an_event_id_once",
        "a group appended again (a retry) changes nothing it had written",
        _append_all_applies_an_event_id_once,
    ),
    Check(
        "append_all_groups_never_interleave",
        "two groups of one conversation appended at once are each contiguous",
        _append_all_groups_never_interleave,
    ),
    Check(
        "concurrency_across_conversations",
        "conversations asked at once each get their own turn",
        _concurrency_across_conversations,
    ),
    Check(
        "reads_and_operations_at_once",
        "reads and operations of several conversations at once each see their own",
        _reads_and_operations_at_once,
    ),
    Check(
        "one_conversations_turns_never_interleave",
        "a conversation's requests run one at a time",
        _one_conversations_turns_never_interleave,
    ),
    Check(
        "ask_is_idempotent_by_request_id",
        "a retry gets the same reply and no second turn",
        _ask_is_idempotent_by_request_id,
    ),
    Check(
        "a_request_id_is_a_conversations_own",
        "the same request id in two conversations is two turns with their own event ids, "
        "and a retry in one keeps its ids",
        _a_request_id_is_a_conversations_own,
    ),
    Check(
        "ids_are_any_printable_text",
        "a conversation id of non-ASCII letters, U+FFFD or spaces is stored and read as given",
        _ids_are_any_printable_text,
    ),
    Check(
        "a_turn_reads_what_came_before_it",
        "a turn sends what was appended before it (read-your-writes)",
        _a_turn_reads_what_came_before_it,
    ),
    Check(
        "undo",
        "undo goes back before the last user message",
        _undo,
    ),
    Check(
        "regenerate",
        "regenerate asks the last message again",
        _regenerate,
    ),
    Check(
        "a_regenerate_that_fails_leaves_the_history",
        "a regenerate refused, or whose turn fails, appends no rewind: the history stays",
        _a_regenerate_that_fails_leaves_the_history,
    ),
    Check(
        "rewind",
        "rewind restores the history at an offset",
        _rewind,
    ),
    Check(
        "rewind_inside_a_tool_chain_is_refused",
        "no history stops between a tool call and its result",
        _rewind_inside_a_tool_chain_is_refused,
    ),
    Check(
        "replace_tail",
        "the last message is replaced or removed, unless the history changed since it was read",
        _replace_tail,
    ),
    Check(
        "replace_tail_refuses_what_is_not_valid",
        "a replace that would leave a history not valid to send is refused",
        _replace_tail_refuses_what_is_not_valid,
    ),
    Check(
        "undo_and_rewind_after_replace_tail",
        "undo and rewind work on a history with a replaced message",
        _undo_and_rewind_after_replace_tail,
    ),
    Check(
        "fork_isolation",
        "a fork and its source never see each other's events",
        _fork_isolation,
    ),
    Check(
        "fork_refusals",
        "a fork into itself, a used id or from nothing is refused",
        _fork_refusals,
    ),
    Check(
        "a_snapshot_read_after_an_operation_sees_it",
        "a read of the snapshot alone right after a history operation sees it",
        _a_snapshot_read_after_an_operation_sees_it,
    ),
    Check(
        "a_snapshot_read_after_an_ask_sees_its_turn",
        "a read of the snapshot alone right after an ask, a streamed ask or a regenerate "
        "has its turn (the reply can come before the snapshot folds it)",
        _a_snapshot_read_after_an_ask_sees_its_turn,
    ),
    Check(
        "metadata",
        "title, owner, tags and attributes are set and removed",
        _metadata,
    ),
    Check(
        "delete",
        "a deleted conversation keeps its log, not its history",
        _delete,
    ),
    Check(
        "erase",
        "erasure clears the content and keeps the audit skeleton",
        _erase,
    ),
    Check(
        "a_turn_that_cannot_run_is_a_reply",
        "a request the turn cannot run is a rejected reply and one TurnFailed",
        _a_turn_that_cannot_run_is_a_reply,
    ),
    Check(
        "a_deleted_conversation_takes_no_turn",
        "an ask on a deleted conversation is refused before the LLM, nothing appended",
        _a_deleted_conversation_takes_no_turn,
    ),
    Check(
        "a_late_request_is_run_by_its_retry",
        "a request whose deadline passed before it ran is not stored: its retry runs it",
        _a_late_request_is_run_by_its_retry,
    ),
    Check(
        "a_retry_after_erasure_is_refused_clearly",
        "an ask retried after its conversation's erasure is refused, saying so, its text gone",
        _a_retry_after_erasure_is_refused_clearly,
    ),
    Check(
        "list_conversations",
        "every conversation written is listed",
        _list_conversations,
    ),
    Check(
        "a_streamed_ask_stores_what_an_ask_stores",
        "a streamed ask gives its text as it comes and stores what an ask stores",
        _a_streamed_ask_stores_what_an_ask_stores,
    ),
    Check(
        "a_streamed_retry_gets_its_reply_once",
        "a streamed ask retried by request id runs one turn",
        _a_streamed_retry_gets_its_reply_once,
    ),
    Check(
        "leaving_a_stream_does_not_stop_its_turn",
        "a caller who stops following a stream leaves its turn to finish",
        _leaving_a_stream_does_not_stop_its_turn,
    ),
    Check(
        "a_cancelled_turn_is_recorded_and_valid",
        "a cancel ends the turn, recorded with its tokens, the history valid to send",
        _a_cancelled_turn_is_recorded_and_valid,
    ),
    Check(
        "bad_input_is_refused_clearly",
        "bad input raises a clear error and writes nothing",
        _bad_input_is_refused_clearly,
    ),
)
"""Every check, in the order :func:`check_store` runs them."""

CHECK_NAMES = tuple(check.name for check in CHECKS)


def check_named(name: str) -> Check:
    """The check called ``name``."""
    for check in CHECKS:
        if check.name == name:
            return check
    raise KeyError(f"no conformance check {name!r}; there are: {', '.join(CHECK_NAMES)}")
