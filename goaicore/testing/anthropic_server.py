"""A scripted server speaking the Anthropic messages wire format.

with AnthropicServer() as server:
    server.reply(tool_uses=[("get_score", {"team": "Leeds"})])
    server.reply("Leeds lead 2-1.")
    provider = AnthropicProvider(model="claude-test", api_key="test",
                                 base_url=server.base_url)

A request with ``"stream": true`` gets the same scripted message as ``message_start``,
``content_block_*``, ``message_delta`` and ``message_stop`` events (see
``goaicore.testing.streams``), paced by ``chunk_delay`` seconds between pieces of
content; an error status is sent whole.

For benchmarks, ``AnthropicServer(responder=anthropic_stream_tokens(500, rate_per_s=50))``
answers every request with a text of exactly 500 tokens, streamed at 50 tokens a second
(or sent whole when the request does not stream).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any, Self

from goaicore.testing.server import RecordedRequest, Responder, ScriptedResponse, ScriptedServer
from goaicore.testing.streams import anthropic_stream, is_message, token_text

_ids = itertools.count(1)
FAST_RETRY = {"retry-after-ms": "5"}

ToolUseSpec = tuple[str, Any] | tuple[str, str, Any]


def anthropic_reply(
    text: str | None = None,
    *,
    tool_uses: Sequence[ToolUseSpec] = (),
    blocks: Sequence[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "claude-test",
    delay: float = 0.0,
    chunk_delay: float = 0.0,
) -> ScriptedResponse:
    """A message response.

    ``blocks`` gives the content blocks verbatim; otherwise they are a text block (when
    ``text``) and one ``tool_use`` block per ``(name, input)`` or ``(id, name, input)``.
    ``stop_reason`` defaults to ``tool_use`` when there are tool uses, else ``end_turn``.
    """
    if blocks is not None:
        content = list(blocks)
    else:
        content = [{"type": "text", "text": text, "citations": None}] if text else []
        content += [_tool_use(spec) for spec in tool_uses]
    prompt, completion = usage
    body = {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    return ScriptedResponse(200, body, delay=delay, chunk_delay=chunk_delay)


def _tool_use(spec: ToolUseSpec) -> dict[str, Any]:
    if len(spec) == 3:
        use_id, name, arguments = spec
    else:
        name, arguments = spec
        use_id = f"toolu_{next(_ids):04d}"
    return {"type": "tool_use", "id": use_id, "name": name, "input": arguments}


def anthropic_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> ScriptedResponse:
    """An API error in Anthropic's shape; 429 and 5xx ask for a fast retry by default."""
    default = FAST_RETRY if status == 429 or status >= 500 else {}
    body = {"type": "error", "error": {"type": type, "message": message}}
    return ScriptedResponse(status, body, headers if headers is not None else dict(default))


def anthropic_context_length_error() -> ScriptedResponse:
    """The 400 Anthropic returns when the prompt exceeds the context window."""
    return anthropic_error(400, "prompt is too long: 210000 tokens > 200000 maximum")


def anthropic_echo(request: RecordedRequest) -> ScriptedResponse:
    """A responder answering every request at once with the last message's text."""
    messages = (request.body or {}).get("messages") or [{}]
    content = messages[-1].get("content")
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return anthropic_reply(f"echo: {content if isinstance(content, str) else json.dumps(content)}")


def anthropic_stream_tokens(tokens: int, rate_per_s: float) -> Responder:
    """A responder answering every request with a text of exactly ``tokens`` tokens.

    Streamed, each token is one ``text_delta`` and they arrive ``rate_per_s`` a second:
    a model of known speed, for benchmarking what consumes the stream.
    """
    if tokens < 0 or rate_per_s <= 0:
        raise ValueError("tokens must be >= 0 and rate_per_s > 0")
    text = token_text(tokens)

    def respond(request: RecordedRequest) -> ScriptedResponse:
        return anthropic_reply(text, usage=(10, tokens), chunk_delay=1 / rate_per_s)

    return respond


class AnthropicServer(ScriptedServer):
    """Serves ``POST {base_url}/v1/messages``."""

    api_path = "/v1/messages"

    def stream_events(self, request: RecordedRequest, body: dict[str, Any]) -> list[bytes] | None:
        return anthropic_stream(body) if is_message(body) else None

    def reply(self, text: str | None = None, **kwargs: Any) -> Self:
        """Queue ``anthropic_reply(text, **kwargs)``."""
        return self.add(anthropic_reply(text, **kwargs))

    def error(self, status: int, message: str = "error", **kwargs: Any) -> Self:
        """Queue ``anthropic_error(status, message, **kwargs)``."""
        return self.add(anthropic_error(status, message, **kwargs))
