"""A scripted server speaking the OpenAI Responses API wire format (``POST /v1/responses``).

with ResponsesServer() as server:
    server.reply(reasoning=("Needs the score.", "gAAAA-opaque"),
                 tool_calls=[("get_score", {"team": "Leeds"})])
    server.reply("Leeds lead 2-1.")
    client = AsyncOpenAI(base_url=server.base_url, api_key="test")

A request with ``"stream": true`` gets the same scripted response as the Responses
API's events, ``response.created`` to ``response.completed`` (see
``goaicore.testing.streams``), paced by ``chunk_delay`` seconds between pieces of
content; an error status is sent whole.

For benchmarks, ``ResponsesServer(responder=responses_stream_tokens(500, rate_per_s=50))``
answers every request with a text of exactly 500 tokens, streamed at 50 tokens a second
(or sent whole when the request does not stream).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any, Self

from goaicore.testing.openai_server import FAST_RETRY
from goaicore.testing.server import RecordedRequest, Responder, ScriptedResponse, ScriptedServer
from goaicore.testing.streams import is_response, responses_stream, token_text

_ids = itertools.count(1)

FunctionCallSpec = tuple[str, Any] | tuple[str, str, Any]
ReasoningSpec = str | tuple[str, str | None]


def responses_reply(
    text: str | None = None,
    *,
    tool_calls: Sequence[FunctionCallSpec] = (),
    reasoning: ReasoningSpec | None = None,
    items: Sequence[dict[str, Any]] | None = None,
    status: str = "completed",
    incomplete_reason: str | None = None,
    usage: tuple[int, int] = (10, 5),
    model: str = "gpt-test",
    extra: dict[str, Any] | None = None,
    chunk_delay: float = 0.0,
    delay: float = 0.0,
) -> ScriptedResponse:
    """A ``response`` object, as ``POST /v1/responses`` returns it.

    ``items`` gives the output items verbatim; otherwise they are a ``reasoning`` item
    (when ``reasoning``: its summary text, or ``(summary, encrypted_content)``; an empty
    summary is no summary part), a ``message`` with one ``output_text`` part (when
    ``text``) and one ``function_call`` per ``(name, arguments)`` or
    ``(call_id, name, arguments)``; arguments that are not a string are JSON-encoded.
    ``status="incomplete"`` sets ``incomplete_details.reason`` (``incomplete_reason``,
    ``max_output_tokens`` by default) and marks the message incomplete. ``extra`` adds
    or replaces top-level fields (``instructions``, ``tools``, ``error``...).
    """
    if items is not None:
        output = list(items)
    else:
        output = [_reasoning(reasoning)] if reasoning is not None else []
        if text:
            output.append(_message(text, "incomplete" if status == "incomplete" else "completed"))
        output += [_function_call(spec) for spec in tool_calls]
    incomplete = {"reason": incomplete_reason or "max_output_tokens"}
    prompt, completion = usage
    body = {
        "id": f"resp_{next(_ids):04d}",
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "background": False,
        "completed_at": 1700000001 if status == "completed" else None,
        "error": None,
        "incomplete_details": incomplete if status == "incomplete" else None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
        "user": None,
        "metadata": {},
    }
    body.update(extra or {})
    return ScriptedResponse(200, body, delay=delay, chunk_delay=chunk_delay)


def _reasoning(spec: ReasoningSpec) -> dict[str, Any]:
    summary, encrypted = (spec, None) if isinstance(spec, str) else spec
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": f"rs_{next(_ids):04d}",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def _message(text: str, status: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{next(_ids):04d}",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def _function_call(spec: FunctionCallSpec) -> dict[str, Any]:
    number = next(_ids)
    if len(spec) == 3:
        call_id, name, arguments = spec
    else:
        name, arguments = spec
        call_id = f"call_{number:04d}"
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "type": "function_call",
        "id": f"fc_{number:04d}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def responses_error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str = "invalid_request_error",
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> ScriptedResponse:
    """An API error in the Responses API's shape (chat completions' too); 429 and 5xx
    ask for a fast retry by default."""
    default = FAST_RETRY if status == 429 or status >= 500 else {}
    body = {"error": {"message": message, "type": type, "param": param, "code": code}}
    return ScriptedResponse(status, body, headers if headers is not None else dict(default))


def responses_context_length_error() -> ScriptedResponse:
    """The 400 the Responses API returns when the input exceeds the context window."""
    return responses_error(
        400,
        "Your input exceeds the context window of this model. "
        "Please adjust your input and try again.",
        code="context_length_exceeded",
        param="input",
    )


def _input_text(body: Any) -> str:
    """The text of a request's last user input item (``input`` itself when a string)."""
    given = body.get("input") if isinstance(body, dict) else None
    if isinstance(given, str):
        return given
    users = [
        item
        for item in (given if isinstance(given, list) else [])
        if isinstance(item, dict) and item.get("role") == "user"
    ]
    content = users[-1].get("content") if users else None
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else json.dumps(content)


def responses_echo(request: RecordedRequest) -> ScriptedResponse:
    """A responder answering every request at once with the last user input's text."""
    return responses_reply(f"echo: {_input_text(request.body)}")


def responses_stream_tokens(tokens: int, rate_per_s: float) -> Responder:
    """A responder answering every request with a text of exactly ``tokens`` tokens.

    Streamed, each token is one ``response.output_text.delta`` and they arrive
    ``rate_per_s`` a second: a model of known speed, for benchmarking what consumes
    the stream.
    """
    if tokens < 0 or rate_per_s <= 0:
        raise ValueError("tokens must be >= 0 and rate_per_s > 0")
    text = token_text(tokens)

    def respond(request: RecordedRequest) -> ScriptedResponse:
        return responses_reply(text, usage=(10, tokens), chunk_delay=1 / rate_per_s)

    return respond


class ResponsesServer(ScriptedServer):
    """Serves ``POST {base_url}/responses``; ``base_url`` ends in ``/v1``."""

    api_path = "/responses"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def stream_events(self, request: RecordedRequest, body: dict[str, Any]) -> list[bytes] | None:
        return responses_stream(body) if is_response(body) else None

    def reply(self, text: str | None = None, **kwargs: Any) -> Self:
        """Queue ``responses_reply(text, **kwargs)``."""
        return self.add(responses_reply(text, **kwargs))

    def error(self, status: int, message: str = "error", **kwargs: Any) -> Self:
        """Queue ``responses_error(status, message, **kwargs)``."""
        return self.add(responses_error(status, message, **kwargs))
