"""Messages: a neutral view over the provider's raw message JSON.

An assistant message keeps exactly the JSON its provider returned (``raw``): for OpenAI
the ``choices[0].message`` object, for Anthropic ``{"role": "assistant", "content":
[blocks]}``. Fields we do not know (``refusal``, ``reasoning_content``, thinking blocks,
annotations...) survive the state round trip and are sent back to the same provider
verbatim. The neutral fields (``text``, ``tool_calls``) are derived from ``raw`` and are
what other providers, tools and applications read.

User, context (mid-conversation ``system``) and tool-result messages are created by this
library and rendered per provider by ``goaicore.conversation.render``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
# A user message's content: plain text or a list of content parts (multimodal).
Content = str | list[dict[str, Any]]
JSONDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call requested by the model; ``arguments`` is the JSON text of the arguments."""

    id: str
    name: str
    arguments: str

    def to_json(self) -> JSONDict:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    ``role`` is ``system`` for a context message stored in the history (game events,
    ``append_to_state``), ``user``, ``assistant`` or ``tool`` (a tool result answering
    ``tool_call_id``). ``provider`` and ``raw`` are set on assistant messages returned by a
    provider; ``raw`` must be treated as read-only. ``content`` keeps a user message's
    multimodal parts; ``text`` is always the plain text.
    """

    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    content: Content | None = None
    provider: str | None = None
    raw: JSONDict | None = field(default=None, compare=False, repr=False)

    # ---- constructors -------------------------------------------------------------

    @classmethod
    def user(cls, content: Content) -> Message:
        """A user message; ``content`` is text or a list of content parts."""
        if isinstance(content, str):
            return cls(role="user", text=content)
        return cls(role="user", text=text_of_parts(content), content=list(content))

    @classmethod
    def context(cls, text: str) -> Message:
        """A context message (a game event, a note for the model) stored in the history."""
        return cls(role="system", text=text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        """A provider-neutral assistant message (no raw JSON), renderable for any provider."""
        return cls(role="assistant", text=text, tool_calls=tuple(tool_calls))

    @classmethod
    def tool_result(
        cls, tool_call_id: str, text: str, *, name: str | None = None, is_error: bool = False
    ) -> Message:
        """The result of one tool call, as the model will see it."""
        return cls(role="tool", text=text, tool_call_id=tool_call_id, name=name, is_error=is_error)

    @classmethod
    def from_provider(cls, provider: str, raw: JSONDict) -> Message:
        """The neutral view over a provider's raw assistant message (kept as is).

        Raises ``ValueError`` when ``raw`` cannot be read.
        """
        if provider == "anthropic":
            text, calls = _parse_anthropic(raw)
        else:  # openai and offline share the chat-completions message shape
            text, calls = _parse_openai(raw)
        return cls(role="assistant", text=text, tool_calls=calls, provider=provider, raw=raw)

    # ---- views --------------------------------------------------------------------

    def neutral(self) -> Message:
        """This message without provider-private JSON (used when changing provider)."""
        if self.raw is None:
            return self
        return Message.assistant(self.text, self.tool_calls)

    def to_json(self) -> JSONDict:
        """The stored form: raw JSON for provider messages, neutral fields otherwise."""
        if self.raw is not None:
            return {"role": self.role, "provider": self.provider, "raw": self.raw}
        out: JSONDict = {"role": self.role}
        if self.content is not None:
            out["content"] = self.content
        else:
            out["text"] = self.text
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.is_error:
            out["is_error"] = True
        return out

    @classmethod
    def from_json(cls, data: Any) -> Message:
        """Read the stored form back; raises ``ValueError`` when it is not a message."""
        if not isinstance(data, dict):
            raise ValueError("a message must be a JSON object")
        role = data.get("role")
        if role not in ROLES:
            raise ValueError(f"unknown message role {role!r}")
        if "raw" in data:
            provider, raw = data.get("provider"), data["raw"]
            if role != "assistant" or not isinstance(provider, str) or not isinstance(raw, dict):
                raise ValueError("a raw message needs role assistant, a provider and an object")
            return cls.from_provider(provider, raw)
        content = data.get("content")
        if content is not None:
            if not isinstance(content, str | list) or role != "user":
                raise ValueError("only a user message carries content parts")
            if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
                raise ValueError("content parts must be objects")
            return cls.user(cast("Content", content))
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ValueError("tool_calls must be a list")
        return cls(
            role=cast("Role", role),
            text=_str(data.get("text", ""), "text"),
            tool_calls=tuple(_tool_call_from_json(c) for c in calls),
            tool_call_id=_opt_str(data.get("tool_call_id"), "tool_call_id"),
            name=_opt_str(data.get("name"), "name"),
            is_error=data.get("is_error") is True,
        )


def text_of_parts(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text of a list of content parts (OpenAI or Anthropic shape), other parts skipped."""
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    return "".join(texts)


def arguments_json(value: Any) -> str:
    """Tool-call arguments as compact, deterministic JSON text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parse_openai(raw: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    content = raw.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list) and all(isinstance(p, dict) for p in content):
        text = text_of_parts(content)
    else:
        raise ValueError("assistant content must be text, a list of parts or null")
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError("tool_calls must be a list")
    parsed: list[ToolCall] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise ValueError(f"unsupported tool call {call!r}")
        parsed.append(
            ToolCall(
                id=_str(call.get("id"), "tool call id"),
                name=_str(function.get("name"), "tool name"),
                arguments=_str(function.get("arguments", ""), "arguments"),
            )
        )
    return text, tuple(parsed)


def _parse_anthropic(raw: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    blocks = raw.get("content")
    if isinstance(blocks, str):
        return blocks, ()
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise ValueError("anthropic content must be a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if block.get("type") == "text":
            texts.append(_str(block.get("text"), "text"))
        elif block.get("type") == "tool_use":
            calls.append(
                ToolCall(
                    id=_str(block.get("id"), "tool_use id"),
                    name=_str(block.get("name"), "tool name"),
                    arguments=arguments_json(block.get("input", {})),
                )
            )
    return "".join(texts), tuple(calls)


def _tool_call_from_json(data: Any) -> ToolCall:
    if not isinstance(data, dict):
        raise ValueError("a tool call must be an object")
    return ToolCall(
        id=_str(data.get("id"), "tool call id"),
        name=_str(data.get("name"), "tool name"),
        arguments=_str(data.get("arguments"), "arguments"),
    )


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {type(value).__name__}")
    return value


def _opt_str(value: Any, what: str) -> str | None:
    return None if value is None else _str(value, what)
