"""OpenAI chat completions (and any compatible server): the wire format and the provider.

Wire: neutral messages render to the chat-completions ``messages`` list; an assistant
message that came from OpenAI goes back as its raw JSON, verbatim (``choices[0].message``
exactly: fields this library does not know survive). Context messages (role ``system``
inside the history) render as ``system`` messages in place, which chat completions
accepts anywhere. No rules beyond the common ones.

Provider: the official ``openai`` SDK (the ``openai`` extra), imported when a provider
is built. The SDK does the retries on 429 and 5xx (``max_retries``) and the timeouts;
the response body is read as raw JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from goaicore.conversation.messages import JSONDict, Message, ToolCall, text_of_parts
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    Completion,
    CompletionRequest,
    Provider,
    SdkProvider,
    StreamAccumulator,
    Transport,
    as_int,
)
from goaicore.conversation.providers.wire import ProviderSpec, Wire, no_rules, string
from goaicore.records.types import Usage

if TYPE_CHECKING:
    from goaicore.settings import Settings

FINISH_REASONS = {
    "stop": STOP,
    "tool_calls": TOOL_CALLS,
    "length": LENGTH,
    "content_filter": CONTENT_FILTER,
}


def render(messages: Sequence[Message]) -> list[JSONDict]:
    """The ``messages`` list of a chat-completions request (without the leading system)."""
    out: list[JSONDict] = []
    for m in messages:
        if m.role == "assistant":
            if m.raw is not None and m.provider == "openai":
                out.append(m.raw)
                continue
            msg: JSONDict = {"role": "assistant", "content": m.text}
            if m.tool_calls:
                msg["content"] = m.text or None
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in m.tool_calls
                ]
            out.append(msg)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.text})
        elif m.role == "user" and isinstance(m.content, list):
            out.append({"role": "user", "content": [_part(p) for p in m.content]})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def parse(raw: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of a chat-completions assistant message."""
    content = raw.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    elif isinstance(content, list) and all(isinstance(p, dict) for p in content):
        text = text_of_parts(content)
    else:
        raise ValueError("assistant content must be text, a list of parts or null")
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ValueError("tool_calls must be a list")
    parsed: list[ToolCall] = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise ValueError(f"unsupported tool call {call!r}")
        parsed.append(
            ToolCall(
                id=string(call.get("id"), "tool call id"),
                name=string(function.get("name"), "tool name"),
                arguments=string(function.get("arguments", ""), "arguments"),
            )
        )
    return text, tuple(parsed)


def _part(part: JSONDict) -> JSONDict:
    """A content part in OpenAI's shape (an Anthropic image block becomes an image_url)."""
    if part.get("type") == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return {"type": "image_url", "image_url": {"url": url}}
        if source.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": source.get("url")}}
    return part


WIRE = Wire(
    name="openai", render=render, parse=parse, check=no_rules, finish_reasons=FINISH_REASONS
)


