"""Agents SDK items as events and back (goaicore.integrations.openai_agents.items): any
sequence of items folds into a valid history that gives the same items back, byte for
byte, and removing the last item keeps it valid."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore.fold import fold
from goaicore.fold.carried import history_problem
from goaicore.fold.fold import refusal
from goaicore.fold.policy import DEFAULT_POLICY
from goaicore.integrations.openai_agents import items as agent_items
from goaicore.records import (
    AssistantTurn,
    ConversationSnapshot,
    LogPosition,
    ToolResult,
    UserMessage,
    new_event,
)

CONVERSATION = "agents-items"

texts = st.text(max_size=20)
call_ids = st.sampled_from(["call_a", "call_b", "call_c"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)

user_items = st.one_of(
    st.builds(lambda t: {"content": t, "role": "user"}, texts),
    st.builds(
        lambda t, role: {
            "type": "message",
            "role": role,
            "content": [{"type": "input_text", "text": t}],
        },
        texts,
        st.sampled_from(["user", "developer", "system"]),
    ),
)
assistant_items = st.one_of(
    st.builds(lambda t: {"role": "assistant", "content": t}, texts),
    st.builds(
        lambda t: {
            "id": "msg_1",
            "content": [{"annotations": [], "text": t, "type": "output_text", "logprobs": []}],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
        texts,
    ),
)
reasoning_items = st.builds(
    lambda t: {
        "id": "rs_1",
        "summary": [{"text": t, "type": "summary_text"}],
        "type": "reasoning",
        "encrypted_content": "gAAAA" + t,
    },
    texts,
)
function_calls = st.builds(
    lambda cid, name, args: {
        "arguments": json.dumps(args),
        "call_id": cid,
        "name": name,
        "type": "function_call",
        "id": "fc_1",
        "status": "completed",
    },
    call_ids,
    st.sampled_from(["roll", "look"]),
    json_values,
)
outputs = st.builds(
    lambda cid, out: {"call_id": cid, "output": out, "type": "function_call_output"},
    call_ids,
    texts | st.builds(lambda t: [{"type": "input_text", "text": t}], texts),
)
unknown_items = st.builds(
    lambda extra: {"type": "web_search_call", "id": "ws_1", "status": "completed", **extra},
    st.dictionaries(st.sampled_from(["action", "x"]), json_values, max_size=2),
)
any_items = st.one_of(
    user_items,
    assistant_items,
    reasoning_items,
    function_calls,
    outputs,
    unknown_items,
    st.dictionaries(texts, json_values, max_size=4),
)
batches = st.lists(st.lists(any_items, min_size=1, max_size=6), max_size=5)


def fold_all(
    batches_of_bodies: list[list[Any]], snapshot: ConversationSnapshot | None = None
) -> ConversationSnapshot | None:
    """Fold the bodies as the store would, each batch after the last: none refused."""
    last = snapshot.last_position if snapshot is not None else None
    offset = last.offset + 1 if last is not None else 0
    for bodies in batches_of_bodies:
        for body in bodies:
            event = new_event(CONVERSATION, body, source="test")
            assert refusal(snapshot, event, DEFAULT_POLICY) is None, body
            snapshot = fold(
                snapshot, event, LogPosition(partition=0, offset=offset), DEFAULT_POLICY
            )
            offset += 1
    return snapshot


@settings(max_examples=300, deadline=None)
@given(batches)
def test_any_items_fold_valid_and_read_back_the_same(added: list[list[dict[str, Any]]]) -> None:
    snapshot = fold_all([agent_items.bodies(batch) for batch in added])
    messages = snapshot.messages if snapshot is not None else ()
    assert history_problem(messages) is None
    expected = [item for batch in added for item in batch]
    read = agent_items.history_items(messages)
    assert read == expected
    assert [json.dumps(i) for i in read] == [json.dumps(i) for i in expected]  # key order


@settings(max_examples=200, deadline=None)
@given(batches.filter(lambda b: any(b)))
def test_removing_the_last_item_keeps_a_valid_history(added: list[list[dict[str, Any]]]) -> None:
    snapshot = fold_all([agent_items.bodies(batch) for batch in added])
    assert snapshot is not None
    messages = snapshot.messages
    start = agent_items.tail(messages)
    suffix = agent_items.history_items(messages[start:])
    cut = dataclasses.replace(snapshot, messages=messages[:start])
    kept = fold_all([agent_items.bodies(suffix[:-1])], cut)
    remaining = kept.messages if kept is not None else ()
    assert history_problem(remaining) is None
    assert agent_items.history_items(remaining) == [i for b in added for i in b][:-1]


def test_a_step_with_its_outputs_is_a_turn_with_tool_calls_and_results() -> None:
    step = [
        {"id": "rs_1", "summary": [], "type": "reasoning", "encrypted_content": "enc"},
        {"arguments": '{"n": 2}', "call_id": "c1", "name": "roll", "type": "function_call"},
        {"arguments": "{}", "call_id": "c2", "name": "look", "type": "function_call"},
        {"call_id": "c2", "output": "a door", "type": "function_call_output"},
        {"call_id": "c1", "output": "4", "type": "function_call_output"},
    ]
    turn, second, first = agent_items.bodies(step)
    assert isinstance(turn, AssistantTurn)
    assert [c.id for c in turn.tool_calls] == ["c1", "c2"]
    assert json.loads(turn.raw_json or "") == {"output": step[:3]}
    assert isinstance(second, ToolResult)
    assert (second.tool_call_id, second.name, second.content) == ("c2", "look", "a door")
    assert isinstance(first, ToolResult)
    assert first.raw_json == json.dumps(step[4])


def test_a_call_left_unanswered_stays_raw() -> None:
    step = [{"arguments": "{}", "call_id": "c1", "name": "roll", "type": "function_call"}]
    (turn,) = agent_items.bodies(step)
    assert isinstance(turn, AssistantTurn)
    assert turn.tool_calls == ()
    (later,) = agent_items.bodies(
        [{"call_id": "c1", "output": "4", "type": "function_call_output"}]
    )
    assert isinstance(later, AssistantTurn)  # raw: it answers no neutral call


def test_user_developer_and_system_items_are_user_messages_kept_verbatim() -> None:
    item = {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "be brief"}],
    }
    (body,) = agent_items.bodies([item])
    assert isinstance(body, UserMessage)
    assert body.text == "be brief"
    assert body.raw_json == json.dumps(item)
    assert body.provider == agent_items.PROVIDER


def test_a_lone_surrogate_survives_in_the_raw_item() -> None:
    item = {"role": "user", "content": "bad \ud800 text"}
    (body,) = agent_items.bodies([item])
    assert isinstance(body, UserMessage)
    assert body.text == "bad \ufffd text"
    body.text.encode()
    snapshot = fold_all([[body]])
    assert snapshot is not None
    assert agent_items.history_items(snapshot.messages) == [item]


def test_messages_others_wrote_read_back_as_the_responses_provider_renders_them() -> None:
    from goaicore.records import GameEvent, ToolCall

    snapshot = fold_all(
        [
            [
                UserMessage(text="hi"),
                AssistantTurn(text="", tool_calls=(ToolCall("t1", "roll", "{}"),)),
                ToolResult(tool_call_id="t1", name="roll", content="6"),
                GameEvent(kind="door", text="the door opens"),
                AssistantTurn(text="You rolled 6."),
            ]
        ]
    )
    assert snapshot is not None
    assert agent_items.history_items(snapshot.messages) == [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "t1", "name": "roll", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "t1", "output": "6"},
        {"role": "system", "content": "the door opens"},
        {"role": "assistant", "content": "You rolled 6."},
    ]


@pytest.mark.parametrize("bad", [object(), [1, 2], "text", {"when": object()}, {"s": {1, 2}}])
def test_an_item_json_cannot_hold_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError):
        agent_items.bodies([{"role": "user", "content": "fine"}, bad])
