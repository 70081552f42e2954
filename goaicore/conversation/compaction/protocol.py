"""The compactor protocol: how ``Chat`` asks for a shorter history.

``Chat`` calls ``compact`` before every LLM call (reason ``"before_call"``) and once more
when the provider says the request does not fit its context window (reason
``"context_length"``, after which the call is retried once). The compactor returns the
history to use from then on, or ``None`` to keep it as it is; the result is checked with
``validate_history`` before it is sent, so a compactor that separates a tool call from
its result is caught here, never by the provider. Strategies live in
``goaicore.conversation.compaction``; this module only fixes the contract.

A compactor may return a ``CompactionOutcome`` (the history plus the
``CompactionRecord`` that replays it) instead of a plain list, so the turn can hand the
record to an event log. A compactor that also has ``compact_request`` is given the whole
request (system prompt, tools, the prompt tokens the provider reported for the latest
call) instead of the history alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, runtime_checkable

from goaicore.conversation.messages import Message
from goaicore.conversation.tools import Tool

if TYPE_CHECKING:
    from goaicore.conversation.compaction.record import CompactionOutcome

CompactionReason = Literal["before_call", "context_length"]
CompactionResult: TypeAlias = "Sequence[Message] | CompactionOutcome | None"


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """Everything a compactor may weigh before an LLM call.

    ``reported_prompt_tokens`` is the provider's ``prompt_tokens`` for the latest call of
    this turn (``None`` before the first), and ``reported_message_count`` how many of
    ``messages`` that call sent: the messages after it are new since the report.
    """

    messages: Sequence[Message]
    provider: str
    reason: CompactionReason = "before_call"
    system: Sequence[str] = ()
    tools: Sequence[Tool] = ()
    reported_prompt_tokens: int | None = None
    reported_message_count: int = 0


@runtime_checkable
class Compactor(Protocol):
    """Shortens a history; may be sync or async (return an awaitable)."""

    def compact(
        self, messages: Sequence[Message], *, provider: str, reason: CompactionReason
    ) -> CompactionResult | Awaitable[CompactionResult]: ...


@runtime_checkable
class RequestCompactor(Protocol):
    """A compactor that reads the whole request (preferred by the turn when present)."""

    def compact_request(
        self, request: CompactionRequest
    ) -> CompactionResult | Awaitable[CompactionResult]: ...
