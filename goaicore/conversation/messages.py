"""Messages: a neutral view over the provider's raw message JSON.

An assistant message keeps exactly the JSON its provider returned (``raw``): for OpenAI
the ``choices[0].message`` object, for Anthropic ``{"role": "assistant", "content":
[blocks]}``. Fields we do not know (``refusal``, ``reasoning_content``, thinking blocks,
annotations...) survive the state round trip and are sent back to the same provider
verbatim. The neutral fields (``text``, ``tool_calls``) are derived from ``raw`` and are
what other providers, tools and applications read.

User, context (mid-conversation ``system``) and tool-result messages are created by this
library. A user or tool-result message may also keep its provider's JSON for it
(``raw``, e.g. a Responses API input item, with ``provider`` naming that format): it is
sent back to that provider verbatim, while its neutral fields, set beside it, are what
every other provider reads. This module knows no provider: each provider's file in
``goaicore.conversation.providers`` renders these messages and reads its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from goaicore.records.types import ToolCall

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
# A user message's content: plain text or a list of content parts (multimodal).
Content = str | list[dict[str, Any]]
JSONDict = dict[str, Any]

__all__ = [
    "ROLES",
    "Content",
    "JSONDict",
    "Message",
    "Role",
    "ToolCall",
    "arguments_json",
    "text_of_parts",
]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation.

    ``role`` is ``system`` for a context message stored in the history (game events,
    ``append_to_state``), ``user``, ``assistant`` or ``tool`` (a tool result answering
    ``tool_call_id``). ``provider`` and ``raw`` are set on assistant messages returned by a
    provider, and may be set on a user or tool message that keeps its provider's JSON
    object for it (sent to that provider as is; the neutral fields are set too, for the
    others); ``raw`` must be treated as read-only. ``content`` keeps a user message's
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

    # ---- views --------------------------------------------------------------------

    def neutral(self) -> Message:
        """This message without provider-private JSON (used when changing provider)."""
        if self.raw is None:
            return self
        if self.role == "assistant":
            return Message.assistant(self.text, self.tool_calls)
        return replace(self, provider=None, raw=None)


def text_of_parts(parts: Sequence[Mapping[str, Any]]) -> str:
    """The text of a list of content parts (OpenAI or Anthropic shape), other parts skipped."""
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str)]
    return "".join(texts)


def arguments_json(value: Any) -> str:
    """Tool-call arguments as compact, deterministic JSON text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
