"""Fold versions 2 and 3: every snapshot fits its byte bound, newest message first to stay."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.conversation.snapshot_messages import to_chat_messages
from goaicore.conversation.validation import validate_history
from goaicore.fold import fold
from goaicore.fold.policy import (
    FOLD_VERSION,
    MIN_SNAPSHOT_BYTES,
    VERSION_1_POLICY,
    FoldPolicy,
    policy_for_record_limit,
    policy_of,
    timeline_of,
)
from goaicore.fold.size import snapshot_bytes
from goaicore.records import (
    AssistantTurn,
    ConversationEvent,
    ConversationSnapshot,
    EventBody,
    FoldBounds,
    GameEvent,
    LogPosition,
    ToolCall,
    ToolResult,
    UserMessage,
)
from goaicore.records.avro.api import encode_snapshot
from tests.fold.conversations import START, fold_all
from tests.records.records_strategies import snapshots

SMALL = FoldPolicy(max_bytes=MIN_SNAPSHOT_BYTES)
Log = list[tuple[ConversationEvent, LogPosition]]


def openai_raw(call: ToolCall, text: str) -> str:
    """The provider's own message for a tool-calling turn, as the chat worker stores it."""
    function = {"name": call.name, "arguments": call.arguments}
    return json.dumps(
        {
            "role": "assistant",
            "content": text,
            "tool_calls": [{"id": call.id, "type": "function", "function": function}],
        }
    )


def log_of(bodies: list[EventBody], conversation: str = "c") -> Log:
    return [
        (
            ConversationEvent(
                event_id=f"{conversation}-{i}",
                conversation_id=conversation,
                occurred_at=START + timedelta(seconds=i),
                source="test",
                body=body,
            ),
            LogPosition(partition=0, offset=i),
        )
        for i, body in enumerate(bodies)
    ]


def fold_checked(log: Log, policy: FoldPolicy) -> ConversationSnapshot:
    """Fold ``log``, checking after every event that the snapshot fits and keeps the newest."""
    assert policy.max_bytes is not None
    snapshot = None
    for event, position in log:
        added_before = snapshot.message_count if snapshot is not None else 0
        snapshot = fold(snapshot, event, position, policy)
        assert len(encode_snapshot(snapshot)) <= policy.max_bytes
        if snapshot.message_count > added_before:
            assert event.event_id in {m.event_id for m in snapshot.messages}, "newest left"
    assert snapshot is not None
    return snapshot


@settings(max_examples=200, deadline=None)
@given(snapshots)
def test_the_size_bound_is_never_below_the_encoding_and_close_to_it(
    snapshot: ConversationSnapshot,
) -> None:
    encoded = len(encode_snapshot(snapshot))
    assert encoded <= snapshot_bytes(snapshot)
    strings = len(snapshot.recent_event_ids) + len(snapshot.anomalies)
    assert snapshot_bytes(snapshot) - encoded <= 300 + strings  # a varint byte per string


big_text = st.integers(1, 12_000).map(lambda n: "é" * (n // 4) + "x" * n)


@st.composite
def heavy_log(draw: st.DrawFn) -> Log:
    """Conversations of big user messages, game events, replies and tool results."""
    bodies: list[EventBody] = []
    for n in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["user", "game", "turn", "tools"]))
        if kind == "user":
            bodies.append(UserMessage(text=draw(big_text)))
        elif kind == "game":
            bodies.append(GameEvent(kind="world", text=draw(big_text)))
        elif kind == "turn":
            bodies += [UserMessage(text=draw(big_text)), AssistantTurn(text=draw(big_text))]
        else:
            call = ToolCall(
                id=f"call-{n}", name="lookup", arguments=json.dumps({"q": draw(big_text)})
            )
            bodies += [
                UserMessage(text="look it up"),
                AssistantTurn(tool_calls=(call,), raw_json=openai_raw(call, draw(big_text))),
                ToolResult(tool_call_id=call.id, name="lookup", content=draw(big_text)),
                AssistantTurn(text=draw(big_text)),
            ]
    return log_of(bodies)