class ChunkAccumulator(StreamAccumulator):
    """Reads ``chat.completion.chunk`` events back into a ``chat.completion``.

    The message is rebuilt field by field in the order the deltas name them: text
    fields join (``content``, ``refusal``, ``reasoning_content``...), tool calls join
    by their ``index``, anything else takes its latest value. So a server that streams
    what it would have answered whole gives back that very message.
    """

    def __init__(self) -> None:
        self._top: JSONDict = {}
        self._message: JSONDict = {}
        self._calls: dict[int, JSONDict] = {}
        self._finish: Any = None
        self._usage: Any = None
        self._choices = 0

    def feed(self, event: Any, on_text: TextSink) -> None:
        if not isinstance(event, dict):
            raise ValueError(f"a chunk is not a JSON object: {event!r:.200}")
        for key, value in event.items():
            if key == "usage":
                self._usage = value if value is not None else self._usage
            elif key not in ("choices", "object"):
                self._top[key] = value
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # one choice is asked for; another is not ours to keep
            self._choices += 1
            if choice.get("finish_reason") is not None:
                self._finish = choice["finish_reason"]
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise ValueError(f"a delta is not a JSON object: {delta!r:.200}")
            for key, value in delta.items():
                if key == "tool_calls":
                    self._join_calls(value)
                    continue
                if key == "content" and isinstance(value, str) and value:
                    on_text(value)
                _join(self._message, key, value, joins=key != "role")

    def _join_calls(self, calls: Any) -> None:
        if not isinstance(calls, list):
            raise ValueError("tool_calls must be a list")
        for position, call in enumerate(calls):
            if not isinstance(call, dict):
                raise ValueError(f"unsupported tool call {call!r:.200}")
            index = call.get("index", position)
            joined = self._calls.setdefault(index if isinstance(index, int) else position, {})
            for key, value in call.items():
                if key == "function" and isinstance(value, dict):
                    function = joined.setdefault("function", {})
                    for name, part in value.items():
                        _join(function, name, part, joins=name in ("name", "arguments"))
                elif key != "index":
                    _join(joined, key, value, joins=False)

    def response(self) -> JSONDict:
        if not self._choices:
            raise ValueError("the stream held no choice")
        if self._finish is None:
            raise ValueError("the stream ended before its finish_reason")
        message: JSONDict = {"role": "assistant"} if "role" not in self._message else {}
        message.update(self._message)
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        response: JSONDict = {**self._top, "object": "chat.completion"}
        response["choices"] = [{"index": 0, "message": message, "finish_reason": self._finish}]
        if self._usage is not None:
            response["usage"] = self._usage
        return response


def _join(into: JSONDict, key: str, value: Any, *, joins: bool) -> None:
    """``into[key]`` with a delta's ``value``: text appended where ``joins``; otherwise the
    first value that is not empty is kept for ids (a server may repeat them), and the
    latest one for anything else."""
    current = into.get(key)
    if joins and isinstance(value, str) and isinstance(current, str):
        into[key] = current + value
    elif key in ("id", "type") and current not in (None, ""):
        return
    elif value is not None or key not in into:
        into[key] = value


class OpenAIProvider(SdkProvider):
    """OpenAI chat completions (or any compatible server via ``base_url``).

    ``api_key`` and ``base_url`` default to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
    ``extra_body`` is merged into every request (e.g. ``{"reasoning_effort": "low"}``).
    """

    name = "openai"
    client_class = "AsyncOpenAI"
    path = "/chat/completions"
    stream_options: ClassVar[JSONDict] = {"stream": True, "stream_options": {"include_usage": True}}

    def accumulator(self) -> StreamAccumulator:
        return ChunkAccumulator()

    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The chat-completions request body for ``request``."""
        messages = [{"role": "system", "content": s} for s in request.system]
        body: JSONDict = {"model": self.model, "messages": messages + render(request.messages)}
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
            message = WIRE.assistant(choice["message"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise self.unreadable(exc) from None
        raw_finish = choice.get("finish_reason")
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return Completion(
            message=message,
            finish_reason=FINISH_REASONS.get(raw_finish, str(raw_finish)),
            raw_finish_reason=raw_finish,
            usage=Usage.of_call(
                as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
            ),
            model=str(data.get("model") or self.model),
            cache_read_tokens=as_int(cached),
        )

    @staticmethod
    def is_context_length(exc: Any) -> bool:
        """Whether an HTTP status error says the prompt was too long for the model."""
        if exc.status_code == 413:
            return True
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body)
        code = error.get("code") if isinstance(error, dict) else None
        text = str(exc.message).lower()
        return code == "context_length_exceeded" or (
            exc.status_code == 400 and ("context length" in text or "context_length" in text)
        )


def _build(settings: Settings, model: str, transport: Transport) -> Provider:
    # A local OpenAI-compatible server may need no key; the SDK insists on one.
    return OpenAIProvider(
        model,
        api_key=settings.openai_api_key or "unused",
        base_url=settings.openai_base_url,
        transport=transport,
    )


SPEC = ProviderSpec(
    wire=WIRE,
    default_model="gpt-4o-mini",
    configured=lambda s: bool(s.openai_api_key or s.openai_base_url),
    build=_build,
)
