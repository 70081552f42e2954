"""The opaque state blob: versioned JSON, gzip-compressed above a size threshold.

``{"format": "goaicore.conversation.state", "version": 1, "provider": ..., "messages": [...]}``,
compact UTF-8 JSON; when it is longer than the threshold it is gzip-compressed (with a
zero mtime, so equal histories give equal bytes) and recognised on read by the gzip
magic bytes. Decoding never raises on bad input: it returns a fresh history with the
reason, and logs a structured warning, so one corrupt row never takes a conversation (or
a stream) down.

A user or tool message that keeps its provider's JSON stores it as ``raw_input`` beside
its neutral fields, still in version 1: a reader that predates it ignores the key and
reads the neutral message, as every other provider does.
"""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from goaicore.conversation.errors import InvalidHistoryError
from goaicore.conversation.messages import ROLES, Content, JSONDict, Message, Role, ToolCall
from goaicore.conversation.providers.registry import assistant_message
from goaicore.conversation.providers.wire import string
from goaicore.conversation.validation import validate_history

STATE_FORMAT = "goaicore.conversation.state"
STATE_VERSION = 1
DEFAULT_GZIP_THRESHOLD = 1024
MAX_STATE_BYTES = 64 * 1024 * 1024  # decompressed; guards against gzip bombs
GZIP_MAGIC = b"\x1f\x8b"

MismatchPolicy = Literal["reset", "convert"]
ResetReason = Literal[
    "invalid_bytes",
    "not_json",
    "not_a_state",
    "unknown_version",
    "provider_mismatch",
    "unreadable_message",
    "invalid_history",
]

log = logging.getLogger("goaicore.conversation.state")


@dataclass(frozen=True, slots=True)
class DecodedState:
    """A decoded state: the history, and why it was started fresh, if it was."""

    messages: list[Message] = field(default_factory=list)
    reset_reason: ResetReason | None = None
    detail: str = ""
    converted_from: str | None = None


def encode_state(
    messages: Sequence[Message],
    provider: str,
    *,
    gzip_threshold: int | None = DEFAULT_GZIP_THRESHOLD,
) -> bytes:
    """The state bytes for ``messages`` produced with ``provider``.

    ``gzip_threshold=None`` never compresses.
    """
    document = {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "provider": provider,
        "messages": [message_to_json(m) for m in messages],
    }
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    if gzip_threshold is not None and len(data) > gzip_threshold:
        return gzip.compress(data, compresslevel=6, mtime=0)
    return data


def decode_state(
    state: bytes | bytearray | memoryview | None,
    provider: str,
    *,
    on_provider_mismatch: MismatchPolicy = "reset",
) -> DecodedState:
    """The history stored in ``state`` for ``provider``; never raises.

    ``None`` and ``b""`` are an empty conversation. Anything unreadable, an unknown
    format version, another provider's state (with ``on_provider_mismatch="reset"``) or a
    history that is not valid for ``provider`` gives a fresh history, a ``reset_reason``
    and a warning on the ``goaicore.conversation.state`` logger whose record carries
    ``goaicore_event="state_reset"``, ``reason`` and ``detail``. With ``"convert"``,
    another provider's history is kept in its neutral form (provider-private fields
    dropped) and rendered for ``provider`` from then on.
    """
    if state is None:
        return DecodedState()
    try:
        return _decode(state, provider, on_provider_mismatch)
    except _Reset as reset:
        log.warning(
            "conversation state reset (%s): %s",
            reset.reason,
            reset.detail,
            extra={
                "goaicore_event": "state_reset",
                "reason": reset.reason,
                "detail": reset.detail,
                "provider": provider,
                "state_bytes": len(state) if isinstance(state, bytes | bytearray) else None,
            },
        )
        return DecodedState(reset_reason=reset.reason, detail=reset.detail)


class _Reset(Exception):
    def __init__(self, reason: ResetReason, detail: str) -> None:
        super().__init__(detail)
        self.reason: ResetReason = reason
        self.detail = detail


