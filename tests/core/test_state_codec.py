"""The state codec: versioned JSON, gzip above a threshold, never raising on bad input."""

from __future__ import annotations

import dataclasses
import gzip
import json
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goaicore import Message, ToolCall
from goaicore.conversation.providers.registry import assistant_message
from goaicore.conversation.state import (
    DEFAULT_GZIP_THRESHOLD,
    GZIP_MAGIC,
    STATE_FORMAT,
    decode_state,
    encode_state,
)

from .strategies import valid_histories

OPENAI_RAW: dict[str, Any] = {
    "role": "assistant",
    "content": "hi",
    "refusal": None,
    "reasoning_content": "r",
    "annotations": [],
}


def history(n: int = 1) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [Message.user(f"question {i}"), assistant_message("openai", dict(OPENAI_RAW))]
    return out


def test_small_state_is_plain_versioned_json() -> None:
    data = encode_state(history(), "openai")
    document = json.loads(data)
    assert document["format"] == STATE_FORMAT
    assert document["version"] == 1
    assert document["provider"] == "openai"
    assert document["messages"][1]["raw"] == OPENAI_RAW


def test_large_state_is_gzipped_deterministically_and_read_back() -> None:
    messages = history(50)
    data = encode_state(messages, "openai")
    assert data.startswith(GZIP_MAGIC)
    assert len(gzip.decompress(data)) > DEFAULT_GZIP_THRESHOLD
    assert data == encode_state(messages, "openai")  # same history, same bytes
    assert decode_state(data, "openai").messages == messages
    assert not encode_state(messages, "openai", gzip_threshold=None).startswith(GZIP_MAGIC)


def test_unknown_raw_fields_survive_the_round_trip() -> None:
    decoded = decode_state(encode_state(history(30), "openai"), "openai")
    assert decoded.reset_reason is None
    assert all(m.raw == OPENAI_RAW for m in decoded.messages if m.role == "assistant")


def valid_state(**changes: Any) -> bytes:
    document = json.loads(encode_state(history(), "openai", gzip_threshold=None))
    document.update(changes)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        (b"\xff\xfe garbage", "invalid_bytes"),
        (GZIP_MAGIC + b"not really gzip", "invalid_bytes"),
        (gzip.compress(valid_state())[:-12], "invalid_bytes"),
        (b"{not json", "not_json"),
        (b"[1, 2]", "not_a_state"),
        (json.dumps({"format": "other"}).encode(), "not_a_state"),
        (valid_state(version=2), "unknown_version"),
        (valid_state(version="1"), "unknown_version"),
        (valid_state(provider="anthropic"), "provider_mismatch"),
        (valid_state(provider=None), "not_a_state"),
        (valid_state(messages={"a": 1}), "not_a_state"),
        (valid_state(messages=[{"role": "user", "text": 5}]), "unreadable_message"),
        (
            valid_state(messages=[{"role": "tool", "text": "x", "tool_call_id": "nope"}]),
            "invalid_history",
        ),
    ],
)
def test_bad_state_starts_fresh_with_a_logged_reason(
    state: bytes, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="goaicore.conversation.state"):
        decoded = decode_state(state, "openai")
    assert decoded.messages == []
    assert decoded.reset_reason == reason
    [record] = [r for r in caplog.records if r.name == "goaicore.conversation.state"]
    assert record.__dict__["goaicore_event"] == "state_reset"
    assert record.__dict__["reason"] == reason
    assert record.__dict__["detail"]


def test_none_and_empty_bytes_are_a_new_conversation(caplog: pytest.LogCaptureFixture) -> None:
    for state in (None, b"", bytearray()):
        decoded = decode_state(state, "openai")
        assert decoded.messages == []
        assert decoded.reset_reason is None
    assert not caplog.records


def test_a_gzip_bomb_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("goaicore.conversation.state.MAX_STATE_BYTES", 1000)
    bomb = gzip.compress(b" " * 100_000)
    assert decode_state(bomb, "openai").reset_reason == "invalid_bytes"


def test_non_bytes_input_does_not_raise() -> None:
    assert decode_state("text", "openai").reset_reason == "invalid_bytes"  # type: ignore[arg-type]


def test_convert_keeps_the_neutral_history_without_private_fields() -> None:
    messages = [
        Message.user("q"),
        assistant_message(
            "openai",
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
        ),
        Message.tool_result("c", "ok", name="f"),
        assistant_message("openai", dict(OPENAI_RAW)),
    ]
    state = encode_state(messages, "openai")
    decoded = decode_state(state, "anthropic", on_provider_mismatch="convert")
    assert decoded.reset_reason is None
    assert decoded.converted_from == "openai"
    assert all(m.raw is None for m in decoded.messages)
    assert decoded.messages[1].tool_calls == (ToolCall("c", "f", "{}"),)
    assert decoded.messages[3].text == "hi"
    assert decode_state(state, "anthropic").reset_reason == "provider_mismatch"


def test_convert_drops_a_user_or_tool_messages_raw_json_and_keeps_its_role() -> None:
    responses = "openai-responses"
    messages = [
        dataclasses.replace(
            Message.user("q"), provider=responses, raw={"content": "q", "role": "user"}
        ),
        Message.assistant("", [ToolCall("c", "f", "{}")]),
        dataclasses.replace(
            Message.tool_result("c", "ok", name="f"),
            provider=responses,
            raw={"call_id": "c", "output": "ok", "type": "function_call_output"},
        ),
        Message.assistant("done"),
    ]
    state = encode_state(messages, responses)
    kept = decode_state(state, responses)
    assert [(m.provider, m.raw) for m in kept.messages] == [(m.provider, m.raw) for m in messages]
    decoded = decode_state(state, "anthropic", on_provider_mismatch="convert")
    assert decoded.reset_reason is None
    assert decoded.messages == [m.neutral() for m in messages]
    assert [(m.role, m.raw, m.provider) for m in decoded.messages] == [
        ("user", None, None),
        ("assistant", None, None),
        ("tool", None, None),
        ("assistant", None, None),
    ]


def test_convert_still_resets_a_history_the_new_provider_cannot_take() -> None:
    state = encode_state([Message.assistant("hello first")], "openai")
    decoded = decode_state(state, "anthropic", on_provider_mismatch="convert")
    assert decoded.reset_reason == "invalid_history"


@settings(max_examples=60, deadline=None)
@given(valid_histories(), st.sampled_from([None, 0, 200, DEFAULT_GZIP_THRESHOLD]))
def test_round_trip(messages: list[Message], threshold: int | None) -> None:
    decoded = decode_state(
        encode_state(messages, "anthropic", gzip_threshold=threshold), "anthropic"
    )
    assert decoded.reset_reason is None
    assert decoded.messages == messages
    # raw JSON is not compared by ==: it comes back with the same keys in the same order
    assert [json.dumps(m.raw) for m in decoded.messages] == [json.dumps(m.raw) for m in messages]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    decoded = decode_state(data, "openai")
    assert decoded.messages == []
    assert (decoded.reset_reason is None) == (data == b"")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_after_the_gzip_magic_never_raise(data: bytes) -> None:
    decoded = decode_state(GZIP_MAGIC + data, "openai")
    assert decoded.reset_reason == "invalid_bytes"
    assert decoded.messages == []


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["role", "text", "raw", "raw_input", "provider", "content", "tool_calls", "x"]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=10,
    )
)
def test_arbitrary_json_messages_never_raise(junk: Any) -> None:
    state = valid_state(messages=[junk])
    decoded = decode_state(state, "openai")
    assert decoded.reset_reason is not None or len(decoded.messages) == 1
