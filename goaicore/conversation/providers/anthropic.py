"""Anthropic's messages API: the wire format and the provider.

Wire: user and assistant turns that alternate. An assistant message that came from
Anthropic goes back as its raw ``{"role": "assistant", "content": [blocks]}``, verbatim
(thinking blocks, citations, block types this library does not know), as the API
requires for thinking. Anthropic has only a top-level system prompt, so context
messages (role ``system`` inside the history) render as user text labelled
``[context]``, merged into the neighbouring user turn; tool results of one step are
batched into one user message of ``tool_result`` blocks, placed before any text of that
user turn. Its own rules: the first turn is a user turn, no two assistant turns in a
row, no empty user text.

Provider: the official ``anthropic`` SDK (the ``anthropic`` extra), imported when a
provider is built.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from goaicore.conversation.messages import JSONDict, Message, ToolCall, arguments_json
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
from goaicore.conversation.providers.wire import ProviderSpec, Violation, Wire, string
from goaicore.records.types import Usage

if TYPE_CHECKING:
    from goaicore.settings import Settings

CONTEXT_PREFIX = "[context] "

FINISH_REASONS = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "tool_use": TOOL_CALLS,
    "max_tokens": LENGTH,
    "refusal": CONTENT_FILTER,
    "model_context_window_exceeded": CONTEXT_LENGTH,
}


def render(messages: Sequence[Message]) -> list[JSONDict]:
    """The ``messages`` list of an Anthropic request: user/assistant turns that alternate."""
    out: list[JSONDict] = []
    for m in messages:
        if m.role == "assistant":
            if m.raw is not None and m.provider == "anthropic":
                if m.raw.get("content"):  # an empty reply cannot be sent back
                    out.append(m.raw)
                continue
            blocks: list[JSONDict] = []
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            for c in m.tool_calls:
                blocks.append(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c.arguments)}
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            continue
        if m.role == "tool":
            block: JSONDict = {"type": "tool_result", "tool_use_id": m.tool_call_id}
            if m.text:  # an empty result is sent without content, as the API documents
                block["content"] = m.text
            if m.is_error:
                block["is_error"] = True
            user_blocks = [block]
        elif m.role == "system":
            user_blocks = [{"type": "text", "text": CONTEXT_PREFIX + m.text}]
        elif isinstance(m.content, list):
            user_blocks = [_part(p) for p in m.content]
        else:
            user_blocks = [{"type": "text", "text": m.text}]
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(user_blocks)
        else:
            out.append({"role": "user", "content": user_blocks})
    return out


def parse(raw: Mapping[str, Any]) -> tuple[str, tuple[ToolCall, ...]]:
    """The text and tool calls of a messages-API assistant message (other blocks kept raw)."""
    blocks = raw.get("content")
    if isinstance(blocks, str):
        return blocks, ()
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        raise ValueError("anthropic content must be a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if block.get("type") == "text":
            texts.append(string(block.get("text"), "text"))
        elif block.get("type") == "tool_use":
            calls.append(
                ToolCall(
                    id=string(block.get("id"), "tool_use id"),
                    name=string(block.get("name"), "tool name"),
                    arguments=arguments_json(block.get("input", {})),
                )
            )
    return "".join(texts), tuple(calls)


def check(messages: Sequence[Message]) -> Violation:
    """Anthropic's own rules, on the turns as :func:`render` makes them."""
    previous_turn: str | None = None  # "user" or "assistant"
    for i, m in enumerate(messages):
        if m.role == "assistant":
            if m.provider == "anthropic" and m.raw is not None and not m.raw.get("content"):
                continue  # an empty reply is not rendered
            if previous_turn is None:
                return i, "the first turn must be a user turn"
            if previous_turn == "assistant":
                return i, "two assistant turns in a row"
            previous_turn = "assistant"
        else:
            if m.role in ("user", "system") and not m.text and not m.content:
                return i, f"empty {m.role} message"
            previous_turn = "user"
    return None


def _input(arguments: str) -> Any:
    """Tool-use input from JSON arguments; the API requires an object."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _part(part: JSONDict) -> JSONDict:
    """A content part in Anthropic's shape (an OpenAI image_url becomes an image block)."""
    if part.get("type") == "image_url" and isinstance(part.get("image_url"), dict):
        url = str(part["image_url"].get("url", ""))
        if url.startswith("data:") and ";base64," in url:
            media_type, data = url[len("data:") :].split(";base64,", 1)
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data},
            }
        return {"type": "image", "source": {"type": "url", "url": url}}
    return part


