"""The compiled fold folds as the Python fold does, snapshot for snapshot and byte for byte.

``goaicore.fold.fold`` runs the compiled core's fold of the common events first
(``goaicore.fold.native``) and the Python fold (``python_fold``, the definition) for
whatever it hands back. Each test folds the same events both ways and holds them to the
same snapshot after every event (the same object where the fold changed nothing), and
the snapshots the compiled fold made to the same bytes as fastavro writes them: over
well-formed logs, logs of big messages the size bound cuts, any event sequence on any
snapshot, events published again and read again, and text of every kind. Another
checks that it does fold the common events itself (a fold that handed everything back
would pass the others).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goaicore.bench.store import Shape, _events
from goaicore.fold import DEFAULT_POLICY, FOLD_VERSION, FoldPolicy, fold, python_fold
from goaicore.fold.native import folder_over, native_folder, snapshot_size
from goaicore.fold.policy import policy_for_record_limit
from goaicore.fold.size import snapshot_bytes
from goaicore.records import (
    AssistantTurn,
    ConversationErased,
    ConversationEvent,
    ConversationReset,
    ConversationSnapshot,
    EventBody,
    GameEvent,
    LogPosition,
    ToolCall,
    ToolResult,
    UserMessage,
)
from goaicore.records.avro import EncodeError, default_codecs
from goaicore.records.avro.api import default_snapshot_encoder, encode_snapshot
from goaicore.records.avro.native import native_histories
from tests.fold.conversations import START, conversation_log
from tests.fold.test_size_bound import heavy_log
from tests.native_core import needs_core
from tests.records.records_strategies import events as any_events
from tests.records.records_strategies import snapshots

pytestmark = needs_core

Log = Sequence[tuple[ConversationEvent, LogPosition]]
CODEC = default_codecs().snapshot
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL = policy_for_record_limit(48 * 1024)
POLICIES = st.sampled_from(
    [DEFAULT_POLICY, SMALL, FoldPolicy(max_messages=4), FoldPolicy(recent_ids=3)]
)


def _bytes(snapshot: ConversationSnapshot) -> object:
    try:
        return encode_snapshot(snapshot)
    except EncodeError as err:
        return str(err)


def _generic(snapshot: ConversationSnapshot) -> object:
    try:
        return CODEC.encode_generic(snapshot)
    except EncodeError as err:
        return str(err)


def both(
    log: Log,
    policy: FoldPolicy = DEFAULT_POLICY,
    start: dict[str, ConversationSnapshot] | None = None,
) -> dict[str, ConversationSnapshot]:
    """Fold ``log`` with the compiled fold first and with the Python fold alone, one table
    each, checking after every event that they agree (snapshot, identity, bytes)."""
    compiled = dict(start or {})
    python = dict(start or {})
    for event, position in log:
        key = event.conversation_id
        before_compiled, before_python = compiled.get(key), python.get(key)
        compiled[key] = fold(before_compiled, event, position, policy)
        python[key] = python_fold(before_python, event, position, policy)
        assert compiled[key] == python[key], (event, position)
        assert (compiled[key] is before_compiled) == (python[key] is before_python)
        assert _bytes(compiled[key]) == _generic(python[key])
        assert snapshot_size(compiled[key]) == snapshot_bytes(python[key])
    return compiled


def test_the_compiled_fold_is_there_wherever_the_core_is() -> None:
    folder = native_folder()
    assert folder is not None
    assert type(folder).__module__ == "goaicore_native"


def test_it_folds_the_common_events_itself() -> None:
    """Every event of the benchmark's conversations (user messages and game events), and a
    tool chain with a game event in its middle, is folded by the compiled fold: it hands
    none of them back."""
    folder = native_folder()
    assert folder is not None
    params = DEFAULT_POLICY.native_params
    table: dict[str, ConversationSnapshot] = {}
    events = _events(Shape(20, 12))
    call = ToolCall(id="call-1", name="lookup", arguments="{}")
    chain: list[EventBody] = [
        UserMessage(text="look it up"),
        AssistantTurn(tool_calls=(call,), provider="openai"),
        GameEvent(kind="world", text="it rains"),  # placed before the calling message
        ToolResult(tool_call_id="call-1", name="lookup", content="found"),
        AssistantTurn(text="done", provider="openai"),
    ]
    events += [
        ConversationEvent(
            event_id=f"chain-{n}", conversation_id="chain", occurred_at=START, body=body
        )
        for n, body in enumerate(chain)
    ]
    for offset, event in enumerate(events):
        position = LogPosition(partition=0, offset=offset)
        before = table.get(event.conversation_id)
        folded = folder(before, event, position, params)
        assert folded is not None, event
        assert folded == python_fold(before, event, position)
        table[event.conversation_id] = folded
    roles = [m.role for m in table["chain"].messages]
    assert roles == ["user", "system", "assistant", "tool", "assistant"]
    again = folder(table["chain"], events[-1], LogPosition(partition=0, offset=0), params)
    assert again is table["chain"]  # read again: unchanged, the same object


@PROPERTY
@given(conversation_log(max_steps=20), POLICIES)
def test_any_conversation_folds_the_same_both_ways(log: Log, policy: FoldPolicy) -> None:
    both(log, policy)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(heavy_log())
def test_conversations_the_size_bound_cuts_fold_the_same_both_ways(log: Log) -> None:
    """The compiled fold hands a cut to the Python fold and folds on from its snapshot."""
    folded = both(log, SMALL)
    assert all(len(encode_snapshot(s)) <= (SMALL.max_bytes or 0) for s in folded.values())


@PROPERTY
@given(
    snapshots,
    st.lists(any_events, max_size=10),
    POLICIES,
    st.booleans(),
    st.data(),
)
def test_any_events_on_any_snapshot_fold_the_same_both_ways(
    start: ConversationSnapshot,
    events: list[ConversationEvent],
    policy: FoldPolicy,
    current: bool,
    data: st.DataObject,
) -> None:
    """Any event, on a snapshot of any content (metadata, notes, earlier bounds, a seal):
    made current for the policy, or not, and some events again or read again."""
    if current:
        start = dataclasses.replace(
            start, format_version=FOLD_VERSION, max_bytes=policy.max_bytes or 0
        )
    last = start.last_position
    offset = last.offset + 1 if last is not None and last.partition == 0 else 0
    log: list[tuple[ConversationEvent, LogPosition]] = []
    for event in events:
        event = dataclasses.replace(event, conversation_id=start.conversation_id)
        log.append((event, LogPosition(partition=0, offset=offset)))
        offset += 1
        repeated: bool = data.draw(st.booleans())
        if repeated:  # the same event again, or read again
            again, at = data.draw(st.sampled_from(log))
            position = at if data.draw(st.booleans()) else LogPosition(partition=0, offset=offset)
            log.append((again, position))
            offset += 1
    both(log, policy, {start.conversation_id: start})


@PROPERTY
@given(snapshots)
def test_any_snapshot_measures_the_same_both_ways(snapshot: ConversationSnapshot) -> None:
    """The store worker's measure of a snapshot it holds back is the size bound's figure,
    cold (the history not known to the cache) and warm."""
    assert snapshot_size(snapshot) == snapshot_bytes(snapshot)
    _bytes(snapshot)  # its history now known to the cache, where it encodes
    assert snapshot_size(snapshot) == snapshot_bytes(snapshot)


texts = st.text(max_size=30) | st.sampled_from(["é" * 40, "😀 emoji", "a\ud800b", "\x00", ""])


@PROPERTY
@given(st.lists(st.tuples(texts, texts, st.sampled_from(["user", "game", "turn"])), max_size=15))
def test_text_of_every_kind_folds_the_same_both_ways(steps: list[tuple[str, str, str]]) -> None:
    """Non-ASCII and astral text, and lone surrogates (which have no UTF-8 form: the
    compiled fold hands them to the Python fold, whose snapshot the codec refuses)."""
    log = []
    for n, (first, second, kind) in enumerate(steps):
        body: UserMessage | GameEvent | AssistantTurn
        if kind == "user":
            body = UserMessage(text=first, name=second or None)
        elif kind == "game":
            body = GameEvent(kind=second, text=first)
        else:
            body = AssistantTurn(text=first, provider=second)
        event_id = f"{second[:5]}-{n}"
        event = ConversationEvent(
            event_id=event_id, conversation_id=f"c{first[:1]}", occurred_at=START, body=body
        )
        log.append((event, LogPosition(partition=0, offset=n)))
    both(log)


@PROPERTY
@given(conversation_log(max_steps=12), st.integers(0, 3000))
def test_the_history_cache_changes_no_snapshot(log: Log, cache_bytes: int) -> None:
    """A compiled fold whose history cache forgets (small, or cleared before every event)
    folds to the same snapshots as one that remembers."""
    schema = CODEC.writer.parsed
    (messages,) = (field for field in schema["fields"] if field["name"] == "messages")
    histories = native_histories(messages["type"]["items"], schema, cache_bytes)
    assert histories is not None
    small = folder_over(histories)
    params = DEFAULT_POLICY.native_params
    remembered: ConversationSnapshot | None = None
    forgetful: ConversationSnapshot | None = None
    for event, position in log:
        remembered = fold(remembered, event, position)
        if cache_bytes % 2:
            histories.clear()
        folded = small(forgetful, event, position, params)
        forgetful = folded if folded is not None else python_fold(forgetful, event, position)
        assert forgetful == remembered
        assert histories.remembered_bytes <= cache_bytes


def test_a_snapshot_folded_elsewhere_meanwhile_is_not_mistaken_for_the_cached_one() -> None:
    """Two tables fold the same conversation side by side (a replay beside the worker):
    each fold finds the cache holding the other table's history and folds from its own."""
    log = [
        (event, LogPosition(partition=0, offset=n))
        for n, event in enumerate(_events(Shape(1, 30), prefix="apart"))
    ]
    first: ConversationSnapshot | None = None
    second: ConversationSnapshot | None = None
    for event, position in log:
        first = fold(first, event, position)
        second = fold(second, event, position)
        assert first == second
        assert first is not second
        assert encode_snapshot(first) == encode_snapshot(second) == CODEC.encode_generic(first)
    assert first == both(log)["apart-0"]


