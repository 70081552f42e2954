"""OpenAIProvider: chat completions through the official ``openai`` SDK.

Works with any OpenAI-compatible server through ``base_url``. The SDK does the retries
on 429 and 5xx (``max_retries``) and the timeouts; the response body is read as raw
JSON, so the stored assistant message is exactly ``choices[0].message``.
"""

from __future__ import annotations

from typing import Any

import openai

from goaicore.conversation.errors import ProviderError
from goaicore.conversation.messages import JSONDict, Message
from goaicore.conversation.providers.base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    Completion,
    CompletionRequest,
    PerLoopClients,
    raw_response_json,
)
from goaicore.conversation.render import render_openai
from goaicore.conversation.usage import Usage, as_int

_FINISH = {
    "stop": STOP,
    "tool_calls": TOOL_CALLS,
    "length": LENGTH,
    "content_filter": CONTENT_FILTER,
}


class OpenAIProvider:
    """OpenAI chat completions (or any compatible server via ``base_url``).

    ``api_key`` and ``base_url`` default to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
    ``extra_body`` is merged into every request (e.g. ``{"reasoning_effort": "low"}``).
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: JSONDict | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})

        def factory() -> openai.AsyncOpenAI:
            return openai.AsyncOpenAI(
                api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
            )

        # Built now so that a missing key fails at construction, not at the first turn.
        self._clients = PerLoopClients(factory, first=factory())

    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The chat-completions request body for ``request``."""
        messages = [{"role": "system", "content": s} for s in request.system]
        body: JSONDict = {
            "model": self.model,
            "messages": messages + render_openai(request.messages),
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_completion_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def parse_response(self, data: Any) -> Completion:
        """The completion in a chat-completions response body."""
        try:
            choice = data["choices"][0]
            message = Message.from_provider("openai", choice["message"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ProviderError(
                f"openai: unreadable response ({type(exc).__name__}: {exc})", provider=self.name
            ) from None
        raw_finish = choice.get("finish_reason")
        usage = data.get("usage") or {}
        return Completion(
            message=message,
            finish_reason=_FINISH.get(raw_finish, str(raw_finish)),
            raw_finish_reason=raw_finish,
            usage=Usage.of_call(
                as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
            ),
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
            client.chat.completions.with_raw_response.create(**body),
            status_error=openai.APIStatusError,
            connection_error=openai.APIConnectionError,
            is_context_length=_is_context_length,
        )
        return self.parse_response(data)


def _is_context_length(exc: openai.APIStatusError) -> bool:
    if exc.status_code == 413:
        return True
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    code = error.get("code") if isinstance(error, dict) else None
    text = str(exc.message).lower()
    return code == "context_length_exceeded" or (
        exc.status_code == 400 and ("context length" in text or "context_length" in text)
    )
