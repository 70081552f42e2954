"""Between a snapshot's stored messages and the conversation library's messages.

A snapshot keeps each assistant message's raw provider JSON as text, and a user
or tool message's where it has one; the library's ``Message`` holds it parsed, so
it is sent back to that provider verbatim. Snapshot messages become library
messages to run a turn, and the turn's new messages become event bodies to append
to the log.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from goaicore.conversation import messages as lib
from goaicore.conversation.providers.registry import assistant_message
from goaicore.errors import InputError
from goaicore.records import AssistantTurn, SnapshotMessage, ToolResult, UserMessage


class UnreadableMessage(InputError):
    """A stored message cannot be read back (its raw JSON or content is damaged)."""


def to_chat_message(stored: SnapshotMessage) -> lib.Message:
    """The library message for one stored snapshot message."""
    try:
        if stored.role == "assistant" and stored.raw_json is not None:
            raw = json.loads(stored.raw_json)
            return assistant_message(stored.provider or "", raw)
        if stored.role in ("user", "tool"):
            return _with_raw(_neutral(stored), stored)
    except (ValueError, TypeError) as err:
        raise UnreadableMessage(f"message {stored.event_id}: {err}") from err
    return _neutral(stored)


def _neutral(stored: SnapshotMessage) -> lib.Message:
    """The library message of a stored message's neutral fields."""
    if stored.role == "assistant":
        return lib.Message.assistant(stored.text, stored.tool_calls)
    if stored.role == "tool":
        return lib.Message.tool_result(
            stored.tool_call_id or "", stored.text, name=stored.name, is_error=stored.is_error
        )
    if stored.role == "user":
        if stored.content_json is not None:
            return lib.Message.user(json.loads(stored.content_json))
        return lib.Message.user(stored.text)
    if stored.role == "system":
        return lib.Message.context(stored.text)
    raise UnreadableMessage(f"message {stored.event_id}: unknown role {stored.role!r}")


def _with_raw(message: lib.Message, stored: SnapshotMessage) -> lib.Message:
    """A user or tool message with the provider's JSON object it was stored with, if any."""
    if stored.raw_json is None:
        return message
    raw = json.loads(stored.raw_json)
    if not isinstance(raw, dict):
        raise ValueError(f"raw JSON must be an object, not {type(raw).__name__}")
    return dataclasses.replace(message, provider=stored.provider, raw=raw)


def to_chat_messages(stored: Sequence[SnapshotMessage]) -> list[lib.Message]:
    return [to_chat_message(m) for m in stored]


def to_event_body(message: lib.Message) -> UserMessage | AssistantTurn | ToolResult:
    """The event body that records a library message in the log."""
    raw_json = None if message.raw is None else json.dumps(message.raw)
    if message.role == "user":
        content = None if message.content is None else json.dumps(message.content)
        return UserMessage(
            text=message.text,
            content_json=content,
            name=message.name,
            raw_json=raw_json,
            provider=None if raw_json is None else message.provider,
        )
    if message.role == "assistant":
        return AssistantTurn(
            text=message.text,
            tool_calls=message.tool_calls,
            provider=message.provider or "",
            raw_json=raw_json,
        )
    if message.role == "tool":
        return ToolResult(
            tool_call_id=message.tool_call_id or "",
            name=message.name or "",
            content=message.text,
            is_error=message.is_error,
            raw_json=raw_json,
            provider=None if raw_json is None else message.provider,
        )
    raise ValueError(f"a {message.role} message is not recorded as a turn event")
