"""Properties of the fold: idempotent, ordered, history always valid, never raising."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.conversation.snapshot_messages import to_chat_messages
from goaicore.conversation.validation import validate_history
from goaicore.fold import FoldPolicy, fold
from goaicore.records import ConversationEvent, ConversationSnapshot, LogPosition
from tests.fold.conversations import conversation_log, fold_all
from tests.records.records_strategies import events as any_events

Log = list[tuple[ConversationEvent, LogPosition]]


def fold_log(log: Log) -> dict[str, ConversationSnapshot]:
    """What a stream processor keeps: one snapshot per conversation."""
    table: dict[str, ConversationSnapshot] = {}
    for event, position in log:
        table[event.conversation_id] = fold(table.get(event.conversation_id), event, position)
    return table


@settings(max_examples=60, deadline=None)
@given(conversation_log(), st.data())
def test_applying_any_prefix_twice_equals_applying_it_once(log: Log, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(log)))
    once = fold_all(log)
    twice = fold_all(log, fold_all(log[:cut]))
    assert twice == once
    assert fold_all(log[:cut], once) == once  # a redelivered prefix changes nothing


@settings(max_examples=60, deadline=None)
@given(conversation_log())
def test_republished_events_leave_the_history_unchanged(log: Log) -> None:
    once = fold_all(log)
    if once is None:
        return
    assert once.last_position is not None
    offset = once.last_position.offset
    again = [(e, LogPosition(partition=0, offset=offset + 1 + i)) for i, (e, _) in enumerate(log)]
    republished = fold_all(again[-100:], once)
    assert republished is not None
    assert republished.messages == once.messages
    assert republished.event_count == once.event_count
    assert republished.duplicate_count == once.duplicate_count + min(len(log), 100)


@settings(max_examples=60, deadline=None)
@given(conversation_log("a"), conversation_log("b"), st.data())
def test_interleaving_conversations_does_not_matter(a: Log, b: Log, data: st.DataObject) -> None:
    picks = data.draw(st.permutations([0] * len(a) + [1] * len(b)))
    queues = [list(a), list(b)]
    merged = [queues[pick].pop(0) for pick in picks]
    assert fold_log(merged) == fold_log(a + b)


@settings(max_examples=60, deadline=None)
@given(conversation_log(max_steps=6))
def test_order_within_a_conversation_matters(log: Log) -> None:
    users = [i for i, (e, _) in enumerate(log) if type(e.body).__name__ == "UserMessage"]
    texts = {log[i][0].body.text for i in users}  # type: ignore[union-attr]
    if len(users) < 2 or len(texts) < 2:
        return
    first, second = users[0], users[-1]
    if log[first][0].body == log[second][0].body:
        return
    swapped = list(log)
    swapped[first] = (log[second][0], log[first][1])
    swapped[second] = (log[first][0], log[second][1])
    assert fold_all(swapped) != fold_all(log)


@settings(max_examples=80, deadline=None)
@given(conversation_log())
def test_every_folded_history_is_valid_to_send(log: Log) -> None:
    snapshot = fold_all(log)
    if snapshot is None:
        return
    assert snapshot.anomalies == ()
    history = to_chat_messages(snapshot.messages)
    for provider in ("openai", "anthropic"):
        validate_history(history, provider)


@settings(max_examples=150, deadline=None)
@given(st.lists(any_events, max_size=20))
def test_never_raises_on_any_well_formed_event(events: list[ConversationEvent]) -> None:
    snapshot = None
    for offset, event in enumerate(events):
        snapshot = fold(snapshot, event, LogPosition(partition=0, offset=offset))
    if snapshot is not None:
        assert snapshot.event_count + snapshot.duplicate_count == len(events)


@settings(max_examples=60, deadline=None)
@given(conversation_log(max_steps=30))
def test_size_policy_bounds_every_snapshot(log: Log) -> None:
    policy = FoldPolicy(max_messages=8, max_anomalies=4, recent_ids=5)
    snapshot = None
    for event, position in log:
        snapshot = fold(snapshot, event, position, policy)
        exchanges = [i for i, m in enumerate(snapshot.messages) if m.role == "user"]
        if len(exchanges) > 1:  # a single exchange over the bound is kept whole
            assert len(snapshot.messages) <= policy.max_messages
        assert len(snapshot.anomalies) <= 4
        assert len(snapshot.recent_event_ids) <= 5
    if snapshot is not None:
        for provider in ("openai", "anthropic"):
            validate_history(to_chat_messages(snapshot.messages), provider)


@settings(max_examples=80, deadline=None)
@given(conversation_log(max_steps=30), st.lists(any_events, max_size=8), st.data())
def test_remembered_pending_calls_fold_exactly_as_a_scan_does(
    log: Log, odd: list[ConversationEvent], data: st.DataObject
) -> None:
    """The fold remembers each history's unanswered tool calls; folding with that memory
    wiped before every event (so every answer is a fresh scan) gives the same snapshots."""
    from goaicore.fold import pending

    policy = FoldPolicy(max_messages=data.draw(st.integers(2, 12)))
    position = LogPosition(partition=0, offset=len(log))
    mixed = [
        *log,
        *((e, LogPosition(partition=0, offset=position.offset + i)) for i, e in enumerate(odd)),
    ]
    remembered: dict[str, ConversationSnapshot] = {}
    scanned: dict[str, ConversationSnapshot] = {}
    for event, at in mixed:
        key = event.conversation_id
        remembered[key] = fold(remembered.get(key), event, at, policy)
        messages = remembered[key].messages
        assert pending.unanswered_calls(messages) == pending._scan(messages)[1]
        memory = dict(pending._known)  # the remembering fold keeps its memory ...
        pending._known.clear()  # ... the scanning one starts from none at every event
        scanned[key] = fold(scanned.get(key), event, at, policy)
        pending._known.clear()
        pending._known.update(memory)
    assert remembered == scanned
