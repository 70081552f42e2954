"""Render neutral messages to the OpenAI chat-completions and the Anthropic messages shapes.

An assistant message that came from the same provider is sent back as its raw JSON,
verbatim. Everything else is rendered from the neutral fields.

Context messages (role ``system`` inside the history) are rendered for OpenAI as
``system`` messages in place, which chat completions accepts anywhere in the list; for
Anthropic, which only has a top-level system prompt, as user text labelled
``[context]``, merged into the neighbouring user turn so that roles still alternate.
Anthropic tool results of one step are batched into one user message of ``tool_result``
blocks, placed before any text of that user turn as the API requires.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from goaicore.conversation.messages import JSONDict, Message

CONTEXT_PREFIX = "[context] "


def render_openai(messages: Sequence[Message]) -> list[JSONDict]:
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
            out.append({"role": "user", "content": [_part_to_openai(p) for p in m.content]})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def render_anthropic(messages: Sequence[Message]) -> list[JSONDict]:
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
                    {
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": _input_of(c.arguments),
                    }
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
            user_blocks = [_part_to_anthropic(p) for p in m.content]
        else:
            user_blocks = [{"type": "text", "text": m.text}]
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(user_blocks)
        else:
            out.append({"role": "user", "content": user_blocks})
    return out


def _input_of(arguments: str) -> Any:
    """Tool-use input from JSON arguments; the API requires an object."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _part_to_openai(part: JSONDict) -> JSONDict:
    if part.get("type") == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "base64":
            url = f"data:{source.get('media_type')};base64,{source.get('data')}"
            return {"type": "image_url", "image_url": {"url": url}}
        if source.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": source.get("url")}}
    return part


def _part_to_anthropic(part: JSONDict) -> JSONDict:
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