@settings(max_examples=60, deadline=None)
@given(heavy_log())
def test_every_snapshot_fits_keeps_its_newest_message_and_stays_valid_to_send(log: Log) -> None:
    snapshot = fold_checked(log, SMALL)
    for provider in ("openai", "anthropic"):
        validate_history(to_chat_messages(snapshot.messages), provider)
    if snapshot.dropped_messages:
        assert snapshot.dropped_before is not None
    assert snapshot.message_count == len(snapshot.messages) + snapshot.dropped_messages


def test_game_events_alone_leave_oldest_first_and_say_so() -> None:
    """The report's case: hundreds of 3 KB game events and no chat turn."""
    bodies: list[EventBody] = [GameEvent(kind="world", text="w" * 3000) for _ in range(400)]
    policy = policy_for_record_limit(900_000)
    snapshot = fold_checked(log_of(bodies), policy)
    assert policy.max_bytes is not None
    # a cut leaves 7/8 of the room: the history grew back from there, one event at a time
    assert policy.max_bytes * 7 // 8 - 8000 < len(encode_snapshot(snapshot)) <= policy.max_bytes
    assert snapshot.dropped_messages == 400 - len(snapshot.messages) > 100
    assert snapshot.messages[-1].event_id == "c-399"
    assert snapshot.messages[0].event_id == f"c-{snapshot.dropped_messages}"
    assert snapshot.dropped_before is not None
    assert snapshot.dropped_before.offset <= 399
    assert "size policy dropped the oldest" in snapshot.anomalies[-1]


def test_one_message_over_the_bound_is_kept_truncated_with_a_marker() -> None:
    text = "a" * 3 * MIN_SNAPSHOT_BYTES
    snapshot = fold_checked(log_of([UserMessage(text="hi"), UserMessage(text=text)]), SMALL)
    last = snapshot.messages[-1]
    assert last.text.startswith("a" * 1000)
    assert "truncated to fit the snapshot size bound" in last.text
    assert "event c-1 in the log" in last.text
    assert snapshot.truncated_messages == 1
    assert snapshot.dropped_messages == 1  # "hi" left first: whole exchanges go before a cut


def test_huge_tool_arguments_become_a_json_object_every_provider_accepts() -> None:
    call = ToolCall(id="call-1", name="lookup", arguments=json.dumps({"q": "z" * 100_000}))
    log = log_of(
        [
            UserMessage(text="go"),
            AssistantTurn(tool_calls=(call,), raw_json="r" * 50_000),
            ToolResult(tool_call_id="call-1", name="lookup", content="ok"),
        ]
    )
    snapshot = fold_checked(log, SMALL)
    arguments = snapshot.messages[1].tool_calls[0].arguments
    assert json.loads(arguments)["goaicore_truncated"].startswith('{"q": "zzz')
    assert snapshot.messages[1].raw_json is None
    for provider in ("openai", "anthropic"):
        validate_history(to_chat_messages(snapshot.messages), provider)


def test_a_user_message_or_tool_result_over_the_bound_drops_its_raw_json_first() -> None:
    call = ToolCall(id="call-1", name="lookup", arguments="{}")
    user_item = json.dumps({"content": "go " + "u" * 3 * MIN_SNAPSHOT_BYTES, "role": "user"})
    output = json.dumps({"call_id": "call-1", "output": "o" * 3 * MIN_SNAPSHOT_BYTES})
    responses = "openai-responses"
    for body in (
        UserMessage(text="go", raw_json=user_item, provider=responses),
        ToolResult(
            tool_call_id="call-1", name="lookup", content="ok", raw_json=output, provider=responses
        ),
    ):
        before: list[EventBody] = [UserMessage(text="go"), AssistantTurn(tool_calls=(call,))]
        bodies = before if isinstance(body, ToolResult) else []
        snapshot = fold_checked(log_of([*bodies, body]), SMALL)
        last = snapshot.messages[-1]
        assert (last.raw_json, last.text) == (
            None,
            body.text if isinstance(body, UserMessage) else "ok",
        )
        assert last.provider == responses  # whose format it was: no raw JSON left to send
        assert snapshot.truncated_messages == 1
        for provider in ("openai", "anthropic", responses):
            validate_history(to_chat_messages(snapshot.messages), provider)


