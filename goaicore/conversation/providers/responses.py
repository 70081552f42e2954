"""OpenAI's Responses API (``POST /responses``, ``store=False``): the wire format and the
provider.

Wire: one LLM call answers a list of output items (reasoning, messages, function calls,
and types this library does not know). They are one neutral assistant message whose
raw JSON is ``{"output": [items]}``, kept verbatim: the items go back as they came, in
their order, so a reasoning item stays just before the function call it belongs to (with
its ``encrypted_content`` where the request asked ``include`` for it, as a stateless
call requires) and no compaction can split them (they are one message). The history
renders as ``input`` items: user and context messages as role messages (context as
``system``), another provider's assistant message as an assistant message and one
``function_call`` item per tool call, a tool result as a ``function_call_output``. A
user or tool message kept with its raw input item (``provider`` this one, e.g. as an
OpenAI Agents SDK session stores it) is that item, verbatim.

Provider: the official ``openai`` SDK (the ``openai`` extra), as for chat completions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from goaicore.conversation.messages import JSONDict, Message, ToolCall
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.base import (
    CONTENT_FILTER,
    CONTEXT_LENGTH,
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
from goaicore.conversation.providers.openai import OpenAIProvider
from goaicore.conversation.providers.wire import ProviderSpec, Wire, no_rules, string
from goaicore.records.types import Usage

if TYPE_CHECKING:
    from goaicore.settings import Settings

NAME = "openai-responses"

INCOMPLETE_REASONS = {
    "max_output_tokens": LENGTH,
    "content_filter": CONTENT_FILTER,
    "max_input_tokens": CONTEXT_LENGTH,
}
"""``incomplete_details.reason`` of an incomplete response, as a finish reason."""

FINISH_REASONS = {"completed": STOP, **INCOMPLETE_REASONS}


def render(messages: Sequence[Message]) -> list[JSONDict]:
    """The ``input`` items of a Responses request (without the leading system prompts)."""
    out: list[JSONDict] = []
    for m in messages:
        if m.raw is not None and m.provider == NAME and m.role in ("user", "tool"):
            out.append(m.raw)  # the input item it was stored as
            continue
        if m.role == "assistant":
            if m.raw is not None and m.provider == NAME:
                out.extend(_items(m.raw))
                continue
            if m.text:
                out.append({"role": "assistant", "content": m.text})
            out.extend(
                {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                for c in m.tool_calls
            )
        elif m.role == "tool":
            out.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.text}
            )
        elif m.role == "user" and isinstance(m.content, list):
            out.append({"role": "user", "content": [_part(p) for p in m.content]})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def parse(raw: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and function calls of one call's output items (the rest kept raw)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in _items(raw):
        kind = item.get("type")
        if kind == "message":
            content = item.get("content")
            if not isinstance(content, list):
                raise ValueError("a message item's content must be a list of parts")
            texts.extend(
                string(part.get("text"), "output_text")
                for part in content
                if isinstance(part, dict) and part.get("type") == "output_text"
            )
        elif kind == "function_call":
            calls.append(
                ToolCall(
                    id=string(item.get("call_id"), "function call call_id"),
                    name=string(item.get("name"), "function name"),
                    arguments=string(item.get("arguments", ""), "arguments"),
                )
            )
    return "".join(texts), tuple(calls)


def _items(raw: Mapping[str, Any]) -> list[JSONDict]:
    items = raw.get("output")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError("a Responses message must hold a list of output items")
    return items


def _part(part: JSONDict) -> JSONDict:
    """A user content part in the Responses shape (chat completions' or Anthropic's in)."""
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part.get("text", "")}
    if kind == "image_url" and isinstance(part.get("image_url"), dict):
        return {"type": "input_image", "image_url": part["image_url"].get("url", "")}
    if kind == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return {"type": "input_image", "image_url": url}
        return {"type": "input_image", "image_url": source.get("url", "")}
    return part


WIRE = Wire(name=NAME, render=render, parse=parse, check=no_rules, finish_reasons=FINISH_REASONS)


class ResponseAccumulator(StreamAccumulator):
    """Reads a Responses event stream: text from ``response.output_text.delta``, and the
    whole response from the last event (``response.completed``, ``.incomplete`` or
    ``.failed``), which carries it."""

    def __init__(self) -> None:
        self._response: JSONDict | None = None

    def feed(self, event: Any, on_text: TextSink) -> None:
        if not isinstance(event, dict):
            raise ValueError(f"an event is not a JSON object: {event!r:.200}")
        kind = event.get("type")
        if kind == "response.output_text.delta":
            delta = event["delta"]
            if delta:
                on_text(string(delta, "delta"))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self._response = event["response"]
        elif kind == "error":
            raise ValueError(f"the stream reported an error: {event.get('message')!r:.300}")

    def response(self) -> JSONDict:
        if self._response is None:
            raise ValueError("the stream ended before its response was complete")
        return self._response


class ResponsesProvider(SdkProvider):
    """OpenAI's Responses API (or a compatible server via ``base_url``), stateless.

    ``api_key`` and ``base_url`` default to ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
    ``extra_body`` is merged into every request, e.g. ``{"reasoning": {"effort": "low"},
    "include": ["reasoning.encrypted_content"]}`` for a reasoning model, whose reasoning
    items then go back with each later call.
    """

    name = NAME
    sdk = "openai"
    client_class = "AsyncOpenAI"
    path = "/responses"

    def accumulator(self) -> StreamAccumulator:
        return ResponseAccumulator()

    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The Responses request body for ``request``."""
        system = [{"role": "system", "content": s} for s in request.system]
        body: JSONDict = {
            "model": self.model,
            "input": system + render(request.messages),
            "store": False,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": False,
                }
                for t in request.tools
            ]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_output_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def parse_response(self, data: Any) -> Completion:
        """The completion in a Responses API ``response`` object."""
        try:
            message = WIRE.assistant({"output": data["output"]})
        except (KeyError, TypeError, ValueError) as exc:
            raise self.unreadable(exc) from None
        status = data.get("status")
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        if status == "completed":
            finish = TOOL_CALLS if message.tool_calls else STOP
        elif status == "incomplete":
            finish = INCOMPLETE_REASONS.get(str(reason), str(reason))
        else:
            finish = str(status)
        usage = data.get("usage") or {}
        input_details = usage.get("input_tokens_details")
        cached = input_details.get("cached_tokens") if isinstance(input_details, dict) else None
        return Completion(
            message=message,
            finish_reason=finish,
            raw_finish_reason=str(reason) if status == "incomplete" else status,
            usage=Usage.of_call(
                as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
            ),
            model=str(data.get("model") or self.model),
            cache_read_tokens=as_int(cached),
        )

    is_context_length = staticmethod(OpenAIProvider.is_context_length)
    stream_options: ClassVar[JSONDict] = {"stream": True}


def _build(settings: Settings, model: str, transport: Transport) -> Provider:
    return ResponsesProvider(
        model,
        api_key=settings.openai_api_key or "unused",
        base_url=settings.openai_base_url,
        transport=transport,
    )


SPEC = ProviderSpec(
    wire=WIRE,
    default_model="gpt-4o-mini",
    # OpenAI's key (or a compatible server) with GOAICORE_OPENAI_API=responses
    configured=lambda s: (
        bool(s.openai_api_key or s.openai_base_url) and s.openai_api == "responses"
    ),
    build=_build,
)
