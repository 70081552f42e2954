"""LLM providers: OpenAI (and compatible servers), Anthropic, and an offline model.

The SDK-backed providers are imported on first use, so that ``import goaicore`` does not
pay for loading both SDKs (about a second) in processes that never call them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from goaicore.conversation.providers.base import Completion, CompletionRequest, Provider
from goaicore.conversation.providers.offline import OFFLINE_MODEL, OFFLINE_PREFIX, OfflineProvider

if TYPE_CHECKING:
    from goaicore.conversation.providers.anthropic import AnthropicProvider
    from goaicore.conversation.providers.openai import OpenAIProvider

_LAZY = {
    "OpenAIProvider": "goaicore.conversation.providers.openai",
    "AnthropicProvider": "goaicore.conversation.providers.anthropic",
}

__all__ = [
    "OFFLINE_MODEL",
    "OFFLINE_PREFIX",
    "AnthropicProvider",
    "Completion",
    "CompletionRequest",
    "OfflineProvider",
    "OpenAIProvider",
    "Provider",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
