"""Whole LLM responses re-encoded as the APIs' Server-Sent Event streams.

A scripted response is written once, in the API's non-streamed shape; these encoders cut
it into the events a real server would stream, so that an SDK accumulating the stream
gets back exactly the whole response. Each encoder returns the stream as a list of
*writes*: every write carries one piece of content (a token of text, a slice of tool
arguments) plus the framing events due before it, so a pace between writes is a pace
between tokens, as a real model's is.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

# A word and the whitespace after it (leading whitespace alone), long runs cut at 16
# characters, so text without spaces still streams in several pieces.
_TOKEN = re.compile(r"\s+|\S{1,16}\s*")
_SLICE = 16  # characters of a JSON argument string per piece


def split_tokens(text: str) -> list[str]:
    """``text`` in token-like pieces that join back to it; none for an empty string."""
    return _TOKEN.findall(text)


def token_text(tokens: int) -> str:
    """A text that ``split_tokens`` cuts into exactly ``tokens`` pieces."""
    return " ".join(f"token{number}" for number in range(tokens))


def split_slices(text: str) -> list[str]:
    """``text`` in short slices, at least two when it has two characters, joining back to it."""
    size = max(1, min(_SLICE, -(-len(text) // 2)))
    return [text[start : start + size] for start in range(0, len(text), size)]


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event; ``data`` is JSON-encoded unless it is already a string."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {payload}\n\n".encode()


class _Writes:
    """Groups events into writes that each carry one piece of content."""

    def __init__(self) -> None:
        self._writes: list[bytes] = []
        self._pending = b""

    def frame(self, event: bytes) -> None:
        """An event without content: it travels with the next piece."""
        self._pending += event

    def piece(self, event: bytes) -> None:
        self._writes.append(self._pending + event)
        self._pending = b""

    def done(self) -> list[bytes]:
        """The writes; trailing framing goes out with the last piece."""
        if self._pending:
            if self._writes:
                self._writes[-1] += self._pending
            else:
                self._writes.append(self._pending)
            self._pending = b""
        return self._writes


# ---- OpenAI chat completions ------------------------------------------------------


def is_chat_completion(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` has the shape of a non-streamed chat completion."""
    choices = body.get("choices")
    return isinstance(choices, list) and all(
        isinstance(choice, dict) and isinstance(choice.get("message"), dict) for choice in choices
    )


def openai_stream(completion: Mapping[str, Any], *, include_usage: bool = False) -> list[bytes]:
    """A chat completion as ``chat.completion.chunk`` events, ending with ``data: [DONE]``.

    Per choice: a first delta with the message's fields in their order (a non-empty
    string field other than ``role`` as ``""``, then streamed in pieces: other strings
    such as ``reasoning_content`` first, as real models think before they answer, then
    ``content``), then each tool call (its id and name, then its arguments in slices),
    then an empty delta with the finish reason. ``include_usage`` (the request's
    ``stream_options``) adds ``usage: null`` to every chunk and a last chunk with no
    choices and the usage.
    """
    head = {key: value for key, value in completion.items() if key not in ("choices", "usage")}
    head["object"] = "chat.completion.chunk"
    tail = {"usage": None} if include_usage else {}
    writes = _Writes()

    def chunk(choices: list[dict[str, Any]]) -> bytes:
        return sse({**head, "choices": choices, **tail})

    for number, choice in enumerate(completion["choices"]):
        _stream_choice(choice, choice.get("index", number), chunk, writes)
    if include_usage:
        writes.frame(sse({**head, "choices": [], "usage": completion.get("usage")}))
    writes.frame(sse("[DONE]"))
    return writes.done()


def _stream_choice(
    choice: dict[str, Any],
    index: int,
    chunk: Callable[[list[dict[str, Any]]], bytes],
    writes: _Writes,
) -> None:
    def delta(value: dict[str, Any], finish: Any = None, **extra: Any) -> bytes:
        return chunk([{"index": index, "delta": value, **extra, "finish_reason": finish}])

    message: dict[str, Any] = choice["message"]
    streamed = [
        key for key, value in message.items() if key != "role" and isinstance(value, str) and value
    ]
    streamed.sort(key=lambda key: key == "content")  # stable: the other strings go first
    calls = message.get("tool_calls")
    calls = calls if isinstance(calls, list) and calls else []
    first = {
        key: "" if key in streamed else value
        for key, value in message.items()
        if not (key == "tool_calls" and calls)
    }
    logprobs = {"logprobs": choice["logprobs"]} if choice.get("logprobs") is not None else {}
    writes.frame(delta(first, **logprobs))
    for key in streamed:
        for piece in split_tokens(message[key]):
            writes.piece(delta({key: piece}))
    for position, call in enumerate(calls):
        function = call.get("function")
        if not (isinstance(function, dict) and isinstance(function.get("arguments"), str)):
            writes.frame(delta({"tool_calls": [{"index": position, **call}]}))
            continue
        start = {"index": position, **call, "function": {**function, "arguments": ""}}
        writes.frame(delta({"tool_calls": [start]}))
        for piece in split_slices(function["arguments"]):
            arguments = {"index": position, "function": {"arguments": piece}}
            writes.piece(delta({"tool_calls": [arguments]}))
    writes.frame(delta({}, choice.get("finish_reason")))


