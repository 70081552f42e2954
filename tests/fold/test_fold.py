"""The fold, one body type and one rule at a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from goaicore.conversation.messages import Message
from goaicore.conversation.snapshot_messages import (
    UnreadableMessage,
    to_chat_messages,
    to_event_body,
)
from goaicore.fold import DEFAULT_POLICY, fold
from goaicore.fold.policy import FoldPolicy
from goaicore.fold.records import Applied, LogRecord, fold_records
from goaicore.records import (
    AssistantTurn,
    CompactionApplied,
    ConversationDeleted,
    ConversationEvent,
    ConversationReset,
    ConversationSnapshot,
    EventBody,
    GameEvent,
    LogPosition,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    TurnFailed,
    Usage,
    UserMessage,
)
from goaicore.records.avro.api import decode_snapshot, encode_event, encode_snapshot
from tests.fold.conversations import fold_all

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def run(*bodies: EventBody, conversation: str = "c") -> ConversationSnapshot:
    snapshot = fold_all(
        [
            (
                ConversationEvent(
                    event_id=f"e{i}",
                    conversation_id=conversation,
                    occurred_at=T0 + timedelta(minutes=i),
                    body=body,
                ),
                LogPosition(partition=2, offset=10 + i),
            )
            for i, body in enumerate(bodies)
        ]
    )
    assert snapshot is not None
    return snapshot


def test_every_body_type_is_applied() -> None:
    raw = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {"id": "k1", "type": "function", "function": {"name": "score", "arguments": "{}"}}
        ],
    }
    s = run(
        GameEvent(kind="check-in", text="Checked in at Harrogate Theatre"),
        UserMessage(text="Score?"),
        AssistantTurn(
            tool_calls=(ToolCall(id="k1", name="score", arguments="{}"),),
            usage=Usage(prompt_tokens=100, completion_tokens=7, total_tokens=107),
            provider="openai",
            raw_json=json.dumps(raw),
            cost_usd_nanos=1500,
        ),
        ToolResult(tool_call_id="k1", name="score", content='{"home": 2}'),
        AssistantTurn(
            text="2-0.",
            usage=Usage(prompt_tokens=130, completion_tokens=4, total_tokens=134),
            provider="openai",
        ),
        TurnFailed(request_id="r9", kind="timeout", message="LLM did not answer"),
    )
    assert [m.role for m in s.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert s.messages[0].text == "Checked in at Harrogate Theatre"
    assert s.messages[2].raw_json == json.dumps(raw)
    assert (s.prompt_tokens, s.completion_tokens, s.cost_usd_nanos) == (230, 11, 1500)
    assert s.event_count == 6
    assert s.message_count == 5
    assert s.events_by_type == {
        "GameEvent": 1,
        "UserMessage": 1,
        "AssistantTurn": 2,
        "ToolResult": 1,
        "TurnFailed": 1,
    }
    assert s.last_position == LogPosition(partition=2, offset=15)
    assert (s.started_at, s.updated_at) == (T0, T0 + timedelta(minutes=5))
    assert s.anomalies == ()
    history = to_chat_messages(s.messages)
    assert history[2].raw == raw  # provider JSON comes back untouched
    assert [m.role for m in history] == ["system", "user", "assistant", "tool", "assistant"]


def test_redelivery_changes_nothing_and_republishing_only_counts() -> None:
    event = ConversationEvent(
        event_id="x", conversation_id="c", occurred_at=T0, body=UserMessage(text="hi")
    )
    once = fold(None, event, LogPosition(partition=0, offset=4))
    assert fold(once, event, LogPosition(partition=0, offset=4)) is once
    assert fold(once, event, LogPosition(partition=0, offset=3)) is once
    again = fold(once, event, LogPosition(partition=0, offset=9))
    assert again.messages == once.messages
    assert again.event_count == 1
    assert again.duplicate_count == 1
    assert again.last_position == LogPosition(partition=0, offset=9)


def test_a_group_appended_again_completes_it_within_the_recent_id_window() -> None:
    """A group whose first batch landed, appended again whole, is completed: the events
    already folded are skipped by id, the rest apply in order. The window is the limit:
    an id that slid out of it is applied again."""
    group = [
        ConversationEvent(
            event_id=f"g{i}", conversation_id="c", occurred_at=T0, body=UserMessage(text=f"m{i}")
        )
        for i in range(6)
    ]
    landed = group[:3] + group  # the first batch, then the whole group again
    positions = [LogPosition(partition=0, offset=n) for n in range(len(landed))]
    policy = FoldPolicy(recent_ids=8)
    completed = fold_all(list(zip(landed, positions, strict=True)), policy=policy)
    assert completed is not None
    assert [m.text for m in completed.messages] == [f"m{i}" for i in range(6)]
    assert (completed.event_count, completed.duplicate_count) == (6, 3)
    others = [
        ConversationEvent(
            event_id=f"o{i}",
            conversation_id="c",
            occurred_at=T0,
            body=GameEvent(kind="tick", text="t"),
        )
        for i in range(8)
    ]
    later = [LogPosition(partition=0, offset=100 + n) for n in range(9)]
    slid = fold_all(list(zip([*others, group[0]], later, strict=True)), completed, policy)
    assert slid is not None
    assert slid.messages[-1].text == "m0"  # out of the window: applied again
    assert slid.duplicate_count == 3


def test_tool_result_without_a_call_is_an_anomaly_not_applied() -> None:
    s = run(UserMessage(text="hi"), ToolResult(tool_call_id="nope", name="x", content="?"))
    assert [m.role for m in s.messages] == ["user"]
    assert len(s.anomalies) == 1
    assert "answers no pending tool call" in s.anomalies[0]
    assert "event e1 at 2@11" in s.anomalies[0]


def test_assistant_before_its_tools_are_answered_is_an_anomaly() -> None:
    s = run(
        UserMessage(text="hi"),
        AssistantTurn(tool_calls=(ToolCall(id="k", name="t", arguments="{}"),)),
        AssistantTurn(text="too early"),
    )
    assert [m.role for m in s.messages] == ["user", "assistant"]
    assert "unanswered" in s.anomalies[0]


def test_message_from_another_producer_inside_a_tool_chain_goes_before_the_call() -> None:
    s = run(
        UserMessage(text="score?"),
        AssistantTurn(tool_calls=(ToolCall(id="k", name="t", arguments="{}"),)),
        GameEvent(kind="goal", text="Goal for Leeds"),
        ToolResult(tool_call_id="k", name="t", content="1-0"),
        AssistantTurn(text="1-0"),
    )
    assert [m.role for m in s.messages] == ["user", "system", "assistant", "tool", "assistant"]
    assert s.anomalies == ()


def test_reset_clears_the_history_and_keeps_the_counts() -> None:
    s = run(
        UserMessage(text="a"),
        AssistantTurn(text="b"),
        ConversationReset(reason="new game"),
        UserMessage(text="c"),
    )
    assert [m.text for m in s.messages] == ["c"]
    assert s.event_count == 4
    assert s.message_count == 3


def test_events_after_deletion_are_anomalies() -> None:
    s = run(UserMessage(text="a"), ConversationDeleted(reason="GDPR"), UserMessage(text="b"))
    assert s.deleted
    assert s.messages == ()
    assert "after the conversation was deleted" in s.anomalies[0]


def test_compaction_removes_exactly_its_range() -> None:
    s = run(
        UserMessage(text="q1"),
        AssistantTurn(text="a1"),
        UserMessage(text="q2"),
        AssistantTurn(text="a2"),
        CompactionApplied(
            strategy="keep-last",
            first_index=0,
            last_index=1,
            removed_count=2,
            summary="Earlier: q1/a1",
        ),
    )
    assert [(m.role, m.text) for m in s.messages] == [
        ("system", "Earlier: q1/a1"),
        ("user", "q2"),
        ("assistant", "a2"),
    ]
    assert s.summary == "Earlier: q1/a1"
    bad = run(
        UserMessage(text="q1"), CompactionApplied(strategy="keep-last", first_index=0, last_index=5)
    )
    assert [m.text for m in bad.messages] == ["q1"]
    assert "compaction not applied" in bad.anomalies[0]


def test_an_event_of_another_conversation_is_an_anomaly() -> None:
    first = fold(
        None,
        ConversationEvent(
            event_id="1", conversation_id="c", occurred_at=T0, body=UserMessage(text="a")
        ),
        LogPosition(partition=0, offset=0),
    )
    other = fold(
        first,
        ConversationEvent(
            event_id="2", conversation_id="d", occurred_at=T0, body=UserMessage(text="b")
        ),
        LogPosition(partition=0, offset=1),
    )
    assert [m.text for m in other.messages] == ["a"]
    assert "conversation 'd'" in other.anomalies[0]


def test_library_messages_become_event_bodies_and_back() -> None:
    s = run(
        UserMessage(text="hi"),
        AssistantTurn(
            text="hello", provider="openai", raw_json='{"role": "assistant", "content": "hello"}'
        ),
    )
    history = to_chat_messages(s.messages)
    bodies = [to_event_body(m) for m in history]
    assert bodies[0] == UserMessage(text="hi")
    assert isinstance(bodies[1], AssistantTurn)
    assert json.loads(bodies[1].raw_json or "") == {"role": "assistant", "content": "hello"}


# Responses API input items as an OpenAI Agents SDK session stores them: their own key order.
USER_ITEM = '{"content": "Roll a die", "role": "user"}'
CALL_OUTPUT = '{"call_id": "k1", "output": "4", "type": "function_call_output"}'
RAW_INPUT_BODIES: tuple[UserMessage, AssistantTurn, ToolResult] = (
    UserMessage(text="Roll a die", raw_json=USER_ITEM, provider="openai-responses"),
    AssistantTurn(
        tool_calls=(ToolCall(id="k1", name="roll", arguments="{}"),),
        provider="openai-responses",
        raw_json='{"output": [{"arguments": "{}", "call_id": "k1", "name": "roll", '
        '"type": "function_call"}]}',
    ),
    ToolResult(
        tool_call_id="k1",
        name="roll",
        content="4",
        raw_json=CALL_OUTPUT,
        provider="openai-responses",
    ),
)


def test_a_user_message_and_a_tool_result_keep_their_raw_json_in_the_snapshot() -> None:
    s = run(*RAW_INPUT_BODIES)
    user, _, result = s.messages
    assert (user.role, user.text, user.raw_json, user.provider) == (
        "user",
        "Roll a die",
        USER_ITEM,
        "openai-responses",
    )
    assert (result.role, result.text, result.tool_call_id, result.raw_json, result.provider) == (
        "tool",
        "4",
        "k1",
        CALL_OUTPUT,
        "openai-responses",
    )
    assert s.anomalies == ()
    # A stored message without raw JSON still has none, and no provider.
    plain = run(
        UserMessage(text="hi"),
        AssistantTurn(tool_calls=(ToolCall(id="x", name="t", arguments="{}"),)),
        ToolResult(tool_call_id="x", name="t", content="r"),
    )
    assert [(m.raw_json, m.provider) for m in plain.messages] == [(None, None)] * 3


def test_a_replay_of_the_records_reproduces_the_raw_json_byte_for_byte() -> None:
    bodies: tuple[EventBody, ...] = RAW_INPUT_BODIES
    log = [
        (
            ConversationEvent(event_id=f"e{i}", conversation_id="c", occurred_at=T0, body=body),
            LogPosition(partition=0, offset=i),
        )
        for i, body in enumerate(bodies)
    ]
    records = [
        LogRecord(event.conversation_id.encode(), encode_event(event), position)
        for event, position in log
    ]
    worker = [o for o in fold_records(records, DEFAULT_POLICY) if isinstance(o, Applied)]
    replayed = [o for o in fold_records(records, DEFAULT_POLICY) if isinstance(o, Applied)]
    assert len(worker) == len(replayed) == 3
    stored = decode_snapshot(encode_snapshot(worker[-1].snapshot))
    assert encode_snapshot(replayed[-1].snapshot) == encode_snapshot(stored)
    assert stored == fold_all(log)
    assert [m.raw_json for m in stored.messages] == [b.raw_json for b in RAW_INPUT_BODIES]
    # Back to the library and into the log again, the raw JSON is what it was.
    history = to_chat_messages(stored.messages)
    assert history[0].raw == json.loads(USER_ITEM)
    assert history[2].raw == json.loads(CALL_OUTPUT)
    assert [to_event_body(m) for m in history] == list(RAW_INPUT_BODIES)


@pytest.mark.parametrize("raw_json", ["not json", "[1, 2]", '"text"'])
def test_a_stored_raw_json_that_is_not_an_object_is_an_unreadable_message(raw_json: str) -> None:
    for stored in (
        SnapshotMessage(role="user", text="hi", raw_json=raw_json, provider="openai-responses"),
        SnapshotMessage(role="tool", text="r", tool_call_id="k", raw_json=raw_json, event_id="e7"),
    ):
        with pytest.raises(UnreadableMessage, match="message"):
            to_chat_messages([stored])


def test_the_fold_replays_chat_compactions_exactly() -> None:
    """Events appended from a turn's timeline fold to the history Chat keeps."""
    from goaicore import Chat, CompactionRecord, tool
    from goaicore.conversation.compaction import (
        Composite,
        KeepLastExchanges,
        MessageCount,
        ToolExchangeSummary,
        TriggeredCompactor,
        to_compaction_applied,
    )
    from goaicore.conversation.providers import OfflineProvider

    @tool
    def get_score(team: str) -> dict[str, object]:
        """Current score of a team."""
        return {"team": team, "score": 3}

    compactor = TriggeredCompactor(
        Composite(ToolExchangeSummary(keep_last=1), KeepLastExchanges(2)), MessageCount(8)
    )
    chat = Chat(OfflineProvider(), compactor=compactor)
    history: list[Message] = []
    bodies: list[EventBody] = []
    compactions = 0
    for i in range(8):
        result = chat.run_turn(
            history, user=f"get_score for team Leeds, turn {i}", tools=[get_score]
        )
        for item in result.timeline:
            if isinstance(item, CompactionRecord):
                bodies.append(to_compaction_applied(item))
                compactions += 1
            else:
                bodies.append(to_event_body(item))
        history = result.messages
    assert compactions > 0
    folded = run(*bodies)
    assert folded.anomalies == ()
    assert to_chat_messages(folded.messages) == list(history)
