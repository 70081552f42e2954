"""The conformance suite fails a store that breaks a promise: each mutant below breaks one,
and the check that holds that promise says so."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from goaicore.fold.records import Applied, fold_records
from goaicore.records import ChatReply
from goaicore.store.history import Rewound
from goaicore.store.memory import InMemoryConversationStore
from goaicore.store.port import Appended, Conversation
from goaicore.testing.conformance import ConformanceFailure, check_named, check_store, run_check


class ForgetsRequestIds(InMemoryConversationStore):
    """Runs a retried request again."""

    async def ask(self, conversation_id: str, text: str, **kw: Any) -> ChatReply:
        kw.pop("request_id", None)
        return await super().ask(conversation_id, text, **kw)


class ReadsHistoryBackwards(InMemoryConversationStore):
    async def read(self, conversation_id: str, **kw: Any) -> Conversation:
        read = await super().read(conversation_id, **kw)
        return dataclasses.replace(read, events=tuple(reversed(read.events)))


class AnswersOnAnEmptyHistory(InMemoryConversationStore):
    """A turn that does not wait for what came before it: it runs on no history."""

    async def ask(self, conversation_id: str, text: str, **kw: Any) -> ChatReply:
        memory = self.memory
        memory.stored.pop(conversation_id, None)
        reply = await super().ask(conversation_id, text, **kw)
        records = await memory.records(conversation_id)
        for outcome in fold_records(records, memory.policy):
            if isinstance(outcome, Applied):
                memory.stored[conversation_id] = outcome.snapshot
        return reply


class AppendsAGroupOneByOne(InMemoryConversationStore):
    """Appends a group's events one at a time, letting other writers in between."""

    async def append_all(self, conversation_id: str, events: Any) -> list[Appended]:
        appended = []
        for event in events:
            appended.append(await self.append(conversation_id, event))
            await asyncio.sleep(0)
        return appended


class ReplacesWhateverIsLast(InMemoryConversationStore):
    """Replaces the last message without checking it is the one the caller read."""

    async def replace_tail(
        self, conversation_id: str, count: int, messages: Any, **kw: Any
    ) -> Rewound:
        kw.pop("expected_event_id", None)
        return await super().replace_tail(conversation_id, count, messages, **kw)


class ReadsBeforeItsTurnIsFolded(InMemoryConversationStore):
    """Gives a reply before its snapshot has folded the turn, and its next read does not
    wait for that: it returns the snapshot from before the ask."""

    def __init__(self) -> None:
        super().__init__()
        self._before: dict[str, Any] = {}

    async def ask(self, conversation_id: str, text: str, **kw: Any) -> ChatReply:
        before = self.memory.stored.get(conversation_id)
        reply = await super().ask(conversation_id, text, **kw)
        self._before[conversation_id] = before
        return reply

    async def read(self, conversation_id: str, **kw: Any) -> Conversation:
        read = await super().read(conversation_id, **kw)
        if conversation_id not in self._before:
            return read
        return dataclasses.replace(read, snapshot=self._before.pop(conversation_id))


@pytest.mark.parametrize(
    ("mutant", "check"),
    [
        (ForgetsRequestIds, "ask_is_idempotent_by_request_id"),
        (ReadsHistoryBackwards, "order_within_a_conversation"),
        (AnswersOnAnEmptyHistory, "a_turn_reads_what_came_before_it"),
        (AppendsAGroupOneByOne, "append_all_groups_never_interleave"),
        (AppendsAGroupOneByOne, "append_all_refuses_the_whole_group"),
        (ReplacesWhateverIsLast, "replace_tail"),
        (ReadsBeforeItsTurnIsFolded, "a_snapshot_read_after_an_ask_sees_its_turn"),
    ],
)
async def test_a_broken_promise_fails_its_check(mutant: type, check: str) -> None:
    with pytest.raises(ConformanceFailure):
        await run_check(mutant, check_named(check))


async def test_the_report_names_each_failed_check_and_keeps_going() -> None:
    report = await check_store(ForgetsRequestIds, only=["ask_is_idempotent_by_request_id", "undo"])
    assert report.passed == ["undo"]
    assert list(report.failed) == ["ask_is_idempotent_by_request_id"]
    assert "request id" in report.failed["ask_is_idempotent_by_request_id"]
    with pytest.raises(ConformanceFailure, match="1 of 2 checks failed"):
        report.raise_for_failures()