# ---- Anthropic messages -----------------------------------------------------------


def is_message(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` has the shape of a non-streamed Anthropic message."""
    content = body.get("content")
    return (
        body.get("type") == "message"
        and isinstance(content, list)
        and all(isinstance(block, dict) for block in content)
    )


def anthropic_stream(message: Mapping[str, Any]) -> list[bytes]:
    """A message as ``message_start``, ``ping``, per block ``content_block_start`` /
    ``_delta``s / ``_stop``, then ``message_delta`` and ``message_stop``.

    ``message_start`` carries the message without content or stop reason and with one
    output token so far; text, thinking and tool input arrive as ``text_delta``,
    ``thinking_delta`` (then one ``signature_delta``) and ``input_json_delta`` pieces,
    citations as ``citations_delta``s; other block types are whole in their
    ``content_block_start``. ``message_delta`` brings the stop reason and output tokens.
    """
    usage = dict(message.get("usage") or {})
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    final = {
        "stop_reason": message.get("stop_reason"),
        "stop_sequence": message.get("stop_sequence"),
    }
    if "stop_details" in message:
        start["stop_details"] = None
        final["stop_details"] = message["stop_details"]
    writes = _Writes()

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, **fields}, event=kind)

    writes.frame(event("message_start", message=start))
    writes.frame(event("ping"))
    for index, block in enumerate(message["content"]):
        opening, deltas, trailer = _block_parts(block)
        writes.frame(event("content_block_start", index=index, content_block=opening))
        for delta in deltas:
            writes.piece(event("content_block_delta", index=index, delta=delta))
        for delta in trailer:
            writes.frame(event("content_block_delta", index=index, delta=delta))
        writes.frame(event("content_block_stop", index=index))
    output_tokens = usage.get("output_tokens", 0)
    writes.frame(event("message_delta", delta=final, usage={"output_tokens": output_tokens}))
    writes.frame(event("message_stop"))
    return writes.done()


def _block_parts(
    block: dict[str, Any],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A content block as its opening, its paced deltas and the deltas closing it."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        opening = {**block, "text": ""}
        citations = block.get("citations")
        trailer: list[dict[str, Any]] = []
        if isinstance(citations, list) and citations:
            opening["citations"] = []
            trailer = [{"type": "citations_delta", "citation": c} for c in citations]
        texts = [{"type": "text_delta", "text": piece} for piece in split_tokens(block["text"])]
        return opening, texts, trailer
    if kind in ("tool_use", "server_tool_use") and "input" in block:
        pieces = split_slices(json.dumps(block["input"]))
        partials = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        return {**block, "input": {}}, partials, []
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        opening = {**block, "thinking": ""}
        trailer = []
        if "signature" in block:
            opening["signature"] = ""
            trailer = [{"type": "signature_delta", "signature": block["signature"]}]
        pieces = split_tokens(block["thinking"])
        return opening, [{"type": "thinking_delta", "thinking": piece} for piece in pieces], trailer
    return block, [], []


# ---- OpenAI Responses -------------------------------------------------------------


def is_response(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` has the shape of a non-streamed Responses API ``response``."""
    output = body.get("output")
    return (
        body.get("object") == "response"
        and isinstance(output, list)
        and all(isinstance(item, dict) for item in output)
    )


_FINAL_EVENT = {"incomplete": "response.incomplete", "failed": "response.failed"}

_Event = Callable[..., bytes]
# the field holding the text of a content part streamed as response.{type}.delta events
_PART_TEXT = {"refusal": "refusal", "reasoning_text": "text"}


def responses_stream(response: Mapping[str, Any]) -> list[bytes]:
    """A response as the Responses API's events, each with its ``sequence_number``.

    ``response.created`` and ``response.in_progress`` carry the response in progress,
    with no output and no usage yet. Then per output item ``response.output_item.added``
    (the item with its streamed fields empty, ``status: "in_progress"`` where it has a
    status), its pieces, and ``response.output_item.done`` with the whole item:

    - a message: per content part ``response.content_part.added`` (the part empty), for
      ``output_text`` its ``response.output_text.delta``s, one
      ``response.output_text.annotation.added`` per annotation and
      ``response.output_text.done``, for a ``refusal`` its ``response.refusal.delta``s
      and ``.done``, then ``response.content_part.done`` with the whole part;
    - a function call: ``response.function_call_arguments.delta``s and ``.done`` (a
      custom tool call: ``response.custom_tool_call_input.delta``s and ``.done``);
    - reasoning: its ``reasoning_text`` content parts as ``response.content_part.added``,
      ``response.reasoning_text.delta``s and ``.done``, ``response.content_part.done``;
      then per summary part ``response.reasoning_summary_part.added``,
      ``response.reasoning_summary_text.delta``s and ``.done``,
      ``response.reasoning_summary_part.done``; its ``encrypted_content`` comes only
      with the done item;
    - any other item is whole in both ``added`` and ``done``.

    Last comes ``response.completed`` (``response.incomplete`` or ``response.failed``
    for those statuses) with the whole response.
    """
    start = {
        **response,
        "status": "in_progress",
        "output": [],
        "usage": None,
        "error": None,
        "incomplete_details": None,
    }
    if "completed_at" in response:
        start["completed_at"] = None
    writes = _Writes()
    sequence = itertools.count()

    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(sequence), **fields}, event=kind)

    writes.frame(event("response.created", response=start))
    writes.frame(event("response.in_progress", response=start))
    for index, item in enumerate(response["output"]):
        writes.frame(event("response.output_item.added", output_index=index, item=_opening(item)))
        _stream_item(item, {"item_id": item.get("id", ""), "output_index": index}, event, writes)
        writes.frame(event("response.output_item.done", output_index=index, item=item))
    final = _FINAL_EVENT.get(str(response.get("status")), "response.completed")
    writes.frame(event(final, response=dict(response)))
    return writes.done()


def _opening(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as ``response.output_item.added`` shows it: nothing streamed yet."""
    kind = item.get("type")
    opening = {**item, "status": "in_progress"} if "status" in item else dict(item)
    if kind == "message" and isinstance(item.get("content"), list):
        opening["content"] = []
    elif kind == "function_call" and isinstance(item.get("arguments"), str):
        opening["arguments"] = ""
    elif kind == "custom_tool_call" and isinstance(item.get("input"), str):
        opening["input"] = ""
    elif kind == "reasoning":
        for key in ("summary", "content"):
            if isinstance(item.get(key), list):
                opening[key] = []
        if item.get("encrypted_content") is not None:
            opening["encrypted_content"] = None
    return opening


def _stream_item(item: dict[str, Any], at: dict[str, Any], event: _Event, writes: _Writes) -> None:
    """The events between an item's ``added`` and ``done``."""
    kind = item.get("type")
    if kind == "message" and isinstance(item.get("content"), list):
        for number, part in enumerate(item["content"]):
            _stream_part(part, {**at, "content_index": number}, event, writes)
    elif kind == "function_call" and isinstance(item.get("arguments"), str):
        for piece in split_slices(item["arguments"]):
            writes.piece(event("response.function_call_arguments.delta", **at, delta=piece))
        writes.frame(
            event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        )
    elif kind == "custom_tool_call" and isinstance(item.get("input"), str):
        for piece in split_slices(item["input"]):
            writes.piece(event("response.custom_tool_call_input.delta", **at, delta=piece))
        writes.frame(event("response.custom_tool_call_input.done", **at, input=item["input"]))
    elif kind == "reasoning":
        for number, part in enumerate(item.get("content") or []):
            _stream_part(part, {**at, "content_index": number}, event, writes)
        for number, part in enumerate(item.get("summary") or []):
            _stream_summary(part, {**at, "summary_index": number}, event, writes)


def _stream_part(part: Any, at: dict[str, Any], event: _Event, writes: _Writes) -> None:
    """A content part of a message or of reasoning: added, its pieces, done."""
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "output_text" and isinstance(part.get("text"), str):
        opening = {**part, "text": "", "annotations": []}
        writes.frame(event("response.content_part.added", **at, part=opening))
        for piece in split_tokens(part["text"]):
            writes.piece(event("response.output_text.delta", **at, delta=piece, logprobs=[]))
        for number, annotation in enumerate(part.get("annotations") or []):
            writes.frame(
                event(
                    "response.output_text.annotation.added",
                    **at,
                    annotation_index=number,
                    annotation=annotation,
                )
            )
        logprobs = part.get("logprobs") or []
        writes.frame(event("response.output_text.done", **at, text=part["text"], logprobs=logprobs))
    elif kind in ("refusal", "reasoning_text") and isinstance(part.get(_PART_TEXT[kind]), str):
        field = _PART_TEXT[kind]
        writes.frame(event("response.content_part.added", **at, part={**part, field: ""}))
        for piece in split_tokens(part[field]):
            writes.piece(event(f"response.{kind}.delta", **at, delta=piece))
        writes.frame(event(f"response.{kind}.done", **at, **{field: part[field]}))
    else:
        writes.frame(event("response.content_part.added", **at, part=part))
    writes.frame(event("response.content_part.done", **at, part=part))


def _stream_summary(part: Any, at: dict[str, Any], event: _Event, writes: _Writes) -> None:
    """A reasoning summary part: added, its text pieces, the text done, the part done."""
    text = part.get("text") if isinstance(part, dict) else None
    if not isinstance(text, str):
        writes.frame(event("response.reasoning_summary_part.added", **at, part=part))
    else:
        opening = {**part, "text": ""}
        writes.frame(event("response.reasoning_summary_part.added", **at, part=opening))
        for piece in split_tokens(text):
            writes.piece(event("response.reasoning_summary_text.delta", **at, delta=piece))
        writes.frame(event("response.reasoning_summary_text.done", **at, text=text))
    writes.frame(event("response.reasoning_summary_part.done", **at, part=part))
