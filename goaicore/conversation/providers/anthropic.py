"""AnthropicProvider: the messages API through the official ``anthropic`` SDK.

The stored assistant message is ``{"role": "assistant", "content": [blocks]}`` with the
response's blocks untouched (thinking blocks, citations, block types this library does
not know), sent back verbatim on the next turn as the API requires for thinking.
"""

from __future__ import annotations

from typing import Any

import anthropic

from goaicore.conversation.errors import ProviderError
from goaicore.conversation.messages import JSONDict, Message
from goaicore.conversation.providers.base import (
    CONTENT_FILTER,
    CONTEXT_LENGTH,
    LENGTH,
    STOP,
    TOOL_CALLS,
    Completion,
    CompletionRequest,
    PerLoopClients,
    raw_response_json,
)
from goaicore.conversation.render import render_anthropic
from goaicore.conversation.usage import Usage, as_int

_FINISH = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "tool_use": TOOL_CALLS,
    "max_tokens": LENGTH,
    "refusal": CONTENT_FILTER,
    "model_context_window_exceeded": CONTEXT_LENGTH,
}


class AnthropicProvider:
    """Anthropic messages API. ``api_key`` defaults to ``ANTHROPIC_API_KEY``.

    ``max_tokens`` is required by the API, hence the default.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_tokens: int = 4096,
        temperature: float | None = None,
        extra_body: JSONDict | None = None,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})

        def factory() -> anthropic.AsyncAnthropic:
            return anthropic.AsyncAnthropic(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )

        self._clients = PerLoopClients(factory, first=factory())

    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The messages-API request body for ``request``."""
        body: JSONDict = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": render_anthropic(request.messages),
        }
        if request.system:
            body["system"] = [{"type": "text", "text": s} for s in request.system]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        return body

    def parse_response(self, data: Any) -> Completion:
        """The completion in a messages-API response body."""
        try:
            raw: JSONDict = {"role": "assistant", "content": data["content"]}
            message = Message.from_provider("anthropic", raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"anthropic: unreadable response ({type(exc).__name__}: {exc})",
                provider=self.name,
            ) from None
        raw_finish = data.get("stop_reason")
        usage = data.get("usage") or {}
        prompt = (
            as_int(usage.get("input_tokens"))
            + as_int(usage.get("cache_creation_input_tokens"))
            + as_int(usage.get("cache_read_input_tokens"))
        )
        return Completion(
            message=message,
            finish_reason=_FINISH.get(raw_finish, str(raw_finish)),
            raw_finish_reason=raw_finish,
            usage=Usage.of_call(prompt, as_int(usage.get("output_tokens"))),
            model=str(data.get("model") or self.model),
        )

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (others close with their loop)."""
        await self._clients.aclose()

    async def complete(self, request: CompletionRequest) -> Completion:
        body = self.build_request(request)
        client = await self._clients.get()
        data = await raw_response_json(
            self.name,
            client.messages.with_raw_response.create(**body),
            status_error=anthropic.APIStatusError,
            connection_error=anthropic.APIConnectionError,
            is_context_length=_is_context_length,
        )
        return self.parse_response(data)


def _is_context_length(exc: anthropic.APIStatusError) -> bool:
    text = str(exc.message).lower()
    return exc.status_code == 413 or (
        exc.status_code == 400 and ("prompt is too long" in text or "context window" in text)
    )
