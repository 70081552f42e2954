"""Every record has an audit skeleton: its content emptied or marked, the rest kept."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from hypothesis import given, settings

from goaicore.records import (
    EVENT_BODY_TYPES,
    AssistantTurn,
    ChatReply,
    ChatRequest,
    ConversationEvent,
    ConversationSnapshot,
    GameEvent,
    ReplyChunk,
    SnapshotMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from goaicore.records.event_types import Kind
from goaicore.sealing.content import FIELDS, MARK, blanked, erased
from tests.records.records_strategies import records


@settings(max_examples=300, deadline=None)
@given(records)
def test_a_skeleton_keeps_every_field_but_the_content_and_holds_no_text(record: Any) -> None:
    for view, mark in ((blanked(record), ""), (erased(record), MARK)):
        assert type(view) is type(record)
        _assert_only_marks(view, record, mark)


def _assert_only_marks(view: Any, record: Any, mark: str) -> None:
    fields = FIELDS[type(record)]
    for item in dataclasses.fields(record):
        shown, was = getattr(view, item.name), getattr(record, item.name)
        kind = fields.get(item.name)
        if kind is None:
            assert shown == was, item.name  # the skeleton stays
        elif kind is Kind.BODY:
            _assert_only_marks(shown, was, mark)
        elif kind is Kind.MESSAGES:
            assert len(shown) == len(was)
            for message, original in zip(shown, was, strict=True):
                _assert_only_marks(message, original, mark)
        elif kind is Kind.CALLS:
            assert [(c.id, c.name) for c in shown] == [(c.id, c.name) for c in was]
            assert {c.arguments for c in shown} <= {mark and "{}"}
        elif kind is Kind.RANGES:
            assert [(r.first_index, r.last_index) for r in shown] == [
                (r.first_index, r.last_index) for r in was
            ]
            assert {r.note for r in shown} <= {None, mark}
        else:
            assert shown in (None, mark, (), {}), item.name


def test_every_string_field_of_every_record_is_either_content_or_named_skeleton() -> None:
    """A new text field must be classified here: content unless it is an id or a name."""
    known_skeleton = {
        "conversation_id", "event_id", "request_id", "causation_id", "source", "tool_call_id",
        "role", "kind", "provider", "model", "finish_reason", "status", "strategy",
        "basis_event_id", "source_conversation_id", "tools", "name", "reason",
        "occurred_at", "sealed", "run_id", "tool_name",
    }  # fmt: skip
    for record_type in (
        *EVENT_BODY_TYPES,
        ConversationEvent,
        ChatRequest,
        ChatReply,
        ReplyChunk,
        SnapshotMessage,
    ):
        for name, hint in typing.get_type_hints(record_type).items():
            if "str" not in str(hint) or name in FIELDS[record_type]:
                continue
            assert name in known_skeleton, f"{record_type.__name__}.{name} is not classified"
    assert "anomalies" not in FIELDS[ConversationSnapshot]  # notes hold ids and sizes only


def test_an_erased_record_shows_marks_where_its_text_was_and_keeps_its_skeleton() -> None:
    call = ToolCall(id="call-1", name="lookup", arguments='{"q": "where is Alice"}')
    turn = AssistantTurn(
        text="Alice is at the tower",
        tool_calls=(call,),
        usage=Usage(prompt_tokens=12, completion_tokens=5, total_tokens=17),
        provider="openai",
        model="gpt-test",
        raw_json='{"content": "Alice is at the tower"}',
        cost_usd_nanos=900,
    )
    shown = erased(blanked(turn))
    assert shown.text == MARK
    assert shown.raw_json is None
    assert shown.tool_calls == (ToolCall(id="call-1", name="lookup", arguments="{}"),)
    assert (shown.usage, shown.model, shown.cost_usd_nanos) == (turn.usage, "gpt-test", 900)
    assert "Alice" not in repr(blanked(turn))
    game = erased(GameEvent(kind="check-in", text="Alice checked in", attributes={"at": "York"}))
    assert (game.kind, game.text, game.attributes) == ("check-in", MARK, {})
    user = erased(UserMessage(text="hi", name="Alice"))
    assert (user.text, user.name) == (MARK, MARK)


def test_a_user_message_or_tool_result_loses_its_raw_json_and_keeps_whose_format_it_was() -> None:
    raw = '{"content": "Alice is at the tower", "role": "user"}'
    user = UserMessage(text="Alice is at the tower", raw_json=raw, provider="openai-responses")
    result = ToolResult(
        tool_call_id="c1",
        name="find",
        content="the tower",
        raw_json='{"call_id": "c1", "output": "the tower", "type": "function_call_output"}',
        provider="openai-responses",
    )
    for view in (blanked, erased):
        shown_user, shown_result = view(user), view(result)
        assert (shown_user.raw_json, shown_user.provider) == (None, "openai-responses")
        assert (shown_result.raw_json, shown_result.provider) == (None, "openai-responses")
        assert "tower" not in repr(shown_user) + repr(shown_result)
    assert FIELDS[UserMessage]["raw_json"] is Kind.EXTRA
    assert FIELDS[ToolResult]["raw_json"] is Kind.EXTRA
    assert "provider" not in FIELDS[UserMessage]
    assert "provider" not in FIELDS[ToolResult]
