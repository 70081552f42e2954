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
from goaicore.conversation.providers.registry import wire_for


class _Named(Protocol):
    @property
    def name(self) -> str: ...


def validate_history(messages: Sequence[Message], provider: str | _Named) -> None:
    """Raise ``InvalidHistoryError`` (with the position) unless ``messages`` can be sent.

    Rules for every provider: roles are known; every tool call of an assistant message is
    answered exactly once by the tool messages that directly follow it, before any other
    message; no tool result answers a call that is not pending; tool call ids within one
    message are distinct. Then the provider's own rules (its wire's ``check``; Anthropic,
    for one, needs the first turn to be a user turn). The first message that breaks any
    rule is reported. The empty history is valid.
    """
    name = provider if isinstance(provider, str) else provider.name
    common = _common_violation(messages)
    own = wire_for(name).check(messages)
    # The earliest message that breaks a rule; a common rule first at the same message
    # (min keeps the first of equals), and an unanswered call (found only at the end)
    # after every message's own rules.
    found: list[tuple[int, int, str]] = []
    if common is not None:
        found.append(common)
    if own is not None:
        found.append((own[0], *own))
    if found:
        _, position, reason = min(found, key=lambda v: v[0])
        raise InvalidHistoryError(position, reason, provider=name)


def _common_violation(messages: Sequence[Message]) -> tuple[int, int, str] | None:
    """The first break of a common rule: (message where found, position reported, reason)."""

    def fail(position: int, reason: str, found_at: int | None = None) -> tuple[int, int, str]:
        return (position if found_at is None else found_at), position, reason

    pending: dict[str, int] = {}  # tool call id -> position of the assistant message
    for i, m in enumerate(messages):
        if m.role not in ROLES:
            return fail(i, f"unknown role {m.role!r}")
        if m.role == "tool":
            if not m.tool_call_id:
                return fail(i, "tool result without a tool_call_id")
            if m.tool_call_id not in pending:
                return fail(i, f"tool result {m.tool_call_id!r} answers no pending tool call")
            del pending[m.tool_call_id]
        elif pending:
            call_id, at = next(iter(pending.items()))
            return fail(i, f"tool call {call_id!r} of message {at} is not answered before this")
        if m.role == "assistant":
            seen: set[str] = set()
            for call in m.tool_calls:
                if not call.id or not call.name:
                    return fail(i, "tool call without an id or a name")
                if call.id in seen:
                    return fail(i, f"tool call id {call.id!r} used twice in one message")
                seen.add(call.id)
                pending[call.id] = i
    if pending:
        call_id, at = next(iter(pending.items()))
        return fail(at, f"tool call {call_id!r} is never answered", found_at=len(messages))
    return None
