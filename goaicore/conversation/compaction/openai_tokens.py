"""Exact, offline token counts for OpenAI chat models (``bpe-openai`` encodings).

Counts a chat-completions request the way the API bills it (OpenAI cookbook, "How to
count tokens with tiktoken", checked against the API's ``usage.prompt_tokens``):

- every message costs **3 tokens** of framing (``<|start|>role<|message|>...<|end|>``)
  plus the tokens of its role and its content, and a ``name`` costs its tokens + 1;
- every request costs **3 more** (the reply is primed with ``<|start|>assistant``);
- the system prompts are leading ``system`` messages, counted like any message;
- tool schemas are rendered by the API into a function namespace: per function
  ``func_init`` (7 on o200k models, 10 on cl100k models) + ``name:description`` (a
  trailing period dropped), then, when it has properties, 3 + per property 3 +
  ``key:type:description`` (+ per enum item 3 + its tokens, - 3 per enum), and 12 once
  at the end.

These reproduce the cookbook's published API counts exactly (129 / 124 tokens for its
jargon example on cl100k / o200k; 105 / 101 with its weather tool). The API does not
document how assistant tool calls and tool results are framed; they are counted as
ordinary messages whose content is, per call, the name and the JSON arguments plus 3
tokens, and, for a result, the tool's name and its text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from goaicore.conversation.messages import Message
from goaicore.conversation.tools import Tool
from goaicore.extras import needs

PER_MESSAGE = 3
PER_NAME = 1
REPLY_PRIMING = 3
PER_TOOL_CALL = 3
DEFAULT_ENCODING = "o200k_base"
# Tool-schema framing per encoding: (func_init, prop_init, prop_key, enum_init, enum_item,
# func_end), measured in the OpenAI cookbook against the API.
_TOOL_FRAMING: dict[str, tuple[int, int, int, int, int, int]] = {
    "o200k_base": (7, 3, 3, -3, 3, 12),
    "cl100k_base": (10, 3, 3, -3, 3, 12),
}
_CACHE_LIMIT = 65536


class OpenAITokenCounter:
    """Exact prompt-token counts for an OpenAI model, from its encoding; works offline.

    ``model`` picks the encoding (``gpt-4o`` and later: ``o200k_base``; ``gpt-4`` and
    ``gpt-3.5-turbo``: ``cl100k_base``); an unknown model uses ``o200k_base``, or pass
    ``encoding`` explicitly. Text counts are cached, so re-counting a long history on
    every call costs a dictionary lookup per message.
    """

    def __init__(self, model: str = "gpt-4o", *, encoding: str | None = None) -> None:
        with needs("openai"):
            import bpe_openai  # loads in ~0.5 s: only when an exact count is wanted

        if encoding is None:
            try:
                encoding = str(bpe_openai.encoding_name_for_model(model))
            except Exception:  # an unknown model: the current default encoding
                encoding = DEFAULT_ENCODING
        self.encoding_name = encoding
        self._encoding = bpe_openai.get_encoding(encoding)
        self._framing = _TOOL_FRAMING.get(encoding, _TOOL_FRAMING[DEFAULT_ENCODING])
        self._cache: dict[str, int] = {}

    def count_text(self, text: str) -> int:
        """The tokens of ``text`` in this encoding (special tokens read as plain text)."""
        if not text:
            return 0
        cached = self._cache.get(text)
        if cached is None:
            cached = len(self._encoding.encode_ordinary(text))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[text] = cached
        return cached

    def count_chat_message(self, role: str, content: str, name: str | None = None) -> int:
        """One chat-completions message as the API bills it."""
        tokens = PER_MESSAGE + self.count_text(role) + self.count_text(content)
        if name is not None:
            tokens += self.count_text(name) + PER_NAME
        return tokens

    def count_message(self, message: Message) -> int:
        if message.role == "tool":
            return self.count_chat_message("tool", message.text, message.name)
        tokens = self.count_chat_message(message.role, message.text)
        for call in message.tool_calls:
            tokens += PER_TOOL_CALL + self.count_text(call.name) + self.count_text(call.arguments)
        return tokens

    def count_tools(self, tools: Sequence[Tool]) -> int:
        """The tokens the API adds for the tool schemas of a request."""
        if not tools:
            return 0
        func_init, prop_init, prop_key, enum_init, enum_item, func_end = self._framing
        tokens = 0
        for t in tools:
            tokens += func_init + self.count_text(f"{t.name}:{t.description.removesuffix('.')}")
            properties: Mapping[str, Any] = t.parameters.get("properties") or {}
            if properties:
                tokens += prop_init
            for key, spec in properties.items():
                spec = spec if isinstance(spec, Mapping) else {}
                tokens += prop_key
                enum = spec.get("enum")
                if isinstance(enum, list):
                    tokens += enum_init
                    for item in enum:
                        tokens += enum_item + self.count_text(str(item))
                kind = spec.get("type", "")
                kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
                description = str(spec.get("description", "")).removesuffix(".")
                tokens += self.count_text(f"{key}:{kind}:{description}")
        return tokens + func_end

    def count_request(
        self,
        messages: Sequence[Message],
        *,
        system: Sequence[str] = (),
        tools: Sequence[Tool] = (),
    ) -> int:
        tokens = REPLY_PRIMING + self.count_tools(tools)
        tokens += sum(self.count_chat_message("system", s) for s in system)
        return tokens + sum(self.count_message(m) for m in messages)
