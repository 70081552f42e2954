"""The incremental snapshot encoder writes fastavro's bytes, whatever it remembers.

Each test compares with the codec's ``encode_generic`` (fastavro's writer over the whole
snapshot): for any snapshot, for histories that grow, shrink and share message objects
as the fold's do, with a cache small enough to forget, and for records that do not fit.
Each runs on both encoders: the compiled core's history cache where it is installed
(``compiled``; the Python one where it is not) and the Python one (``python``).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.records import ConversationSnapshot, SnapshotMessage
from goaicore.records.avro import EncodeError, default_codecs
from goaicore.records.avro.snapshot_encoder import SnapshotEncoder
from tests.records.records_strategies import messages, snapshots

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODEC = default_codecs().snapshot
ENCODERS = pytest.mark.parametrize("native", [True, False], ids=["compiled", "python"])


@ENCODERS
@FAST
@given(snapshots)
def test_any_snapshot_encodes_to_fastavros_bytes_cold_and_warm(
    native: bool, snapshot: ConversationSnapshot
) -> None:
    encoder = SnapshotEncoder(CODEC, native=native)
    expected = CODEC.encode_generic(snapshot)
    assert encoder.encode(snapshot) == expected  # every message new
    assert encoder.encode(snapshot) == expected  # every message remembered


# One step of a history's life: append a new message, insert one before the last few
# (a message placed before a pending tool call), replace one (a truncation), drop the
# oldest ones (a bound or a compaction), or change the bookkeeping alone.
steps = st.one_of(
    st.tuples(st.just("append"), messages),
    st.tuples(st.just("insert"), st.tuples(st.integers(min_value=1, max_value=3), messages)),
    st.tuples(st.just("replace"), st.tuples(st.integers(min_value=0, max_value=30), messages)),
    st.tuples(st.just("drop"), st.integers(min_value=1, max_value=3)),
    st.tuples(st.just("count"), st.integers(min_value=0, max_value=2**40)),
)


def _step(snapshot: ConversationSnapshot, kind: str, value: object) -> ConversationSnapshot:
    history = snapshot.messages
    if kind == "append":
        assert isinstance(value, SnapshotMessage)
        history = (*history, value)
    elif kind in ("insert", "replace"):
        assert isinstance(value, tuple)
        where, message = value
        if kind == "insert":
            at = max(len(history) - where, 0)
            history = (*history[:at], message, *history[at:])
        elif where < len(history):
            history = (*history[:where], message, *history[where + 1 :])
    elif kind == "drop":
        assert isinstance(value, int)
        history = history[value:]
    else:
        assert isinstance(value, int)
        return dataclasses.replace(snapshot, event_count=value)
    return dataclasses.replace(snapshot, messages=history)


@ENCODERS
@FAST
@given(snapshots, st.lists(steps, max_size=25), st.integers(min_value=0, max_value=4000))
def test_a_history_that_changes_encodes_like_fastavro_at_every_step(
    native: bool, start: ConversationSnapshot, history: list[tuple[str, object]], cache_bytes: int
) -> None:
    encoder = SnapshotEncoder(CODEC, cache_bytes=cache_bytes, native=native)  # it must forget
    snapshot = start
    assert encoder.encode(snapshot) == CODEC.encode_generic(snapshot)
    for kind, value in history:
        snapshot = _step(snapshot, kind, value)
        assert encoder.encode(snapshot) == CODEC.encode_generic(snapshot)
    assert encoder.remembered_bytes <= cache_bytes


@ENCODERS
@FAST
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), steps), max_size=30))
def test_conversations_encoded_in_turn_each_reuse_only_their_own_history(
    native: bool, moves: list[tuple[str, tuple[str, object]]]
) -> None:
    encoder = SnapshotEncoder(CODEC, native=native)
    shared = SnapshotMessage(role="user", text="the same object in both histories")
    current = {
        name: ConversationSnapshot(conversation_id=name, messages=(shared,)) for name in "ab"
    }
    for name, (kind, value) in moves:
        current[name] = _step(current[name], kind, value)
        assert encoder.encode(current[name]) == CODEC.encode_generic(current[name])


def _error(encode: object, snapshot: object) -> str:
    with pytest.raises(EncodeError) as caught:
        encode(snapshot)  # type: ignore[operator]
    return str(caught.value)


BAD_MESSAGES = [
    SnapshotMessage(role="user", text=5),  # type: ignore[arg-type]
    SnapshotMessage(role="tool", is_error=1),  # type: ignore[arg-type]
    SnapshotMessage(role="user", text="\ud800"),  # a lone surrogate has no UTF-8 form
]


@ENCODERS
@pytest.mark.parametrize("bad", BAD_MESSAGES, ids=["text-int", "bool-int", "surrogate"])
def test_a_message_that_does_not_fit_fails_with_the_codecs_error(
    native: bool, bad: SnapshotMessage
) -> None:
    good = SnapshotMessage(role="user", text="hello")
    encoder = SnapshotEncoder(CODEC, native=native)
    encoder.encode(ConversationSnapshot(conversation_id="c", messages=(good,)))  # remembered
    snapshot = ConversationSnapshot(conversation_id="c", messages=(good, bad))
    assert _error(encoder.encode, snapshot) == _error(CODEC.encode_generic, snapshot)
    # The bad message was not remembered: it fails again, the same way.
    assert _error(encoder.encode, snapshot) == _error(CODEC.encode_generic, snapshot)


@ENCODERS
def test_bookkeeping_that_does_not_fit_fails_with_the_codecs_error(native: bool) -> None:
    encoder = SnapshotEncoder(CODEC, native=native)
    good = ConversationSnapshot(
        conversation_id="c", messages=(SnapshotMessage(role="user", text="hi"),)
    )
    encoder.encode(good)
    for bad in (
        dataclasses.replace(good, event_count=True),
        dataclasses.replace(good, format_version=2**40),
        dataclasses.replace(good, summary=b"bytes"),  # type: ignore[arg-type]
    ):
        assert _error(encoder.encode, bad) == _error(CODEC.encode_generic, bad)
    assert _error(encoder.encode, "not a snapshot") == _error(
        CODEC.encode_generic, "not a snapshot"
    )
