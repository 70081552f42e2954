"""A scripted server speaking the OpenAI chat-completions wire format.

with OpenAIServer() as server:
    server.reply("Hello!")
    server.reply(tool_calls=[("get_score", {"team": "Leeds"})])
    provider = OpenAIProvider(model="gpt-test", api_key="test", base_url=server.base_url)

A request with ``"stream": true`` gets the same scripted completion as
``chat.completion.chunk`` events (see ``goaicore.testing.streams``), paced by
``chunk_delay`` seconds between pieces of content; an error status is sent whole.

For benchmarks, ``OpenAIServer(responder=openai_stream_tokens(500, rate_per_s=50))``
answers every request with a text of exactly 500 tokens, streamed at 50 tokens a second
(or sent whole when the request does not stream).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any, Self

from goaicore.testing.server import RecordedRequest, Responder, ScriptedResponse, ScriptedServer
from goaicore.testing.streams import is_chat_completion, openai_stream, token_text

_ids = itertools.count(1)
# Retry quickly in tests: the SDK honours retry-after-ms.
FAST_RETRY = {"retry-after-ms": "5"}

ToolCallSpec = tuple[str, Any] | tuple[str, str, Any]


def openai_reply(
    text: str | None = None,
    *,
    tool_calls: Sequence[ToolCallSpec] = (),
    finish_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "gpt-test",
    extra: dict[str, Any] | None = None,
    content: Any = None,
    delay: float = 0.0,
    chunk_delay: float = 0.0,
) -> ScriptedResponse:
    """A chat completion with one choice.

    ``tool_calls`` are ``(name, arguments)`` or ``(id, name, arguments)``; arguments that
    are not a string are JSON-encoded. ``extra`` adds fields to the message (``refusal``,
    ``reasoning_content``...); ``content`` replaces the message content (e.g. a list of
    parts). ``finish_reason`` defaults to ``tool_calls`` when there are calls, else ``stop``.
    """
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content if content is not None else text,
        "refusal": None,
        "annotations": [],
    }
    if tool_calls:
        message["tool_calls"] = [_tool_call(spec) for spec in tool_calls]
    message.update(extra or {})
    prompt, completion = usage
    body = {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }
    return ScriptedResponse(200, body, delay=delay, chunk_delay=chunk_delay)


def _tool_call(spec: ToolCallSpec) -> dict[str, Any]:
    if len(spec) == 3:
        call_id, name, arguments = spec
    else:
        name, arguments = spec
        call_id = f"call_{next(_ids)}"
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> ScriptedResponse:
    """An API error in OpenAI's shape; 429 and 5xx ask for a fast retry by default."""
    default = FAST_RETRY if status == 429 or status >= 500 else {}
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return ScriptedResponse(status, body, headers if headers is not None else dict(default))


def openai_context_length_error() -> ScriptedResponse:
    """The 400 OpenAI returns when the prompt exceeds the context window."""
    return openai_error(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 130000 tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


def openai_echo(request: RecordedRequest) -> ScriptedResponse:
    """A responder answering every request at once with the last message's text."""
    messages = (request.body or {}).get("messages") or [{}]
    content = messages[-1].get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return openai_reply(f"echo: {text}")


def openai_stream_tokens(tokens: int, rate_per_s: float) -> Responder:
    """A responder answering every request with a text of exactly ``tokens`` tokens.

    Streamed, each token is one chunk and they arrive ``rate_per_s`` a second: a model
    of known speed, for benchmarking what consumes the stream.
    """
    if tokens < 0 or rate_per_s <= 0:
        raise ValueError("tokens must be >= 0 and rate_per_s > 0")
    text = token_text(tokens)

    def respond(request: RecordedRequest) -> ScriptedResponse:
        return openai_reply(text, usage=(10, tokens), chunk_delay=1 / rate_per_s)

    return respond


class OpenAIServer(ScriptedServer):
    """Serves ``POST {base_url}/chat/completions``; ``base_url`` ends in ``/v1``."""

    api_path = "/chat/completions"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stream_events(self, request: RecordedRequest, body: dict[str, Any]) -> list[bytes] | None:
        if not is_chat_completion(body):
            return None
        options = request.body.get("stream_options") if isinstance(request.body, dict) else None
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        return openai_stream(body, include_usage=include_usage)

    def reply(self, text: str | None = None, **kwargs: Any) -> Self:
        """Queue ``openai_reply(text, **kwargs)``."""
        return self.add(openai_reply(text, **kwargs))

    def error(self, status: int, message: str = "error", **kwargs: Any) -> Self:
        """Queue ``openai_error(status, message, **kwargs)``."""
        return self.add(openai_error(status, message, **kwargs))
