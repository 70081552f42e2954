"""The errors a conversation turn can raise.

Every failure a caller can act on is a ``ChatError`` subclass, so one ``except ChatError``
keeps an application running; the subclasses say what went wrong precisely enough to
react (compact and retry on ``ContextLengthError``, show a refusal on
``ContentFilteredError``...). A failed turn never changes the caller's state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from goaicore.errors import GoaicoreError

if TYPE_CHECKING:
    from goaicore.records.types import Usage


class ChatError(GoaicoreError):
    """A conversation turn failed; the caller's previous state is still valid.

    ``usage`` holds the tokens spent by the LLM calls made before the failure (for cost
    accounting), when any were made.
    """

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class ProviderError(ChatError):
    """The provider's API failed (after the SDK's own retries on 429 and 5xx)."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status_code: int | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, usage=usage)
        self.provider = provider
        self.status_code = status_code


class ContextLengthError(ProviderError):
    """The request does not fit the model's context window.

    Kept distinct so that a compactor can shorten the history and retry.
    """


class FinishReasonError(ChatError):
    """The model stopped for a reason that leaves no usable reply."""

    def __init__(self, message: str, *, finish_reason: str, usage: Usage | None = None) -> None:
        super().__init__(message, usage=usage)
        self.finish_reason = finish_reason


class ReplyTruncatedError(FinishReasonError):
    """The reply hit the output token limit (``length`` / ``max_tokens``)."""


class ContentFilteredError(FinishReasonError):
    """The provider withheld the reply (``content_filter`` / ``refusal``)."""


class UnknownFinishReasonError(FinishReasonError):
    """The provider reported a finish reason this library does not know how to continue."""


class ToolLoopLimitError(ChatError):
    """The turn needed more LLM calls than ``max_tool_iterations`` allows."""

    def __init__(self, message: str, *, limit: int, usage: Usage | None = None) -> None:
        super().__init__(message, usage=usage)
        self.limit = limit


class InvalidHistoryError(ChatError):
    """A history is not valid to send to a provider; ``position`` is the offending index.

    Raised by ``validate_history`` before every LLM call, so a broken history is caught
    here with its position instead of coming back as a 400 from the provider.
    """

    def __init__(self, position: int, reason: str, *, provider: str) -> None:
        super().__init__(f"invalid history for {provider} at message {position}: {reason}")
        self.position = position
        self.reason = reason
        self.provider = provider
