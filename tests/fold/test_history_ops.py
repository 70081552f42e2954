"""History operations as events the fold replays: rewind (undo), fork, metadata."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.conversation.snapshot_messages import to_chat_messages
from goaicore.conversation.validation import validate_history
from goaicore.fold import FoldPolicy, fold
from goaicore.fold.carried import history_problem
from goaicore.fold.metadata import MAX_ATTRIBUTES, MAX_TAG_CHARS, MAX_TITLE_CHARS
from goaicore.fold.pending import unanswered_calls
from goaicore.records import (
    AssistantTurn,
    ConversationDeleted,
    ConversationEvent,
    ConversationForked,
    ConversationRewound,
    ConversationSnapshot,
    EventBody,
    ForkOrigin,
    LogPosition,
    MetadataSet,
    SnapshotMessage,
    ToolCall,
    UserMessage,
)
from tests.fold.conversations import START, conversation_log, fold_all, step, words

Log = list[tuple[ConversationEvent, LogPosition]]
SMALL = FoldPolicy(max_bytes=32 * 1024, max_messages=12)


def _event(conversation_id: str, n: int, body: EventBody) -> ConversationEvent:
    return ConversationEvent(
        event_id=f"{conversation_id}-{n}",
        conversation_id=conversation_id,
        occurred_at=START + timedelta(seconds=n),
        source="test",
        body=body,
    )


def as_of(log: Log, until_offset: int) -> ConversationSnapshot | None:
    """What a writer of a rewind computes: the fold of the events up to ``until_offset``."""
    return fold_all([(e, p) for e, p in log if p.offset <= until_offset])


def _valid_at(log: Log, until_offset: int) -> bool:
    then = as_of(log, until_offset)
    return then is None or history_problem(then.messages) is None


@st.composite
def log_with_history_ops(draw: st.DrawFn, conversation_id: str = "c") -> Log:
    """A conversation's log with rewinds (each carrying the fold of the log up to its
    offset, as its writer computes it) and metadata changes among the turns."""
    log: Log = []
    n = 0
    for s in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["step", "step", "rewind", "metadata"]))
        bodies: list[EventBody]
        if kind == "rewind":
            # A writer rewinds only to where the history is valid to send (never
            # between a tool call and its results).
            points = [-1, *(p.offset for _, p in log if _valid_at(log, p.offset))]
            until = draw(st.sampled_from(points))
            then = as_of(log, until)
            bodies = [
                ConversationRewound(
                    until_offset=until,
                    messages=then.messages if then else (),
                    summary=then.summary if then else None,
                    reason="undo",
                    basis_event_id=log[-1][0].event_id if log else None,
                )
            ]
        elif kind == "metadata":
            bodies = [
                MetadataSet(
                    title=draw(st.none() | st.just("") | words),
                    owner=draw(st.none() | st.just("") | words),
                    tags=draw(st.none() | st.lists(words, max_size=3).map(tuple)),
                    attributes=draw(st.dictionaries(words, st.none() | words, max_size=3)),
                )
            ]
        else:
            bodies = draw(step(s))
        for body in bodies:
            log.append((_event(conversation_id, n, body), LogPosition(partition=0, offset=n)))
            n += 1
    return log


@settings(max_examples=80, deadline=None)
@given(log_with_history_ops())
def test_after_a_rewind_the_history_is_the_fold_of_the_log_up_to_its_offset(log: Log) -> None:
    snapshot = None
    for event, position in log:
        snapshot = fold(snapshot, event, position)
        if isinstance(event.body, ConversationRewound):
            then = as_of(log, event.body.until_offset)
            assert snapshot.messages == (then.messages if then else ())
            assert snapshot.summary == (then.summary if then else None)
    if snapshot is None:
        return
    assert snapshot.anomalies == ()
    assert snapshot.event_count == len(log)  # the log keeps all: every event counted
    for provider in ("openai", "anthropic"):
        validate_history(to_chat_messages(snapshot.messages), provider)


@settings(max_examples=80, deadline=None)
@given(log_with_history_ops())
def test_metadata_follows_its_changes(log: Log) -> None:
    title = owner = None
    tags: tuple[str, ...] = ()
    attributes: dict[str, str] = {}
    for event, _ in log:
        change = event.body
        if isinstance(change, MetadataSet):
            title = title if change.title is None else (change.title or None)
            owner = owner if change.owner is None else (change.owner or None)
            tags = tags if change.tags is None else tuple(sorted(set(change.tags)))
            for key, value in change.attributes.items():
                if value is None:
                    attributes.pop(key, None)
                else:
                    attributes[key] = value
    snapshot = fold_all(log)
    if snapshot is not None:
        assert (snapshot.title, snapshot.owner, snapshot.tags) == (title, owner, tags)
        assert snapshot.attributes == attributes


@settings(max_examples=80, deadline=None)
@given(conversation_log(max_steps=30), st.sampled_from([SMALL, FoldPolicy()]))
def test_every_history_the_fold_makes_between_turns_is_taken_as_a_carried_history(
    log: Log, policy: FoldPolicy
) -> None:
    snapshot = None
    for event, position in log:
        snapshot = fold(snapshot, event, position, policy)
        # Fold-made histories are taken whenever no tool call waits for its result.
        pending = unanswered_calls(snapshot.messages)
        assert (history_problem(snapshot.messages) is None) == (not pending)


@settings(max_examples=60, deadline=None)
@given(conversation_log("src"), st.data())
def test_a_fork_starts_from_the_source_history_and_replays_from_its_own_log(
    source: Log, data: st.DataObject
) -> None:
    points = [-1, *(p.offset for _, p in source if _valid_at(source, p.offset))]
    until = data.draw(st.sampled_from(points))
    then = as_of(source, until)
    fork = ConversationForked(
        source_conversation_id="src",
        source_partition=0,
        until_offset=until,
        messages=then.messages if then else (),
        summary=then.summary if then else None,
    )
    later = [body for n in range(data.draw(st.integers(0, 3))) for body in data.draw(step(n))]
    log = [
        (_event("new", n, body), LogPosition(partition=1, offset=n))
        for n, body in enumerate([fork, *later])
    ]
    forked = fold_all(log)
    assert forked is not None
    assert forked.anomalies == ()
    assert forked.forked_from == ForkOrigin(conversation_id="src", partition=0, until_offset=until)
    started = fold_all(log[:1])
    assert started is not None
    assert (started.messages, started.summary) == (fork.messages, fork.summary)
    assert fold_all(log) == forked  # from its own events alone, every time


def run(*bodies: EventBody, snapshot: ConversationSnapshot | None = None) -> ConversationSnapshot:
    start = snapshot.event_count if snapshot else 0
    for n, body in enumerate(bodies, start):
        snapshot = fold(snapshot, _event("c", n, body), LogPosition(partition=0, offset=n))
    assert snapshot is not None
    return snapshot


def test_a_rewind_keeps_the_counts_tokens_and_metadata() -> None:
    before = run(
        MetadataSet(title="Quest", tags=("beta",)),
        UserMessage(text="hi"),
        AssistantTurn(text="hello"),
    )
    after = run(ConversationRewound(until_offset=-1, reason="undo"), snapshot=before)
    assert after.messages == ()
    assert (after.title, after.tags) == ("Quest", ("beta",))
    assert after.message_count == before.message_count
    assert after.event_count == 4
    assert after.events_by_type["ConversationRewound"] == 1


@pytest.mark.parametrize(
    ("carried", "why"),
    [
        ((SnapshotMessage(role="tool", text="x", tool_call_id="k"),), "answering no pending"),
        ((SnapshotMessage(role="narrator", text="x"),), "unknown role"),
        (
            (
                SnapshotMessage(
                    role="assistant", tool_calls=(ToolCall(id="k", name="t", arguments="{}"),)
                ),
            ),
            "unanswered",
        ),
    ],
)
def test_a_rewind_carrying_a_history_not_valid_to_send_is_an_anomaly(
    carried: tuple[SnapshotMessage, ...], why: str
) -> None:
    before = run(UserMessage(text="hi"))
    after = run(ConversationRewound(until_offset=0, messages=carried), snapshot=before)
    assert after.messages == before.messages
    assert why in after.anomalies[-1]


def test_a_fork_into_a_conversation_with_a_history_is_an_anomaly() -> None:
    before = run(UserMessage(text="mine"))
    after = run(
        ConversationForked(source_conversation_id="src", source_partition=0, until_offset=3),
        snapshot=before,
    )
    assert after.messages == before.messages
    assert after.forked_from is None
    assert "already has a history" in after.anomalies[-1]


def test_history_operations_after_deletion_are_anomalies() -> None:
    deleted = run(UserMessage(text="hi"), ConversationDeleted(reason="asked"))
    after = run(
        ConversationRewound(until_offset=0, messages=(SnapshotMessage(role="user", text="hi"),)),
        MetadataSet(title="back?"),
        snapshot=deleted,
    )
    assert (after.messages, after.title, after.deleted) == ((), None, True)
    assert len(after.anomalies) == 2


@pytest.mark.parametrize(
    "change",
    [
        MetadataSet(title="t" * (MAX_TITLE_CHARS + 1)),
        MetadataSet(tags=("x" * (MAX_TAG_CHARS + 1),)),
        MetadataSet(tags=("",)),
        MetadataSet(attributes={f"k{n}": "v" for n in range(MAX_ATTRIBUTES + 1)}),
        MetadataSet(attributes={"": "v"}),
    ],
)
def test_metadata_over_its_limits_is_an_anomaly_and_changes_nothing(change: MetadataSet) -> None:
    before = run(MetadataSet(title="kept", attributes={"a": "1"}))
    after = run(change, snapshot=before)
    assert (after.title, after.tags, after.attributes) == ("kept", (), {"a": "1"})
    assert after.anomalies


def test_a_rewind_computed_on_a_history_that_changed_since_is_an_anomaly() -> None:
    before = run(UserMessage(text="one"), AssistantTurn(text="echo: one"))
    basis = before.recent_event_ids[-1]
    moved = run(UserMessage(text="landed in between"), snapshot=before)
    stale = run(
        ConversationRewound(until_offset=-1, reason="undo", basis_event_id=basis), snapshot=moved
    )
    assert stale.messages == moved.messages
    assert "computed on a history since changed" in stale.anomalies[-1]
    fresh = run(
        ConversationRewound(until_offset=-1, basis_event_id=stale.recent_event_ids[-1]),
        snapshot=stale,
    )
    assert fresh.messages == ()


def test_deleting_a_conversation_clears_its_metadata_too() -> None:
    deleted = run(
        MetadataSet(title="Ada's quest", owner="ada", tags=("x",), attributes={"email": "a@b"}),
        ConversationDeleted(reason="asked"),
    )
    assert (deleted.title, deleted.owner, deleted.tags, deleted.attributes) == (None, None, (), {})


def test_metadata_over_an_eighth_of_a_small_snapshot_bound_is_an_anomaly() -> None:
    small = FoldPolicy(max_bytes=32 * 1024)
    values = {f"k{n}": "v" * 1000 for n in range(5)}  # about 5 KB: over 4 KB
    snapshot = fold(
        None,
        _event("c", 0, MetadataSet(attributes=values)),
        LogPosition(partition=0, offset=0),
        small,
    )
    assert snapshot.attributes == {}
    assert "over 1/8 of the snapshot bound" in snapshot.anomalies[-1]
    assert (
        fold(
            None, _event("c", 0, MetadataSet(attributes=values)), LogPosition(partition=0, offset=0)
        ).attributes
        == values
    )
