"""``validate_history``: is a history valid to send to a provider?

Checked before every LLM call, so that a broken history (an unanswered tool call, an
orphan result, a role order the provider refuses) fails here with the offending position
instead of as a 400 from the provider after a network round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from goaicore.conversation.errors import InvalidHistoryError
from goaicore.conversation.messages import ROLES, Message


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def validate_history(messages: Sequence[Message], provider: str | _Named) -> None:
    """Raise ``InvalidHistoryError`` (with the position) unless ``messages`` can be sent.

    Rules for every provider: roles are known; every tool call of an assistant message is
    answered exactly once by the tool messages that directly follow it, before any other
    message; no tool result answers a call that is not pending; tool call ids within one
    message are distinct. Anthropic also needs the first turn to be a user turn, no two
    assistant turns in a row and no empty user text (context and tool results render as
    user turns there). The empty history is valid.
    """
    name = provider if isinstance(provider, str) else provider.name

    def fail(position: int, reason: str) -> InvalidHistoryError:
        return InvalidHistoryError(position, reason, provider=name)

    pending: dict[str, int] = {}  # tool call id -> position of the assistant message
    previous_turn: str | None = None  # "user" or "assistant", as rendered for Anthropic
    for i, m in enumerate(messages):
        if m.role not in ROLES:
            raise fail(i, f"unknown role {m.role!r}")
        if m.role == "tool":
            if not m.tool_call_id:
                raise fail(i, "tool result without a tool_call_id")
            if m.tool_call_id not in pending:
                raise fail(i, f"tool result {m.tool_call_id!r} answers no pending tool call")
            del pending[m.tool_call_id]
        elif pending:
            call_id, at = next(iter(pending.items()))
            raise fail(i, f"tool call {call_id!r} of message {at} is not answered before this")
        if m.role == "assistant":
            seen: set[str] = set()
            for call in m.tool_calls:
                if not call.id or not call.name:
                    raise fail(i, "tool call without an id or a name")
                if call.id in seen:
                    raise fail(i, f"tool call id {call.id!r} used twice in one message")
                seen.add(call.id)
                pending[call.id] = i
        if name != "anthropic":
            continue
        if m.role == "assistant":
            if m.provider == "anthropic" and m.raw is not None and not m.raw.get("content"):
                continue  # an empty reply is not rendered
            if previous_turn is None:
                raise fail(i, "the first turn must be a user turn")
            if previous_turn == "assistant":
                raise fail(i, "two assistant turns in a row")
            previous_turn = "assistant"
        else:
            if m.role in ("user", "system") and not m.text and not m.content:
                raise fail(i, f"empty {m.role} message")
            previous_turn = "user"
    if pending:
        call_id, at = next(iter(pending.items()))
        raise fail(at, f"tool call {call_id!r} is never answered")
