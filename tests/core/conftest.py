"""Fixtures for the conversation core: scripted OpenAI and Anthropic servers.

``backend`` is parametrised over both providers and hides their wire formats behind a
few verbs (queue a text reply, queue tool calls, read what was sent), so that behaviour
the two must share is tested once against both real SDKs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from goaicore import Chat
from goaicore.conversation.providers import AnthropicProvider, OpenAIProvider
from goaicore.conversation.providers.responses import ResponsesProvider
from goaicore.testing import (
    AnthropicServer,
    OpenAIServer,
    ResponsesServer,
    ScriptedResponse,
    anthropic_context_length_error,
    anthropic_error,
    anthropic_reply,
    openai_context_length_error,
    openai_error,
    openai_reply,
    responses_context_length_error,
    responses_error,
    responses_reply,
)

Server = OpenAIServer | AnthropicServer | ResponsesServer

# Neutral finish reasons -> each wire format's word.
OPENAI_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}
ANTHROPIC_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
OPENAI_FINISH["content_filter"] = "content_filter"
ANTHROPIC_FINISH["content_filter"] = "refusal"
RESPONSES_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_finish(finish: str) -> dict[str, Any]:
    """A Responses reply's status for a neutral finish reason (any other: incomplete)."""
    if finish in ("stop", "tool_calls"):
        return {}
    return {"status": "incomplete", "incomplete_reason": RESPONSES_INCOMPLETE.get(finish, finish)}


@dataclass
class Backend:
    """One provider's scripted server plus helpers that speak its wire format."""

    name: str
    server: Server

    def provider(self, **kwargs: Any) -> OpenAIProvider | AnthropicProvider | ResponsesProvider:
        options: dict[str, Any] = {"api_key": "test-key", "base_url": self.server.base_url}
        options.update(timeout=5.0, max_retries=2)
        options.update(kwargs)
        if self.name == "openai":
            return OpenAIProvider("gpt-test", **options)
        if self.name == "openai-responses":
            return ResponsesProvider("gpt-test", **options)
        return AnthropicProvider("claude-test", **options)

    def chat(self, provider_options: dict[str, Any] | None = None, **kwargs: Any) -> Chat:
        return Chat(self.provider(**(provider_options or {})), **kwargs)

    def text(self, text: str, *, finish: str = "stop", **kwargs: Any) -> ScriptedResponse:
        if self.name == "openai":
            return openai_reply(text, finish_reason=OPENAI_FINISH.get(finish, finish), **kwargs)
        if self.name == "openai-responses":
            return responses_reply(text, **responses_finish(finish), **kwargs)
        return anthropic_reply(text, stop_reason=ANTHROPIC_FINISH.get(finish, finish), **kwargs)

    def calls(
        self, *calls: tuple[str, str, Any], finish: str = "tool_calls", **kwargs: Any
    ) -> ScriptedResponse:
        """Tool calls ``(id, name, arguments)``; a str argument is sent as is (OpenAI)."""
        if self.name == "openai-responses":
            return responses_reply(tool_calls=calls, **responses_finish(finish), **kwargs)
        if self.name == "openai":
            return openai_reply(
                tool_calls=calls, finish_reason=OPENAI_FINISH.get(finish, finish), **kwargs
            )
        return anthropic_reply(
            tool_uses=calls, stop_reason=ANTHROPIC_FINISH.get(finish, finish), **kwargs
        )

    def error(self, status: int, message: str = "boom") -> ScriptedResponse:
        if self.name == "openai":
            return openai_error(status, message)
        if self.name == "openai-responses":
            return responses_error(status, message)
        return anthropic_error(status, message)

    def context_length_error(self) -> ScriptedResponse:
        if self.name == "openai":
            return openai_context_length_error()
        if self.name == "openai-responses":
            return responses_context_length_error()
        return anthropic_context_length_error()

    def add(self, *responses: ScriptedResponse) -> None:
        self.server.add(*responses)

    @property
    def bodies(self) -> list[Any]:
        return self.server.bodies

    def sent_messages(self, index: int = -1) -> list[dict[str, Any]]:
        key = "input" if self.name == "openai-responses" else "messages"
        messages: list[dict[str, Any]] = self.bodies[index][key]
        return messages

    def sent_system(self, index: int = -1) -> list[str]:
        body = self.bodies[index]
        if self.name in ("openai", "openai-responses"):
            return [m["content"] for m in self.sent_messages(index) if m.get("role") == "system"]
        return [b["text"] for b in body.get("system", [])]

    def tool_results(self, index: int = -1) -> list[dict[str, Any]]:
        """Tool results in a request, as ``{"id", "content", "is_error"}``."""
        out: list[dict[str, Any]] = []
        for m in self.sent_messages(index):
            if self.name == "openai-responses" and m.get("type") == "function_call_output":
                out.append({"id": m["call_id"], "content": m["output"], "is_error": None})
            if self.name == "openai" and m["role"] == "tool":
                out.append({"id": m["tool_call_id"], "content": m["content"], "is_error": None})
            if self.name == "anthropic" and isinstance(m["content"], list):
                for b in m["content"]:
                    if b.get("type") == "tool_result":
                        out.append(
                            {
                                "id": b["tool_use_id"],
                                "content": b.get("content", ""),
                                "is_error": b.get("is_error", False),
                            }
                        )
        return out

    def texts_sent(self, index: int = -1) -> list[str]:
        """Every text in a request's messages (not system), in order."""
        out: list[str] = []
        for m in self.sent_messages(index):
            if m.get("type") == "message":  # a Responses output message, sent back
                out.extend(p["text"] for p in m["content"] if isinstance(p.get("text"), str))
                continue
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            elif isinstance(content, list):
                out.extend(b["text"] for b in content if isinstance(b.get("text"), str))
        return out


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as server:
        yield server


SERVERS: dict[str, type[Server]] = {
    "openai": OpenAIServer,
    "anthropic": AnthropicServer,
    "openai-responses": ResponsesServer,
}


@pytest.fixture(params=list(SERVERS))
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with SERVERS[request.param]() as server:
        yield Backend(request.param, server)