def _decode(
    state: bytes | bytearray | memoryview, provider: str, policy: MismatchPolicy
) -> DecodedState:
    if not isinstance(state, bytes | bytearray | memoryview):
        raise _Reset("invalid_bytes", f"state must be bytes, not {type(state).__name__}")
    data = bytes(state)
    if not data:
        return DecodedState()
    if data.startswith(GZIP_MAGIC):
        data = _gunzip(data)
    try:
        document: Any = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _Reset("invalid_bytes", f"not UTF-8: {exc}") from None
    except ValueError as exc:
        raise _Reset("not_json", f"not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != STATE_FORMAT:
        raise _Reset("not_a_state", f"not a {STATE_FORMAT} document")
    version = document.get("version")
    if version != STATE_VERSION:
        raise _Reset("unknown_version", f"format version {version!r} (this library reads 1)")
    stored_provider = document.get("provider")
    if not isinstance(stored_provider, str):
        raise _Reset("not_a_state", "the state names no provider")
    if stored_provider != provider and policy != "convert":
        raise _Reset(
            "provider_mismatch",
            f"state written for {stored_provider!r}, chat uses {provider!r}",
        )
    raw_messages = document.get("messages")
    if not isinstance(raw_messages, list):
        raise _Reset("not_a_state", "messages must be a list")
    messages: list[Message] = []
    for i, item in enumerate(raw_messages):
        try:
            messages.append(message_from_json(item))
        except (ValueError, TypeError, AttributeError) as exc:
            raise _Reset("unreadable_message", f"message {i}: {exc}") from None
    converted_from = None
    if stored_provider != provider:
        messages = [m.neutral() for m in messages]
        converted_from = stored_provider
    try:
        validate_history(messages, provider)
    except InvalidHistoryError as exc:
        raise _Reset("invalid_history", str(exc)) from None
    return DecodedState(messages=messages, converted_from=converted_from)


def _gunzip(data: bytes) -> bytes:
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, MAX_STATE_BYTES)
    except zlib.error as exc:
        raise _Reset("invalid_bytes", f"corrupt gzip data: {exc}") from None
    if inflater.unconsumed_tail:
        raise _Reset("invalid_bytes", f"state larger than {MAX_STATE_BYTES} bytes")
    if not inflater.eof:
        raise _Reset("invalid_bytes", "truncated gzip data")
    return out


def message_to_json(message: Message) -> JSONDict:
    """A message's stored form: an assistant message's raw JSON where it has one (its
    neutral fields are read from it), the neutral fields otherwise; a user or tool
    message's raw JSON is kept beside them, as ``raw_input`` (a reader that does not know
    it reads the neutral message)."""
    if message.raw is not None and message.role == "assistant":
        return {"role": message.role, "provider": message.provider, "raw": message.raw}
    out: JSONDict = {"role": message.role}
    if message.content is not None:
        out["content"] = message.content
    else:
        out["text"] = message.text
    if message.tool_calls:
        out["tool_calls"] = [c.to_json() for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.is_error:
        out["is_error"] = True
    if message.raw is not None:
        if message.provider is not None:
            out["provider"] = message.provider
        out["raw_input"] = message.raw
    return out


def message_from_json(data: Any) -> Message:
    """Read a stored message back; raises ``ValueError`` when it is not a message."""
    if not isinstance(data, dict):
        raise ValueError("a message must be a JSON object")
    role = data.get("role")
    if role not in ROLES:
        raise ValueError(f"unknown message role {role!r}")
    if "raw" in data:
        provider, raw = data.get("provider"), data["raw"]
        if role != "assistant" or not isinstance(provider, str) or not isinstance(raw, dict):
            raise ValueError("a raw message needs role assistant, a provider and an object")
        return assistant_message(provider, raw)
    message = _neutral_from_json(data, role)
    if "raw_input" not in data:
        return message
    raw = data["raw_input"]
    if role == "assistant" or not isinstance(raw, dict):
        raise ValueError("raw input must be an object, on a message other than the assistant's")
    provider = _optional_string(data.get("provider"), "provider")
    return replace(message, provider=provider, raw=raw)


def _neutral_from_json(data: JSONDict, role: str) -> Message:
    content = data.get("content")
    if content is not None:
        if not isinstance(content, str | list) or role != "user":
            raise ValueError("only a user message carries content parts")
        if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
            raise ValueError("content parts must be objects")
        return Message.user(cast("Content", content))
    calls = data.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError("tool_calls must be a list")
    return Message(
        role=cast("Role", role),
        text=string(data.get("text", ""), "text"),
        tool_calls=tuple(_tool_call_from_json(c) for c in calls),
        tool_call_id=_optional_string(data.get("tool_call_id"), "tool_call_id"),
        name=_optional_string(data.get("name"), "name"),
        is_error=data.get("is_error") is True,
    )


def _tool_call_from_json(data: Any) -> ToolCall:
    if not isinstance(data, dict):
        raise ValueError("a tool call must be an object")
    return ToolCall(
        id=string(data.get("id"), "tool call id"),
        name=string(data.get("name"), "tool name"),
        arguments=string(data.get("arguments"), "arguments"),
    )


def _optional_string(value: Any, what: str) -> str | None:
    return None if value is None else string(value, what)
