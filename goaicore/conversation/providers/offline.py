"""OfflineProvider: a deterministic stand-in for an LLM, with no network.

It lets the local stack, demos and tests run with no API key. Everything it returns is
labelled: the model is ``goaicore-offline`` and every text starts with ``[offline]``.
It calls a tool when the latest user message names one of the offered tools (filling the
required arguments from the words of the message), then answers with the tool results;
otherwise it echoes the user message. The same input always gives the same output.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from goaicore.conversation.messages import JSONDict, Message, arguments_json
from goaicore.conversation.progress import TextSink
from goaicore.conversation.providers.base import STOP, TOOL_CALLS, Completion, CompletionRequest
from goaicore.conversation.providers.openai import WIRE
from goaicore.conversation.tools import Tool
from goaicore.records.types import Usage

OFFLINE_MODEL = "goaicore-offline"
OFFLINE_PREFIX = "[offline] "
_WORD = re.compile(r"[\w'.-]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_PIECE = re.compile(r"\s*\S+\s*|\s+")


class OfflineProvider:
    """A deterministic offline model that can call tools (see the module docstring)."""

    name = "offline"
    model = OFFLINE_MODEL

    async def complete(self, request: CompletionRequest) -> Completion:
        messages = list(request.messages)
        last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        since_user = messages[last_user + 1 :]
        user_text = messages[last_user].text if last_user >= 0 else ""
        if since_user and since_user[-1].role == "tool":
            step = since_user[-_last_step_size(since_user) :]
            text = OFFLINE_PREFIX + "; ".join(
                f"{m.name or 'tool'} returned {m.text or '(empty)'}" for m in step
            )
            return self._reply(messages, text, ())
        already_called = {c.name for m in since_user for c in m.tool_calls}
        calls = [
            {
                "id": f"call_offline_{len(messages)}_{i}",
                "type": "function",
                "function": {"name": t.name, "arguments": arguments_json(_fill(t, user_text))},
            }
            for i, t in enumerate(
                t for t in request.tools if t.name not in already_called and _names(t, user_text)
            )
        ]
        if calls:
            return self._reply(messages, None, calls)
        return self._reply(messages, f"{OFFLINE_PREFIX}You said: {user_text}", ())

    async def stream(self, request: CompletionRequest, on_text: TextSink) -> Completion:
        """The same completion, its text handed over a word at a time."""
        completion = await self.complete(request)
        for piece in _PIECE.findall(completion.message.text):
            on_text(piece)
        return completion

    def _reply(
        self, history: Sequence[Message], text: str | None, calls: Sequence[JSONDict]
    ) -> Completion:
        raw: JSONDict = {"role": "assistant", "content": text}
        if calls:
            raw["tool_calls"] = list(calls)
        prompt = sum(_count_words(m.text) + 4 for m in history)
        completion = _count_words(text or "") + 8 * len(calls)
        return Completion(
            message=WIRE.assistant(raw, self.name),
            finish_reason=TOOL_CALLS if calls else STOP,
            raw_finish_reason=TOOL_CALLS if calls else STOP,
            usage=Usage.of_call(prompt, completion),
            model=OFFLINE_MODEL,
        )


def _last_step_size(since_user: Sequence[Message]) -> int:
    """How many tool results answer the latest assistant message."""
    count = 0
    for m in reversed(since_user):
        if m.role != "tool":
            break
        count += 1
    return count


def _count_words(text: str) -> int:
    return len(text.split())


def _names(t: Tool, text: str) -> bool:
    """Whether ``text`` names the tool (``get_score`` or ``get score``)."""
    lowered = text.lower()
    name = t.name.lower()
    return name in lowered or name.replace("_", " ") in lowered


def _fill(t: Tool, text: str) -> dict[str, Any]:
    """Deterministic values for the tool's required parameters, taken from ``text``."""
    name_words = set(t.name.lower().replace("-", "_").split("_"))
    words = [w.strip(".") for w in _WORD.findall(text)]
    free = [w for w in words if w and w.lower() not in name_words and w.lower() != t.name.lower()]
    properties: Mapping[str, Any] = t.parameters.get("properties", {})
    args: dict[str, Any] = {}
    for param in t.parameters.get("required", []):
        args[param] = _value_for(param, properties.get(param, {}), words, free, text)
    return args


def _value_for(
    param: str, schema: Mapping[str, Any], words: list[str], free: list[str], text: str
) -> Any:
    if schema.get("enum"):
        mentioned = [v for v in schema["enum"] if str(v).lower() in text.lower()]
        return mentioned[0] if mentioned else schema["enum"][0]
    if schema.get("anyOf"):
        return _value_for(param, schema["anyOf"][0], words, free, text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    numbers = _NUMBER.findall(text)
    if kind == "integer":
        return int(float(numbers[0])) if numbers else 0
    if kind == "number":
        return float(numbers[0]) if numbers else 0.0
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    if kind == "null":
        return None
    lowered = [w.lower() for w in words]
    key = param.lower()
    if key in lowered and lowered.index(key) + 1 < len(words):
        return words[lowered.index(key) + 1]  # "team Leeds" -> "Leeds"
    return free[-1] if free else param
