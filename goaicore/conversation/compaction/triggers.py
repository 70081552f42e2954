"""Triggers: when to compact, decided apart from how.

A trigger looks at the request about to be sent and says whether to compact now. They
combine with ``|`` (any of) and ``&`` (all of), or ``AnyOf`` / ``AllOf``. Measures are
computed once per decision and shared by every trigger of a combination.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from goaicore.conversation.compaction.protocol import CompactionRequest
from goaicore.conversation.compaction.tokens import DEFAULT_COUNTER, TokenCounter
from goaicore.conversation.state import DEFAULT_GZIP_THRESHOLD, encode_state


@dataclass
class TriggerContext:
    """The request being decided on, with its measures computed lazily, at most once."""

    request: CompactionRequest
    counter: TokenCounter = DEFAULT_COUNTER
    _tokens: int | None = field(default=None, init=False, repr=False)
    _state_bytes: dict[int | None, int] = field(default_factory=dict, init=False, repr=False)

    @property
    def message_count(self) -> int:
        return len(self.request.messages)

    @property
    def estimated_tokens(self) -> int:
        """The whole request counted by ``counter`` (system prompt and tools included)."""
        if self._tokens is None:
            r = self.request
            self._tokens = self.counter.count_request(r.messages, system=r.system, tools=r.tools)
        return self._tokens

    @property
    def reported_tokens(self) -> int:
        """The provider's count for the latest call plus the estimate of what came since.

        Without a report (the first call of a turn) this is the estimate.
        """
        r = self.request
        if r.reported_prompt_tokens is None or r.reported_message_count > len(r.messages):
            return self.estimated_tokens
        since = r.messages[r.reported_message_count :]
        return r.reported_prompt_tokens + sum(self.counter.count_message(m) for m in since)

    def state_bytes(self, gzip_threshold: int | None = DEFAULT_GZIP_THRESHOLD) -> int:
        """The size of the state blob ``Chat`` would store for this history."""
        if gzip_threshold not in self._state_bytes:
            blob = encode_state(
                self.request.messages, self.request.provider, gzip_threshold=gzip_threshold
            )
            self._state_bytes[gzip_threshold] = len(blob)
        return self._state_bytes[gzip_threshold]


class Trigger(ABC):
    """Decides whether a request should be compacted before it is sent."""

    @abstractmethod
    def fires(self, context: TriggerContext) -> bool: ...

    def __or__(self, other: Trigger) -> AnyOf:
        return AnyOf(self, other)

    def __and__(self, other: Trigger) -> AllOf:
        return AllOf(self, other)


class _Limit(Trigger):
    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"{type(self).__name__} limit must not be negative")
        self.limit = limit

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.limit})"


class MessageCount(_Limit):
    """Fires when the history holds more than ``limit`` messages."""

    def fires(self, context: TriggerContext) -> bool:
        return context.message_count > self.limit


class EstimatedTokens(_Limit):
    """Fires when the request counts more than ``limit`` tokens (by the compactor's counter)."""

    def fires(self, context: TriggerContext) -> bool:
        return context.estimated_tokens > self.limit


class ReportedPromptTokens(_Limit):
    """Fires when the provider's own count of the latest call, plus what was added since,
    is above ``limit``: the count the bill uses, so it drifts less than an estimate."""

    def fires(self, context: TriggerContext) -> bool:
        return context.reported_tokens > self.limit


class StateBytes(_Limit):
    """Fires when the stored state blob would be larger than ``limit`` bytes."""

    def __init__(self, limit: int, *, gzip_threshold: int | None = DEFAULT_GZIP_THRESHOLD) -> None:
        super().__init__(limit)
        self.gzip_threshold = gzip_threshold

    def fires(self, context: TriggerContext) -> bool:
        return context.state_bytes(self.gzip_threshold) > self.limit


class AnyOf(Trigger):
    """Fires when any of its triggers fires."""

    def __init__(self, *triggers: Trigger) -> None:
        if not triggers:
            raise ValueError("AnyOf needs at least one trigger")
        self.triggers = triggers

    def fires(self, context: TriggerContext) -> bool:
        return any(t.fires(context) for t in self.triggers)

    def __repr__(self) -> str:
        return f"AnyOf{self.triggers!r}"


class AllOf(Trigger):
    """Fires when all of its triggers fire."""

    def __init__(self, *triggers: Trigger) -> None:
        if not triggers:
            raise ValueError("AllOf needs at least one trigger")
        self.triggers = triggers

    def fires(self, context: TriggerContext) -> bool:
        return all(t.fires(context) for t in self.triggers)

    def __repr__(self) -> str:
        return f"AllOf{self.triggers!r}"


class Always(Trigger):
    """Fires on every call (the strategy alone decides whether anything changes)."""

    def fires(self, context: TriggerContext) -> bool:
        return True

    def __repr__(self) -> str:
        return "Always()"
