"""Which LLM the chat worker uses, from settings; one provider per model name.

``OPENAI_API_KEY`` (or ``OPENAI_BASE_URL``, for a local OpenAI-compatible
server) selects OpenAI, else ``ANTHROPIC_API_KEY`` selects Anthropic, else the
deterministic offline model answers, labelled as such. A request may name its
own model; providers are built once per model and kept, so SDK connection pools
are reused across requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from goaicore.config import Settings
from goaicore.conversation.providers import OfflineProvider, Provider

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL = "claude-3-5-haiku-latest"


@dataclass
class Providers:
    """Providers by model name, for the backend the settings select."""

    settings: Settings
    _cache: dict[str | None, Provider] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        """``openai``, ``anthropic`` or ``offline``."""
        s = self.settings
        if s.openai_api_key or s.openai_base_url:
            return "openai"
        if s.anthropic_api_key:
            return "anthropic"
        return "offline"

    @property
    def label(self) -> str:
        """What to tell an operator about the model in use."""
        if self.backend == "offline":
            return "offline model (deterministic, no API key set)"
        return f"{self.backend} {self.default_model}"

    @property
    def default_model(self) -> str:
        if self.settings.model:
            return self.settings.model
        return DEFAULT_ANTHROPIC_MODEL if self.backend == "anthropic" else DEFAULT_OPENAI_MODEL

    def get(self, model: str | None = None) -> Provider:
        """The provider for ``model`` (the configured one when None)."""
        key = model or None
        if key not in self._cache:
            self._cache[key] = self._make(model or self.default_model)
        return self._cache[key]

    def _make(self, model: str) -> Provider:
        s = self.settings
        backend = self.backend
        if backend == "openai":
            from goaicore.conversation.providers import OpenAIProvider

            # A local OpenAI-compatible server may need no key; the SDK insists on one.
            return OpenAIProvider(
                model, api_key=s.openai_api_key or "unused", base_url=s.openai_base_url
            )
        if backend == "anthropic":
            from goaicore.conversation.providers import AnthropicProvider

            return AnthropicProvider(model, api_key=s.anthropic_api_key)
        return OfflineProvider()