def test_an_overlong_event_id_is_an_anomaly_and_never_remembered() -> None:
    event, position = log_of([UserMessage(text="hi")])[0]
    event = ConversationEvent(
        event_id="e" * 10_000,
        conversation_id="c",
        occurred_at=event.occurred_at,
        source="test",
        body=event.body,
    )
    snapshot = fold(None, event, position, SMALL)
    assert snapshot.messages == ()
    assert snapshot.recent_event_ids == ()
    assert "an event id of 10000 characters" in snapshot.anomalies[0]
    assert len(snapshot.anomalies[0]) < 300


def test_a_replay_uses_the_bound_the_snapshot_was_folded_under() -> None:
    log = log_of([GameEvent(kind="world", text="w" * 3000) for _ in range(40)])
    stored = fold_all(log, policy=SMALL)
    assert stored is not None
    assert stored.format_version == FOLD_VERSION
    assert stored.max_bytes == MIN_SNAPSHOT_BYTES
    assert policy_of(stored) == SMALL
    assert fold_all(log, policy=policy_of(stored)) == stored
    assert fold_all(log, policy=policy_for_record_limit(900_000)) != stored


def test_version_1_snapshots_still_replay_under_version_1_rules() -> None:
    """Version 1 kept a history without user messages whole, however large."""
    log = log_of([GameEvent(kind="world", text="w" * 3000) for _ in range(40)])
    old = fold_all(log, policy=VERSION_1_POLICY)
    assert old is not None
    assert (old.format_version, old.max_bytes, len(old.messages)) == (1, 0, 40)
    assert policy_of(old) is VERSION_1_POLICY
    assert fold_all(log, policy=policy_of(old)) == old


def test_a_version_1_snapshot_is_folded_on_under_the_current_version() -> None:
    log = log_of([GameEvent(kind="world", text="w" * 3000) for _ in range(40)])
    old = fold_all(log[:5], policy=VERSION_1_POLICY)  # within the new bound, as v1 ones were
    upgraded = fold_all(log[5:], snapshot=old, policy=SMALL)
    assert upgraded is not None
    assert (upgraded.format_version, upgraded.max_bytes) == (FOLD_VERSION, MIN_SNAPSHOT_BYTES)
    assert upgraded.dropped_messages > 0
    assert upgraded.earlier_bounds == (FoldBounds(format_version=1, max_bytes=0, until=log[4][1]),)
    assert fold_all(log, policy=timeline_of(upgraded)) == upgraded


def test_a_full_history_is_cut_with_headroom_from_version_3() -> None:
    """Past 500 messages a version 3 cut keeps 7/8 of them (437), so the next cut comes
    64 events later; version 2 cut one message on every event."""
    log = log_of([GameEvent(kind="world", text=f"tick {n}") for n in range(600)])
    current = fold_all(log, policy=policy_for_record_limit(900_000))
    assert current is not None
    assert (len(current.messages), current.dropped_messages) == (600 - 128, 128)
    version_2 = fold_all(log, policy=FoldPolicy(version=2))
    assert version_2 is not None
    assert (len(version_2.messages), version_2.dropped_messages) == (500, 100)


