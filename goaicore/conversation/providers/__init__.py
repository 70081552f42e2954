"""LLM providers: OpenAI's chat completions (and compatible servers) and Responses API,
Anthropic, and an offline model.

One file per provider owns its whole wire mapping (render, parse, rules, finish
reasons, errors); ``registry`` lists them. The SDKs are imported when a provider is
built, so that ``import goaicore`` never pays for loading them (about a second), and
a missing SDK names the extra that installs it.
"""

from goaicore.conversation.providers.anthropic import AnthropicProvider
from goaicore.conversation.providers.base import Completion, CompletionRequest, Provider
from goaicore.conversation.providers.offline import OFFLINE_MODEL, OFFLINE_PREFIX, OfflineProvider
from goaicore.conversation.providers.openai import OpenAIProvider
from goaicore.conversation.providers.responses import ResponsesProvider

__all__ = [
    "OFFLINE_MODEL",
    "OFFLINE_PREFIX",
    "AnthropicProvider",
    "Completion",
    "CompletionRequest",
    "OfflineProvider",
    "OpenAIProvider",
    "Provider",
    "ResponsesProvider",
]
