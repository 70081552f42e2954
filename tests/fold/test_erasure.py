"""Erasure: once a conversation's content is erased, a replay that cannot open it folds
to the very snapshot the worker made with it in the clear."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.fold import fold
from goaicore.records import (
    ConversationDeleted,
    ConversationErased,
    ConversationEvent,
    ConversationSnapshot,
    EventBody,
    LogPosition,
    MetadataSet,
    UserMessage,
)
from goaicore.sealing.content import blanked, erased
from tests.fold.conversations import START, conversation_log, fold_all
from tests.fold.test_history_ops import log_with_history_ops
from tests.fold.test_size_bound import SMALL, heavy_log

Log = list[tuple[ConversationEvent, LogPosition]]


def _erasure(
    log: Log, n: int, reason: str = "player request"
) -> tuple[ConversationEvent, LogPosition]:
    offset = log[-1][1].offset + 1 if log else 0
    event = ConversationEvent(
        event_id=f"erase-{n}",
        conversation_id="c",
        occurred_at=START + timedelta(days=1, seconds=n),
        source="test",
        body=ConversationErased(reason=reason),
    )
    return event, LogPosition(partition=0, offset=offset)


def _as_a_reader_without_the_key(log: Log) -> Log:
    """The log as read once the data key is gone: every body's content marked."""
    return [(dataclasses.replace(e, body=erased(blanked(e.body))), p) for e, p in log]


def _shifted(log: Log, after: Log) -> Log:
    """``log``'s events again, as new events placed after ``after``."""
    start = after[-1][1].offset + 1
    return [
        (
            dataclasses.replace(e, event_id=f"later-{e.event_id}"),
            LogPosition(partition=0, offset=start + i),
        )
        for i, (e, _) in enumerate(log)
    ]


@settings(max_examples=80, deadline=None)
@given(
    st.one_of(log_with_history_ops(), heavy_log(), conversation_log()),
    conversation_log(),
)
def test_after_erasure_a_replay_without_the_content_equals_the_snapshot_made_with_it(
    before: Log, later: Log
) -> None:
    """Under a small bound too, where content sizes decide what the size policy cut."""
    log = [*before, _erasure(before, 0)]
    if later:
        log += _shifted(later, log)  # the conversation goes on under a new key, readable
    unreadable = [*_as_a_reader_without_the_key(log[: len(before)]), *log[len(before) :]]
    for policy in (SMALL, None):
        kept = fold_all(log, policy=policy) if policy else fold_all(log)
        replayed = fold_all(unreadable, policy=policy) if policy else fold_all(unreadable)
        assert replayed == kept
    assert kept is not None
    assert kept.erased_before == log[len(before)][1]


def _fold(*bodies: EventBody) -> ConversationSnapshot:
    snapshot = None
    for n, body in enumerate(bodies):
        event = ConversationEvent(
            event_id=f"e{n}", conversation_id="c", occurred_at=START, source="t", body=body
        )
        snapshot = fold(snapshot, event, LogPosition(partition=0, offset=n))
    assert snapshot is not None
    return snapshot


def test_erasure_clears_what_came_from_content_and_keeps_the_audit_skeleton() -> None:
    snapshot = _fold(
        UserMessage(text="I live at 4 Tower Lane"),
        MetadataSet(title="Alice's quest", owner="alice", tags=("beta",), attributes={"k": "v"}),
        ConversationErased(reason="player request"),
    )
    assert (snapshot.messages, snapshot.summary, snapshot.anomalies) == ((), None, ())
    assert (snapshot.title, snapshot.owner, snapshot.tags, snapshot.attributes) == (
        None,
        None,
        (),
        {},
    )
    assert snapshot.event_count == 3
    assert snapshot.message_count == 1
    assert snapshot.events_by_type == {"UserMessage": 1, "MetadataSet": 1, "ConversationErased": 1}
    assert snapshot.recent_event_ids == ("e0", "e1", "e2")
    assert snapshot.erased_before == LogPosition(partition=0, offset=2)


def test_a_deleted_conversation_can_be_erased_and_erasing_twice_is_harmless() -> None:
    once = _fold(UserMessage(text="hi"), ConversationDeleted(reason="closed"), ConversationErased())
    assert once.deleted
    assert once.anomalies == ()
    assert once.erased_before == LogPosition(partition=0, offset=2)
    twice = _fold(
        UserMessage(text="hi"),
        ConversationDeleted(reason="closed"),
        ConversationErased(),
        ConversationErased(),
    )
    assert twice.erased_before == LogPosition(partition=0, offset=3)
    assert twice.anomalies == ()
    assert (
        dataclasses.replace(
            twice,
            erased_before=once.erased_before,
            last_position=once.last_position,
            recent_event_ids=once.recent_event_ids,
            event_count=once.event_count,
            events_by_type=once.events_by_type,
        )
        == once
    )