def test_a_conversation_over_its_bound_replays_across_a_change_of_version() -> None:
    """A version 2 snapshot past its cap folded on under version 3: each stretch replays
    under its own rules, and under the latest alone it would not reproduce."""
    log = log_of([GameEvent(kind="world", text=f"tick {n}") for n in range(700)])
    old = fold_all(log[:550], policy=FoldPolicy(version=2))
    upgraded = fold_all(log[550:], snapshot=old, policy=FoldPolicy())
    assert upgraded is not None
    assert upgraded.earlier_bounds == (
        FoldBounds(format_version=2, max_bytes=upgraded.max_bytes, until=log[549][1]),
    )
    assert fold_all(log, policy=timeline_of(upgraded)) == upgraded
    assert fold_all(log, policy=policy_of(upgraded)) != upgraded


def test_a_bound_below_the_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="below the"):
        FoldPolicy(max_bytes=1000)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=40), st.integers(1, 12), st.booleans()), min_size=1, max_size=80
    )
)
def test_a_sliding_window_carries_the_totals_a_fresh_count_gives(
    steps: list[tuple[str, int, bool]],
) -> None:
    """The ids and notes windows carry their UTF-8 total and longest length from one
    event to the next (also when the window shrinks by several, as under a smaller
    policy); the carried figures equal counting the window again."""
    from goaicore.fold import size

    before: tuple[str, ...] = ()
    for text, window, known in steps:
        after = (*before, text)[-window:]
        if before and known:
            size._string_totals(before)  # known, as after a bound check
        else:
            size._windows.pop(id(before), None)  # not known: nothing to carry
        size.note_window_slid(after, before)
        carried = size._string_totals(after)
        size._windows.pop(id(after))
        assert carried == size._string_totals(after)  # counted afresh
        before = after


@settings(max_examples=30, deadline=None)
@given(heavy_log())
def test_folding_with_the_size_caches_forgotten_at_every_event_gives_the_same_snapshots(
    log: Log,
) -> None:
    from goaicore.fold import size

    remembered = forgotten = None
    for event, position in log:
        remembered = fold(remembered, event, position, SMALL)
        for cache in (size._sizes, size._totals, size._windows):
            cache.clear()
        forgotten = fold(forgotten, event, position, SMALL)
        assert remembered == forgotten


BOUNDS_BY_TURN = [
    VERSION_1_POLICY,
    FoldPolicy(version=2, max_bytes=MIN_SNAPSHOT_BYTES),
    SMALL,
    FoldPolicy(version=2, max_bytes=2 * MIN_SNAPSHOT_BYTES),
    FoldPolicy(max_bytes=3 * MIN_SNAPSHOT_BYTES),
]


@settings(max_examples=60, deadline=None)
@given(heavy_log(), st.lists(st.tuples(st.integers(0, 200), st.sampled_from(BOUNDS_BY_TURN))))
def test_a_log_folded_under_changing_bounds_replays_to_its_snapshot(
    log: Log, changes: list[tuple[int, FoldPolicy]]
) -> None:
    """Whatever bounds the worker folded each stretch under (its record limit changed, it
    was upgraded or rolled back), a replay under the snapshot's timeline reproduces it."""
    at = dict(changes)
    policy, snapshot = SMALL, None
    for index, (event, position) in enumerate(log):
        policy = at.get(index, policy)
        snapshot = fold(snapshot, event, position, policy)
    assert snapshot is not None
    if len(snapshot.earlier_bounds) < 16:  # every change remembered
        assert fold_all(log, policy=timeline_of(snapshot)) == snapshot
    assert len(encode_snapshot(snapshot)) <= snapshot_bytes(snapshot)


def test_a_snapshot_remembers_its_latest_16_earlier_bounds() -> None:
    log = log_of([UserMessage(text=f"q {n}") for n in range(40)])
    snapshot = None
    for index, (event, position) in enumerate(log):
        policy = SMALL if index % 2 else FoldPolicy(max_bytes=2 * MIN_SNAPSHOT_BYTES)
        snapshot = fold(snapshot, event, position, policy)
    assert snapshot is not None
    assert len(snapshot.earlier_bounds) == 16
    assert snapshot.earlier_bounds[-1].until == log[-2][1]
    assert fold_all(log, policy=timeline_of(snapshot)) == snapshot  # nothing cut: same histories