def test_the_encoder_copies_the_bytes_the_fold_wrote() -> None:
    """The default encoder's history cache is the compiled fold's: a folded snapshot's
    messages are found there, so its encoding copies them."""
    histories = default_snapshot_encoder().histories
    assert histories is not None
    snapshot = None
    for offset, event in enumerate(_events(Shape(1, 5), prefix="copied")):
        snapshot = fold(snapshot, event, LogPosition(partition=0, offset=offset))
    assert snapshot is not None
    before = histories.remembered_bytes
    assert encode_snapshot(snapshot) == CODEC.encode_generic(snapshot)
    assert histories.remembered_bytes == before  # nothing encoded again, nothing added


@pytest.mark.parametrize("tokens", [2**63 - 1, -(2**63)])
def test_token_counts_that_would_pass_a_long_stay_inside_one(tokens: int) -> None:
    """Counts and costs are each a long, but summed they could pass one, and a snapshot
    that cannot be written would stop its conversation: the sum stays at the limit."""
    from goaicore.records import Usage

    usage = Usage(prompt_tokens=tokens, completion_tokens=tokens, total_tokens=0)
    log = [
        (
            ConversationEvent(
                event_id=f"t{n}",
                conversation_id="c",
                occurred_at=START,
                body=AssistantTurn(text="x", usage=usage, cost_usd_nanos=tokens),
            ),
            LogPosition(partition=0, offset=n),
        )
        for n in range(3)
    ]
    snapshot = both(log)["c"]
    assert snapshot.prompt_tokens == snapshot.completion_tokens == snapshot.cost_usd_nanos == tokens
    assert encode_snapshot(snapshot) == CODEC.encode_generic(snapshot)


@pytest.mark.parametrize("body", [ConversationReset(), ConversationErased(reason="asked")])
def test_a_history_emptied_leaves_the_cache(body: ConversationReset | ConversationErased) -> None:
    """Once a conversation's history is gone (reset, deleted, erased), the history cache
    keeps none of its bytes: an erased conversation's text is not left in memory."""
    histories = default_snapshot_encoder().histories
    assert histories is not None
    snapshot = None
    log = _events(Shape(1, 6), prefix=f"emptied-{type(body).__name__}")
    for offset, event in enumerate(log):
        snapshot = fold(snapshot, event, LogPosition(partition=0, offset=offset))
    assert snapshot is not None
    encode_snapshot(snapshot)
    held = histories.remembered_bytes
    emptying = dataclasses.replace(log[-1], event_id="emptying", body=body)
    snapshot = fold(snapshot, emptying, LogPosition(partition=0, offset=len(log)))
    assert snapshot.messages == ()
    assert encode_snapshot(snapshot) == CODEC.encode_generic(snapshot)
    assert histories.remembered_bytes < held