WIRE = Wire(
    name="anthropic", render=render, parse=parse, check=check, finish_reasons=FINISH_REASONS
)


class MessageAccumulator(StreamAccumulator):
    """Reads a messages-API event stream back into the whole message.

    ``message_start`` gives the message, each ``content_block_start`` a block that its
    deltas fill in (text, a tool call's JSON input, thinking and its signature,
    citations), ``message_delta`` the stop reason and the final usage. Blocks keep the
    keys and order they started with, so the message is the one the API would have
    answered whole.
    """

    def __init__(self) -> None:
        self._message: JSONDict | None = None
        self._blocks: dict[int, JSONDict] = {}
        self._inputs: dict[int, list[str]] = {}

    def feed(self, event: Any, on_text: TextSink) -> None:
        if not isinstance(event, dict):
            raise ValueError(f"an event is not a JSON object: {event!r:.200}")
        kind = event.get("type")
        if kind == "message_start":
            self._message = dict(event["message"])
            self._message["usage"] = dict(self._message.get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event["content_block"])
            self._blocks[event["index"]] = block
            if "input" in block:
                self._inputs[event["index"]] = []
        elif kind == "content_block_delta":
            self._delta(self._blocks[event["index"]], event["index"], event["delta"], on_text)
        elif kind == "content_block_stop":
            parts = self._inputs.pop(event["index"], None)
            if parts:
                self._blocks[event["index"]]["input"] = json.loads("".join(parts))
        elif kind == "message_delta":
            message = self._started()
            message.update(event.get("delta") or {})
            usage = event.get("usage") or {}
            message["usage"].update({k: v for k, v in usage.items() if v is not None})

    def _delta(self, block: JSONDict, index: int, delta: JSONDict, on_text: TextSink) -> None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
            if delta["text"]:
                on_text(delta["text"])
        elif kind == "input_json_delta":
            self._inputs.setdefault(index, []).append(delta["partial_json"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            if not isinstance(block.get("citations"), list):
                block["citations"] = []
            block["citations"].append(delta["citation"])

    def _started(self) -> JSONDict:
        if self._message is None:
            raise ValueError("the stream did not start with message_start")
        return self._message

    def response(self) -> JSONDict:
        message = self._started()
        if message.get("stop_reason") is None:
            raise ValueError("the stream ended before its stop_reason")
        return {**message, "content": [self._blocks[i] for i in sorted(self._blocks)]}


class AnthropicProvider(SdkProvider):
    """Anthropic messages API. ``api_key`` defaults to ``ANTHROPIC_API_KEY``.

    ``max_tokens`` is required by the API, hence the default.
    """

    name = "anthropic"
    client_class = "AsyncAnthropic"
    path = "/v1/messages"
    default_max_tokens = 4096

    def accumulator(self) -> StreamAccumulator:
        return MessageAccumulator()

    def build_request(self, request: CompletionRequest) -> JSONDict:
        """The messages-API request body for ``request``."""
        body: JSONDict = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": render(request.messages),
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
            message = WIRE.assistant({"role": "assistant", "content": data["content"]})
        except (KeyError, TypeError, ValueError) as exc:
            raise self.unreadable(exc) from None
        raw_finish = data.get("stop_reason")
        usage = data.get("usage") or {}
        prompt = (
            as_int(usage.get("input_tokens"))
            + as_int(usage.get("cache_creation_input_tokens"))
            + as_int(usage.get("cache_read_input_tokens"))
        )
        return Completion(
            message=message,
            finish_reason=FINISH_REASONS.get(raw_finish, str(raw_finish)),
            raw_finish_reason=raw_finish,
            usage=Usage.of_call(prompt, as_int(usage.get("output_tokens"))),
            model=str(data.get("model") or self.model),
            cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
            cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
        )

    @staticmethod
    def is_context_length(exc: Any) -> bool:
        """Whether an HTTP status error says the prompt was too long for the model."""
        text = str(exc.message).lower()
        return exc.status_code == 413 or (
            exc.status_code == 400 and ("prompt is too long" in text or "context window" in text)
        )


def _build(settings: Settings, model: str, transport: Transport) -> Provider:
    return AnthropicProvider(model, api_key=settings.anthropic_api_key, transport=transport)


SPEC = ProviderSpec(
    wire=WIRE,
    default_model="claude-3-5-haiku-latest",
    configured=lambda s: bool(s.anthropic_api_key),
    build=_build,
)
