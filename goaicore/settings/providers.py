"""The LLM providers' settings: their keys, an OpenAI-compatible server, the model."""

from __future__ import annotations

from typing import Literal, get_args

from goaicore.settings.declare import Setting, http_url, one_of, text

OpenAIApi = Literal["chat", "responses"]

PROVIDERS: tuple[Setting, ...] = (
    Setting(
        "openai_api_key",
        "OPENAI_API_KEY",
        "unset",
        "Key for an OpenAI-compatible server.",
        text,
        secret=True,
    ),
    Setting(
        "openai_base_url",
        "OPENAI_BASE_URL",
        "the SDK's default",
        "Base URL of an OpenAI-compatible server.",
        http_url,
    ),
    Setting(
        "openai_api",
        "GOAICORE_OPENAI_API",
        "`chat`",
        "The OpenAI API a turn calls: `chat` (chat completions) or `responses` (the "
        "Responses API, stateless: reasoning items go back with each call).",
        one_of(*get_args(OpenAIApi)),
        "chat",
    ),
    Setting(
        "model",
        "GOAICORE_MODEL",
        "the provider's default",
        "Model name sent to the provider.",
        text,
    ),
    Setting(
        "anthropic_api_key",
        "ANTHROPIC_API_KEY",
        "unset",
        "Key for Anthropic (used when no OpenAI key is set).",
        text,
        secret=True,
    ),
)
