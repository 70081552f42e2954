"""A provider's wire format: everything provider-specific about its messages.

Each provider file defines one :class:`Wire` (how neutral messages render, how an
assistant message it returned reads, its own history rules, its finish reasons) and
one :class:`ProviderSpec` (how settings select and build it); ``registry`` lists them.
The neutral message model (``goaicore.conversation.messages``) knows no provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from goaicore.conversation.messages import JSONDict, Message, ToolCall

if TYPE_CHECKING:
    from goaicore.conversation.providers.base import Provider, Transport
    from goaicore.settings import Settings

# The first message that breaks a provider's own rules: (position, reason), or None.
Violation = tuple[int, str] | None


@dataclass(frozen=True)
class Wire:
    """How one provider's messages look on the wire."""

    name: str
    render: Callable[[Sequence[Message]], list[JSONDict]]
    parse: Callable[[Mapping[str, Any]], tuple[str, tuple[ToolCall, ...]]]
    check: Callable[[Sequence[Message]], Violation]
    finish_reasons: Mapping[str, str]

    def assistant(self, raw: JSONDict, provider: str | None = None) -> Message:
        """The neutral view over an assistant message this wire returned (``raw`` kept).

        Raises ``ValueError`` when ``raw`` cannot be read.
        """
        text, calls = self.parse(raw)
        return Message(
            role="assistant",
            text=text,
            tool_calls=calls,
            provider=provider or self.name,
            raw=raw,
        )


@dataclass(frozen=True)
class ProviderSpec:
    """How settings select a provider (``configured``) and build it for a model."""

    wire: Wire
    default_model: str
    configured: Callable[[Settings], bool]
    build: Callable[[Settings, str, Transport], Provider]
    """A provider for a model, on an HTTP transport (the offline model has none)."""


def no_rules(messages: Sequence[Message]) -> Violation:
    """For a provider with no rules beyond the common ones."""
    return None


def string(value: Any, what: str) -> str:
    """``value`` when it is a string; a ``ValueError`` naming ``what`` otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {type(value).__name__}")
    return value
